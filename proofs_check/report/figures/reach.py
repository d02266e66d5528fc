"""Reach of the reference claims off 1x̄ᵀ: the factorised form and the Q/K share against the token spread."""

from __future__ import annotations

import json
from pathlib import Path

from proofs_check.report.figures import figure, save

CACHE_NAME = "reach.json"


def reach_result(ctx) -> dict:
    """``ctx.cache_dir/reach.json`` when ``fastslow reproduce`` wrote one, else a fresh run."""
    if ctx.cache_dir and (Path(ctx.cache_dir) / CACHE_NAME).exists():
        return json.loads((Path(ctx.cache_dir) / CACHE_NAME).read_text())
    from proofs_check.runners.reach import run

    return run(ctx)


@figure("reach_factorised", claim="2.1",
        title="Reach off the reference: the factorised J·V and the Q/K share against the token spread, "
              "text spreads marked")
def render_reach(ctx, out_dir):
    import matplotlib.pyplot as plt

    res = reach_result(ctx)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for s, color in zip(res["stacks"], ("C7", "C0")):
        curve = s["curve"]
        xs = [r["s"] for r in curve]
        fact = next(c for c in s["checks"] if c["order"] == 1 and "factorised" in c["quantity"])
        ax = axes[0]
        ax.plot(xs, [r["factorised_error"] for r in curve], "o-", color=color, label=f"{s['stack']}: measured")
        ax.plot(xs, [r["first_order"] for r in curve], ":", color=color,
                label=f"first order c₁s, c₁ = {fact['predicted_coefficient']:.2f} (predicted at 1x̄ᵀ)")
        ax.axvline(s["text_spread"], color=color, lw=0.8, ls="--")
        tails = [r for r in s["layers"] if "tail_error_mean" in r]
        ax.scatter([r["spread_mean"] for r in tails], [r["tail_error_mean"] for r in tails], marker="*", s=90,
                   color=color, zorder=5, label=f"{s['stack']}: text, layers ℓ..L−1 at X_ℓ")
        ax = axes[1]
        ax.loglog(fact["window"], fact["values"], "o", color=color)
        for c, mk in zip(s["checks"][1:], ("s", "^", "d")):
            ax.loglog(c["window"], c["values"], mk, color=color)
        ax.loglog(xs, [r["qk_output_share"] for r in curve], "s-", color=color, alpha=0.5,
                  label=f"{s['stack']}: Q/K share of ∂output (slope 2)")
        ax.loglog(xs, [r["qk_jacobian_share"] for r in curve], "^-", color=color, alpha=0.5,
                  label=f"{s['stack']}: Q/K share of ∂(J·V) (slope 1)")
        ax.loglog(xs, [r["factorised_error"] for r in curve], "o-", color=color, alpha=0.5)
        ax.loglog(xs, [r["invisible_weight_share"] for r in curve], "d--", color=color, alpha=0.5,
                  label=f"{s['stack']}: invisible weights' share of ∂X_L (4.1, slope 1)")
        ax = axes[2]
        layers = [r["layer"] for r in s["layers"]]
        ax.plot(layers, [r["spread_mean"] for r in s["layers"]], "o-", color=color, label=s["stack"])
        ax.fill_between(layers, [r["spread_min"] for r in s["layers"]], [r["spread_max"] for r in s["layers"]],
                        color=color, alpha=0.2)
    axes[0].set_xlabel("token spread s = ‖X − 1x̄ᵀ‖/‖X‖")
    axes[0].set_ylabel("‖J(X)V − J_fact V‖ / ‖J(X)V‖")
    axes[0].set_title("factorised J·V vs jvp along the text direction\n(dashed: the input's spread)", fontsize=9)
    axes[0].legend(fontsize=6)
    axes[1].set_xlabel("token spread s")
    axes[1].set_ylabel("relative size (see legend)")
    axes[1].set_title("J·V error (●), Q/K shares (■ ▲), invisible\nweights (◆); fitted exponents 1, 2, 1, 1", fontsize=9)
    axes[1].legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    axes[2].set_xticks(layers)
    axes[2].set_xlabel("layer ℓ")
    axes[2].set_ylabel("spread s_ℓ of X_ℓ (mean, range)")
    axes[2].set_title("spreads of text trajectories", fontsize=9)
    axes[2].legend(fontsize=7)
    fig.subplots_adjust(wspace=0.32)
    return save(fig, out_dir, "reach_factorised")
