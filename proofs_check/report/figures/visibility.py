"""Figures for Claims 4.1 and 4.2: the visibility Jacobian's singular values with the gap,
and the second- vs first-order response of the persistent component."""

from __future__ import annotations

import torch

from numerics.stacks.spec import StackSpec
from numerics.families import visibility as nv
from numerics.fitting import loglog_fit
from numerics.stacks.stack import random_xbar
from proofs_check.report.figures import figure, save

DELTAS = torch.logspace(-4, -1.5, 11, dtype=torch.float64, device="cpu")  # host: a figure's values


@figure("visibility_spectrum", claim="4.2", title="Singular values of the visibility Jacobian with the spectral gap")
def render_visibility_spectrum(ctx, out_dir):
    import matplotlib.pyplot as plt

    d = 4 if ctx.quick else 8
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, kw, marker in (("no slow path", {}, "o"), ("slow path, g = 0", {"P": 4}, "s")):
        vis = nv.visibility(StackSpec.of(T=8, d=d, layers=3, heads=2, kernel="full", seed=0, **kw).build(), random_xbar(d))
        sv = vis.singular_values[: vis.rank + 8].clamp_min(1e-18).numpy()
        ax.semilogy(range(1, len(sv) + 1), sv, marker=marker, ls="-", ms=4,
                    label=f"{label}: visible {vis.visible_dim}, invisible {vis.invisible_dim}, "
                          f"gap {vis.gap:.1e}")
        ax.axvline(vis.rank + 0.5, color="gray", ls=":", lw=1)
    ax.set_xlabel("index i")
    ax.set_ylabel("σ_i of ∂(x̄_L, frozen kernels)/∂θ")
    ax.set_title(f"Visible/invisible split (full kernel, T = 8, d = {d}, 3 layers)", fontsize=10)
    ax.legend(fontsize=7)
    return save(fig, out_dir, "visibility_spectrum")


@figure("response_slopes", claim="4.1", title="Second- vs first-order response of the persistent component")
def render_response_slopes(ctx, out_dir):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for kernel, col in (("full", "tab:blue"), ("block", "tab:green")):
        st = StackSpec(T=8, d=8, layers=3, heads=2, kernel=kernel, P=4, seed=0, knobs={"value_scale": 1.0}).build()
        for name, p, ls in (("decaying (wᵀp = 0)", nv.decaying_offset(st, 7), "-"),
                            ("mean-carrying", nv.mean_carrying_offset(st, 7), "--")):
            r = nv.persistent_response(st, random_xbar(8), p, DELTAS)
            ax.loglog(DELTAS.numpy(), r.numpy(), ls=ls, color=col, marker="o", ms=3,
                      label=f"{kernel}, {name}: slope {loglog_fit(DELTAS, r).slope:.3f}")
    x = DELTAS.numpy()
    ax.loglog(x, 1e-1 * x, color="k", lw=0.8, ls=":", label="slope 1 guide")
    ax.loglog(x, 1e-1 * x**2, color="k", lw=0.8, ls="-.", label="slope 2 guide")
    ax.set_xlabel("offset size δ")
    ax.set_ylabel("‖Δx̄_L‖ = ‖wᵀ(X_L(δ) − X_L(0))‖")
    ax.set_title("Claim 4.1: decaying-bundle offsets act at second order", fontsize=10)
    ax.legend(fontsize=7)
    return save(fig, out_dir, "response_slopes")
