"""Figure for Claim 6.4: the depth clock — decaying modes against the reference's spread, the residual's
order in η, the distance of real trajectories from the coarse manifold, and the gap-closing control."""

from __future__ import annotations

from numerics.families import depth_slow_manifold as nds
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import random_xbar
from proofs_check.claims import depth_slow_manifold as chk
from proofs_check.report.figures import figure, save
from proofs_check.report.figures.coarse_graining import eigenvalue_label


def _trained_panel(ctx):
    """(stack, text inputs, label) of the default trained stack, or None when it cannot be had offline."""
    from numerics.storage import checkpoint as ckpt
    from numerics.stacks.spec import StackSpec
    from numerics.text.training import cache_dir_for
    from proofs_check.experiments.train import default_checkpoint

    path = default_checkpoint(cache_dir_for(ctx))
    spec = StackSpec.from_dict({**ckpt.read_manifest(path)["spec"], "dtype": "float64", "checkpoint": str(path)})
    return spec.build(), nds.text_inputs(str(path), spec.T, 8), f"trained on text (T = {spec.T}, L = {spec.layers})"


@figure("depth_clock", claim="6.4", title="The depth clock: decaying modes vs the reference's spread, order in η, "
                                          "real trajectories, gap-closing control")
def render_depth_clock(ctx, out_dir):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter

    def dense_log(axis):  # 1, 2, 5 per decade: a range under one decade still shows several ticks
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_minor_formatter(NullFormatter())

    d, L = (8, 16) if ctx.quick else (16, 32)
    xbar = random_xbar(d, 0)
    fig, axes = plt.subplots(2, 2, figsize=(13, 12))  # 2 × 2: four panels in a row are unreadable at report width
    axes = axes.ravel()
    fig.subplots_adjust(hspace=0.75, wspace=0.25)
    below = dict(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    colours = ("tab:blue", "tab:orange", "tab:green")
    # (a) r_ℓ(λ) against σ̃_ℓ/σ̃_0: random stacks (dots), the clock (lines), the power law (dotted)
    ax = axes[0]
    for kernel, marker in (("causal", "o"), ("full", "s")):
        stack = StackSpec(T=6, d=d, layers=L, heads=2, kernel=kernel, seed=0, knobs={"value_scale": 20.0}).build()
        lams, r = nds.measured_ratios(stack, xbar)
        rhat = nds.clock_ratios(stack, xbar, lams)
        rpow = nds.clock_power_ratios(stack, xbar, lams)
        x = (nds.reference_spread(stack, xbar)[1:] / nds.reference_spread(stack, xbar)[0]).numpy()
        for k in range(min(2, len(lams))):
            col = colours[k] if kernel == "causal" else "tab:red"
            ax.plot(x, r[:, k].numpy(), marker, ms=3, color=col, label=f"{kernel}, λ = {eigenvalue_label(lams[k])}: measured")
            ax.plot(x, rhat[:, k].numpy(), "-", lw=1, color=col, label=f"clock Π q(λ), exponent −{1 - lams[k]:.2g}")
            ax.plot(x, rpow[:, k].numpy(), ":", lw=1, color=col)
    ax.axhline(chk.TAU, color="k", ls=":", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="σ̃_ℓ / σ̃_0 (the reference's spread)", ylabel="r_ℓ(λ)",
           title="(a) random stacks, c = 20: r vs the clock")
    dense_log(ax.xaxis)
    dense_log(ax.yaxis)
    ax.legend(fontsize=8, **below)
    # (b) the residual after ℓ* along θ(η): slope 1
    ax = axes[1]
    for kernel, col in (("causal", "tab:blue"), ("full", "tab:red")):
        base = StackSpec(T=6, d=d, layers=L, heads=2, kernel=kernel, seed=0, knobs={"value_scale": 20.0}).build()
        etas = [2.0**-k for k in range(12, 0, -1)]
        res = []
        for eta in etas:
            s = nds.ideal_path(base, eta)
            lams, r = nds.measured_ratios(s, xbar)
            rhat = nds.clock_ratios(s, xbar, lams)
            res.append(chk.residual_after(r, rhat, nds.saturation_depths(r, rhat, chk.TAU)[1]))
        ax.loglog(etas, res, "o-", ms=3, color=col, label=kernel)
        ax.loglog(etas, [res[0] * e / etas[0] for e in etas], ":", color=col, lw=0.8)
    ax.set(xlabel="η (0: ideal value path, 1: the drawn stack)", ylabel="max_{ℓ≥ℓ*} |log r − log r̂|",
           title="(b) residual after ℓ*: O(η), slope 1 (dotted)")
    ax.legend(fontsize=8, **below)
    # (c) real trajectories: distance from the coarse manifold vs the clock's matrix form
    ax = axes[2]
    for kernel, col in (("causal", "tab:blue"), ("full", "tab:red")):
        stack = StackSpec(T=6, d=d, layers=L, heads=2, kernel=kernel, seed=0, knobs={"value_scale": 20.0}).build()
        rr = nds.distance_reach(stack, chk.synthetic_inputs(6, 0, xbar))
        for k, s0 in enumerate(chk.SPREADS):
            ax.plot(range(1, L + 1), rr["measured"][k], "o" if k else "s", ms=3, color=col,
                    label=f"{kernel}, spread {s0:g}: X_ℓ measured")
            ax.plot(range(1, L + 1), rr["predicted"][k], "-", lw=1, color=col)
    try:
        tstack, inputs, label = _trained_panel(ctx)
        rr = nds.distance_reach(tstack, inputs)
        ax.plot(range(1, tstack.config.layers + 1), rr["measured"][0], "^", ms=4, color="tab:purple",
                label=f"{label}: measured")
        ax.plot(range(1, tstack.config.layers + 1), rr["predicted"][0], "-", lw=1, color="tab:purple")
    except Exception as exc:  # no cached checkpoint and no time to train: say so on the panel
        ax.text(0.02, 0.02, f"trained stack unavailable: {type(exc).__name__}", transform=ax.transAxes, fontsize=7)
    ax.set(yscale="log", xlabel="layer ℓ", ylabel="s_ℓ / s_0 = distance from {1yᵀ}, relative",
           title="(c) real inputs: measured (marks) vs Π q_m(A) (lines)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8, **below)
    # (d) control: the gap closes with the ALiBi slope m; r_L(λ₂) vs τ
    ax = axes[3]
    ms = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0]
    meas, pred, eps = [], [], []
    for m in ms:
        stack = nds.ideal_path(nds.alibi_stack(m, T=6, d=d, layers=L, seed=0, value_scale=20.0), 0.0)
        lams, r = nds.measured_ratios(stack, xbar)
        meas.append(float(r[-1, 0]))
        pred.append(float(nds.clock_ratios(stack, xbar, lams)[-1, 0]))
        eps.append(nds.depth_epsilon(lams))
    ax.plot(ms, meas, "o", color="tab:blue", label="r_L(λ₂) measured (ideal layer)")
    ax.plot(ms, pred, "-", color="tab:blue", lw=1, label="clock")
    ax.axhline(chk.TAU, color="k", ls=":", lw=0.8, label=f"τ = {chk.TAU}")
    ax.axvline(chk.CONTROL_SLOPE, color="tab:red", ls="--", lw=1, label=f"control m = {chk.CONTROL_SLOPE:g}")
    ax2 = ax.twinx()
    ax2.semilogy(ms, eps, "s--", ms=3, color="tab:gray")
    ax2.set_ylabel("ε = 1/(1 − λ₂)", color="tab:gray")
    dense_log(ax2.yaxis)
    ax.set(xlabel="ALiBi slope m (λ₂ = 1/(1 + e^−m))", ylabel="r_L(λ₂)", title="(d) control: the gap closes, no ℓ*")
    ax.legend(fontsize=8, **below)
    fig.suptitle(f"Claim 6.4: the depth clock (T = 6, d = {d}, {L} layers, W_VO ≈ 20·I + noise); ε = 1/(1 − λ₂) = "
                 f"{1 / (1 - 0.5):g} (causal), 1 (full)")
    fig.tight_layout()
    return save(fig, out_dir, "depth_clock")
