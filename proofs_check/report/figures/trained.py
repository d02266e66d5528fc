"""Figures of a stack trained on text against the same stack at its random initialisation."""

from __future__ import annotations

import numpy as np

from proofs_check.report.figures import figure, save
from proofs_check.experiments.train import TextConfig


def sink_and_spread(stack, x):
    """Per layer: the mean attention weight on the first token (the causal sink; 1/(i+1) for a
    uniform causal kernel) and the relative token spread ‖X_ℓ − 1x̄_ℓᵀ‖/‖X_ℓ‖ of the state."""
    import torch

    sink, spread = [], []
    with torch.no_grad():
        for layer in stack.layers:
            w = layer.attn.weights(layer.ln1(x))  # (batch, heads, T, T)
            sink.append(float(w[..., 1:, 0].mean()))
            spread.append(float((x - x.mean(-2, keepdim=True)).norm() / x.norm()))
            x = layer(x)
        spread.append(float((x - x.mean(-2, keepdim=True)).norm() / x.norm()))
    return sink, spread


@figure("trained_vs_random", claim="3.1",
        title="The grid's trained stack (CPython documentation) vs its random initialisation")
def render_trained_vs_random(ctx, out_dir):
    import matplotlib.pyplot as plt
    import torch

    from numerics.storage import checkpoint as ckpt
    from numerics.text.corpus import ByteCorpus, unigram_entropy
    from numerics.stacks.spec import StackSpec
    from numerics.text.training import cache_dir_for
    from proofs_check.experiments.train import SMALL, default_checkpoint

    # the grid's trained column (SMALL): the stack the report's trained-stack section names, trained once
    path = default_checkpoint(cache_dir_for(ctx), cfg=SMALL)
    tensors, manifest = ckpt.load(path)
    spec = StackSpec.from_dict({**manifest["spec"], "dtype": "float64"})
    stacks = {"random (initialisation)": spec.build(), "trained": spec.with_(checkpoint=str(path)).build()}
    embeds = {"random (initialisation)": None, "trained": tensors["model"]["embed"].double()}
    corpus = ByteCorpus.load()
    windows = corpus.validation_windows(spec.T, 64)
    init_embed = torch.randn(256, spec.d, generator=torch.Generator().manual_seed(10_007 * spec.seed + 1),
                             dtype=torch.float64, device="cpu")  # the trainer's initial embedding (LanguageModel)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    c = manifest["curves"]
    axes[0].plot(c["eval_step"], c["eval_loss"], "o-", color="C0", label="validation loss")
    h = unigram_entropy(corpus.validation.to(torch.uint8).numpy().tobytes())
    axes[0].axhline(h, color="C3", ls="--", label=f"unigram entropy {h:.2f}")
    axes[0].set_xlabel("training step")
    axes[0].set_ylabel("next-byte loss (nats)")
    axes[0].set_title(f"training: {spec.label()}", fontsize=9)
    axes[0].legend(fontsize=8)
    layers = np.arange(spec.layers)
    for (name, stack), color in zip(stacks.items(), ("C7", "C0")):
        emb = embeds[name] if embeds[name] is not None else init_embed
        sink, spread = sink_and_spread(stack, emb[windows])
        axes[1].plot(layers, sink, "o-", color=color, label=name)
        axes[2].plot(np.arange(spec.layers + 1), spread, "o-", color=color, label=name)
    uniform = float(np.mean([1.0 / (i + 1) for i in range(1, spec.T)]))
    axes[1].axhline(uniform, color="black", lw=0.6, ls=":", label=f"uniform causal kernel {uniform:.3f}")
    axes[1].set_xticks(layers)
    axes[1].set_xlabel("layer ℓ")
    axes[1].set_ylabel("mean attention weight on token 0")
    axes[1].set_title("the first-token sink", fontsize=9)
    axes[1].legend(fontsize=8, loc="best")
    axes[2].set_xticks(np.arange(spec.layers + 1))
    axes[2].set_xlabel("depth ℓ (state X_ℓ)")
    axes[2].set_ylabel("‖X_ℓ − 1x̄ᵀ‖ / ‖X_ℓ‖")
    axes[2].set_title("token spread over depth (decay toward the homogeneous mode)", fontsize=9)
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    return save(fig, out_dir, "trained_vs_random")


