"""How much memory a stack and a run of it take, estimated before anything is allocated.

``stack_bytes`` is the peak of building a stack (``build(spec)``): its float64 parameters and every
layer's float64 draws at once (plus the cast, for a narrower dtype), the (heads, T, T) score
bias built as zeros and then masked, the slow path's (heads, n, n) biases, and a per-layer
allowance for the modules.  Once built, the stack keeps its weights in its dtype and one
score bias (shared by the layers in float64, one per layer otherwise).  ``simulate_bytes``
is the larger of the build peak and the built stack plus one forward pass on a batch of B
inputs: ``SCORE_COPIES`` attention score tensors (B, heads, T, T) alive at once, the MLP's
hidden layer twice and a few copies of the state.  With the slow path, ``simulate`` also
runs the gate certificate (``numerics.families.stability.gate_certificate``) unless told not to, and
``certificate_bytes`` is its peak on top of the built stack.  ``tests/test_memory.py`` holds
every estimate to within 2× of the measured peak resident set (forward: three sizes;
certificate: four, each dominated by another term).

``check_fits`` refuses an estimate above a ``--max-memory`` limit or above the memory this process
can still get, :func:`memory_limits`: the least of the host's available memory (``psutil``), what the
cgroup's memory limit leaves (v2 ``memory.max``, v1 ``memory.limit_in_bytes``, at the process's
cgroup and every ancestor, less their usage net of reclaimable page cache), what ``RLIMIT_AS`` and
``RLIMIT_DATA`` leave above the process's current address space and data segment, and, for a CUDA
device, the device's free memory.  The refusal names the limit that binds.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

import torch

#: (B, heads, T, T) score tensors alive at once in ``Attention.weights``: the expression
#: q kᵀ / √d_k + bias holds two temporaries at a time, then softmax its input and output.
SCORE_COPIES = 2
#: Python objects of one Layer (seven modules, their parameter objects and dicts).
LAYER_OVERHEAD = 24 * 1024


def _itemsize(dtype) -> int:
    return torch.empty((), dtype=dtype or torch.float64, device="meta").element_size()


def layer_parameters(d: int, P: int | None, mlp_ratio: int = 4) -> int:
    """Parameters of one pre-LN layer: attention 4d², two LNs 4d, MLP 2wd + w + d, slow path 4d² + 1."""
    width = mlp_ratio * d
    count = 4 * d * d + 4 * d + 2 * width * d + width + d
    if P:
        count += 4 * d * d + 1
    return count


def _weights_and_bias(T, d, layers, heads, P, mlp_ratio, dtype) -> tuple[int, int, int]:
    """(bytes at the peak of building, bytes once built, weights) of a random stack."""
    size = _itemsize(dtype)
    weights = layers * layer_parameters(d, P, mlp_ratio)
    bias = heads * T * T * (size if size == 8 else size * layers)  # shared in float64 only
    slow = layers * heads * (T // P) ** 2 * size if P else 0
    overhead = layers * LAYER_OVERHEAD
    # float64 parameters and all layers' float64 draws at once, plus the cast to a narrower dtype;
    # the score bias is built as zeros, then masked (two float64 copies).
    building = weights * (16 + (size if size != 8 else 0)) + 2 * heads * T * T * 8 + slow + overhead
    built = weights * size + bias + slow + overhead
    return building, built, weights


def stack_bytes(T: int, d: int, layers: int, heads: int, P: int | None = None, *,
                mlp_ratio: int = 4, dtype=None) -> int:
    """Bytes at the peak of building a stack (weights, draws, score bias)."""
    return _weights_and_bias(T, d, layers, heads, P, mlp_ratio, dtype)[0]


def simulate_bytes(T: int, d: int, layers: int, heads: int, P: int | None = None, *, batch: int = 1,
                   mlp_ratio: int = 4, dtype=None) -> int:
    """Bytes at the peak of ``simulate``: building the stack, or the built stack plus a forward pass."""
    size = _itemsize(dtype)
    building, built, _ = _weights_and_bias(T, d, layers, heads, P, mlp_ratio, dtype)
    scores = SCORE_COPIES * batch * heads * T * T * size
    if P:
        scores = max(scores, SCORE_COPIES * batch * heads * (T // P) ** 2 * size)
    hidden = 2 * batch * T * mlp_ratio * d * size
    states = 8 * batch * T * d * size
    return int(max(building, built + scores + hidden + states))


#: (tokens × slow modes × width) up to which the certificate may take its autograd route
#: (``numerics.families.stability.AUTOGRAD_LIMIT``, restated here so that the estimate imports nothing).
CERTIFICATE_AUTOGRAD_LIMIT = 2**17


def certificate_bytes(T: int, d: int, layers: int, heads: int, P: int, *, mlp_ratio: int = 4, dtype=None) -> int:
    """Bytes the gate certificate adds at its peak, with N = n·d slow modes (n = T/P blocks).

    * the slow branch's Jacobian by one reverse pass over N copies of the n-token slow attention:
      their score tensors (N, heads, n, n), kept for the backward pass and its gradients (5
      copies), their states (N, n, d) through LN and attention (16 copies), and the (N, N)
      Jacobian with its identity cotangent (3);
    * the per-layer maps G, K, the slow-branch maps and their products (L, N, N), and the
      spectral norms' stacked Gram matrices and eigen-solver workspace: 12 per layer;
    * where the autograd route may be taken (T·n·d² ≤ 2¹⁷), N copies of a whole T-token layer
      instead: scores (N, heads, T, T) and states (N, T, width), the same copy counts.
    """
    size = _itemsize(dtype)
    n = T // P
    N = n * d
    slow = 5 * N * heads * n * n + 16 * N * n * d
    if T * n * d * d <= CERTIFICATE_AUTOGRAD_LIMIT:
        slow = max(slow, 5 * N * heads * T * T + 16 * N * T * d * (1 + mlp_ratio))
    return int(size * (slow + 3 * N * N + 12 * layers * N * N))


def run_bytes(T: int, d: int, layers: int, heads: int, P: int | None = None, *, batch: int = 1,
              mlp_ratio: int = 4, dtype=None, certificate: bool = True) -> int:
    """Bytes at the peak of ``simulate`` with every stage it runs: building, the forward pass, and
    (P set, ``certificate``) the gate certificate beside the built stack."""
    peak = simulate_bytes(T, d, layers, heads, P, batch=batch, mlp_ratio=mlp_ratio, dtype=dtype)
    if P and certificate:
        built = _weights_and_bias(T, d, layers, heads, P, mlp_ratio, dtype)[1]
        peak = max(peak, built + certificate_bytes(T, d, layers, heads, P, mlp_ratio=mlp_ratio, dtype=dtype))
    return int(peak)


def training_bytes(T: int, d: int, layers: int, heads: int, P: int | None = None, *, batch: int, vocab: int = 256,
                   eval_batch: int = 0, mlp_ratio: int = 4, dtype=None) -> int:
    """Bytes at the peak of training a language model on the stack (``numerics.text.training.fit``): the
    larger of building the stack (:func:`stack_bytes`) and the trained state during a step.

    The state: the weights with their gradients and AdamW's two moments (4 copies, embedding and
    head included), and what the backward pass keeps of a batch of B windows, per layer: the attention
    scores through scaling, the mask, the softmax and its gradient (5 × (B, heads, T, T)), the MLP's hidden layer, its
    activation and gradient (3 × (B, T, w)), a dozen (B, T, d) states through the two LayerNorms and
    residuals, the slow path's (n × n) scores and n-token states; and the logits with their
    log-softmax and gradient (3 × (B, T, V)).  The validation pass (``eval_batch`` windows, no
    gradient) is a :func:`simulate_bytes` forward beside the state.  Measured peak RSS above the
    interpreter's (``fastslow train``, float32, 2-core VM): B=20000 T=16 d=32 L=2, 3.55 GB measured
    against 3.37 GB estimated; B=64 T=256 d=64 L=2, 0.83 GB against 0.59 GB."""
    size = _itemsize(dtype)
    building = stack_bytes(T, d, layers, heads, P, mlp_ratio=mlp_ratio, dtype=dtype)
    weights = layers * layer_parameters(d, P, mlp_ratio) + 2 * vocab * d + vocab + 2 * d
    per_layer = 5 * batch * heads * T * T + 3 * batch * T * mlp_ratio * d + 12 * batch * T * d
    if P:
        n = T // P
        per_layer += 3 * batch * heads * n * n + 8 * batch * n * d
    step = size * (4 * weights + layers * per_layer + 3 * batch * T * vocab)
    evaluation = simulate_bytes(T, d, layers, heads, P, batch=eval_batch, mlp_ratio=mlp_ratio, dtype=dtype) \
        if eval_batch else 0
    return int(max(building, step, size * 4 * weights + evaluation))


#: where the cgroup file systems and this process's cgroup membership are read (tests point them elsewhere)
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
#: a cgroup v1 limit at or above this is the kernel's "no limit" (PAGE_COUNTER_MAX pages)
_NO_LIMIT = 2**60


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None  # "max" (v2 without a limit) and junk read as None


def _inactive_file(folder: Path) -> int:
    """Page cache the kernel reclaims before it kills (``inactive_file`` of ``memory.stat``)."""
    try:
        for line in (folder / "memory.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key in ("inactive_file", "total_inactive_file") and value.strip().isdigit():
                return int(value)
    except (OSError, UnicodeDecodeError):
        pass
    return 0


def _cgroup_folders() -> list[tuple[Path, str, str]]:
    """(folder, limit file, usage file) of this process's memory cgroup and its ancestors, v2 and v1."""
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, where = parts
        if controllers == "":
            base, files = CGROUP_ROOT, ("memory.max", "memory.current")
            if not (base / "cgroup.controllers").exists() and (base / "unified").is_dir():
                base = base / "unified"
        elif "memory" in controllers.split(","):
            base, files = CGROUP_ROOT / "memory", ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        rel = Path(where.strip() or "/").relative_to("/") if where.startswith("/") else Path(where)
        chain = [rel, *rel.parents] if str(rel) not in ("", ".") else [Path(".")]
        for part in chain:
            out.append((base / part, *files))
    return out


