"""Figure for claim 1.1: Euler convergence of smooth-path stacks vs the i.i.d. control."""

from __future__ import annotations

import numpy as np

from numerics.fitting import loglog_fit
from proofs_check.report.figures import figure, save


@figure("euler_convergence", claim="1.1", title="Error at t = 1 vs depth L (smooth path) and i.i.d. drift")
def euler_convergence(ctx, out_dir):
    import matplotlib.pyplot as plt

    from numerics.families import depth_flow as nd
    depths = [8, 16, 32, 64] if ctx.quick else [8, 16, 32, 64, 128]
    errs = nd.smooth_stacks_errors(6, 8, depths, rtol=1e-10 if ctx.quick else 1e-12)
    idepths = [8, 32, 128] if ctx.quick else [8, 32, 128, 512, 2048]
    drift = nd.iid_drift(6, 8, idepths, range(4))
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.loglog(depths, errs, "o-", label=f"smooth path: ‖X_L − X(1)‖ (slope {-loglog_fit(depths[1:], errs[1:]).slope:.2f})")
    ax.loglog(idepths, drift, "s-", label=f"i.i.d. weights: ‖X_L − X_0‖ (slope {-loglog_fit(idepths, drift).slope:.2f})")
    L = np.array(idepths, float)
    ax.loglog(L, errs[0] * depths[0] / L, "k--", label="slope 1 guide")
    ax.loglog(L, drift[0] * np.sqrt(idepths[0] / L), "k:", label="slope 1/2 guide")
    ax.set_xlabel("depth L (h = 1/L)"); ax.set_ylabel("Frobenius norm")
    ax.set_title("Untied stack as Euler scheme (causal, T=6, d=8)"); ax.legend(fontsize=8)
    return save(fig, out_dir, "euler_convergence")
