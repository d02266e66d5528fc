"""Claim 7.3 in small: train the hierarchical model on topic-block data, coupled vs frozen gate.

Model (THEORY.md §0, hierarchical variant): token embedding -> ``numerics.random_stack``
(fast path + slow block-mean path + zero-initialised gate per layer) -> final LN ->
linear head.  The fast path is restricted to the *current block* (causal within the
block, ``fast_kernel="local"``), so that — exactly as in Claim 7.2 — the frozen model
predicts from the current block alone and the only route to earlier blocks is the
gated slow path.  ``fast_kernel="causal"`` gives the paper's fast path (all earlier
tokens); then the frozen model can reach earlier blocks itself and the gate's effect is
no longer the 7.2 information gap: in a quick run (3 seeds) the gate opened on i.i.d.
blocks too (coupled 0.04 nats better), since without positions an all-token causal
average cannot isolate the current block, and the slow path's history mean helps it.

Arms: ``coupled`` (gates learn) and ``frozen`` (every gate stays exactly 0,
requires_grad False).  At g = 0 the slow-path weights get exactly zero gradient, so the
two arms are the same computation until the gate moves; the gate has its own learning
rate (``gate_lr``), since what the data decides is the sign and size of ∂R/∂g at g = 0.

Training is deterministic on the CPU for a fixed seed (each batch drawn from its own
seed), resumable from an atomically written checkpoint, and shows a tqdm bar.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, asdict, replace
from pathlib import Path

import torch
from torch import nn

from numerics import random_stack
from numerics.data import TopicBlocks
from numerics.stack import LayerNorm

FAST_KERNELS = ("local", "causal")
ARMS = ("coupled", "frozen")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class TrainConfig:
    """Data, model and optimiser of one training run (the seed is passed separately)."""

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
    eval_every: int = 25
    eval_batch: int = 256
    dtype: str = "float32"

    def __post_init__(self):
        for name in ("T", "d", "layers", "heads", "steps", "batch", "eval_every", "eval_batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        if self.fast_kernel not in FAST_KERNELS:
            raise ValueError(f"fast_kernel={self.fast_kernel!r} is not one of {', '.join(FAST_KERNELS)}")
        if self.arm not in ARMS:
            raise ValueError(f"arm={self.arm!r} is not one of {', '.join(ARMS)}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r} is not one of {', '.join(DTYPES)}")
        for name in ("lr", "gate_lr"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) > 0):
                raise ValueError(f"{name}={getattr(self, name)!r} must be a positive number")
        self.data()  # validates V, M, P, rho, concentration

    def data(self) -> TopicBlocks:
        return TopicBlocks(V=self.V, M=self.M, P=self.P, rho=self.rho,
                           concentration=self.concentration, seed=self.data_seed)

    def as_dict(self) -> dict:
        return asdict(self)


def local_causal_bias(T: int, P: int, heads: int, dtype) -> torch.Tensor:
    """Score bias (heads, T, T): token i sees token j iff j ≤ i and both lie in the same block."""
    i = torch.arange(T)
    allowed = (i[None, :] <= i[:, None]) & (i[None, :] // P == i[:, None] // P)
    bias = torch.zeros(heads, T, T, dtype=dtype)
    return bias.masked_fill(~allowed, -math.inf)


class HierarchicalLM(nn.Module):
    """Embedding -> hierarchical stack (fast + gated slow path) -> LN -> head; logits (..., T, V)."""

    def __init__(self, cfg: TrainConfig, seed: int):
        super().__init__()
        dtype = DTYPES[cfg.dtype]
        gen = torch.Generator().manual_seed(10_007 * seed + 1)
        self.embed = nn.Parameter(torch.randn(cfg.V, cfg.d, generator=gen, dtype=torch.float64).to(dtype))
        self.stack = random_stack(cfg.T, cfg.d, cfg.layers, cfg.heads, "causal", P=cfg.P, seed=seed, dtype=dtype)
        if cfg.fast_kernel == "local":
            for layer in self.stack.layers:
                layer.attn.bias = local_causal_bias(cfg.T, cfg.P, cfg.heads, dtype)
        self.ln_f = LayerNorm(cfg.d).to(dtype)
        self.head = nn.Parameter((torch.randn(cfg.d, cfg.V, generator=gen, dtype=torch.float64)
                                  / math.sqrt(cfg.d)).to(dtype))
        self.head_bias = nn.Parameter(torch.zeros(cfg.V, dtype=dtype))
        if cfg.arm == "frozen":
            for g in self.gates():
                g.requires_grad_(False)

    def gates(self) -> list[nn.Parameter]:
        return [layer.gate for layer in self.stack.layers]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.ln_f(self.stack(self.embed[tokens])) @ self.head + self.head_bias


def next_token_loss(model: HierarchicalLM, tokens: torch.Tensor, positions: slice = slice(None)) -> torch.Tensor:
    """Mean cross-entropy of predicting token t+1 from tokens ≤ t (nats/token), over ``positions``
    of the predicted token (the first token of the sequence is never predicted)."""
    logits = model(tokens)[:, :-1]
    target = tokens[:, 1:]
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1),
                                       reduction="none").reshape(target.shape)
    return loss[:, positions].mean()


def batch_seed(seed: int, step: int) -> int:
    return 1_000_003 * (seed + 1) + step


EVAL_SEED = 999_999_937  # the held-out batch: the same for every run


def make_optimizer(model: HierarchicalLM, cfg: TrainConfig) -> torch.optim.Optimizer:
    gate_ids = {id(g) for g in model.gates()}
    rest = [p for p in model.parameters() if id(p) not in gate_ids and p.requires_grad]
    groups = [{"params": rest, "lr": cfg.lr}]
    gates = [g for g in model.gates() if g.requires_grad]
    if gates:
        groups.append({"params": gates, "lr": cfg.gate_lr})
    return torch.optim.Adam(groups)


def _atomic_save(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".pt.tmp")
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_checkpoint(path: Path) -> dict:
    """Read a checkpoint; a missing key or unreadable file is a ValueError naming the file."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        for key in ("config", "seed", "step", "model", "optimizer", "curves"):
            state[key]
    except Exception as exc:  # torch raises many types for a truncated or foreign file
        raise ValueError(f"checkpoint {path} is corrupt or not a fastslow training checkpoint "
                         f"({type(exc).__name__}: {exc}); delete it to start over") from exc
    return state


