"""Claim 5.3: the gate's onset of expansion between two a priori bounds, g* ≤ g_on ≤ g⁺ (docs/theory.md §5).

On Claim 5.1's contractive hierarchical stacks: g* (5.1's certified lower bound, from per-layer norms),
g⁺ (the smallest |g| with S(g) = Σ_ℓ log|det(G_ℓ + hgK_ℓ)| > 0, from per-layer determinants and
eigenvalues) and the measured onsets — of the linear model Π(G_ℓ + hgK_ℓ) and of the real gated stack.
The tightness g_on/g* and g⁺/g_on is reported on every stack.
"""

from __future__ import annotations

import math

import torch

from numerics.families import gate_bounds as ngb
from numerics.families import stability as ns
from numerics.precision import U64 as U
from numerics.stacks.spec import StackSpec
from proofs_check.verdicts.evidence import ClaimResult, ControlResult, Derivation, NumericResult, symbolic_steps
from proofs_check.verdicts.registry import claim, ledger_cases, no_matrix_free, on_stack
from proofs_check.verdicts.on_stack import Verdict
from proofs_check.verdicts.standing import VACUOUS
from theory import gate_bounds as th

CONTRACTIVE = dict(decay=2.0, ln_gain=0.2, weight_scale=0.5)   # Claim 5.1's contractive stacks
#: relative agreement of two bisections of the same crossing (2^-40 each) and of a root with its mpmath value
ROOT_RTOL = 1e-9


NEEDS_HIERARCHICAL = "needs the hierarchical pre-LN stack (P set): the slow-mode maps G_ℓ, K_ℓ of Claim 5.1"


def specs_5_3(arch, ctx):
    """Claim 5.3's hierarchical stacks (it needs the paper's stack: ``needs=("paper_stack",)``)."""
    T, d, layers = (8, 8, 6) if ctx.quick else (16, 16, 12)
    cases = [(1, "full"), (2, "causal"), (3, "block")][: 2 if ctx.quick else 3]
    return [StackSpec(T=T, d=d, layers=layers, heads=2, kernel=k, P=4, seed=s, knobs=CONTRACTIVE) for s, k in cases]


def bound_tolerance(L: int, N: int, kappa: float) -> float:
    """Rounding of log‖Π(G_ℓ + hgK_ℓ)‖ − S(g)/N: L products and N×N determinants/eigenvalues, each ≤ L·N·u
    relative times the conditioning κ = max cond(G_ℓ); ×10 margin (absolute in the logarithm)."""
    return 10 * L * N * U * kappa


@on_stack("5.3", specs=specs_5_3, needs=("paper_stack",), along_text=True)
def evaluate_5_3(spec, ctx) -> Verdict:
    """g* ≤ g_on ≤ g⁺ on one hierarchical stack, and the determinant bound ‖Π(G_ℓ + hgK_ℓ)‖ ≥ exp(S(g)/N) at gates
    where S > 0.  ``measured``: ``onset_min`` (the smaller sign's), ``onset_linear``, ``onset_real`` (per sign),
    ``tightness``; ``predicted``: ``g_star`` (5.1's certified lower end), ``g_plus_min``, ``g_plus`` (per sign), ``mu``."""
    if spec.checkpoint is not None:   # trained or imported weights: the margin μ that g* needs
        from proofs_check.claims import along_text

        return along_text.stability_margin(spec, "5.3")
    if spec.P is None:
        return Verdict("5.3", "n/a", reason=NEEDS_HIERARCHICAL)
    if spec.dtype != "float64":
        return Verdict("5.3", "n/a", reason="the rounding tolerances are derived for float64")
    stack = spec.build()
    cert = ns.gate_certificate(stack)
    e = cert.enclosure
    if not e.certified:
        return Verdict("5.3", "n/a", reason=f"no certified g* (status {e.status}): the sandwich needs Claim 5.1's bound")
    G, K = cert.maps
    h = stack.config.h
    spectra = ngb.layer_spectra(G, K, h)
    g_plus = ngb.upper_gate_bound(spectra, e.g_lo)
    lin = ngb.linear_onset(G, K, h, e.g_lo)
    real = ns.expansion_onset(stack, e.g_lo)
    L, N = G.shape[0], G.shape[-1]
    kappa = float(torch.linalg.cond(G).max())
    tol = bound_tolerance(L, N, kappa)
    errors, tight = {}, {}
    for s, name in ((1.0, "+"), (-1.0, "−")):
        on, up = lin[s], g_plus[s]
        if on is not None:
            errors[f"g* above the onset ({name})"] = max(0.0, e.g_lo - on) / (ROOT_RTOL * e.g_lo)
        if up is None:      # S(g) ≤ 0 up to the search cap: the determinant certifies no expansion there
            tight[name] = {"onset_linear / g*": None if on is None else on / e.g_lo, "g⁺ / onset_linear": None}
            continue
        if on is None:      # the bound says the product expands at g⁺: an onset must exist below it
            errors[f"no onset below g⁺ ({name})"] = math.inf
            continue
        errors[f"onset above g⁺ ({name})"] = max(0.0, on - up) / (ROOT_RTOL * up)
        gates = torch.tensor([s * up * (1 + 1e-6), s * 2 * up, s * 4 * up], dtype=torch.float64, device=G.device)
        bound = torch.log(ngb.norm_lower_bound(spectra, gates))          # S(g)/N
        below = (bound - ngb.product_log_norm(G, K, h, gates)).clamp_min(0).max()
        errors[f"‖Π(G + hgK)‖ below exp(S/N) ({name}), / tol"] = float(below) / tol
        real_on = real.onset_plus if s > 0 else real.onset_minus
        tight[name] = {"onset_linear / g*": on / e.g_lo, "onset_real / g*": None if real_on is None else real_on / e.g_lo,
                       "g⁺ / onset_linear": up / on}
    measured = {"onset_min": ngb.smallest(lin), "onset_linear": {"+": lin[1.0], "−": lin[-1.0]},
                "onset_real": {"+": real.onset_plus, "−": real.onset_minus, "resolution": real.resolution},
                "tightness": tight, "S0": float(ngb.log_det_growth(spectra, 0.0)), "modes": N,
                "errors": errors, "kappa": kappa}
    predicted = {"g_star": e.g_lo, "g_plus_min": ngb.smallest(g_plus), "mu": e.mu,
                 "g_plus": {"+": g_plus[1.0], "−": g_plus[-1.0]}, "tolerance": tol}
    error = max(errors.values())
    kw = dict(measured=measured, predicted=predicted, error=error, tolerance=1.0)
    if error > 1.0:
        return Verdict("5.3", "fails", counterexample=spec.as_dict(), **kw)
    return Verdict("5.3", "holds", **kw)