def gate_margin_monitor(model) -> dict:
    """The gate certificate of Claim 5.1 (``numerics.families.stability.gate_certificate``) of the model's
    hierarchical stack, in float64 at its token-homogeneous reference with the gates at 0, and the
    largest learnt gate |g_ℓ|: a ``fit`` monitor (JSON-ready; NaN as None)."""
    import copy
    import math

    from numerics.families.stability import gate_certificate

    stack = copy.deepcopy(model.stack).double()
    e = gate_certificate(stack).enclosure

    def number(v):
        return None if v is None or not math.isfinite(v) else float(v)

    return {"status": e.status, "mu": number(e.mu), "mu_lo": number(e.mu_lo), "mu_hi": number(e.mu_hi),
            "g_lo": number(e.g_lo), "g_hi": number(e.g_hi),
            "gate_max": max(abs(float(layer.gate.detach())) for layer in model.stack.layers)}


#: The margin figure's run: hierarchical, small enough that the certificate (n·d = 64 slow modes) is
#: computed at every validation step; ``MARGIN_SMOKE`` is the tests' seconds-sized one.
MARGIN = dict(arch="hierarchical", d=16, layers=4, heads=2, T=32, P=8, tokens=120_000, batch=32, eval_every=10,
              eval_windows=64)
MARGIN_SMOKE = dict(arch="hierarchical", d=4, layers=2, heads=2, T=16, P=4, tokens=6_000, batch=16, eval_every=8,
                    eval_windows=16)


def margin_run(cache_dir, smoke: bool = False) -> dict:
    """The margin run's manifest (curves with ``monitor``), trained on first use and then cached in a
    folder keyed by the source of every module it executes and its config."""
    from pathlib import Path

    from numerics.storage import checkpoint as ckpt
    from numerics.text.training import source_key
    from proofs_check.experiments.train import TextConfig, train_text

    cfg = TextConfig(**(MARGIN_SMOKE if smoke else MARGIN))
    key = source_key(("proofs_check.experiments.train", "numerics.families.stability", "proofs_check.report.figures.trained"), cfg.as_dict())
    out = Path(cache_dir) / "margin_runs" / f"{cfg.label()}-{key}"
    if ckpt.exists(out) and ckpt.read_manifest(out)["step"] >= cfg.steps:
        return ckpt.read_manifest(out)
    return train_text(cfg, out, progress=False, threads=1, monitor=gate_margin_monitor)


@figure("gate_margin_over_training", claim="5.1",
        title="The certified gate margin g* over training on text, against the learnt gate")