def cgroup_headroom() -> tuple[int, str] | None:
    """(bytes, limit file) the tightest cgroup memory limit still leaves, or None without one."""
    best = None
    for folder, limit_file, usage_file in _cgroup_folders():
        limit = _read_int(folder / limit_file)
        if limit is None or limit >= _NO_LIMIT:
            continue
        usage = _read_int(folder / usage_file) or 0
        left = max(0, limit - max(0, usage - _inactive_file(folder)))
        if best is None or left < best[0]:
            best = (left, str(folder / limit_file))
    return best


def _rlimit_headroom() -> list[tuple[int, str]]:
    """What RLIMIT_AS and RLIMIT_DATA leave above the current address space and data segment."""
    import psutil

    info = None
    out = []
    for name, used_field in (("RLIMIT_AS", "vms"), ("RLIMIT_DATA", "data")):
        soft = resource.getrlimit(getattr(resource, name))[0]
        if soft == resource.RLIM_INFINITY:
            continue
        info = info or psutil.Process().memory_info()
        out.append((max(0, soft - getattr(info, used_field, 0)), f"{name} (ulimit, {human(soft)})"))
    return out


def memory_limits(device: str | None = None, *, per_process: bool = True) -> list[tuple[int, str]]:
    """Every limit on the memory this process can still get: (bytes left, what sets it).  Without
    ``per_process`` (memory several processes share, e.g. a pool of workers), the rlimits, which bind
    each process separately, are left out."""
    import psutil

    limits = [(int(psutil.virtual_memory().available), "available host memory")]
    cgroup = cgroup_headroom()
    if cgroup is not None:
        limits.append((cgroup[0], f"cgroup memory limit ({cgroup[1]})"))
    if per_process:
        limits.extend(_rlimit_headroom())
    if device is not None and str(device).startswith("cuda") and "torch" in sys.modules:
        if torch.cuda.is_available():
            free, _ = torch.cuda.mem_get_info(torch.device(device))
            limits.append((int(free), f"free memory of {device}"))
    return limits


def available_bytes(device: str | None = None) -> int:
    """Memory this process can get now without swapping or being killed: the least of
    :func:`memory_limits`."""
    return min(left for left, _ in memory_limits(device))


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def check_fits(estimate: int, limit: int | None = None, what: str = "the run", device: str | None = None, *,
               per_process: bool = True, advice: str = "reduce T, layers, d or heads") -> None:
    """Raise ValueError when ``estimate`` exceeds ``limit`` (``--max-memory``) or the memory this process
    can get (:func:`memory_limits`; the message names the binding limit)."""
    if limit is not None and estimate > limit:
        raise ValueError(f"max_memory={limit}: {what} needs an estimated {human(estimate)}, more than the "
                         f"limit of {human(limit)} ({advice})")
    available, source = min(memory_limits(device, per_process=per_process))
    if estimate > available:
        raise ValueError(f"{what} needs an estimated {human(estimate)}, more than the {human(available)} "
                         f"of memory available (the {source} binds; {advice})")
