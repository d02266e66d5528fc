"""The depth study's stacks (docs/depth_study.md): GPT-2's block trained on the shipped text at one depth L,
in one of two arms, with the model saved at fixed steps from initialisation to the end.

- ``gpt2``: residual step h = 1 and every layer drawn i.i.d. (the theory as GPT-2 is trained);
- ``smooth``: h = 1/L and θ_ℓ = θ(ℓ/L) sampled from a smooth random path (the ODE premise built in).

Both use GPT-2's block (pre-LN, causal, GELU-new MLP, LN ε = 1e-5, attention biases), the same width,
data and token budget, and the project's trainer (``numerics.text.training.fit``: AdamW, warm-up and cosine
schedule, clipping).  Snapshots of the whole language model are written at ``cfg.snapshots`` through
the trainer's ``monitor`` hook; the run checkpoints and resumes like every other training run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

ARMS = ("gpt2", "smooth")
GPT2_BLOCK = {"activation": "gelu_new", "ln_eps": 1e-5, "attn_bias": True}


@dataclass(frozen=True)
class StudyConfig:
    """One cell of the study: sizes, arm, token budget (steps × batch × T) and the snapshot steps."""

    layers: int = 4
    arm: str = "gpt2"
    d: int = 32
    heads: int = 4
    T: int = 32
    seed: int = 0
    steps: int = 100
    batch: int = 8
    lr: float = 2e-3
    weight_decay: float = 0.01
    warmup: int = 10
    clip: float = 1.0
    eval_every: int = 10
    eval_windows: int = 32
    snapshots: tuple = (0, 10, 20, 40, 70, 100)

    def __post_init__(self):
        if self.arm not in ARMS:
            raise ValueError(f"--arm {self.arm!r} is not one of {', '.join(ARMS)}")
        for name in ("layers", "d", "heads", "T", "steps", "batch", "eval_every", "eval_windows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"--{name}={value!r} must be a positive integer")
        if self.d % self.heads:
            raise ValueError(f"--heads={self.heads} does not divide --d={self.d}")
        if self.T < 2:
            raise ValueError(f"--T={self.T} must be at least 2 (a next token to predict)")
        snaps = tuple(int(s) for s in self.snapshots)
        object.__setattr__(self, "snapshots", snaps)
        if not snaps or snaps[0] != 0 or snaps[-1] != self.steps or list(snaps) != sorted(set(snaps)):
            raise ValueError(f"--snapshots {' '.join(map(str, snaps))}: must rise strictly from 0 to --steps={self.steps}")
        if any(s % self.eval_every for s in snaps):
            raise ValueError(f"--snapshots {' '.join(map(str, snaps))}: must be multiples of eval_every={self.eval_every} "
                             "(the trainer's monitor runs at validation steps)")
        self.optimiser()

    @property
    def h(self) -> float:
        """The residual step: 1 (GPT-2) or 1/L (the smooth arm)."""
        return 1.0 if self.arm == "gpt2" else 1.0 / self.layers

    @property
    def tokens(self) -> int:
        return self.steps * self.batch * self.T

    def optimiser(self):
        from numerics.text.training import Optimiser

        return Optimiser(steps=self.steps, lr=self.lr, gate_lr=self.lr, weight_decay=self.weight_decay,
                         warmup=min(self.warmup, self.steps - 1), clip=self.clip,
                         eval_every=min(self.eval_every, self.steps))

    def spec(self, dtype: str = "float32", device: str = "cpu"):
        """The stack's StackSpec: GPT-2's block; h = 1 and i.i.d. layers, or h = 1/L and a smooth path."""
        from numerics.stacks.spec import StackSpec

        knobs = dict(GPT2_BLOCK, **({"step": 1.0} if self.arm == "gpt2" else {"weight_path": "smooth"}))
        return StackSpec(T=self.T, d=self.d, layers=self.layers, heads=self.heads, kernel="causal",
                         seed=self.seed, dtype=dtype, device=device, knobs=knobs)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["snapshots"] = list(self.snapshots)
        return out

    def label(self) -> str:
        return f"{self.arm}-L{self.layers}-d{self.d}-H{self.heads}-T{self.T}-N{self.tokens}-seed{self.seed}"

    def key(self) -> str:
        """A hash of every field: the cell's folder name ends with it."""
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:12]

    def with_depth(self, layers: int, arm: str | None = None) -> "StudyConfig":
        return replace(self, layers=layers, arm=arm or self.arm)


