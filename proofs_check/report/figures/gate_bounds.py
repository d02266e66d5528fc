"""Figure for Claim 5.3: the product's log-norm and the determinant bound against the gate, with g*, the
onset and g⁺ marked, on Claim 5.1's contractive stacks."""

from __future__ import annotations

import torch

from numerics.families import gate_bounds as ngb
from numerics.families import stability as ns
from proofs_check.claims import gate_bounds as chk
from proofs_check.report.figures import figure, save


@figure("gate_bounds", claim="5.3", title="The gate's onset of expansion between g* and the determinant bound g⁺")
def render_gate_bounds(ctx, out_dir):
    import matplotlib.pyplot as plt

    specs = chk.specs_5_3("preln", ctx)
    fig, axes = plt.subplots(1, len(specs), figsize=(6 * len(specs), 4.6), squeeze=False)
    for ax, spec in zip(axes[0], specs):
        stack = spec.build()
        cert = ns.gate_certificate(stack)
        G, K = cert.maps
        h, g_star = stack.config.h, cert.enclosure.g_lo
        spectra = ngb.layer_spectra(G, K, h)
        g_plus = ngb.upper_gate_bound(spectra, g_star)[1.0]
        onset = ngb.linear_onset(G, K, h, g_star)[1.0]
        top = 4 * (g_plus if g_plus is not None else 64 * onset)        # g⁺ None: S ≤ 0 up to the search cap
        gates = torch.logspace(torch.log10(torch.tensor(g_star / 100, device="cpu")).item(), torch.log10(torch.tensor(top, device="cpu")).item(), 300,  # host: a figure's values
                               dtype=torch.float64, device="cpu")  # host: a figure's values
        ax.plot(gates.numpy(), ngb.product_log_norm(G, K, h, gates).numpy(), color="tab:blue",
                label="log‖Π(G_ℓ + hgK_ℓ)‖ (measured)")
        ax.plot(gates.numpy(), torch.log(ngb.norm_lower_bound(spectra, gates)).numpy(), color="tab:orange",
                label="S(g)/N (per-layer determinants)")
        ax.axhline(0, color="k", lw=0.8, ls=":")
        for x, col, name in ((g_star, "tab:green", "g* (5.1)"), (onset, "tab:blue", "onset"),
                             (g_plus, "tab:orange", "g⁺ (5.3)")):
            if x is not None:
                ax.axvline(x, color=col, ls="--", lw=1, label=f"{name} = {x:.3g}")
        slack = "beyond the search" if g_plus is None else f"{g_plus / onset:.0f}"
        ax.set(xscale="log", xlabel="gate g > 0", ylabel="log of the slow path's growth",
               title=f"{spec.kernel} kernel, seed {spec.seed}: onset/g* = {onset / g_star:.1f}, g⁺/onset = {slack}")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    fig.suptitle("Claim 5.3: g* ≤ onset ≤ g⁺ (contractive hierarchical stacks: residual decay 2, LN gain 0.2, "
                 "weight scale 0.5)")
    fig.tight_layout(rect=(0, 0, 1, 0.95))  # room for the suptitle above the panels' titles
    return save(fig, out_dir, "gate_bounds")
