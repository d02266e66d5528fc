"""Training throughput: tokens/s of ``fastslow train``'s trainer at the default text config.

The trainer is ``numerics.text.training.fit`` as ``proofs_check.experiments.train.train_text`` runs it, on the
requested device, at :data:`CONFIG` (``TextConfig()``: d = 128, 6 layers, 4 heads, T = 256,
batch 8, float32), for ``preln`` and ``hierarchical``.  Only a few steps run, each in its own
``train_text`` call that resumes the previous call's checkpoint (a temporary folder), so the
step's time is the increase of the trainer's own clock (``curves["seconds"]``: the batch draw,
forward, backward, clipping, the AdamW step and the per-step loss and gate reads; not the
checkpoint saves).  The first step of each arch is a warm-up and is not reported.

Baseline, timed in the same run and interleaved with the trainer's steps (one step, then one
baseline call, ...): the forward and backward pass of the same model on a batch of the same
shape, without the optimiser (``next_token_loss(...).backward()``).  Their ratio,
``trainer_over_forward_backward`` (step seconds / forward+backward seconds, ≥ 1), is what the
trainer adds to the gradient computation.  ``hierarchical_over_preln`` (preln tokens/s /
hierarchical tokens/s) is the slow path's cost in training.

``projected_seconds`` = ``budget_tokens`` / ``tokens_per_s`` (500 000 tokens at the default
config): the full run's training steps, without its validation passes and checkpoint saves.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from dataclasses import replace

import torch

from benchmarks.timing import time_once
from proofs_check.experiments.train import TextConfig

QUICK_STEPS, STEPS = 3, 8  # timed steps per arch, after one warm-up step
ARCHS = ("preln", "hierarchical")
#: The measured config (``fastslow train``'s default); the projection is for its token budget.
CONFIG = TextConfig()


def _forward_backward(cfg, device: str):
    """A zero-argument call: the forward and backward pass of ``cfg``'s model on one batch of the
    trainer's first batch seed (the model built as ``train_text`` builds it, moved to ``device``)."""
    from numerics.text.corpus import VOCAB, ByteCorpus
    from numerics.text.training import LanguageModel, batch_seed, next_token_loss

    model = LanguageModel(VOCAB, cfg.spec().build(), cfg.seed,
                          dtype=torch.float32 if cfg.dtype == "float32" else torch.float64).to(device)
    tokens = ByteCorpus.load().windows("train", cfg.batch, cfg.T, batch_seed(cfg.seed, 0)).to(device)

    def call():
        model.zero_grad(set_to_none=True)
        next_token_loss(model, tokens).backward()

    return call


def _arch(cfg, steps: int, device: str) -> dict:
    from proofs_check.experiments.train import train_text

    baseline = _forward_backward(cfg, device)
    step_runs, baseline_runs = [], []
    with tempfile.TemporaryDirectory(prefix="fastslow-bench-train-") as out:
        seconds = train_text(cfg, out, device=device, progress=False, stop_after=1)["curves"]["seconds"]
        time_once(baseline, device)  # warm-up of the baseline
        for step in range(2, steps + 2):
            curves = train_text(cfg, out, device=device, progress=False, stop_after=step)["curves"]
            step_runs.append(curves["seconds"] - seconds)
            seconds = curves["seconds"]
            baseline_runs.append(time_once(baseline, device)[0])
    tokens = cfg.batch * cfg.T  # per step, as fit counts them
    step_s, base_s = statistics.median(step_runs), statistics.median(baseline_runs)
    tokens_per_s = tokens / step_s
    return {"tokens_per_step": tokens, "step_seconds": step_s, "step_runs": step_runs, "tokens_per_s": tokens_per_s,
            "forward_backward_seconds": base_s, "forward_backward_runs": baseline_runs,
            "forward_backward_tokens_per_s": tokens / base_s, "trainer_over_forward_backward": step_s / base_s,
            "projected_seconds": cfg.tokens / tokens_per_s}


def run(quick: bool, device: str) -> dict:
    """tokens/s of the trainer per arch at :data:`CONFIG`, its baseline and the full run's projection."""
    load_before = os.getloadavg()[0]
    steps = QUICK_STEPS if quick else STEPS
    archs = {arch: _arch(replace(CONFIG, arch=arch), steps, device) for arch in ARCHS}
    return {"config": {**CONFIG.as_dict(), "arch": list(ARCHS), "device": device, "timed_steps": steps,
                       "threads": torch.get_num_threads()},
            "budget_tokens": CONFIG.tokens, "archs": archs,
            "hierarchical_over_preln": archs["preln"]["tokens_per_s"] / archs["hierarchical"]["tokens_per_s"],
            "baseline": "forward + backward of the same model on a batch of the same shape, no optimiser",
            "load_average_1min": [load_before, os.getloadavg()[0]]}


def format_lines(result: dict) -> list[str]:
    """Plain-text lines for ``benchmarks.run.format_table``."""
    c = result["config"]
    lines = [f"\ntraining (fit via train_text; d={c['d']}, L={c['layers']}, {c['heads']} heads, T={c['T']}, "
             f"batch {c['batch']}, {c['dtype']}, {c['device']}, {c['threads']} threads; median of "
             f"{c['timed_steps']} steps; load {result['load_average_1min'][0]:.1f}):"]
    for arch, r in result["archs"].items():
        lines.append(f"  {arch:>12}: {r['tokens_per_s']:.0f} tokens/s ({r['step_seconds']:.3f} s/step), "
                     f"trainer / forward+backward {r['trainer_over_forward_backward']:.2f}; "
                     f"{result['budget_tokens']} tokens projected {r['projected_seconds'] / 60:.1f} min")
    lines.append(f"  hierarchical / preln step time {result['hierarchical_over_preln']:.2f}")
    return lines
