"""The matrix-free forms of Claim 5.1 (``check --scale``, and ``Claim.evaluate`` above the dense size).

Each form runs on a :class:`proofs_check.verdicts.scale_run.ScaleRun` — the preset's stack or a variant at the
same T, d, L and heads — with its negative control at the same size; nothing forms a (Td)² Jacobian
(``proofs_check.verdicts.scale_run`` states the tolerances).
"""

from __future__ import annotations

import math

import torch

from numerics.linearised import matrix_free as mf
from numerics.families import stability as ns
from proofs_check.verdicts.evidence import ClaimResult
from proofs_check.verdicts.registry import matrix_free
from proofs_check.verdicts.scale_run import ScaleRun, control_result, numeric_result


@matrix_free("5.1", variants={"contractive"})
def scale_5_1(run: ScaleRun) -> ClaimResult:
    """The gate certificate of a contractive stack at this size (n = 2 slow modes × d) and |g| < g*."""
    st = run.stack("contractive")
    Gs, Ks = ns.slow_mode_maps(st)
    N = Gs.shape[-1]
    layers = st.config.layers
    # the certificate of ns.gate_certificate, from the same maps (computed once): float64 spectral norms
    # (the top eigenvalue of MᵀM alone, ns.top_singular_value; every norm of this form the same way),
    # enclosure proved for every norm within 16·N·eps of them (eps of the stack's dtype)
    norms = ns.top_singular_value(torch.stack([Gs, Ks])).to(torch.float64).cpu()
    eps = 2 * mf.unit_roundoff(run.tdtype)
    rel_err = 16 * N * eps
    e = ns.certify_gate_bound(norms[0], norms[1], st.h, rel_err=rel_err)
    tol = 10.0 * layers * N * mf.unit_roundoff(run.tdtype)   # L products of N×N maps, ≤ L·N·u each, ×10 for the SVD
    derivations = [run.derive("10·L·N·u", tol, margin=10, n=layers * N),
                   run.derive("certificate norms 16·N·eps", rel_err, margin=32, n=N)]   # eps = 2u
    worst = -math.inf
    if e.certified:
        for f in (-0.99, 0.5, 0.99):
            worst = max(worst, float(torch.log(ns.top_singular_value(ns.gated_product(Gs, Ks, st.h, f * e.g_lo)))))
    err = max(worst, 0.0) if e.certified else math.inf
    Ga, Ka = ns.aligned_systems(2, layers, N, seed=run.seed + 53)
    aa, ka = ns.top_singular_value(Ga), ns.top_singular_value(Ka)
    gs = ns.solve_gate_bound(aa, ka, st.h)
    sel = torch.isfinite(gs)
    ok = bool(sel.any())
    detail = "no aligned system has a finite g*"
    if ok:
        gpast = gs[sel] * 1.1
        predicted = ns.log_growth(aa[sel], ka[sel], st.h, gpast)
        meas = torch.log(ns.top_singular_value(ns.gated_product(Ga[sel], Ka[sel], st.h, gpast)))
        mismatch = float((meas - predicted).abs().max())
        ok = bool((meas > 0).all()) and mismatch <= tol
        detail = (f"{int(sel.sum())} aligned systems of the same size ({layers} layers, {N}×{N}) at g = 1.1 g*: "
                  f"log-norm {float(meas.min()):.4f} > 0, |log‖Π‖ − S(g)| = {mismatch:.2e}")
    return ClaimResult(
        symbolic=[], numeric=numeric_result(3, err, tol, derivations=derivations,
                                      table=[{"quantity": "μ", "value": e.mu, "lo": e.mu_lo, "hi": e.mu_hi},
                                             {"quantity": "g*", "value": e.g_star, "lo": e.g_lo, "hi": e.g_hi}],
                                      detail=f"contractive stack (decay 2, ln_gain 0.2, weight_scale 0.5), P = T/2: {e.status}, "
                                      f"μ = {e.mu}, g* ∈ [{e.g_lo}, {e.g_hi}]; max log‖Π(G_ℓ + hgK_ℓ)‖ at g = "
                                      f"(−0.99, 0.5, 0.99)·g_lo = {worst:.3e} on {N} slow modes"),
        control=control_result(ok, detail))
