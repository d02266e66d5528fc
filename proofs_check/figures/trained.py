"""Figures of a stack trained on text against the same stack at its random initialisation."""

from __future__ import annotations

import numpy as np

from proofs_check.figures import figure, save


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
        title="A stack trained on the CPython documentation vs its random initialisation")
def render_trained_vs_random(ctx, out_dir):
    import matplotlib.pyplot as plt
    import torch

    from numerics import checkpoint as ckpt
    from numerics.corpus import ByteCorpus, unigram_entropy
    from numerics.spec import StackSpec
    from numerics.training import cache_dir_for
    from proofs_check.train import FIGURE, SMALL, default_checkpoint

    # ``ctx.smoke`` (the notebook and figure tests) selects the seconds-sized matrix stack.
    path = default_checkpoint(cache_dir_for(ctx), cfg=SMALL if getattr(ctx, "smoke", False) else FIGURE)
    tensors, manifest = ckpt.load(path)
    spec = StackSpec.from_dict({**manifest["spec"], "dtype": "float64"})
    stacks = {"random (initialisation)": spec.build(), "trained": spec.with_(checkpoint=str(path)).build()}
    embeds = {"random (initialisation)": None, "trained": tensors["model"]["embed"].double()}
    corpus = ByteCorpus.load()
    windows = corpus.validation_windows(spec.T, 64)
    init_embed = torch.randn(256, spec.d, generator=torch.Generator().manual_seed(10_007 * spec.seed + 1),
                             dtype=torch.float64)  # the trainer's initial embedding (LanguageModel)
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
