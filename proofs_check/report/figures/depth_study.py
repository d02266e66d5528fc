"""The depth study's figure (claim 8.1), drawn from the committed record docs/depth_study/depth_study.json."""

from __future__ import annotations

from pathlib import Path

from proofs_check.report.figures import figure, save

ARM_STYLE = {"gpt2": ("C0", "h = 1, i.i.d. init (GPT-2)"), "smooth": ("C1", "h = 1/L, smooth init")}


def draw(record: dict):
    """Four panels: the mean step and the median invariant roughness against L (init dashed, trained solid),
    both slopes against the training step, and the LN-quotiented singular spectrum of the deepest stack."""
    import statistics

    import matplotlib.pyplot as plt

    from proofs_check.experiments.depth_study_rule import EULER_ROUGH, NOT_EULER_ROUGH, arm_fits

    d = record["decision"]
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
    steps = record["config"]["snapshots"]
    for arm in record["arms"]:
        colour, label = ARM_STYLE.get(arm, ("k", arm))
        rows = sorted((c for c in record["cells"] if c["config"]["arm"] == arm), key=lambda c: c["config"]["layers"])
        depths = [c["config"]["layers"] for c in rows]
        for when, style in ((d["first"], "--"), (d["last"], "-")):
            snaps = [c["snapshots"][str(when)] for c in rows]
            tag = f"{label}, step {when}"
            axes[0].loglog(depths, [s["step"]["mean"] for s in snaps], style, marker="o", color=colour, label=tag)
            med = [statistics.median(g["mean"] for g in s["roughness"].values()) for s in snaps]
            axes[1].loglog(depths, med, style, marker="o", color=colour, label=tag)
        fits = [arm_fits(record["cells"], arm, s) for s in steps]
        axes[2].plot(steps, [f["p_step"] for f in fits], "s-", color=colour, label=f"{arm}: step")
        axes[2].plot(steps, [f["p_rough"] for f in fits], "o--", color=colour, label=f"{arm}: roughness (median)")
        deep = rows[-1]
        for when, style in ((d["first"], "--"), (d["last"], "-")):
            logs = deep["snapshots"][str(when)]["spectrum"]["mean_log_sigma"]
            axes[3].plot(range(1, len(logs) + 1), logs, style, color=colour, label=f"{arm} L = {depths[-1]}, step {when}")
    ref = record["depths"]
    for ax in axes[:2]:
        ax.loglog(ref, [ref[0] / L for L in ref], "k:", lw=0.8, label="∝ 1/L (Euler)")
        ax.set_xticks(ref, [str(L) for L in ref])
        ax.minorticks_off()
        ax.set_xlabel("depth L")
    axes[0].set_ylabel("mean ‖X_ℓ+1 − X_ℓ‖ / ‖X_ℓ‖")
    axes[1].set_ylabel("median over invariants of mean r_ℓ")
    axes[2].axhline(-1, color="k", lw=0.8, ls=":")
    axes[2].axhspan(min(-1.5, EULER_ROUGH), EULER_ROUGH, color="C2", alpha=0.1)
    axes[2].axhline(NOT_EULER_ROUGH, color="grey", lw=0.8)
    axes[2].set_xlabel("training step")
    axes[2].set_ylabel("loglog slope in L")
    axes[3].set_xlabel("index k")
    axes[3].set_ylabel("mean ln σ_k (LN-quotiented)")
    for ax in axes:
        ax.legend(fontsize=6)
    fig.suptitle(f"Depth study (claim 8.1): {d['verdict']} by the pre-registered rule; "
                 f"green band: Euler-consistent slopes", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.92))  # room for the suptitle above the panels' tick labels
    return fig


def plot(record: dict, out: str | Path) -> Path:
    """:func:`draw` written to ``out`` (PNG) atomically."""
    import matplotlib.pyplot as plt

    from numerics.storage.io import atomic_path

    out = Path(out)
    fig = draw(record)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format=out.suffix.lstrip(".") or "png", dpi=110)
    plt.close(fig)
    return out


@figure("depth_study", claim="8.1",
        title="Depth study: step and invariant roughness of trained GPT-2 blocks against L, and the Jacobian spectrum")
def render_depth_study(ctx, out_dir):
    import matplotlib.pyplot as plt

    from proofs_check.experiments import depth_study as study

    record = study.recorded()
    if record is None:  # a checkout without the record: say so in the figure
        fig, ax = plt.subplots(figsize=(5, 2))
        ax.text(0.5, 0.5, f"no study record at {study.RECORD.relative_to(study.REPO)}", ha="center", va="center")
        ax.set_axis_off()
        return save(fig, out_dir, "depth_study")
    return save(draw(record), out_dir, "depth_study")
