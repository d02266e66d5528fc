"""The trainer (one for Claim 7.3 and ``fastslow train``) and Claim 7.3's experiment.

Model (docs/theory.md §0): token embedding -> an untied stack (``numerics.stack``) -> final
LN -> linear head, trained on next-token cross-entropy.  The hierarchical stack adds the
slow block-mean path with a zero-initialised gate per layer.

:func:`fit` is the training loop: AdamW, a cosine learning-rate schedule with linear
warm-up, gradient-norm clipping, a validation loss every ``eval_every`` steps, a tqdm bar
(loss and tokens/s) and a checkpoint (``numerics.checkpoint``) every ``checkpoint_every``
steps, from which an interrupted run resumes.  Each batch is drawn from its own seed
(``batch_seed(seed, step)``) and the learning rate is a function of the step, so on the
CPU a resumed run is bit-identical to an uninterrupted one.

Claim 7.3 in small: the hierarchical model on topic-block data (``numerics.data``),
coupled vs frozen gate.  The fast path is restricted to the *current block* (causal
within the block, ``fast_kernel="local"``), so that — exactly as in Claim 7.2 — the
frozen model predicts from the current block alone and the only route to earlier blocks
is the gated slow path.  ``fast_kernel="causal"`` gives the paper's fast path (all
earlier tokens); then the frozen model can reach earlier blocks itself and the gate's
effect is no longer the 7.2 information gap.

Arms: ``coupled`` (gates learn) and ``frozen`` (every gate stays exactly 0,
requires_grad False).  At g = 0 the slow-path weights get exactly zero gradient, so the
two arms are the same computation until the gate moves; the gate has its own learning
rate (``gate_lr``), since what the data decides is the sign and size of ∂R/∂g at g = 0.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from numerics import checkpoint as ckpt
from numerics.data import TopicBlocks
from numerics.stack import LayerNorm, random_stack

FAST_KERNELS = ("local", "causal")
ARMS = ("coupled", "frozen")
DTYPES = {"float32": torch.float32, "float64": torch.float64}
REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- the model
class LanguageModel(nn.Module):
    """Embedding (V, d) -> ``stack`` -> LN -> head (d, V) + bias; logits (..., T, V).

    The embedding and head are drawn from ``seed`` (float64, then cast), the stack is given.
    ``freeze_gates`` keeps every slow-path gate at its initial value (requires_grad False).
    """

    def __init__(self, V: int, stack: nn.Module, seed: int, dtype=torch.float32, freeze_gates: bool = False):
        super().__init__()
        d = stack.config.d
        gen = torch.Generator().manual_seed(10_007 * seed + 1)
        self.embed = nn.Parameter(torch.randn(V, d, generator=gen, dtype=torch.float64).to(dtype))
        self.stack = stack
        self.ln_f = LayerNorm(d).to(dtype)
        self.head = nn.Parameter((torch.randn(d, V, generator=gen, dtype=torch.float64) / math.sqrt(d)).to(dtype))
        self.head_bias = nn.Parameter(torch.zeros(V, dtype=dtype))
        if freeze_gates:
            for g in self.gates():
                g.requires_grad_(False)

    def gates(self) -> list[nn.Parameter]:
        return [layer.gate for layer in self.stack.layers if getattr(layer, "slow", None) is not None]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.ln_f(self.stack(self.embed[tokens])) @ self.head + self.head_bias


def next_token_losses(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """Cross-entropy (batch, T−1) of predicting token t+1 from tokens ≤ t (nats); the first
    token of a sequence is never predicted."""
    logits = model(tokens)[:, :-1]
    target = tokens[:, 1:]
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1),
                                       reduction="none").reshape(target.shape)


def next_token_loss(model: nn.Module, tokens: torch.Tensor, positions: slice = slice(None)) -> torch.Tensor:
    """Mean next-token cross-entropy (nats/token) over ``positions`` of the predicted token."""
    return next_token_losses(model, tokens)[:, positions].mean()


# ---------------------------------------------------------------- the training loop
@dataclass(frozen=True)
class Optimiser:
    """AdamW with a cosine schedule: lr rises linearly over ``warmup`` steps, then follows
    lr·(1 + cos(π s'))/2 down to 0 at the last step; gradients are clipped to norm ``clip``
    (0: no clipping).  Gates get ``gate_lr`` instead of ``lr`` and no weight decay."""

    steps: int
    lr: float
    gate_lr: float
    weight_decay: float = 0.0
    warmup: int = 0
    clip: float = 1.0
    eval_every: int = 25

    def __post_init__(self):
        for name in ("steps", "eval_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or not 0 <= self.warmup < self.steps:
            raise ValueError(f"warmup={self.warmup!r} must be an integer in [0, steps)")
        for name in ("lr", "gate_lr", "weight_decay", "clip"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}={value!r} must be a finite number >= 0")
        if self.lr == 0:
            raise ValueError("lr=0 must be positive")

    def factor(self, step: int) -> float:
        """The schedule's multiplier of the learning rate at 0-based ``step``."""
        if step < self.warmup:
            return (step + 1) / (self.warmup + 1)
        span = max(1, self.steps - self.warmup)
        return 0.5 * (1.0 + math.cos(math.pi * (step - self.warmup) / span))

    def build(self, model: nn.Module) -> torch.optim.Optimizer:
        gate_ids = {id(g) for g in model.gates()}
        rest = [p for p in model.parameters() if id(p) not in gate_ids and p.requires_grad]
        groups = [{"params": rest, "lr": self.lr, "base_lr": self.lr, "weight_decay": self.weight_decay}]
        gates = [g for g in model.gates() if g.requires_grad]
        if gates:
            groups.append({"params": gates, "lr": self.gate_lr, "base_lr": self.gate_lr, "weight_decay": 0.0})
        return torch.optim.AdamW(groups)


def batch_seed(seed: int, step: int) -> int:
    return 1_000_003 * (seed + 1) + step


@contextmanager
def torch_threads(n: int):
    """Run the block with ``n`` intra-op threads, then restore the caller's setting.  These
    models are tiny: one thread is fastest on a shared machine and makes the result
    independent of the caller's thread count."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit(model: nn.Module, opt_cfg: Optimiser, batch: Callable[[int], torch.Tensor],
        validation: torch.Tensor, *, identity: dict, checkpoint: str | os.PathLike | None = None,
        **kwargs) -> dict:
    """Train ``model`` for ``opt_cfg.steps`` steps on ``batch(step)`` (int64 tokens (B, T));
    return the curves.

    ``validation`` (N, T) is scored every ``eval_every`` steps and at the end.  With
    ``checkpoint`` (a folder) the run claims the folder (``numerics.checkpoint.claim``: locked
    for this run; a folder of someone else's files is refused), resumes from it when it holds
    a save of the same ``identity`` (else CheckpointError), saves every ``checkpoint_every``
    steps and at the end.  ``stop_after`` ends the call early at that step (an interruption,
    for tests).
    """
    if checkpoint is None:
        return _fit(model, opt_cfg, batch, validation, identity=identity, checkpoint=None, **kwargs)
    with ckpt.claim(checkpoint):
        return _fit(model, opt_cfg, batch, validation, identity=identity, checkpoint=checkpoint, **kwargs)


def _fit(model: nn.Module, opt_cfg: Optimiser, batch: Callable[[int], torch.Tensor],
         validation: torch.Tensor, *, identity: dict, checkpoint: str | os.PathLike | None = None,
         checkpoint_every: int = 50, stop_after: int | None = None, progress: bool = False,
         desc: str = "train", extra_manifest: dict | None = None, device: str | torch.device = "cpu",
         eval_batch: int = 256, monitor: Callable[[nn.Module], dict] | None = None) -> dict:
    from tqdm import tqdm

    model.to(device)
    opt = opt_cfg.build(model)
    curves = {"step": [], "train_loss": [], "eval_step": [], "eval_loss": [],
              "gates": [[] for _ in model.gates()], "lr": [], "seconds": 0.0, "tokens": 0}
    start = 0
    path = Path(checkpoint) if checkpoint is not None else None
    if path is not None and ckpt.exists(path):
        tensors, manifest = ckpt.load(path)
        if manifest["kind"] != identity["kind"] or manifest["config"] != identity["config"]:
            raise ckpt.CheckpointError(f"checkpoint {path} belongs to another run (its config differs: "
                                       f"{_first_difference(manifest['config'], identity['config'])})")
        model.load_state_dict(tensors["model"])
        opt.load_state_dict(tensors["optimizer"])
        curves, start = manifest["curves"], int(manifest["step"])
    validation = validation.to(device)
    if monitor is not None and start == 0:
        curves["monitor"] = [{"step": 0, **monitor(model)}]

    def evaluate() -> torch.Tensor:
        model.eval()
        with torch.no_grad():
            per_seq = torch.cat([next_token_losses(model, validation[i:i + eval_batch]).mean(-1)
                                 for i in range(0, len(validation), eval_batch)])
        model.train()
        return per_seq.double().cpu()

    def save(step: int) -> None:
        if path is not None:
            ckpt.save(path, {"model": model.state_dict(), "optimizer": opt.state_dict()},
                      {"kind": identity["kind"], "config": identity["config"], "step": step,
                       "curves": curves, **(extra_manifest or {})})

    end = opt_cfg.steps if stop_after is None else min(stop_after, opt_cfg.steps)
    tty = sys.stderr.isatty()  # off a terminal: one line per validation instead of a bar
    bar = tqdm(range(start, end), desc=desc, leave=False, disable=not progress or not tty, initial=start,
               total=opt_cfg.steps)
    for step in bar:
        t0 = time.perf_counter()
        tokens = batch(step).to(device)
        factor = opt_cfg.factor(step)
        for group in opt.param_groups:
            group["lr"] = group["base_lr"] * factor
        loss = next_token_loss(model, tokens)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if opt_cfg.clip > 0:
            nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], opt_cfg.clip)
        opt.step()
        curves["step"].append(step + 1)
        curves["train_loss"].append(loss.item())
        curves["lr"].append(opt.param_groups[0]["lr"])
        for l, gate in enumerate(model.gates()):
            curves["gates"][l].append(gate.item())
        curves["tokens"] += tokens.numel()
        if (step + 1) % opt_cfg.eval_every == 0 or step + 1 == opt_cfg.steps:
            per_seq = evaluate()
            curves["eval_step"].append(step + 1)
            curves["eval_loss"].append(float(per_seq.mean()))
            if step + 1 == opt_cfg.steps:
                curves["final_eval_per_seq"] = per_seq.tolist()
            if progress and not tty:
                print(f"{desc}: step {step + 1}/{opt_cfg.steps}, train loss {loss.item():.3f}, validation "
                      f"{curves['eval_loss'][-1]:.3f}", file=sys.stderr, flush=True)
        curves["seconds"] += time.perf_counter() - t0
        if monitor is not None and curves["eval_step"] and curves["eval_step"][-1] == step + 1:
            curves["monitor"].append({"step": step + 1, **monitor(model)})  # not counted in the training time
        if progress:
            post = {"loss": f"{curves['train_loss'][-1]:.3f}", "tok/s": f"{curves['tokens'] / curves['seconds']:.0f}"}
            if curves["eval_loss"]:
                post["val"] = f"{curves['eval_loss'][-1]:.3f}"
            bar.set_postfix(post)
        if (step + 1) % checkpoint_every == 0 and step + 1 < end:
            save(step + 1)
    if end > start or (path is not None and not ckpt.exists(path)):
        save(end)
    return curves


def _first_difference(a: dict, b: dict) -> str:
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            return f"{key}: checkpoint {a.get(key)!r}, requested {b.get(key)!r}"
    return "none"


# ---------------------------------------------------------------- Claim 7.3's runs
@dataclass(frozen=True)
class TrainConfig:
    """Data, model and optimiser of one Claim 7.3 run (the seed is passed separately)."""

    # data (topic blocks; the topics are fixed by data_seed, shared by every training seed)
    V: int = 16
    M: int = 4
    P: int = 8
    rho: float = 0.0
    concentration: float = 0.3
    data_seed: int = 0
    # model
    T: int = 64
    d: int = 32
    layers: int = 2
    heads: int = 2
    fast_kernel: str = "local"
    arm: str = "coupled"
    # optimiser
    steps: int = 300
    batch: int = 32
    lr: float = 3e-3
    gate_lr: float = 1e-2
    warmup: int = 0
    clip: float = 1.0
    eval_every: int = 25
    eval_batch: int = 256
    dtype: str = "float32"

    def __post_init__(self):
        for name in ("T", "d", "layers", "heads", "batch", "eval_batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        if self.fast_kernel not in FAST_KERNELS:
            raise ValueError(f"fast_kernel={self.fast_kernel!r} is not one of {', '.join(FAST_KERNELS)}")
        if self.arm not in ARMS:
            raise ValueError(f"arm={self.arm!r} is not one of {', '.join(ARMS)}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r} is not one of {', '.join(DTYPES)}")
        self.optimiser()  # validates steps, lr, gate_lr, warmup, clip, eval_every
        self.data()  # validates V, M, P, rho, concentration

    def data(self) -> TopicBlocks:
        return TopicBlocks(V=self.V, M=self.M, P=self.P, rho=self.rho,
                           concentration=self.concentration, seed=self.data_seed)

    def optimiser(self) -> Optimiser:
        return Optimiser(steps=self.steps, lr=self.lr, gate_lr=self.gate_lr, warmup=self.warmup,
                         clip=self.clip, eval_every=self.eval_every)

    def as_dict(self) -> dict:
        return asdict(self)


def local_causal_bias(T: int, P: int, heads: int, dtype) -> torch.Tensor:
    """Score bias (heads, T, T): token i sees token j iff j ≤ i and both lie in the same block."""
    i = torch.arange(T)
    allowed = (i[None, :] <= i[:, None]) & (i[None, :] // P == i[:, None] // P)
    bias = torch.zeros(heads, T, T, dtype=dtype)
    return bias.masked_fill(~allowed, -math.inf)


class HierarchicalLM(LanguageModel):
    """Claim 7.3's model: the hierarchical stack (causal, blocks of P, gate 0) of ``cfg``."""

    def __init__(self, cfg: TrainConfig, seed: int):
        dtype = DTYPES[cfg.dtype]
        stack = random_stack(cfg.T, cfg.d, cfg.layers, cfg.heads, "causal", P=cfg.P, seed=seed, dtype=dtype)
        if cfg.fast_kernel == "local":
            for layer in stack.layers:
                layer.attn.bias = local_causal_bias(cfg.T, cfg.P, cfg.heads, dtype)
        super().__init__(cfg.V, stack, seed, dtype, freeze_gates=cfg.arm == "frozen")


EVAL_SEED = 999_999_937  # the held-out batch: the same for every run


def eval_tokens(cfg: TrainConfig) -> torch.Tensor:
    return cfg.data().sample(cfg.eval_batch, cfg.T, EVAL_SEED)[0]


def train(cfg: TrainConfig, seed: int, checkpoint: str | os.PathLike | None = None,
          checkpoint_every: int = 50, stop_after: int | None = None, progress: bool = False,
          threads: int = 1) -> dict:
    """Train one Claim 7.3 run; returns its curves and model.  With ``checkpoint`` (a folder)
    the run resumes from it (same config and seed, else CheckpointError) and saves to it
    every ``checkpoint_every`` steps and at the end."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed={seed!r} must be an integer")
    with torch_threads(threads):
        model = HierarchicalLM(cfg, seed)
        data = cfg.data()
        curves = fit(model, cfg.optimiser(), lambda step: data.sample(cfg.batch, cfg.T, batch_seed(seed, step))[0],
                     eval_tokens(cfg), identity={"kind": "topic-blocks", "config": {**cfg.as_dict(), "seed": seed}},
                     checkpoint=checkpoint, checkpoint_every=checkpoint_every, stop_after=stop_after,
                     progress=progress, desc=f"7.3 {cfg.arm} rho={cfg.rho} seed={seed}",
                     eval_batch=cfg.eval_batch)
    return {"config": cfg.as_dict(), "seed": seed, "curves": curves, "model": model}


# ---------------------------------------------------------------- the gate's gradient at g = 0
def gate_gradient_information(cfg: TrainConfig, seed: int, n_batches: int, batch: int,
                              threads: int = 1) -> dict:
    """∂L/∂g at g = 0 (summed over layers) for the loss on the *last* block, and its
    information part: the same derivative minus its value when the earlier blocks are
    replaced by those of another sequence (the batch rolled by one).

    With the local fast path and g = 0 the last block's prediction depends on the current
    block only and the slow feature on earlier blocks only, so under independent blocks the
    two derivatives have equal expectations (exchangeability): the information part is 0
    in expectation at *any* weights.  Under AR(1) blocks it is not.  Returns means and
    standard errors over ``n_batches`` batches.
    """
    if cfg.fast_kernel != "local":
        raise ValueError("gate_gradient_information needs fast_kernel='local' (see its docstring)")
    with torch_threads(threads):
        return _gate_gradient_information(cfg, seed, n_batches, batch)


def _gate_gradient_information(cfg, seed, n_batches, batch) -> dict:
    model = HierarchicalLM(replace(cfg, arm="coupled"), seed)
    data = cfg.data()
    last = slice(cfg.T - cfg.P, None)  # predictions made inside the last block (targets T−P+1..T−1)
    raw, info = [], []
    for j in range(n_batches):
        tokens, _ = data.sample(batch, cfg.T, batch_seed(seed, 10_000_000 + j))
        swapped = tokens.clone()
        swapped[:, : cfg.T - cfg.P] = tokens.roll(1, dims=0)[:, : cfg.T - cfg.P]
        grads = []
        for toks in (tokens, swapped):
            loss = next_token_loss(model, toks, last)
            grads.append(sum(torch.autograd.grad(loss, model.gates())))
        raw.append(float(grads[0]))
        info.append(float(grads[0] - grads[1]))
    raw_t, info_t = torch.tensor(raw, dtype=torch.float64), torch.tensor(info, dtype=torch.float64)
    n = math.sqrt(n_batches)
    return {"raw": float(raw_t.mean()), "se_raw": float(raw_t.std() / n),
            "info": float(info_t.mean()), "se_info": float(info_t.std() / n)}


# ---------------------------------------------------------------- what a cached result depends on
SOURCE_PACKAGES = ("numerics", "theory", "proofs_check")  # the experiments that cache results live in proofs_check


def _module_file(name: str, root: Path) -> Path | None:
    if name.split(".")[0] not in SOURCE_PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def source_closure(modules: tuple[str, ...], root: str | os.PathLike | None = None) -> dict[str, Path]:
    """Every module of this project (``SOURCE_PACKAGES``) that importing ``modules`` can execute, with its file.

    Found from the source itself: each file's ``import``/``from … import`` statements (at any
    depth, so imports inside functions count), followed transitively, plus every parent
    package's ``__init__``.  ``root`` is the folder holding the packages (this checkout by default).
    """
    root = Path(root) if root is not None else REPO
    found: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = _module_file(name, root)
        if path is None:
            continue
        found[name] = path
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        package = name if path.name == "__init__.py" else ".".join(parts[:-1])
        for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
            if isinstance(node, ast.Import):
                todo.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    base = node.module
                todo.append(base)
                todo.extend(f"{base}.{alias.name}" for alias in node.names)
    return found


def source_key(modules: tuple[str, ...], config, root: str | os.PathLike | None = None) -> str:
    """A cache key: sha256 over ``config`` (JSON), the torch and Python versions and the content
    of every file in :func:`source_closure` of ``modules``."""
    root = Path(root) if root is not None else REPO
    h = hashlib.sha256()
    h.update(json.dumps(config, sort_keys=True, default=str).encode())
    h.update(f"torch {torch.__version__} python {'.'.join(map(str, sys.version_info[:3]))}".encode())
    for name, path in sorted(source_closure(modules, root).items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:20]


#: The modules Claim 7.3's cached result is computed by (their imports are followed).
EXPERIMENT_MODULES = ("numerics.training", "numerics.emissions", "numerics.data")


def cache_dir_for(ctx) -> Path:
    """The cache folder of a check or figure context: ``ctx.cache_dir`` (set by ``fastslow
    reproduce``) or else ``default_cache_dir()``."""
    return Path(getattr(ctx, "cache_dir", None) or default_cache_dir())


def default_cache_dir() -> Path:
    """Where trained runs are kept: $FASTSLOW_CACHE, else out/cache."""
    return Path(os.environ.get("FASTSLOW_CACHE", Path("out") / "cache"))


# ---------------------------------------------------------------- the experiment
def experiment_configs(quick: bool, smoke: bool = False) -> dict:
    """The sizes of the experiment: quick (CI), full (``reproduce``) and smoke (a few seconds,
    for the notebook test: a demonstration, not evidence)."""
    if smoke:
        base = TrainConfig(T=32, d=16, steps=60, batch=16, lr=1e-2, gate_lr=3e-2, warmup=6, eval_every=20,
                           eval_batch=64)
        return {"base": base, "seeds": (0, 1, 2), "rho_ar": 0.9, "bayes_sequences": 500}
    if quick:
        base = TrainConfig(T=32, d=16, steps=100, batch=16, lr=1e-2, gate_lr=3e-2, warmup=10, eval_every=25)
        return {"base": base, "seeds": (0, 1, 2), "rho_ar": 0.9, "bayes_sequences": 4000}
    base = TrainConfig(T=64, d=16, steps=150, batch=16, lr=1e-2, gate_lr=3e-2, warmup=15, eval_every=25,
                       eval_batch=512)
    return {"base": base, "seeds": (0, 1, 2, 3), "rho_ar": 0.9, "bayes_sequences": 8000}


def run_experiment(quick: bool = True, seeds=None, cache_dir: str | os.PathLike | None = None,
                   progress: bool = False, smoke: bool = False, checkpoint_every: int = 50) -> dict:
    """Train {i.i.d., AR(1)} × {coupled, frozen} × seeds; return the curves, the Bayes-optimal
    losses of each data setting (numerics.emissions) and the summary.

    With ``cache_dir`` each run checkpoints into ``cache_dir/emissions_training/<key>/`` and
    resumes from there, and the finished result is kept as ``result.json`` beside the runs.
    ``<key>`` is :func:`source_key` of the experiment's modules and every setting, so an edit
    of any source file the runs execute, or another torch, starts afresh.  The returned dict
    is JSON-ready.
    """
    from numerics.emissions import bayes_loss_gap, topic_filter_losses
    from numerics.io import write_json

    spec = experiment_configs(quick, smoke)
    seeds = tuple(spec["seeds"] if seeds is None else seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds):
        raise ValueError(f"seeds={seeds!r} must be a non-empty sequence of integers")
    base = spec["base"]
    settings = {"iid": replace(base, rho=0.0), "ar1": replace(base, rho=spec["rho_ar"])}
    payload = {"settings": {k: c.as_dict() for k, c in settings.items()}, "seeds": seeds,
               "bayes_sequences": spec["bayes_sequences"]}
    # The Bayes-optimal losses are computed afresh on every call, cached result or not: they are cheap,
    # every verdict rests on them, and they are the generated code's part (topic_transition).
    bayes = {}
    for name, cfg in settings.items():
        data = cfg.data()
        bayes[name] = bayes_loss_gap(data, cfg.T, spec["bayes_sequences"], seed=EVAL_SEED + 1)
        on_eval = topic_filter_losses(eval_tokens(cfg), data.topics(), data.P, data.rho)
        bayes[name]["eval_per_seq"] = {k: v.mean(-1).tolist() for k, v in on_eval.items()}
    folder = None
    if cache_dir is not None:
        folder = Path(cache_dir) / "emissions_training" / source_key(EXPERIMENT_MODULES, payload)
        done = folder / "result.json"
        if done.exists():
            try:
                result = json.loads(done.read_text())
                for name in settings:
                    result["settings"][name]["bayes"] = bayes[name]
                result["summary"] = summarise(result)
                return result
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"cache file {done} is corrupt ({type(exc).__name__}: {exc}); "
                                 "delete it to retrain") from exc
    result = {"quick": quick, "smoke": smoke, "seeds": list(seeds), "settings": {}}
    for name, cfg in settings.items():
        runs = {}
        for arm in ARMS:
            runs[arm] = []
            for seed in seeds:
                run_ckpt = folder / f"{name}_{arm}_seed{seed}" if folder is not None else None
                out = train(replace(cfg, arm=arm), seed, checkpoint=run_ckpt, progress=progress,
                            checkpoint_every=checkpoint_every)
                runs[arm].append({"seed": seed, "curves": out["curves"]})
        result["settings"][name] = {"config": cfg.as_dict(), "bayes": bayes[name], "runs": runs}
    if folder is not None:
        write_json(folder / "result.json", result)
    result["summary"] = summarise(result)
    return result


# The decision rule of Claim 7.3, fixed before any run.  Per setting, with n seeds, each seed
# training both arms from the same initialisation on the same batches (a paired design):
#   d_s      = final eval loss(frozen, s) − final eval loss(coupled, s);  gap = mean_s d_s
#   se_seed  = sd(d_s)/√n, the training noise (seed to seed);
#   se_eval  = SE over the eval sequences of the seed-mean per-sequence difference (the eval set
#              is fixed, so the seed spread does not contain its sampling noise);
#   crit     = sqrt((t·se_seed)² + (Z·se_eval)²), t the two-sided Student t quantile at level
#              ALPHA with n − 1 degrees of freedom, Z for the eval-set SE (≥ 64 sequences);
#   excess   = final eval loss − the Bayes loss of the data model on the same eval sequences
#              (frozen: the current block only; coupled: the whole history), with its SE.
# Statements:
#   i.i.d.:    |gap| ≤ crit (the Bayes gap is 0: the gate can only add noise), and
#              gate_iid ≤ GATE_RATIO·gate_ar1 (it stays near zero);
#   every arm: excess ≥ −Z·SE (no model beats the Bayes risk of the information it sees);
#   AR(1):     gap > crit (control: the gate helps beyond noise), and its size.  On the same
#              sequences gap − G = excess(frozen) − excess(coupled) exactly (G the Bayes gap).
#              Model of finite training: the coupled arm learns the frozen arm's fast path plus
#              the slow channel, with the same steps, so excess(coupled) ≥ excess(frozen) and
#              gap ≤ G + crit + Z·se_G; and training resolves the effect: the coupled arm's
#              extra excess is below (1 − MIN_CAPTURE)·G, so gap ≥ MIN_CAPTURE·G.  Window
#              [0.5, 1 + (crit + Z·se_G)/G]·G, about [0.5, 1.3]·G here: a factor ≈ 2.6.
ALPHA = 0.01
Z = 3.0
GATE_RATIO = 0.25
MIN_CAPTURE = 0.5


def t_quantile(n: int) -> float:
    """Two-sided Student t critical value at level ALPHA with n − 1 degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(1 - ALPHA / 2, max(1, n - 1)))


def paired_gap(frozen: torch.Tensor, coupled: torch.Tensor) -> dict:
    """The paired loss gap of the decision rule above from per-sequence final eval losses
    (seeds, sequences) of each arm: gap = mean_s d_s, se_seed, se_eval, t and crit."""
    n = coupled.shape[0]
    d_s = (frozen - coupled).mean(-1)
    d_seq = (frozen - coupled).mean(0)
    se_seed = float(d_s.std() / math.sqrt(n)) if n > 1 else math.inf
    se_eval = float(d_seq.std() / math.sqrt(d_seq.numel()))
    t = t_quantile(n)
    return {"gap": float(d_s.mean()), "gap_per_seed": d_s.tolist(), "se_seed": se_seed, "se_eval": se_eval,
            "t": t, "crit": math.hypot(t * se_seed, Z * se_eval)}


def summarise(result: dict) -> dict:
    """Per setting: mean ± std of final losses per arm, the paired gap and its noise, the
    excess over the Bayes losses, the gates, and the decision rule's verdicts."""
    out = {}
    for name, s in result["settings"].items():
        row = {}
        per_seq = {}
        for arm, bayes_key in (("coupled", "hist"), ("frozen", "local")):
            finals = torch.tensor([r["curves"]["eval_loss"][-1] for r in s["runs"][arm]], dtype=torch.float64)
            per_seq[arm] = torch.tensor([r["curves"]["final_eval_per_seq"] for r in s["runs"][arm]],
                                        dtype=torch.float64)  # (seeds, sequences)
            bayes_seq = torch.tensor(s["bayes"]["eval_per_seq"][bayes_key], dtype=torch.float64)
            excess_seq = per_seq[arm].mean(0) - bayes_seq
            row[arm] = {"mean": float(finals.mean()), "std": float(finals.std()) if finals.numel() > 1 else 0.0,
                        "bayes": float(bayes_seq.mean()), "excess": float(excess_seq.mean()),
                        "excess_se": float(excess_seq.std() / math.sqrt(excess_seq.numel()))}
        row.update(paired_gap(per_seq["frozen"], per_seq["coupled"]))
        row["pooled_std"] = math.sqrt((row["coupled"]["std"] ** 2 + row["frozen"]["std"] ** 2) / 2)
        gates = [max(abs(g[-1]) for g in r["curves"]["gates"]) for r in s["runs"]["coupled"]]
        row["gate"] = sum(gates) / len(gates)
        row["bayes_gap"] = s["bayes"]["gap"]
        row["bayes_se"] = s["bayes"]["se_gap"]
        out[name] = row
    iid, ar = out["iid"], out["ar1"]
    G = ar["bayes_gap"]
    upper = G + ar["crit"] + Z * ar["bayes_se"]
    lower = MIN_CAPTURE * G
    beats = {f"{name}/{arm}": out[name][arm]["excess"] / (Z * out[name][arm]["excess_se"])
             for name in ("iid", "ar1") for arm in ARMS}
    out["verdict"] = {
        "iid_within_noise": abs(iid["gap"]) <= iid["crit"],
        "iid_gate_near_zero": iid["gate"] <= GATE_RATIO * ar["gate"],
        "no_arm_beats_bayes": all(v >= -1.0 for v in beats.values()),
        "excess_over_z_se": beats,
        "ar1_gap_beyond_noise": ar["gap"] > ar["crit"],
        "ar1_gap_ratio": ar["gap"] / G if G > 0 else float("nan"),
        "ar1_window": [lower / G if G > 0 else float("nan"), upper / G if G > 0 else float("nan")],
        "ar1_gap_size_ok": lower <= ar["gap"] <= upper,
    }
    return out
