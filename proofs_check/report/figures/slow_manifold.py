"""Figures of docs/theory.md §6: slow-manifold trajectories and convergence, p_st(y), the slow path's cost."""

from __future__ import annotations

import numpy as np

from proofs_check.report.figures import figure, save


@figure("slow_manifold_trajectories", claim="6.1",
        title="Trajectories, the slow manifold and the boundary layer")
def render_trajectories(ctx, out_dir):
    import matplotlib.pyplot as plt

    from numerics.families import slow_manifold as nm
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    s = np.linspace(0.02, 1.0, 200)[:, None]
    for k, style in ((0, "k-"), (2, "k--")):
        ax1.plot(s[:, 0], nm.manifold("michaelis_menten", k, s, 1 / 8)[:, 0], style, lw=1,
                 label=f"φ^({k})(s), ε = 1/8")
    for P, color in ((8, "C0"), (32, "C1")):
        # a picture, not a measurement: rtol 1e-7 is far below the line width
        tr = nm.simulate("michaelis_menten", 1.0 / P, t_eval=np.linspace(0, 4, 400), rtol=1e-7, atol=1e-9)
        ax1.plot(tr.y[:, 0], tr.x[:, 0], color=color, lw=1.5, label=f"trajectory, P = {P}")
    ax1.annotate("boundary layer", xy=(0.99, 0.25), xytext=(0.55, 0.12), arrowprops={"arrowstyle": "->"})
    ax1.set(xlabel="substrate s (slow)", ylabel="complex c (fast)",
            title="Michaelis–Menten: fast jump, then the slow manifold")
    ax1.legend(fontsize=8)
    for P, color in ((16, "C0"), (64, "C1")):
        tr = nm.token_recurrence("block", P)
        for k, style in ((0, "-"), (1, "--"), (2, ":")):
            gap = np.linalg.norm(tr.x - nm.manifold("block", k, tr.y, 1.0 / P), axis=1)
            ax2.semilogy(tr.t[1:], gap[1:], style, color=color, label=f"P = {P}, k = {k}")
    ax2.axvline(1.0, color="grey", lw=0.8)
    ax2.text(1.02, 0.02, "measurement window →", fontsize=8, color="grey", transform=ax2.get_xaxis_transform())
    ax2.set(xlabel="slow time t (block ends of the token recurrence)", ylabel="‖x − φ^(k)(y)‖",
            title="Block model: layer decay, then plateaus O(ε^(k+1))")
    ax2.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return save(fig, out_dir, "slow_manifold_trajectories")


@figure("slow_manifold_convergence", claim="6.1", title="dist(x, φ^(k)(y)) vs ε with slopes 1, 2, 3")
def render_convergence(ctx, out_dir):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from numerics.families import slow_manifold as nm
    runs = [("block", True, nm.ALL_PS), ("linear", True, nm.ALL_PS),
            ("michaelis_menten", False, (16, 64, 256) if ctx.quick else nm.ALL_PS),
            ("control", False, (16, 256) if ctx.quick else nm.FIT_PS)]
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 4), sharey=True)
    for ax, (system, rec, Ps) in zip(axes, runs):
        conv = nm.convergence(system, Ps=Ps, fit_Ps=[p for p in Ps if p in nm.FIT_PS], recurrence=rec)
        eps = np.array([r["eps"] for r in conv["rows"]])
        for k, marker in zip((0, 1, 2), "osd"):
            err = [r[f"dist_k{k}"] for r in conv["rows"]]
            ax.loglog(eps, err, marker + "-", label=f"k = {k}: slope {conv['slopes'][f'dist_k{k}']:.2f}")
            if system != "control":
                ref = err[-1] * (eps / eps[-1]) ** (k + 1)
                ax.loglog(eps, ref, "k:", lw=0.8)
        ax.loglog(eps, [r["reduced"] for r in conv["rows"]], "x--", color="grey",
                  label=f"reduced flow: slope {conv['slopes']['reduced']:.2f}")
        ax.set(xlabel="ε = 1/P", title=f"{system} ({conv['integrator']})")
        ax.xaxis.set_minor_formatter(NullFormatter())
        Pt = [2 ** k for k in range(int(np.log2(1 / eps.max())), int(np.log2(1 / eps.min())) + 1)]
        ax.set_xticks([1 / p for p in Pt], [f"1/{p}" for p in Pt], fontsize=7)  # ε = 1/P at every power of 2
        ax.legend(fontsize=7)
    axes[0].set_ylabel("max_(t∈[1,2]) ‖x − φ^(k)(y)‖  (dotted: slopes 1, 2, 3)")
    fig.suptitle("Slow-manifold error O(ε^(k+1)); the repelling control does not converge")
    fig.tight_layout()
    return save(fig, out_dir, "slow_manifold_convergence")


@figure("stationary_distribution", claim="6.2", title="p_st(y) of the 3-state chain")
def render_stationary(ctx, out_dir):
    import matplotlib.pyplot as plt

    from numerics.families import slow_manifold as nm
    n = 60 if ctx.quick else 200
    g = np.linspace(-3, 3, n)
    Y1, Y2 = np.meshgrid(g, g)
    p = nm.stationary(np.stack([Y1.ravel(), Y2.ravel()], 1)).reshape(n, n, 3)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for i, ax in enumerate(axes):
        # rasterised: the mesh is n² cells, which as vectors makes a multi-megabyte PDF
        im = ax.pcolormesh(Y1, Y2, p[..., i], shading="auto", vmin=0, vmax=1, cmap="viridis", rasterized=True)
        ax.set(xlabel="y₁", ylabel="y₂", title=f"p_st,{i + 1}(y)")
        fig.colorbar(im, ax=ax, label=f"probability of state {i + 1}")
    tr = nm.simulate("chain3", 1 / 32, y0=(2.0, -2.0), rtol=1e-7, atol=1e-9)  # a picture: loose tolerance
    axes[0].plot(tr.y[:, 0], tr.y[:, 1], "w-", lw=1.2, label="slow path y(t), P = 32")
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle("Stationary distribution of Q(y)ᵀp = 0, 1ᵀp = 1 (Arrhenius rates q_ij = exp(θ_ij·y))")
    fig.tight_layout(rect=(0, 0, 1, 0.93))  # room for the suptitle above the panels' titles
    return save(fig, out_dir, "stationary_distribution")


@figure("slow_path_cost", claim="6.3", title="Fast vs slow attention: FLOP and measured cost ratios vs P")
def render_cost(ctx, out_dir):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from numerics.families.cost import cost_sweep

    res = cost_sweep(quick=ctx.quick, device=ctx.device)
    rows = res["rows"]
    P = np.array([r["P"] for r in rows], float)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.loglog(P, [r["flop_ratio_scores_mixing"] for r in rows], "o-", label="FLOPs: scores + mixing")
    ax.loglog(P, [r["flop_ratio_projections"] for r in rows], "s-", label="FLOPs: projections")
    ax.loglog(P, [r["flop_ratio_counted"] for r in rows], "d-", label="FLOPs: whole attention (counted)")
    ax.loglog(P, [r["time_ratio"] for r in rows], "x--", color="C3", label="measured CPU time ratio")
    ax.loglog(P, P ** 2, "k:", label="P²")
    ax.loglog(P, P, "k-.", lw=0.8, label="P")
    ax.set_xticks(P, [f"{p:g}" for p in P])  # one tick per measured block length
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="block length P", ylabel="fast / slow cost ratio",
           title=f"T = {res['T']}, d = {res['d']}, heads = {res['heads']} ({res['device']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, out_dir, "slow_path_cost")