@contextmanager
def torch_threads(n: int):
    """Run the block with ``n`` intra-op threads, then restore the caller's setting.  These
    models are tiny: one thread is fastest (on a shared 2-core machine, 25x faster than two)
    and makes the result independent of the caller's thread count."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train(cfg: TrainConfig, seed: int, checkpoint: str | os.PathLike | None = None,
          checkpoint_every: int = 50, stop_after: int | None = None, progress: bool = False,
          threads: int = 1) -> dict:
    """Train one run; returns its curves.  With ``checkpoint`` the run resumes from that file
    when it exists (same config and seed, else ValueError) and saves to it every
    ``checkpoint_every`` steps and at the end.  ``stop_after`` ends the call early at that
    step (an interruption, for tests); resuming then continues the identical run."""
    with torch_threads(threads):
        return _train(cfg, seed, checkpoint, checkpoint_every, stop_after, progress)


def _train(cfg, seed, checkpoint, checkpoint_every, stop_after, progress) -> dict:
    from tqdm import tqdm

    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed={seed!r} must be an integer")
    model = HierarchicalLM(cfg, seed)
    opt = make_optimizer(model, cfg)
    data = cfg.data()
    curves = {"step": [], "train_loss": [], "eval_step": [], "eval_loss": [],
              "gates": [[] for _ in range(cfg.layers)]}
    start = 0
    path = Path(checkpoint) if checkpoint is not None else None
    if path is not None and path.exists():
        state = load_checkpoint(path)
        if state["config"] != cfg.as_dict() or state["seed"] != seed:
            raise ValueError(f"checkpoint {path} belongs to another run (config or seed differ)")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        curves, start = state["curves"], state["step"]
    eval_tokens, _ = data.sample(cfg.eval_batch, cfg.T, EVAL_SEED)

    def save(step):
        if path is not None:
            _atomic_save({"config": cfg.as_dict(), "seed": seed, "step": step, "model": model.state_dict(),
                          "optimizer": opt.state_dict(), "curves": curves}, path)

    end = cfg.steps if stop_after is None else min(stop_after, cfg.steps)
    bar = tqdm(range(start, end), desc=f"{cfg.arm} rho={cfg.rho} seed={seed}", leave=False,
               disable=not progress)
    for step in bar:
        tokens, _ = data.sample(cfg.batch, cfg.T, batch_seed(seed, step))
        loss = next_token_loss(model, tokens)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        curves["step"].append(step + 1)
        curves["train_loss"].append(loss.item())
        for l, gate in enumerate(model.gates()):
            curves["gates"][l].append(gate.item())
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            with torch.no_grad():
                curves["eval_step"].append(step + 1)
                curves["eval_loss"].append(float(next_token_loss(model, eval_tokens)))
            bar.set_postfix(eval=f"{curves['eval_loss'][-1]:.4f}",
                            gate=f"{max(abs(g[-1]) for g in curves['gates']):.3f}")
        if (step + 1) % checkpoint_every == 0:
            save(step + 1)
    save(end)
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


# ---------------------------------------------------------------- the experiment
def experiment_configs(quick: bool, smoke: bool = False) -> dict:
    """The sizes of the experiment: quick (CI, ≲ 60 s on 2 idle cores), full (≲ 10 min), and
    smoke (a few seconds, for the notebook test: a demonstration, not evidence)."""
    if smoke:
        base = TrainConfig(T=32, d=16, layers=2, heads=2, steps=80, batch=16, eval_every=20, eval_batch=64)
        return {"base": base, "seeds": (0, 1), "rho_ar": 0.9, "bayes_sequences": 500}
    if quick:
        base = TrainConfig(T=32, d=32, layers=2, heads=2, steps=150, batch=16, eval_every=25)
        return {"base": base, "seeds": (0, 1, 2), "rho_ar": 0.9, "bayes_sequences": 2000}
    base = TrainConfig(T=64, d=32, layers=2, heads=2, steps=500, batch=32, eval_every=25)
    return {"base": base, "seeds": (0, 1, 2, 3), "rho_ar": 0.9, "bayes_sequences": 8000}


def _cache_key(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _source_hash() -> str:
    """Hash of the code a cached run depends on, so that an edit invalidates the cache."""
    import numerics.data, numerics.emissions, numerics.stack
    from numerics.generated import emissions as gen

    h = hashlib.sha256()
    for mod in (numerics.data, numerics.emissions, numerics.stack, gen):
        h.update(Path(mod.__file__).read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:16]


def cache_dir_for(ctx) -> Path:
    """The cache folder of a check or figure context: ``ctx.cache_dir`` (set by ``fastslow
    reproduce``) or else ``default_cache_dir()``."""
    return Path(getattr(ctx, "cache_dir", None) or default_cache_dir())


def default_cache_dir() -> Path:
    """Where the experiment caches its curves: $FASTSLOW_CACHE, else out/cache."""
    return Path(os.environ.get("FASTSLOW_CACHE", Path("out") / "cache"))


def run_experiment(quick: bool = True, seeds=None, cache_dir: str | os.PathLike | None = None,
                   progress: bool = False, smoke: bool = False) -> dict:
    """Train {i.i.d., AR(1)} × {coupled, frozen} × seeds; return curves, summaries and the
    Bayes-optimal loss gap of each data setting (numerics.emissions.bayes_loss_gap).

    With ``cache_dir`` the result is read from / written to
    ``cache_dir/emissions_training_<quick|full>_<hash>.json`` (hash of every setting), so a
    figure and a check share one run.  The returned dict is JSON-ready.
    """
    from numerics.emissions import bayes_loss_gap

    spec = experiment_configs(quick, smoke)
    seeds = tuple(spec["seeds"] if seeds is None else seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds):
        raise ValueError(f"seeds={seeds!r} must be a non-empty sequence of integers")
    base = spec["base"]
    settings = {"iid": replace(base, rho=0.0), "ar1": replace(base, rho=spec["rho_ar"])}
    key_payload = {"settings": {k: c.as_dict() for k, c in settings.items()}, "seeds": seeds,
                   "bayes_sequences": spec["bayes_sequences"], "sources": _source_hash()}
    cache = None
    if cache_dir is not None:
        size = "smoke" if smoke else "quick" if quick else "full"
        cache = Path(cache_dir) / f"emissions_training_{size}_{_cache_key(key_payload)}.json"
        if cache.exists():
            try:
                return json.loads(cache.read_text())
            except json.JSONDecodeError as exc:
                raise ValueError(f"cache file {cache} is corrupt ({exc}); delete it to retrain") from exc
    result = {"quick": quick, "smoke": smoke, "seeds": list(seeds), "settings": {}}
    for name, cfg in settings.items():
        bayes = bayes_loss_gap(cfg.data(), cfg.T, spec["bayes_sequences"], seed=EVAL_SEED + 1)
        runs = {}
        for arm in ARMS:
            runs[arm] = []
            for seed in seeds:
                out = train(replace(cfg, arm=arm), seed, progress=progress)
                runs[arm].append({"seed": seed, "curves": out["curves"]})
        result["settings"][name] = {"config": cfg.as_dict(), "bayes": bayes, "runs": runs}
    result["summary"] = summarise(result)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, suffix=".json.tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(result, fh)
        os.replace(tmp, cache)
    return result


# The decision rule of Claim 7.3, fixed before any run (not tuned):
#   gap = mean_seeds(final eval loss, frozen) − mean_seeds(final eval loss, coupled)
#   pooled = sqrt((std_coupled² + std_frozen²)/2)  (sample std over seeds)
#   gate = mean over seeds of max over layers |g_ℓ| at the end
#   i.i.d.: |gap| ≤ 2·pooled (within seed noise) and gate_iid ≤ gate_ar1 / 4 (stays near zero)
#   AR(1):  gap > 2·pooled (the gate helps, beyond seed noise) and
#           0.25 ≤ gap / Bayes gap ≤ 1.5 (the rough size Claim 7.2 predicts)
NOISE_FACTOR = 2.0
GATE_RATIO = 0.25
SIZE_RANGE = (0.25, 1.5)


def summarise(result: dict) -> dict:
    """Mean ± std of final losses per arm, the gap, the gates and the decision rule's verdicts."""
    out = {}
    for name, s in result["settings"].items():
        row = {}
        for arm in ARMS:
            finals = torch.tensor([r["curves"]["eval_loss"][-1] for r in s["runs"][arm]], dtype=torch.float64)
            row[arm] = {"mean": float(finals.mean()),
                        "std": float(finals.std()) if finals.numel() > 1 else 0.0}
        gates = [max(abs(g[-1]) for g in r["curves"]["gates"]) for r in s["runs"]["coupled"]]
        row["gap"] = row["frozen"]["mean"] - row["coupled"]["mean"]
        row["pooled_std"] = math.sqrt((row["coupled"]["std"] ** 2 + row["frozen"]["std"] ** 2) / 2)
        row["gate"] = sum(gates) / len(gates)
        row["bayes_gap"] = s["bayes"]["gap"]
        row["bayes_se"] = s["bayes"]["se_gap"]
        out[name] = row
    iid, ar = out["iid"], out["ar1"]
    ratio = ar["gap"] / ar["bayes_gap"] if ar["bayes_gap"] > 0 else float("nan")
    out["verdict"] = {
        "iid_within_noise": abs(iid["gap"]) <= NOISE_FACTOR * iid["pooled_std"],
        "iid_gate_near_zero": iid["gate"] <= GATE_RATIO * ar["gate"],
        "ar1_gap_beyond_noise": ar["gap"] > NOISE_FACTOR * ar["pooled_std"],
        "ar1_gap_ratio": ratio,
        "ar1_gap_size_ok": SIZE_RANGE[0] <= ratio <= SIZE_RANGE[1],
    }
    return out