def diagonal_control() -> tuple[bool, str, dict]:
    """Diagonal systems with direction-dependent rates: the onset is the smallest per-direction root of
    Σ_ℓ log(a_ℓi + hgk_ℓi) = 0 and g⁺ the root of their sum, both from sympy's nsolve (an independent
    route); the determinant bound is loose by exactly g⁺/g_on.  For a scalar system (every direction
    alike) the three coincide: g* = g_on = g⁺."""
    h = 1 / 6
    a = torch.tensor([[0.95, 0.70, 0.50]] * 6, dtype=torch.float64, device="cpu")  # a fixed host-side example
    k = torch.tensor([[1.0, 1.0, 1.0]] * 6, dtype=torch.float64, device="cpu")  # a fixed host-side example
    G, K = ngb.diagonal_systems(a, k)
    spectra = ngb.layer_spectra(G, K, h)
    g_plus = ngb.upper_gate_bound(spectra, 0.01)[1.0]
    onset = ngb.linear_onset(G, K, h, 0.01)[1.0]
    roots = [float(th.scalar_gate_root(a[:, i].tolist(), k[:, i].tolist(), h)) for i in range(3)]
    import sympy as sp

    gg = sp.Symbol("gg", positive=True)
    g_sum = float(sp.nsolve(sum(sp.log(float(a[l, i]) + h * gg * float(k[l, i])) for l in range(6) for i in range(3)),
                            gg, max(roots)))
    # scalar system: g* (5.1's Newton root of Σ log(a + hgk)) = onset = g⁺
    Gs, Ks = ngb.diagonal_systems(a[:, :1].expand(6, 3).clone(), k[:, :1].expand(6, 3).clone())
    g_star_s = float(ns.solve_gate_bound(a[:, 0], k[:, 0], h))
    sp_s = ngb.layer_spectra(Gs, Ks, h)
    tight = [g_star_s, ngb.linear_onset(Gs, Ks, h, 0.01)[1.0], ngb.upper_gate_bound(sp_s, 0.01)[1.0]]
    rel = lambda x, y: abs(x - y) / abs(y)  # noqa: E731
    ok = (rel(onset, min(roots)) <= ROOT_RTOL and rel(g_plus, g_sum) <= ROOT_RTOL and g_plus / onset > 1.5
          and max(rel(t, roots[0]) for t in tight) <= ROOT_RTOL)
    detail = (f"diagonal rates a = (0.95, 0.70, 0.50), k = 1, 6 layers: per-direction roots {[round(r, 6) for r in roots]}; "
              f"onset {onset:.6f} (predicted min {min(roots):.6f}), g⁺ {g_plus:.6f} (predicted root of the sum {g_sum:.6f}): "
              f"the determinant bound is loose by g⁺/g_on = {g_plus / onset:.3f}, as predicted; scalar system: g* = "
              f"{tight[0]:.6f}, onset {tight[1]:.6f}, g⁺ {tight[2]:.6f} (equal)")
    return ok, detail, {"roots": roots, "onset": onset, "g_plus": g_plus, "scalar": tight}


