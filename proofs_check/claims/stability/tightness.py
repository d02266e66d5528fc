"""Claim 5.2: the gate bound is tight for aligned systems; the exact 2×2 boundaries (Jury,
Routh–Hurwitz) (docs/theory.md §5, reconstruction).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.families import stability as ns
from proofs_check.verdicts.standing import RECONSTRUCTION
from proofs_check.verdicts.evidence import ClaimResult, ControlResult, NumericResult
from proofs_check.verdicts.registry import arch_free, claim, no_matrix_free
from proofs_check.claims.stability.gate_bound import rounding_tol, symbolic_step, log_norm_direct
from theory import stability as th


def _condition_error(A: torch.Tensor, K: torch.Tensor, h: float, kind: str) -> float:
    """max |Σ_j c_j g^j − condition(A + hgK)| / max(1, |condition|) over g ∈ {−2, −0.5, 0.7, 3}: the
    generated coefficient rows (c₀, c₁, c₂) against the conditions computed from tr and det of the
    2×2 matrix itself (Jury: p(1), p(−1), 1 − det; Routh–Hurwitz: −tr, det).  Entries O(1), g ≤ 3:
    rounding ≲ 1e-14."""
    coeffs = (ns.gen.jury_coefficients(A, K, torch.tensor(h, dtype=A.dtype, device=A.device)) if kind == "jury"
              else ns.gen.routh_hurwitz_coefficients(A, K))
    worst = 0.0
    for g in (-2.0, -0.5, 0.7, 3.0):
        M = A + h * g * K
        tr, det = M.diagonal(dim1=-2, dim2=-1).sum(-1), torch.linalg.det(M)
        direct = (torch.stack([1 - tr + det, 1 + tr + det, 1 - det], -1) if kind == "jury"
                  else torch.stack([-tr, det], -1))
        poly = coeffs[..., 0] + coeffs[..., 1] * g + coeffs[..., 2] * g * g
        worst = max(worst, float(((poly - direct).abs() / direct.abs().clamp_min(1.0)).max()))
    return worst


@claim("5.2", title="Tightness of the gate bound; exact 2×2 boundaries", family="stability",
       statement="For aligned (commuting, positive, co-diagonal with a common top direction) G_ℓ, K_ℓ the bound "
                 "is exact: the product is non-expanding at g*(1−δ) and expanding at g*(1+δ). For 2×2 systems the "
                 "exact boundary is Jury's (discrete G + hgK) or Routh–Hurwitz's (continuous F + gK); elsewhere "
                 "the norm bound is conservative (g*_norm ≤ g*_exact).",
       assumptions=["aligned systems: one orthonormal eigenbasis, positive eigenvalues, the top eigenvector of "
                    "G_ℓ and K_ℓ shared in every layer",
                    "2×2 comparison: depth-autonomous systems (equal layers), stability radius in |g|"],
       reconstruction=True,
       generated=["numerics.generated.stability.jury_coefficients",
                  "numerics.generated.stability.routh_hurwitz_coefficients",
                  "numerics.generated.stability.symmetric_part",
                  "numerics.generated.stability.continuous_gate_bound"],
       tests=["tests/test_stability.py::test_aligned_bound_is_exact",
              "tests/test_stability.py::test_jury_radius_matches_spectral_radius",
              "tests/test_stability.py::test_misaligned_bound_is_conservative"],
       control="misaligned 2×2 systems: the norm bound is strictly conservative by the Jury-predicted ratio",
       figure="bound_conservativeness",
       kind='lemma', setting='aligned G_ℓ, K_ℓ systems; 2×2 depth-autonomous systems', standing=RECONSTRUCTION,
       headline='the bound is exact for aligned systems and conservative elsewhere (Jury / Routh–Hurwitz boundaries for 2×2); no stack enters')
def check_5_2(ctx) -> ClaimResult:
    steps = [symbolic_step("aligned product: diagonal, top entry = exp S(g), dominates", th.aligned_product_norm_identity())]
    steps += [symbolic_step(f"2×2 boundary: {n}", ok) for n, ok in th.boundary_checks().items()]
    a, k, h = th.a, th.k, th.h
    steps.append(symbolic_step("equal layers: g* = (1 − a)/(hk)",
                       th.sp.simplify(th.equal_layers_root() - (1 - a) / (h * k)) == 0))

    # numeric: aligned multi-layer systems at g*(1 ± δ), and log‖Π‖ = S(g)
    batch, layers, dim = (100, 8, 4) if ctx.quick else (1000, 16, 6)
    hh = 1.0 / layers
    G, K = ns.aligned_systems(batch, layers, dim, seed=ctx.seed + 61)
    aa, kk = ns.spectral_norm(G), ns.spectral_norm(K)
    gs = ns.solve_gate_bound(aa, kk, hh)
    sel = torch.isfinite(gs)
    delta = 1e-3
    errors, signs_ok = [], True
    for f in (1 - delta, 1 + delta):
        g = gs[sel] * f
        measured = torch.log(ns.spectral_norm(ns.gated_product(G[sel], K[sel], hh, g)))
        errors.append(float((measured - ns.log_growth(aa[sel], kk[sel], hh, g)).abs().max()))
        signs_ok &= bool((measured < 0).all()) if f < 1 else bool((measured > 0).all())
    # 2×2 aligned, depth-autonomous: norm bound = Jury radius
    G2, K2 = ns.aligned_systems(batch, 1, 2, seed=ctx.seed + 62, norm_range=(0.3, 0.95))
    h2 = 1.0 / 12
    ratio_aligned = ns.discrete_norm_gate_bound(G2[:, 0], K2[:, 0], h2) / ns.jury_gate_radius(G2[:, 0], K2[:, 0], h2)
    ratio_err = float((ratio_aligned - 1).abs().max())
    # 2×2 aligned, continuous: F = G − I (top eigenvalue closest to 0) with K: μ/κ = the Routh–Hurwitz radius
    F2 = G2[:, 0] - torch.eye(2, dtype=torch.float64, device=G2.device)
    ratio_cont = ns.continuous_norm_gate_bound(F2, K2[:, 0]) / ns.routh_hurwitz_gate_radius(F2, K2[:, 0])
    ratio_cont_err = float((ratio_cont - 1).abs().max())
    # the generated condition polynomials against trace and determinant of the matrices themselves
    Gd, Kd = ns.random_discrete_2x2(batch, ctx.seed + 65, h2)
    Fc, Kc = ns.random_continuous_2x2(batch, ctx.seed + 66)
    cond_err = max(_condition_error(Gd, Kd, h2, "jury"), _condition_error(Fc, Kc, 1.0, "routh_hurwitz"))
    # the log-norm behind μ/κ (generated symmetric part) against numpy's eigensolver, relative to ‖F‖:
    # ≤ 10·n·u (a backward-stable symmetric eigenproblem), far below tol
    Fall = torch.cat([F2, Fc])
    ln_err = float(np.max(np.abs(ns.log_norm(Fall).numpy() - log_norm_direct(Fall))
                          / np.linalg.norm(Fall.numpy(), 2, axis=(-2, -1))))
    tol = max(rounding_tol(layers, dim), 1e-9)  # the 2×2 ratio goes through polynomial roots: cond ~ 1e3 · eps
    error = max(errors + [ratio_err, ratio_cont_err, cond_err, ln_err]) if signs_ok else math.inf
    numeric = NumericResult(
        cases=2 * int(sel.sum()) + 2 * batch, max_error=error, tolerance=tol,
        detail=f"{int(sel.sum())} aligned systems: log‖Π‖ − S(g) at g*(1∓{delta}) within {max(errors):.2e}, "
               f"non-expanding below and expanding above: {signs_ok}; 2×2 aligned: |g*_norm/g*_Jury − 1| ≤ "
               f"{ratio_err:.2e}, continuous |(μ/κ)/g*_RH − 1| ≤ {ratio_cont_err:.2e}; generated Jury and "
               f"Routh–Hurwitz polynomials vs tr/det of G + hgK, F + gK at random g: {cond_err:.2e}; log-norm m(F) "
               f"(generated symmetric part) vs numpy, relative to ‖F‖: {ln_err:.1e}",
        table=[{"part": f"aligned, {layers} layers, g*(1 − δ)", "max |log‖Π‖ − S(g)|": errors[0]},
               {"part": f"aligned, {layers} layers, g*(1 + δ)", "max |log‖Π‖ − S(g)|": errors[1]},
               {"part": "2×2 aligned discrete", "max |g*_norm/g*_Jury − 1|": ratio_err},
               {"part": "2×2 aligned continuous", "max |(μ/κ)/g*_RH − 1|": ratio_cont_err},
               {"part": "Jury / Routh–Hurwitz polynomials vs tr, det", "max relative error": cond_err}])

    # control: misaligned random 2×2 draws — the bound is conservative, as Jury / Routh–Hurwitz predict
    n2 = 300 if ctx.quick else 3000
    Gd, Kd = ns.random_discrete_2x2(n2, ctx.seed + 63, h2)
    rd = ns.discrete_norm_gate_bound(Gd, Kd, h2) / ns.jury_gate_radius(Gd, Kd, h2)
    Fc, Kc = ns.random_continuous_2x2(n2, ctx.seed + 64)
    # the draws are Hurwitz by construction (m(F) = −u < 0), read off tr and det directly: a wrong log-norm
    # that draws non-Hurwitz F leaves no Routh–Hurwitz radius, and the control says so instead of raising
    tr, det = Fc.diagonal(dim1=-2, dim2=-1).sum(-1), torch.linalg.det(Fc)
    hurwitz = bool(((tr < 0) & (det > 0)).all())
    rc = (ns.continuous_norm_gate_bound(Fc, Kc) / ns.routh_hurwitz_gate_radius(Fc, Kc) if hurwitz
          else torch.full((n2,), math.nan, dtype=torch.float64, device=Fc.device))
    # at g*_norm(1+δ) a misaligned system whose Jury radius exceeds it by > 2δ is still stable
    g_test = ns.discrete_norm_gate_bound(Gd, Kd, h2) * (1 + delta)
    stable_past = torch.linalg.eigvals(Gd + h2 * g_test[:, None, None] * Kd).abs().max(-1).values < 1
    predicted_stable = rd < 1 / (1 + delta)
    agree = bool((stable_past == predicted_stable).all())
    never_optimistic = bool((rd <= 1 + 1e-9).all() and (rc <= 1 + 1e-9).all())
    conservative = float((rd < 0.99).double().mean())
    status = ("fails-as-predicted" if hurwitz and agree and never_optimistic and conservative > 0.5
              else "did-not-fail")
    control = ControlResult(status,
                            f"{n2} misaligned 2×2 draws: g*_norm/g*_Jury median {float(rd.median()):.3f} "
                            f"(min {float(rd.min()):.3f}), < 0.99 for {100 * conservative:.0f}%; past the norm bound "
                            f"the spectral radius stays < 1 exactly where Jury predicts ({agree}); continuous "
                            f"g*/g*_RH median {float(rc.median()):.3f}; bound never optimistic: {never_optimistic}"
                            + ("" if hurwitz else "; the continuous draws F − (m(F) + u)I are not Hurwitz: "
                               "their log-norm shift is wrong"))
    return ClaimResult(steps, numeric, control,
                       notes=f"Conservativeness on random draws: discrete median ratio {float(rd.median()):.3f}, "
                             f"continuous median ratio {float(rc.median()):.3f} (1 = exact).")


arch_free("5.2", "a statement about aligned (commuting, co-diagonal, positive) matrices G_ℓ, K_ℓ; no architecture enters (the preln ledger entry is its verdict)")
no_matrix_free("5.2", "a statement about aligned 2×2 / abstract systems (Jury, Routh–Hurwitz); no stack size enters")
