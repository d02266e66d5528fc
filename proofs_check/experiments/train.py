"""``fastslow train``: train the stack of docs/theory.md §0 on the CPython documentation text.

The model is ``numerics.text.training.LanguageModel``: byte embedding -> the untied stack
(``StackSpec(..., kernel="causal")``; ``hierarchical`` adds the slow block-mean path of
block length P with its zero-initialised gates) -> LN -> head.  The trainer is
``numerics.text.training.fit`` (AdamW, cosine schedule, clipping, validation every
``eval_every`` steps), the one Claim 7.3 uses, and the checkpoint is its folder format
(``numerics.storage.checkpoint``).  The manifest adds what ``fastslow check --stack`` needs: the
stack's spec, the corpus's sha256 and unigram entropy, and the package and git versions.
"""

from __future__ import annotations

import math
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

ARCHS = ("preln", "hierarchical")
#: the most optimiser steps a run may take: the curves keep a few numbers per step, and a CPU
#: takes about 0.01-1 s a step at the shipped sizes (10⁶ steps: hours to days).
MAX_STEPS = 1_000_000
DEFAULT_OUT = Path("out") / "checkpoints"


@dataclass(frozen=True)
class TextConfig:
    """One text-training run: the stack's sizes, the token budget and the optimiser."""

    arch: str = "preln"
    d: int = 128
    layers: int = 6
    heads: int = 4
    T: int = 256
    P: int = 8
    tokens: int = 500_000
    seed: int = 0
    batch: int = 8
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_fraction: float = 0.05
    clip: float = 1.0
    eval_every: int = 50
    eval_windows: int = 64
    dtype: str = "float32"
    freeze_gates: bool = False   # hierarchical: keep every gate at 0 (the fast-only model, same computation)

    def __post_init__(self):
        if self.arch not in ARCHS:
            raise ValueError(f"--arch {self.arch!r} is not one of {', '.join(ARCHS)}")
        for name in ("d", "layers", "heads", "T", "P", "tokens", "batch", "eval_every", "eval_windows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"--{name.replace('_', '-')}={value!r} must be a positive integer")
        if self.d % self.heads:
            raise ValueError(f"--heads={self.heads} does not divide --d={self.d}")
        if self.T < 2:
            raise ValueError(f"--T={self.T} must be at least 2 (a next token to predict)")
        if self.arch == "hierarchical" and self.T % self.P:
            raise ValueError(f"--P={self.P} does not divide --T={self.T} (blocks of P tokens)")
        if self.freeze_gates and self.arch != "hierarchical":
            raise ValueError("--freeze-gates needs --arch hierarchical (only its slow path has gates)")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction={self.warmup_fraction!r} must lie in [0, 1)")
        if not (0 <= self.seed < 2 ** 63 - 1):
            raise ValueError(f"--seed={self.seed} must lie in [0, 2**63 - 1)")
        if self.steps > MAX_STEPS:
            raise ValueError(f"--tokens={self.tokens} takes {self.steps:,} optimiser steps at --batch={self.batch} "
                             f"--T={self.T}, more than the limit of {MAX_STEPS:,}: lower --tokens (at most "
                             f"{MAX_STEPS * self.batch * self.T:,} here) or raise --batch")
        self.optimiser()

    @property
    def steps(self) -> int:
        """Optimiser steps: the token budget in batches of ``batch`` windows of T tokens."""
        return max(1, math.ceil(self.tokens / (self.batch * self.T)))

    def optimiser(self):
        from numerics.text.training import Optimiser

        return Optimiser(steps=self.steps, lr=self.lr, gate_lr=self.lr, weight_decay=self.weight_decay,
                         warmup=min(self.steps - 1, int(self.warmup_fraction * self.steps)), clip=self.clip,
                         eval_every=min(self.eval_every, self.steps))

    def spec(self, device: str = "cpu"):
        """The stack as a StackSpec (the one ``fastslow check --stack`` rebuilds)."""
        from numerics.stacks.spec import StackSpec

        return StackSpec(T=self.T, d=self.d, layers=self.layers, heads=self.heads, kernel="causal",
                         P=self.P if self.arch == "hierarchical" else None, arch="preln", seed=self.seed,
                         dtype=self.dtype, device=device)

    def as_dict(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        frozen = "-frozen" if self.freeze_gates else ""
        return (f"{self.arch}{frozen}-d{self.d}-L{self.layers}-H{self.heads}-T{self.T}-P{self.P}-N{self.tokens}"
                f"-seed{self.seed}")


def git_hash() -> str | None:
    """This checkout's commit, or None where there is no git or no repository."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parents[2])
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastslow")
    except PackageNotFoundError:
        return "unknown"


def training_estimate(cfg: TextConfig) -> int:
    """Estimated peak bytes of training ``cfg`` (``numerics.stacks.memory.training_bytes``)."""
    import torch

    from numerics.text.corpus import VOCAB
    from numerics.stacks.memory import training_bytes

    return training_bytes(cfg.T, cfg.d, cfg.layers, cfg.heads, cfg.P if cfg.arch == "hierarchical" else None,
                          batch=cfg.batch, vocab=VOCAB, eval_batch=cfg.eval_windows,
                          dtype=torch.float32 if cfg.dtype == "float32" else torch.float64)


def check_training_fits(cfg: TextConfig, device: str = "cpu", copies: int = 1) -> None:
    """Refuse, before any work, a training run (``copies`` at once) that does not fit in memory."""
    from numerics.stacks.memory import check_fits

    what = (f"training with --batch={cfg.batch} --T={cfg.T} --d={cfg.d} --layers={cfg.layers} --heads={cfg.heads}"
            + (f" in {copies} processes" if copies > 1 else ""))
    advice = "lower --batch, --T, --d or --layers" + (" or --workers" if copies > 1 else "")
    check_fits(training_estimate(cfg), what=what, device=device, advice=advice)
    if copies > 1:
        check_fits(copies * training_estimate(cfg), what=what, device=device, per_process=False, advice=advice)


def train_text(cfg: TextConfig, out: str | Path, *, device: str = "cpu", progress: bool = True,
               stop_after: int | None = None, checkpoint_every: int | None = None,
               threads: int | None = None, monitor=None) -> dict:
    """Train (or resume) ``cfg`` into the checkpoint folder ``out``; return its manifest.  ``threads``
    (default: torch's setting, i.e. OMP_NUM_THREADS) intra-op threads; the CPU result is
    bit-reproducible for a fixed thread count.  ``monitor``: see ``numerics.text.training.fit``.
    The folder is claimed before any work (``numerics.storage.checkpoint.claim``): a folder holding
    files that are not this checkpoint's is refused (InvalidInput naming ``--out``)."""
    from numerics.storage import checkpoint as ckpt
    check_training_fits(cfg, device)
    with ckpt.claim(out, name="--out"):
        return _train_text(cfg, out, device=device, progress=progress, stop_after=stop_after,
                           checkpoint_every=checkpoint_every, threads=threads, monitor=monitor)


def _train_text(cfg: TextConfig, out, *, device, progress, stop_after, checkpoint_every, threads, monitor) -> dict:
    import torch

    from numerics.storage import checkpoint as ckpt
    from numerics.text.corpus import ByteCorpus, VOCAB, unigram_entropy
    from numerics.text.training import LanguageModel, batch_seed, fit, torch_threads

    corpus = ByteCorpus.load()
    spec = cfg.spec(device)
    with torch_threads(threads or torch.get_num_threads()):
        model = LanguageModel(VOCAB, spec.with_(device="cpu").build(), cfg.seed,
                              dtype=torch.float32 if cfg.dtype == "float32" else torch.float64,
                              freeze_gates=cfg.freeze_gates)
        validation = corpus.validation_windows(cfg.T, cfg.eval_windows)
        extra = {"spec": spec.with_(device="cpu").as_dict(), "arch": cfg.arch,
                 "corpus": {"name": "pydoc_data.topics", "sha256": corpus.sha256, "tokens": "bytes",
                            "train_tokens": len(corpus.train), "validation_tokens": len(corpus.validation),
                            "unigram_entropy_train": unigram_entropy(corpus.train.to(torch.uint8).numpy().tobytes())},
                 "package_version": package_version(), "git": git_hash(), "torch": torch.__version__}
        curves = fit(model, cfg.optimiser(), lambda step: corpus.windows("train", cfg.batch, cfg.T,
                                                                            batch_seed(cfg.seed, step)),
                     validation, identity={"kind": "byte-corpus", "config": {**cfg.as_dict(), "corpus": corpus.sha256}},
                     checkpoint=out, checkpoint_every=checkpoint_every or max(1, cfg.steps // 10),
                     stop_after=stop_after, progress=progress, desc=f"train {cfg.label()}", extra_manifest=extra,
                     device=device, monitor=monitor)
    manifest = ckpt.read_manifest(out)
    manifest["curves"] = curves
    return manifest


def default_checkpoint(cache_dir: str | Path, progress: bool = False, cfg: TextConfig | None = None) -> Path:
    """A cached trained stack (default :data:`SMALL`, the matrix's ``trained`` column): trained on
    first use, then reused.  Its folder is keyed like Claim 7.3's runs (every source file the
    trainer imports, the torch version and the config), so an edit of the code trains it afresh."""
    from numerics.storage import checkpoint as ckpt
    from numerics.text.training import source_key

    cfg = cfg or SMALL
    key = source_key(("numerics.text.training", "numerics.text.corpus", "numerics.storage.checkpoint", "numerics.stacks.spec",
                      "proofs_check.experiments.train"), cfg.as_dict())
    out = Path(cache_dir) / "trained_stacks" / f"{cfg.label()}-{key}"
    manifest = ckpt.read_manifest(out) if ckpt.exists(out) else None
    if manifest is None or manifest["step"] < cfg.steps:
        train_text(cfg, out, progress=progress, threads=1)  # tiny: one thread is fastest and reproducible
    return out


#: The matrix's trained stack: pre-LN (the claims at the reference need g = 0), small enough for
#: the dense on-stack checks (T·d = 256: the largest, 4.1's parameter Jacobian, takes ~20 s).  It
#: trains in seconds and learns from context: 2.96 nats/byte against the unigram entropy 3.14.
SMALL = TextConfig(arch="preln", d=16, layers=3, heads=2, T=16, P=8, tokens=200_000, batch=64,
                   eval_every=20, eval_windows=64)

#: The trained-vs-random figures' stack: T = 32 for the sink and the depth profile, 4 · 10⁵ tokens
#: (2.93 nats/byte against the unigram 3.14).
FIGURE = TextConfig(arch="preln", d=16, layers=4, heads=2, T=32, P=8, tokens=400_000, batch=64,
                    eval_every=25, eval_windows=64)
