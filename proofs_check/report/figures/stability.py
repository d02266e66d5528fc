"""Figures for Claims 5.1 and 5.2: the stability region in the (g, μ) plane and the
conservativeness of the norm bound on random 2×2 systems."""

from __future__ import annotations

import numpy as np
import torch

from numerics.families import stability as ns
from proofs_check.report.figures import figure, save

H_DISCRETE = 1.0 / 12


def region_curves(mus: np.ndarray, theta: float = 0.9, seed: int = 0) -> dict[str, np.ndarray]:
    """For F = −μI + S (S skew, log-norm exactly −μ) and a fixed K with ‖K‖ = 1: the norm bound
    μ/κ, the exact Routh–Hurwitz radius, and the discrete (h = 1/12, G = I + hF) norm bound and
    Jury radius, as functions of μ.  An aligned K (= I) makes the continuous bound exact."""
    gen_ = torch.Generator().manual_seed(seed)
    S = torch.tensor([[0.0, theta], [-theta, 0.0]], dtype=torch.float64, device="cpu")  # host: a figure's values
    K = torch.randn(2, 2, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    K = K / ns.spectral_norm(K)
    I = torch.eye(2, dtype=torch.float64, device="cpu")  # host: a figure's values
    F = -torch.as_tensor(mus, dtype=torch.float64, device="cpu")[:, None, None] * I + S  # host: a figure's values
    Kb = K.expand_as(F)
    G = I + H_DISCRETE * F
    return {
        "norm bound (continuous)": ns.continuous_norm_gate_bound(F, Kb).numpy(),
        "exact (Routh–Hurwitz)": ns.routh_hurwitz_gate_radius(F, Kb).numpy(),
        "norm bound (discrete, h=1/12)": ns.discrete_norm_gate_bound(G, Kb, H_DISCRETE).numpy(),
        "exact (Jury, h=1/12)": ns.jury_gate_radius(G, Kb, H_DISCRETE).numpy(),
        "aligned K = I: exact = bound": ns.routh_hurwitz_gate_radius(F, I.expand_as(F)).numpy(),
    }


def conservativeness(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Ratios g*_norm / g*_exact on random 2×2 draws (discrete Jury and continuous Routh–Hurwitz)."""
    G, K = ns.random_discrete_2x2(n, seed, H_DISCRETE)
    F, Kc = ns.random_continuous_2x2(n, seed + 1)
    return {
        "discrete (Jury)": (ns.discrete_norm_gate_bound(G, K, H_DISCRETE) / ns.jury_gate_radius(G, K, H_DISCRETE)).numpy(),
        "continuous (Routh–Hurwitz)": (ns.continuous_norm_gate_bound(F, Kc) / ns.routh_hurwitz_gate_radius(F, Kc)).numpy(),
    }


@figure("stability_region", claim="5.1", title="Stability region in the (g, μ) plane: norm bound vs exact 2×2 boundary")
def render_stability_region(ctx, out_dir):
    import matplotlib.pyplot as plt

    mus = np.linspace(0.05, 2.0, 40 if ctx.quick else 200)
    curves = region_curves(mus, seed=ctx.seed)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    exact = curves["exact (Routh–Hurwitz)"]
    ax.fill_betweenx(mus, -exact, exact, color="tab:blue", alpha=0.15, label="exactly stable (continuous)")
    styles = {"norm bound (continuous)": ("tab:blue", "--"), "exact (Routh–Hurwitz)": ("tab:blue", "-"),
              "norm bound (discrete, h=1/12)": ("tab:red", "--"), "exact (Jury, h=1/12)": ("tab:red", "-"),
              "aligned K = I: exact = bound": ("k", ":")}
    for name, (color, ls) in styles.items():
        g = curves[name]
        ax.plot(g, mus, color=color, ls=ls, label=name)
        ax.plot(-g, mus, color=color, ls=ls)
    ax.set_xlabel("gate g")
    ax.set_ylabel("stability margin μ  (= −log-norm of F)")
    ax.set_title("Gate bound |g| < g*(μ) (dashed) inside the exact 2×2 region (solid)")
    ax.legend(fontsize=7, loc="lower right")
    ax.axvline(0, color="0.7", lw=0.5)
    return save(fig, out_dir, "stability_region")


@figure("bound_conservativeness", claim="5.2", title="g*_norm / g*_exact on random 2×2 draws")
def render_bound_conservativeness(ctx, out_dir):
    import matplotlib.pyplot as plt

    ratios = conservativeness(500 if ctx.quick else 5000, seed=ctx.seed)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    bins = np.linspace(0, 1.0, 41)
    for (name, r), color in zip(ratios.items(), ("tab:red", "tab:blue")):
        r = r[np.isfinite(r)]
        ax.hist(r, bins=bins, alpha=0.5, color=color, label=f"{name}: median {np.median(r):.2f}, n={len(r)}")
    ax.axvline(1.0, color="k", ls=":", label="exact (aligned systems)")
    ax.set_xlabel("g*_norm / g*_exact  (1 = the norm bound is exact)")
    ax.set_ylabel("draws")
    ax.set_title("How conservative the norm bound is (random 2×2 systems)")
    ax.legend(fontsize=8, loc="upper left")
    return save(fig, out_dir, "bound_conservativeness")