@claim("5.3", title="The onset of expansion between a priori bounds: g* ≤ g_on ≤ g⁺", family="gate_bounds",
       statement="With S(g) = Σ_ℓ log|det(G_ℓ + hgK_ℓ)| (per-layer determinants and eigenvalues of G_ℓ⁻¹K_ℓ, no layer "
                 "products), every g with S(g) > 0 expands the slow path: ‖Π(G_ℓ + hgK_ℓ)‖ ≥ ρ ≥ exp(S/N) > 1; with g⁺ the "
                 "smallest such |g|, Claim 5.1's g* ≤ the measured onset g_on ≤ g⁺.",
       assumptions=["Claim 5.1's slow-mode maps G_ℓ, K_ℓ (linearised at g = 0, block-mean modes) and its certified g*",
                    "every G_ℓ invertible; spectral norms", "contractive hierarchical stacks (decay 2, ln_gain 0.2, "
                    "weight_scale 0.5), as Claim 5.1's ledger"],
       reconstruction=True,
       generated=["numerics.generated.gate_bounds.log_abs_factor", "numerics.generated.gate_bounds.det_norm_bound"],
       tests=["tests/test_gate_bounds.py::test_sandwich_on_random_systems",
              "tests/test_gate_bounds.py::test_diagonal_control",
              "tests/test_gate_bounds.py::test_ledger_catches_a_missing_root"],
       control="diagonal systems with direction-dependent rates: g⁺ is the root of the summed log-rates and the onset the "
               "smallest per-direction root (sympy nsolve), so the bound is loose by exactly their ratio; for a scalar "
               "system g* = g_on = g⁺",
       figure="gate_bounds",
       kind="prediction",
       setting="contractive hierarchical pre-LN stacks (decay α = 2, ln_gain 0.2, weight_scale 0.5), causal and full kernels, "
               "Claim 5.1's linearised gate model",
       standing=VACUOUS,
       headline="the measured onset lies 8–9× above the certified g* and two orders of magnitude below the determinant "
                "bound g⁺ (S/N averages the 16 slow directions): both bounds are proved, neither is tight off scalar systems")
def check_5_3(ctx) -> ClaimResult:
    steps = symbolic_steps(th.all_proofs())
    cases, unusable = ledger_cases("5.3", ctx)
    table, errs, derivations = list(unusable), [math.inf] * len(unusable), []
    for spec, v in cases:
        m, p = v.measured, v.predicted
        errs.append(v.error)
        derivations.append(Derivation(f"log‖P‖ − S/N ({spec.kernel}, seed {spec.seed})", p["tolerance"], U,
                                      spec.layers * m["modes"], kappa=m["kappa"], margin=10))
        for sign in ("+", "−"):
            t = m["tightness"].get(sign, {})
            table.append({"kernel": spec.kernel, "seed": spec.seed, "sign": sign, "g*": round(p["g_star"], 4),
                          "onset (linear)": m["onset_linear"][sign], "onset (real stack)": m["onset_real"][sign],
                          "g⁺": p["g_plus"][sign], "onset/g*": t.get("onset_linear / g*"),
                          "real onset/g*": t.get("onset_real / g*"), "g⁺/onset": t.get("g⁺ / onset_linear"),
                          "status": v.status})
    ok, detail, _ = diagonal_control()
    control = ControlResult("fails-as-predicted" if ok else "did-not-fail", detail)
    numeric = NumericResult(cases=len(cases), max_error=max(errs) if errs else math.inf, tolerance=1.0,
                            detail="normalised errors (≤ 1 passes): g* ≤ onset ≤ g⁺ (relative 1e-9, two bisections to "
                                   "2^-40), and log‖Π(G_ℓ + hgK_ℓ)‖ ≥ S(g)/N at g = (1 + 1e-6, 2, 4)·g⁺ (/ 10·L·N·κ·u)",
                            table=table, derivations=derivations)
    ratios = [r["onset/g*"] for r in table if r.get("onset/g*")]
    loose = [r["g⁺/onset"] for r in table if r.get("g⁺/onset")]
    notes = (f"tightness on Claim 5.1's stacks: onset/g* in [{min(ratios):.2f}, {max(ratios):.2f}], g⁺/onset in "
             f"[{min(loose):.0f}, {max(loose):.0f}]" if ratios and loose else "")
    finding = ("Claim 5.1's g* is conservative by the factor onset/g* (≈ 8–9 on its contractive stacks); an a priori upper "
               "bound exists from per-layer determinants (the only per-layer quantity that bounds a product's norm from "
               "below) but it averages all N slow directions, so it sits two orders of magnitude above the onset.")
    from proofs_check.claims.stability.gate_bound import paper_margin

    return ClaimResult(symbolic=steps, numeric=numeric, control=control, notes=notes, finding=finding,
                       measurement=paper_margin())


no_matrix_free("5.3", "per-layer determinants of the slow-mode maps, as Claim 5.1's certificate; its check searches "
                      "the onset by products at toy size")
