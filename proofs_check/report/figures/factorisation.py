"""Figures for claims 2.1–2.3: block diagonality, violation controls, eigenbasis conditioning."""

from __future__ import annotations

import numpy as np
import torch

from numerics.fitting import loglog_fit
from numerics.stacks.stack import random_xbar
from proofs_check.claims.factorisation import conditions, frozen_kernel, polynomial_form
from proofs_check.report.figures import figure, save


@figure("block_diagonality", claim="2.1", title="log10 |(S⁻¹⊗I) J (S⊗I)| at 1x̄ᵀ, causal, T = 16")
def block_diagonality(ctx, out_dir):
    import matplotlib.pyplot as plt

    from numerics.stacks.spec import StackSpec

    T, d = 16, 4 if ctx.quick else 8
    st = StackSpec(T=T, d=d, layers=4, heads=2, kernel="causal", seed=0, knobs={"value_scale": 1.0}).build()
    xbar = random_xbar(d, 100)
    _, S, _, Jt = frozen_kernel.transformed(st, xbar.expand(T, d).clone())
    fig, ax = plt.subplots(figsize=(6, 5))
    im = ax.imshow(np.log10(Jt.abs().numpy() + 1e-300), vmin=-18, vmax=1, cmap="viridis")
    fig.colorbar(im, ax=ax, label="log10 |entry|")
    ax.set_title(f"Jacobian in the basis S⊗I (causal, T={T}, d={d}, cond S={torch.linalg.cond(S):.1e})")
    ax.set_xlabel("mode k × feature"); ax.set_ylabel("mode k × feature")
    return save(fig, out_dir, "block_diagonality")


@figure("factorisation_controls", claim="2.2", title="Off-block mass vs violation δ")
def factorisation_controls(ctx, out_dir):
    import matplotlib.pyplot as plt

    deltas = np.logspace(-5, -2, 4 if ctx.quick else 7)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for kind in conditions.CONTROL_KINDS:
        masses = conditions.control_masses(deltas, kind)
        slope = loglog_fit(deltas, masses).slope
        ax.loglog(deltas, masses, "o-", label=f"{kind} (slope {slope:.2f})")
    ref = conditions.control_masses(deltas[:1], "inhomogeneous")[0]
    ax.loglog(deltas, ref * deltas / deltas[0], "k--", label="slope 1 guide")
    ax.set_xlabel("violation δ"); ax.set_ylabel("relative off-block mass")
    ax.set_title("Breaking each condition of Claim 2.2"); ax.legend()
    return save(fig, out_dir, "factorisation_controls")


@figure("eigenbasis_conditioning", claim="2.3", title="cond S and float64 eigen-coordinate error vs T")
def eigenbasis_conditioning(ctx, out_dir):
    import matplotlib.pyplot as plt

    Ts = [4, 8, 12, 16, 20, 24, 28, 32]
    rows = polynomial_form.eigen_coordinate_errors(Ts)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.semilogy(Ts, [r["cond1_S_exact"] for r in rows], "o-", label="cond₁ S (exact Pascal, 60 digits)")
    ax.semilogy(Ts, [r["cond_S_float64"] for r in rows], "s--", label="cond₂ S (float64 estimate)")
    ax.semilogy(Ts, [max(r["eigen_error"], 1e-17) for r in rows], "^-", label="float64 eigen-coordinate error")
    ax.axhline(1 / frozen_kernel.EPS64, color="k", ls=":", label="1/eps (float64 limit)")
    ax.set_xlabel("T (tokens)"); ax.set_ylabel("condition number of S, or relative error")
    ax.set_title("Causal kernel eigenbasis: exponential ill-conditioning"); ax.legend(fontsize=8)
    return save(fig, out_dir, "eigenbasis_conditioning")