def build_model(cfg: StudyConfig, dtype=torch.float32):
    """The language model of ``cfg`` at initialisation (embedding and head drawn from the seed)."""
    from numerics.text.corpus import VOCAB
    from numerics.text.training import LanguageModel

    name = {torch.float32: "float32", torch.float64: "float64"}[dtype]
    return LanguageModel(VOCAB, cfg.spec(dtype=name).build(), cfg.seed, dtype=dtype)


def cell_dir(cfg: StudyConfig, cache: str | Path) -> Path:
    return Path(cache) / "depth_study" / f"{cfg.label()}-{cfg.key()}"


def snapshot_path(folder: Path, step: int) -> Path:
    return Path(folder) / f"snapshot-{step:06d}.pt"


def train_cell(cfg: StudyConfig, cache: str | Path, *, device: str = "cpu", progress: bool = False,
               threads: int = 1) -> Path:
    """Train (or resume, or reuse) the cell ``cfg`` under ``cache``; return its folder, which holds a
    snapshot of the model's state at every step of ``cfg.snapshots`` and ``run.json`` (curves and
    provenance)."""
    from numerics.storage import checkpoint as ckpt
    from numerics.text.corpus import ByteCorpus
    from numerics.storage.io import atomic_path, write_json
    from numerics.text.training import batch_seed, fit, torch_threads

    folder = cell_dir(cfg, cache)
    done = folder / "run.json"
    if done.exists() and all(snapshot_path(folder, s).exists() for s in cfg.snapshots):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    corpus = ByteCorpus.load()
    wanted = set(cfg.snapshots)

    def snapshot(model) -> dict:
        step = len(curves_probe["seen"]) * cfg.eval_every if curves_probe["seen"] else 0
        curves_probe["seen"].append(step)
        if step in wanted:
            with atomic_path(snapshot_path(folder, step)) as tmp:
                torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, tmp)
        return {}

    with torch_threads(threads):
        model = build_model(cfg)
        curves_probe = {"seen": []}
        identity = {"kind": "byte-corpus", "config": {**cfg.as_dict(), "corpus": corpus.sha256}}
        path = folder / "checkpoint"
        if ckpt.exists(path):  # resumed: the monitor's count starts at the saved step
            curves_probe["seen"] = [0] * (int(ckpt.read_manifest(path)["step"]) // cfg.eval_every + 1)
        curves = fit(model, cfg.optimiser(),
                     lambda step: corpus.windows("train", cfg.batch, cfg.T, batch_seed(cfg.seed, step)),
                     corpus.validation_windows(cfg.T, cfg.eval_windows), identity=identity, checkpoint=path,
                     checkpoint_every=cfg.eval_every * 2, progress=progress, desc=f"study {cfg.label()}",
                     device=device, monitor=snapshot)
    write_json(done, {"config": cfg.as_dict(), "curves": {k: curves[k] for k in ("eval_step", "eval_loss", "seconds",
                                                                                   "tokens")},
                      "corpus": corpus.sha256, "torch": torch.__version__})
    return folder


def load_snapshot(cfg: StudyConfig, folder: Path, step: int, dtype=torch.float64, device: str = "cpu"):
    """The language model of ``cfg`` with the weights saved at ``step`` (float64 for measuring)."""
    model = build_model(cfg, dtype=dtype)
    state = torch.load(snapshot_path(folder, step), weights_only=True, map_location="cpu")
    model.load_state_dict({k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()})
    return model.to(device)
