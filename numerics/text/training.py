"""The trainer (one for Claim 7.3 and ``fastslow train``) and Claim 7.3's experiment.

Model (docs/theory.md §0): token embedding -> an untied stack (``numerics.stacks.stack``) -> final
LN -> linear head, trained on next-token cross-entropy.  The hierarchical stack adds the
slow block-mean path with a zero-initialised gate per layer.

:func:`fit` is the training loop: AdamW, a cosine learning-rate schedule with linear
warm-up, gradient-norm clipping, a validation loss every ``eval_every`` steps, a tqdm bar
(loss and tokens/s) and a checkpoint (``numerics.storage.checkpoint``) every ``checkpoint_every``
steps, from which an interrupted run resumes.  Each batch is drawn from its own seed
(``batch_seed(seed, step)``) and the learning rate is a function of the step, so on the
CPU a resumed run is bit-identical to an uninterrupted one.

The model and its loss are ``numerics/text/language_model.py``, the cache key ``numerics/storage/source_key.py``,
the experiment's decision rule ``numerics/families/decision_rule.py``; all are importable from here.

Claim 7.3 in small: the hierarchical model on topic-block data (``numerics.families.data``),
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

from numerics.storage import checkpoint as ckpt
from numerics.families.data import TopicBlocks
# the trainer's public face: the model, the cache key and the decision rule, importable from here
from numerics.families.decision_rule import ALPHA, ARMS, GATE_RATIO, MIN_CAPTURE, Z, paired_gap, summarise, t_quantile  # noqa: F401
from numerics.text.language_model import LanguageModel, local_causal_bias, next_token_loss, next_token_losses
from numerics.storage.source_key import (  # noqa: F401
    REPO, SOURCE_PACKAGES, cache_dir_for, default_cache_dir, source_closure, source_key)
from numerics.stacks.spec import StackSpec

FAST_KERNELS = ("local", "causal")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


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
    ``checkpoint`` (a folder) the run claims the folder (``numerics.storage.checkpoint.claim``: locked
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


class HierarchicalLM(LanguageModel):
    """Claim 7.3's model: the hierarchical stack (causal, blocks of P, gate 0) of ``cfg``."""

    def __init__(self, cfg: TrainConfig, seed: int):
        dtype = DTYPES[cfg.dtype]
        stack = StackSpec.of(T=cfg.T, d=cfg.d, layers=cfg.layers, heads=cfg.heads, kernel="causal", P=cfg.P, seed=seed, dtype=dtype).build()
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
    raw_t, info_t = torch.tensor(raw, dtype=torch.float64, device="cpu"), torch.tensor(info, dtype=torch.float64, device="cpu")  # host: Python floats
    n = math.sqrt(n_batches)
    return {"raw": float(raw_t.mean()), "se_raw": float(raw_t.std() / n),
            "info": float(info_t.mean()), "se_info": float(info_t.std() / n)}


#: The modules Claim 7.3's cached result is computed by (their imports are followed).
EXPERIMENT_MODULES = ("numerics.text.training", "numerics.families.emissions", "numerics.families.data")


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
    losses of each data setting (numerics.families.emissions) and the summary.

    With ``cache_dir`` each run checkpoints into ``cache_dir/emissions_training/<key>/`` and
    resumes from there, and the finished result is kept as ``result.json`` beside the runs.
    ``<key>`` is :func:`source_key` of the experiment's modules and every setting, so an edit
    of any source file the runs execute, or another torch, starts afresh.  The returned dict
    is JSON-ready.
    """
    from numerics.families.emissions import bayes_loss_gap, topic_filter_losses
    from numerics.storage.io import write_json

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