def render_gate_margin_over_training(ctx, out_dir):
    import matplotlib.pyplot as plt

    from numerics.text.training import cache_dir_for

    manifest = margin_run(cache_dir_for(ctx), smoke=getattr(ctx, "smoke", False))
    mon = manifest["curves"]["monitor"]
    steps = [m["step"] for m in mon]
    certified = [m["status"] == "certified" for m in mon]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    axes[0].plot(steps, [m["mu"] for m in mon], "o-", color="C0", ms=3, label="stability margin μ")
    axes[0].fill_between(steps, [m["mu_lo"] for m in mon], [m["mu_hi"] for m in mon], color="C0", alpha=0.2,
                         label="certified enclosure of μ")
    axes[0].axhline(0, color="black", lw=0.7)
    axes[0].set_xlabel("training step")
    axes[0].set_ylabel("μ (> 0: the slow modes contract on balance)")
    axes[0].set_title("stability margin of the slow modes (gates at 0)", fontsize=9)
    axes[0].legend(fontsize=8)
    axes[1].plot(steps, [m["gate_max"] for m in mon], "o-", color="C3", ms=3, label="learnt max_ℓ |g_ℓ|")
    if any(certified):
        axes[1].plot([s for s, c in zip(steps, certified) if c],
                     [m["g_lo"] for m, c in zip(mon, certified) if c], "s-", color="C2", ms=3,
                     label="certified g* (lower end)")
    inside = sum(c and m["gate_max"] <= m["g_lo"] for m, c in zip(mon, certified))
    verdict = (f"certified at {sum(certified)} of {len(mon)} steps; the learnt gate is inside g* at {inside}"
               if any(certified) else f"no certified margin at any of the {len(mon)} steps (μ ≤ 0 not excluded): "
                                      "training is not inside a certified margin")
    axes[1].set_xlabel("training step")
    axes[1].set_ylabel("gate")
    axes[1].set_title(verdict, fontsize=9)
    axes[1].legend(fontsize=8)
    cfg = manifest["config"]
    fig.suptitle(f"hierarchical stack on the CPython documentation: d = {cfg['d']}, L = {cfg['layers']}, "
                 f"T = {cfg['T']}, P = {cfg['P']}, {cfg['tokens']} bytes", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.93))  # the top 7 % keeps the suptitle clear of the panels' offset text
    return save(fig, out_dir, "gate_margin_over_training")


#: The visibility figure's stack: d = 8, 3 layers, T = 16, 2 · 10⁵ bytes (3.05 nats/byte against the
#: unigram 3.14).  Its Jacobian is (d + L·heads·T²) × 2648 parameters; the SVD is the cost (~20 s).
VISIBILITY = TextConfig(arch="preln", d=8, layers=3, heads=2, T=16, P=8, tokens=200_000, batch=32,
                        eval_every=40, eval_windows=64)


@figure("visibility_trained_vs_random", claim="4.2",
        title="The visibility spectrum of a stack trained on text vs its random initialisation")
def render_visibility_trained_vs_random(ctx, out_dir):
    """Singular values of the visibility Jacobian ∂(x̄_L, frozen kernels)/∂θ at 1x̄ᵀ (Claim 4.2) of a
    stack trained on text (:data:`VISIBILITY`) and of the same stack at its initialisation."""
    import matplotlib.pyplot as plt

    from numerics.storage import checkpoint as ckpt
    from numerics.families import visibility as nv
    from numerics.stacks.spec import StackSpec
    from numerics.stacks.stack import random_xbar
    from numerics.text.training import cache_dir_for
    from proofs_check.experiments.train import default_checkpoint

    path = default_checkpoint(cache_dir_for(ctx), cfg=VISIBILITY)
    spec = StackSpec.from_dict({**ckpt.read_manifest(path)["spec"], "dtype": "float64"})
    fig, ax = plt.subplots(figsize=(6.5, 4))
    xbar = random_xbar(spec.d)
    for (label, s), marker, color in zip((("random (initialisation)", spec), ("trained", spec.with_(checkpoint=str(path)))),
                                         ("o", "s"), ("C7", "C0")):
        vis = nv.visibility(s.build(), xbar)
        sv = vis.singular_values[: vis.rank + 8].clamp_min(1e-18).numpy()
        ax.semilogy(range(1, len(sv) + 1), sv, marker=marker, color=color, ls="-", ms=4,
                    label=f"{label}: visible {vis.visible_dim} of {vis.parameters}, gap {vis.gap:.1e}")
        ax.axvline(vis.rank + 0.5, color=color, ls=":", lw=1)
    ax.set_xlabel("index i")
    ax.set_ylabel("σ_i of ∂(x̄_L, frozen kernels)/∂θ")
    ax.set_title(f"visible/invisible split, trained vs random ({spec.label()})", fontsize=9)
    ax.legend(fontsize=7)
    return save(fig, out_dir, "visibility_trained_vs_random")
