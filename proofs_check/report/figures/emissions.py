"""Figures of docs/theory.md §7: posterior sufficiency (7.1), risk vs ρ (7.2), training curves (7.3)."""

from __future__ import annotations

import numpy as np
import torch

from proofs_check.report.figures import figure, save

SUFFICIENCY_BLOCKS = {"gaussian": (8, 3), "bernoulli": (8, 5), "poisson": (8, 1)}  # (P, seed)


@figure("posterior_sufficiency", claim="7.1",
        title="Posterior from the whole block = posterior from the block mean; the block max loses information")
def render_posterior_sufficiency(ctx, out_dir):
    import matplotlib.pyplot as plt

    from numerics.families import emissions as ne
    from proofs_check.claims.emissions import PRIORS, TRUTH, draw_block

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (fam, (P, seed)) in zip(axes, SUFFICIENCY_BLOCKS.items()):
        tokens = draw_block(fam, P, seed)
        if fam == "bernoulli" and tokens.max() == 0:
            raise ValueError("the Bernoulli example block must contain a success (its max must be informative)")
        grid = ne.grid_for(fam)
        full = ne.prior_logpdf(fam, grid, PRIORS[fam]) + ne.token_loglik(fam, tokens, grid)
        mean = ne.conjugate_posterior_logpdf(fam, grid, float(tokens.mean()), P, PRIORS[fam])
        ax.plot(grid, ne.normalise_on_grid(full, grid), lw=3, alpha=0.4, color="C0", label="whole block (grid)")
        ax.plot(grid, ne.normalise_on_grid(mean, grid), "--", color="C0", label="conjugate, from block mean")
        title = f"{fam}, P = {P}: TV(block, mean) = {ne.total_variation(full, mean, grid):.0e}"
        if fam in ("gaussian", "bernoulli"):
            mx = ne.prior_logpdf(fam, grid, PRIORS[fam]) + ne.block_max_loglik(fam, float(tokens.max()), grid, P)
            ax.plot(grid, ne.normalise_on_grid(mx, grid), ":", color="C3", lw=2, label="from block max (control)")
            title += f"\nTV(block, max) = {ne.total_variation(full, mx, grid):.2f}"
        ax.axvline(TRUTH[fam], color="gray", lw=0.8, label="true θ")
        lo = {"gaussian": (-2.5, 4.0), "bernoulli": (0, 1), "poisson": (0, 8)}[fam]
        ax.set_xlim(*lo)
        ax.set_xlabel({"gaussian": "μ", "bernoulli": "p", "poisson": "λ"}[fam])
        ax.set_ylabel("posterior density")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("Claim 7.1: the block mean of T(x) is sufficient; the block max is not", fontsize=11)
    fig.tight_layout()
    return save(fig, out_dir, "posterior_sufficiency")


@figure("risk_vs_rho", claim="7.2",
        title="Next-token risk vs block correlation ρ: Kalman theory, Monte Carlo, and dR/dg at g = 0")
