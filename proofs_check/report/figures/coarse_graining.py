"""Figures for Claims 3.1 and 3.2: mode-product ratios with the saturation depth, and the
coarse-graining residuals vs depth for the causal, full and block kernels."""

from __future__ import annotations

import torch

from numerics.families import coarse_graining as ncg
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import random_xbar
from proofs_check.report.figures import figure, save

TAU = 0.5


def eigenvalue_label(lam: float) -> str:
    """An eigenvalue of the frozen kernel for a legend: exact 0 where float64 returns rounding noise
    (the full kernel 11ᵀ/T has eigenvalue 0 exactly; eigvals gives |λ| ~ 1e-17 or below)."""
    return "0" if abs(lam) < ZERO_EIGENVALUE else f"{lam:.3g}"


ZERO_EIGENVALUE = 1e-12  # ≫ eps·‖A‖ = 2e-16 for a row-stochastic A, ≪ the smallest nonzero 1/T


@figure("mode_products", claim="3.1", title="Mode-product ratios r_ℓ(λ) vs depth, with ℓ* measured and bound")
def render_mode_products(ctx, out_dir):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    d = 8 if ctx.quick else 16
    panels = [("causal", 0.0), ("causal", 20.0), ("full", 20.0)]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    for ax, (kernel, c) in zip(axes, panels):
        sd = ncg.saturation_depth(StackSpec(T=6, d=d, layers=16, heads=2, kernel=kernel, seed=0, knobs={"value_scale": c}).build(), random_xbar(d), TAU)
        depth = range(sd.layers)
        for k, lam in enumerate(sd.lambdas):
            ax.plot(depth, sd.ratios[:, k].numpy(), marker="o", ms=3, label=f"λ = {eigenvalue_label(lam)}")
        ax.axhline(TAU, color="k", ls=":", lw=1, label=f"τ = {TAU}")
        if sd.measured is not None:
            ax.axvline(sd.measured, color="tab:green", lw=1.5, label=f"ℓ* measured = {sd.measured}")
        if sd.bound is not None and sd.bound < sd.layers:
            ax.axvline(sd.bound, color="tab:red", ls="--", lw=1.5, label=f"bound = {sd.bound}")
        bound_txt = ("no bound: ρ̃ ≥ 1" if sd.bound is None else
                     f"bound {sd.bound} ≥ L (vacuous)" if sd.bound >= sd.layers else "")
        meas_txt = "" if sd.measured is not None else "no saturation depth"
        ax.text(0.02, 0.03, "\n".join(t for t in (meas_txt, bound_txt,
                                                  f"ρ̃ = {sd.rho:.3f}, per-layer ρ = {sd.theory_rho:.2f}") if t),
                transform=ax.transAxes, fontsize=8, va="bottom")
        ax.set_yscale("log")
        ax.set_title(f"{kernel}, W_VO ≈ {c:g}·I + noise", fontsize=10)
        ax.set_xlabel("layer ℓ")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    axes[0].set_ylabel("r_ℓ(λ) = ‖G_≤ℓ(λ)‖ / ‖G_≤ℓ(1)‖")
    fig.suptitle("Claim 3.1: decaying modes relative to the persistent mode (T = 6, 16 layers)")
    return save(fig, out_dir, "mode_products")


@figure("coarse_graining_residual", claim="3.2", title="Coarse-graining residuals vs depth (causal, full, block)")
def render_coarse_graining_residual(ctx, out_dir):
    import matplotlib.pyplot as plt

    layers = 8 if ctx.quick else 12
    X0 = torch.ones(8, 1, dtype=torch.float64, device="cpu") * random_xbar(8)  # host: a figure's values
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    colors = {"causal": "tab:red", "full": "tab:blue", "block": "tab:green"}
    for kernel, col in colors.items():
        for c, ls in ((20.0, "-"), (0.0, ":")):
            st = StackSpec(T=8, d=8, layers=layers, heads=2, kernel=kernel, P=4, seed=0, knobs={"value_scale": c}).build()
            res = [ncg.factoring_residuals(J, 8, 8, 4) for J in ncg.depth_jacobians(st, X0)]
            depth = range(1, layers + 1)
            ax2.plot(depth, [r.two_sided for r in res], ls=ls, color=col, marker="o", ms=3,
                     label=f"{kernel}, c = {c:g}")
            if c == 20.0:
                ax1.plot(depth, [max(r.left, 1e-18) for r in res], color=col, marker="o", ms=3, label=kernel)
    ax1.set_yscale("log")
    ax1.axhline(1e-12, color="k", ls=":", lw=1, label="tolerance 1e-12")
    ax1.set_title("(a) exact one-sided: ‖ΠJ(I − Q)‖ / ‖J‖", fontsize=10)
    ax2.set_yscale("log")
    ax2.set_title("(b) two-sided: ‖J − QJQ‖ / ‖J‖", fontsize=10)
    for ax in (ax1, ax2):
        ax.set_xlabel("depth (layers in the product)")
        ax.set_ylabel("relative residual")
        ax.legend(fontsize=7)
    fig.suptitle("Claim 3.2: block coarse-graining, T = 8, P = 4, d = 8 (c: W_VO ≈ c·I + noise)")
    return save(fig, out_dir, "coarse_graining_residual")
