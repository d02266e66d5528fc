"""Depth roughness of trained weights, from the recorded run (docs/trained/depth_smoothness.json)."""

from __future__ import annotations

from proofs_check.report.figures import figure, save


@figure("depth_roughness", claim="1.1",
        title="Layer-to-layer change of trained weights against depth: i.i.d.-rough (√2), not an Euler path (1/L)")
def render_depth_roughness(ctx, out_dir):
    import matplotlib.pyplot as plt

    from proofs_check.experiments import depth_smoothness as ds
    result = ds.recorded()
    if result is None:  # a checkout without the recorded run: the estimator's calibration alone
        fig, ax = plt.subplots(figsize=(5, 3.2))
        cal = ds.calibration((2, 4, 8, 16), d=16)
        for kind in ("smooth", "iid"):
            ax.loglog((2, 4, 8, 16), [cal[kind]["by_depth"][str(L)]["W_VO"] for L in (2, 4, 8, 16)], "o-", label=kind)
        ax.set_xlabel("depth L")
        ax.set_ylabel("‖θ_ℓ+1 − θ_ℓ‖ / ‖θ_ℓ‖ (W_VO)")
        ax.legend(fontsize=7)
        return save(fig, out_dir, "depth_roughness")
    return save(ds.draw(result), out_dir, "depth_roughness")