def render_risk_vs_rho(ctx, out_dir):
    import matplotlib.pyplot as plt

    from numerics.families import emissions as ne
    from numerics.generated import emissions as gen

    s2, sigma2, P, k, n_prev = 1.0, 2.0, 8, 2, 12
    n_seq = 20_000 if ctx.quick else 200_000
    rho_line = torch.linspace(0, 0.97, 200, dtype=torch.float64, device="cpu")  # host: a figure's values
    c = lambda v: torch.tensor(float(v), dtype=torch.float64, device="cpu")  # host: a figure's values
    red_line = gen.risk_reduction(rho_line, c(s2), c(sigma2), c(P), c(k))
    slope_line = gen.gate_slope(rho_line, c(s2), c(sigma2), c(P), c(k))
    rhos = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9)
    mc = [ne.mc_risks(n_seq, n_prev, P, k, r, s2, sigma2, seed=31 + i) for i, r in enumerate(rhos)]
    sl = [ne.mc_gate_slope(n_seq, n_prev, P, k, r, s2, sigma2, seed=61 + i) for i, r in enumerate(rhos)]

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    ax.plot(rho_line, red_line, color="C0", label="theory: stationary Kalman (generated)")
    ax.errorbar(rhos, [m["reduction"] for m in mc], yerr=[m["se_reduction"] for m in mc], fmt="o", color="C0",
                ms=4, capsize=3, label=f"Monte Carlo ± SE (paired, {n_seq} seq., {n_prev} earlier blocks)")
    ax.axhline(0, color="gray", lw=0.8)
    ax.set_xlabel("block correlation ρ")
    ax.set_ylabel("risk(current block) − risk(+ history)")
    ax.set_title(f"risk reduction by the cross-block channel (risk without it: "
                 f"{float(gen.predictive_risk(c(s2), c(sigma2), c(k))):.2f};\nσ² = {sigma2}, s² = {s2}, P = {P}, "
                 f"k = {k} tokens seen)", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1]
    ax.plot(rho_line, slope_line, color="C2", label="theory −2ρ s²(1 − λ_k)")
    ax.errorbar(rhos, [s["slope"] for s in sl], yerr=[s["se"] for s in sl], fmt="o", color="C2", ms=4,
                capsize=3, label="Monte Carlo ± SE")
    ax.axhline(0, color="gray", lw=0.8)
    ax.set_xlabel("block correlation ρ")
    ax.set_ylabel("dR/dg at g = 0")
    ax.set_title("gate slope for ŷ_g = E[y | current block] + g·x̄_{b−1}", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle("Claim 7.2: no shared structure → the cross-block channel cannot help (ρ = 0); "
                 "AR(1) → it does", fontsize=11)
    fig.tight_layout()
    return save(fig, out_dir, "risk_vs_rho")


def _zoom_late(ax, setting, bayes):
    """An inset on the second half of training, where the coupled/frozen gap is decided."""
    inset = ax.inset_axes([0.38, 0.3, 0.58, 0.36])
    lo = hi = None
    for arm, color, ls in (("coupled", "C0", "-"), ("frozen", "C3", "--")):
        runs = setting["runs"][arm]
        steps = np.array(runs[0]["curves"]["eval_step"])
        late = steps >= steps[len(steps) // 2]
        m = np.array([r["curves"]["eval_loss"] for r in runs]).mean(0)[late]
        inset.plot(steps[late], m, ls, color=color)
        lo, hi = (m.min(), m.max()) if lo is None else (min(lo, m.min()), max(hi, m.max()))
    for level, color in ((bayes["loss_local"], "C3"), (bayes["loss_hist"], "C0")):
        if lo - 0.02 <= level <= hi + 0.02:
            inset.axhline(level, color=color, lw=0.8, ls=":")
    inset.set_title("second half, zoomed", fontsize=7)
    inset.tick_params(labelsize=6)


@figure("training_curves", claim="7.3",
        title="Coupled vs frozen gate on i.i.d. and AR(1) block data; the gate's trajectory")
def render_training_curves(ctx, out_dir):
    import matplotlib.pyplot as plt

    from numerics.text import training as tr
    # ``ctx.smoke`` (set by the notebook at FASTSLOW_SMOKE=1) selects the seconds-sized run.
    res = tr.run_experiment(quick=ctx.quick, cache_dir=tr.cache_dir_for(ctx), smoke=getattr(ctx, "smoke", False))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    labels = {"iid": "i.i.d. blocks (ρ = 0)", "ar1": f"AR(1) blocks (ρ = {res['settings']['ar1']['config']['rho']})"}
    for ax, name in zip(axes[:2], ("iid", "ar1")):
        s = res["settings"][name]
        for arm, color, ls in (("coupled", "C0", "-"), ("frozen", "C3", "--")):
            runs = s["runs"][arm]
            steps = np.array(runs[0]["curves"]["eval_step"])
            losses = np.array([r["curves"]["eval_loss"] for r in runs])
            m, sd = losses.mean(0), losses.std(0, ddof=1) if len(runs) > 1 else np.zeros(losses.shape[1])
            ax.plot(steps, m, ls, color=color, label=f"{arm} (mean of {len(runs)} seeds)")
            ax.fill_between(steps, m - sd, m + sd, color=color, alpha=0.2)
        b = s["bayes"]
        ax.axhline(b["loss_local"], color="C3", lw=0.8, ls=":", label="Bayes, current block only")
        ax.axhline(b["loss_hist"], color="C0", lw=0.8, ls=":", label="Bayes, whole history")
        row = res["summary"][name]
        gap = f"{row['gap']:.4f}".replace("-", "−")
        ax.set_title(f"{labels[name]}: frozen − coupled = {gap}\n(noise bound {row['crit']:.4f}; "
                     f"Bayes gap {row['bayes_gap']:.4f})", fontsize=9)
        ax.set_xlabel("training step")
        ax.set_ylabel("held-out next-token loss (nats)")
        every = np.concatenate([np.ravel(r["curves"]["eval_loss"]) for arm in ("coupled", "frozen")
                                for r in s["runs"][arm]])
        top, bottom = max(every.max(), b["loss_local"]), min(every.min(), b["loss_hist"])
        pad = 0.05 * (top - bottom)
        ax.set_ylim(bottom - pad, top + pad)  # every loss shown, the early ones included
        ax.legend(fontsize=7, loc="upper right")
        _zoom_late(ax, s, b)
    ax = axes[2]
    for name, color in (("iid", "C7"), ("ar1", "C2")):
        for j, r in enumerate(res["settings"][name]["runs"]["coupled"]):
            for l, g in enumerate(r["curves"]["gates"]):
                ax.plot(r["curves"]["step"], g, color=color, lw=1, alpha=0.7,
                        ls=("-", "--", ":", "-.")[l % 4],
                        label=f"{labels[name]}, layer {l}" if j == 0 else None)
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xlabel("training step")
    ax.set_ylabel("gate g_ℓ")
    ax.set_title("gate trajectories (coupled runs, every seed)", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle("Claim 7.3: the data decides — the gate stays closed on i.i.d. blocks and opens on AR(1) blocks",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.94))  # room for the suptitle above the panels' two-line titles
    return save(fig, out_dir, "training_curves")
