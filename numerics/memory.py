"""How much memory a stack and a run of it take, estimated before anything is allocated.

``stack_bytes`` counts a ``random_stack``'s weights (drawn in float64, so a float32 stack
holds both copies while it is built), its (heads, T, T) score bias (one buffer shared by
the layers in float64, one per layer otherwise) and the slow path's (heads, n, n) biases,
plus a per-layer allowance for the modules themselves.  ``simulate_bytes`` adds the live
tensors of one forward pass in float64 on a batch of B inputs: the attention scores
(B, heads, T, T), of which ``SCORE_COPIES`` exist at once (q kᵀ, scaled, biased, softmax),
and the MLP's (B, T, mlp_ratio·d) hidden layer twice.  ``tests/test_memory.py`` holds the
estimate to within 2× of the measured peak resident set on three sizes.

``check_fits`` refuses an estimate above the available memory (``psutil``) or a limit.
"""

from __future__ import annotations

import torch

#: (B, heads, T, T) score tensors alive at once in ``Attention.weights`` (two temporaries
#: of the expression q kᵀ / √d_k + bias, then softmax's output and its input).
SCORE_COPIES = 3
#: Python objects of one Layer (seven modules, their parameter objects and dicts).
LAYER_OVERHEAD = 24 * 1024
#: bytes of a bias mask construction per (T, T) entry: a bool mask, the zeros and the result.
MASK_BYTES_PER_ENTRY = 1 + 8 + 8


def _itemsize(dtype) -> int:
    return torch.empty((), dtype=dtype or torch.float64).element_size()


def layer_parameters(d: int, P: int | None, mlp_ratio: int = 4) -> int:
    """Parameters of one pre-LN layer: attention 4d², two LNs 4d, MLP 2wd + w + d, slow path 4d² + 1."""
    width = mlp_ratio * d
    count = 4 * d * d + 4 * d + 2 * width * d + width + d
    if P:
        count += 4 * d * d + 1
    return count


def stack_bytes(T: int, d: int, layers: int, heads: int, P: int | None = None, *,
                mlp_ratio: int = 4, dtype=None) -> int:
    """Bytes a ``random_stack`` occupies once built (and at the peak of building it)."""
    size = _itemsize(dtype)
    weights = layers * layer_parameters(d, P, mlp_ratio)
    building = weights * (8 + (size if size != 8 else 4))  # float32 zeros -> float64 draws -> dtype
    bias_copies = 1 if size == 8 else layers
    bias = heads * T * T * (8 + size * bias_copies) + T * T * MASK_BYTES_PER_ENTRY
    slow = layers * heads * (T // P) ** 2 * 8 if P else 0
    return int(building + bias + slow + layers * LAYER_OVERHEAD)


def simulate_bytes(T: int, d: int, layers: int, heads: int, P: int | None = None, *, batch: int = 1,
                   mlp_ratio: int = 4, dtype=None) -> int:
    """Bytes at the peak of ``simulate``: the stack plus one forward pass's live tensors."""
    size = _itemsize(dtype)
    scores = SCORE_COPIES * batch * heads * T * T * size
    hidden = 2 * batch * T * mlp_ratio * d * size
    states = 8 * batch * T * d * size
    slow = SCORE_COPIES * batch * heads * (T // P) ** 2 * size if P else 0
    return stack_bytes(T, d, layers, heads, P, mlp_ratio=mlp_ratio, dtype=dtype) + scores + hidden + states + slow


def available_bytes() -> int:
    """Memory the system can give this process now without swapping (psutil)."""
    import psutil

    return int(psutil.virtual_memory().available)


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def check_fits(estimate: int, limit: int | None = None, what: str = "the run") -> None:
    """Raise ValueError when ``estimate`` exceeds ``limit`` (``--max-memory``) or the available memory."""
    if limit is not None and estimate > limit:
        raise ValueError(f"max_memory={limit}: {what} needs an estimated {human(estimate)}, more than the "
                         f"limit of {human(limit)} (reduce T, layers, d or heads)")
    available = available_bytes()
    if estimate > available:
        raise ValueError(f"{what} needs an estimated {human(estimate)}, more than the {human(available)} "
                         "of memory available (reduce T, layers, d or heads)")
