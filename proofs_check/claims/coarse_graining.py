"""Claims 3.1 and 3.2: saturation depth (reconstruction) and block coarse-graining (docs/theory.md §3).

Each claim is one ``@on_stack`` function ``evaluate(spec, ctx) -> Verdict`` used by the ledger
(on ``specs("preln", ctx)``), the claims × architectures matrix and the sweeps.  Every quantity
is measured on the real stack by autograd (dense layer Jacobians, multiplied) and compared
with the derivation's prediction (the generated mode blocks G_ℓ(λ), their products, the
kernel's spectral projectors).
"""

from __future__ import annotations

import math

import mpmath
import sympy as sp
import torch

from numerics import coarse_graining as ncg
from numerics import kernels as K
from numerics.jacobians import eigen_blocks, reference_input, state_jacobian, step_jacobians
from numerics.spec import StackSpec
from numerics.stack import random_xbar
from proofs_check.claims.standing import FAILS, RECONSTRUCTION
from proofs_check.claims.evidence import ClaimResult, ControlResult, NumericResult, SymbolicStep, symbolic_steps
from proofs_check.claims.registry import claim, ledger_cases, on_stack
from proofs_check.claims.on_stack import EXACT, Verdict
from proofs_check.claims.on_stack import matrix_spec as base_matrix_spec
from theory import coarse_graining as th

EPS = 2.0**-52
F64 = torch.float64
TAU = 0.5
RESOLVED = 1e-3   # a predicted residual whose rounding bound exceeds this is not a prediction
FLOAT64_ONLY = "the rounding tolerances are derived for float64 (ε = 2⁻⁵²); other dtypes have none yet"
#: docs/theory.md §3 (i): r at the last layer for λ = 1/2, 1/3, 1/6 (causal, T = 6, d = 16, 16 layers).
PAPER_R = {0: (0.94, 0.93, 0.93), 5: (0.35, 0.24, 0.16), 20: (0.25, 0.15, 0.08)}


def matrix_spec(arch: str, ctx, *, compress_gate: float | None = 0.0, **fields) -> StackSpec:
    """``on_stack.matrix_spec`` with the compressed branch closed (compress_gate = 0) by default."""
    return base_matrix_spec(arch, ctx, compress_gate=compress_gate, **fields)


def _unique(specs):
    out = []
    for s in specs:
        if s not in out:
            out.append(s)
    return out


def _preln_na(spec) -> str | None:
    """Why a preln spec has no token-homogeneous mode decomposition (or no derived tolerance), or None."""
    if spec.dtype != "float64":
        return FLOAT64_ONLY
    if spec.knob("gate", 0.0) != 0.0:
        return "gate ≠ 0: the trajectory from 1x̄ᵀ is not token-homogeneous, there are no mode blocks"
    if spec.kernel == "alibi":
        return "alibi gives each head its own frozen kernel: no single eigenbasis for the mode blocks"
    if spec.T < 2:
        return "T = 1: the frozen kernel has no decaying mode"
    return None


# ============================================================================ Claim 3.1
def specs_3_1(arch, ctx):
    if arch != "preln":
        return [matrix_spec(arch, ctx, layers=4, knobs={"value_scale": 20.0})]
    seeds = [0] if ctx.quick else [0, 1, 2]
    grid = [StackSpec(T=6, d=16, layers=16, heads=2, kernel=k, seed=s, knobs={"value_scale": float(c)})
            for s in seeds for k in ("causal", "full") for c in (0, 5, 20)]
    # stacks where ρ̃ < 1 and the bound lies inside the stack (full kernel, κ = 1, c ≥ 10; d = 8 keeps
    # the dense Jacobians cheap)
    useful = [StackSpec(T=6, d=8, layers=16, heads=2, kernel="full", seed=s, knobs={"value_scale": float(c)})
              for s in (0, 1, 2) for c in (10, 20)]
    return _unique(grid + useful)


def ratio_tolerance(L: int, T: int, d: int, kappa: float) -> float:
    """Absolute rounding bound on r_ℓ(λ) from either route: L products of (T·d)² Jacobians carry
    ≤ L·T·d·ε relative error, the eigenbasis change multiplies it by κ = cond S; ×10 margin."""
    return 10 * L * T * d * EPS * kappa


def mpmath_bound(tau: float, kappa: float, rho: float) -> tuple[int, bool]:
    """⌈log(τ/κ)/log ρ⌉ at 40 digits, and whether the quotient lies within 1e-9 of an integer
    (then the float64 ceil may legitimately land on either side)."""
    with mpmath.workdps(40):
        q = mpmath.log(mpmath.mpf(tau) / mpmath.mpf(kappa)) / mpmath.log(mpmath.mpf(rho))
        return int(mpmath.ceil(q)), abs(q - mpmath.nint(q)) < 1e-9


def depth_by_definition(worst: torch.Tensor, tau: float) -> int | None:
    """ℓ*(τ) = min{ℓ : r_m ≤ τ for every m ≥ ℓ} read off its definition, sharing no code with the
    search ``ncg.first_saturated_layer``: the suffix maxima max_{m ≥ ℓ} r_m (a running max from the
    last layer back) are ≤ τ exactly for ℓ ≥ ℓ*, so ℓ* is the first layer where they are (None: none)."""
    suffix = torch.flip(torch.cummax(torch.flip(worst, (0,)), dim=0).values, (0,))
    below = torch.nonzero(suffix <= tau)
    return int(below[0, 0]) if below.numel() else None


@on_stack("3.1", specs=specs_3_1, homogeneous_reference=True)
def evaluate_3_1(spec, ctx) -> Verdict:
    """Saturation depth ℓ*(τ = 0.5) on one stack, two ways, and its bound ⌈log(τ/κ)/log ρ̃⌉.

    preln (gate 0, one frozen kernel): ℓ* from the generated mode products G_{≤ℓ}(λ) and from the
    dense autograd Jacobians of the real stack cut into eigen-blocks; they must agree (ratios within
    ``ratio_tolerance``, the same ℓ* unless a ratio sits within it of τ), r_m ≤ Π ρ̃_ℓ, the generated
    bound equals mpmath's, and where the bound is non-vacuous (ρ̃ < 1, bound < L) ℓ* ≤ bound.
    Other architectures: the dense per-step route only (no generated blocks exist for them).

    ``measured``: ``saturation_depth`` (autograd ℓ*, None = none), ``r_worst`` (max_λ r_ℓ per layer),
    ``r_last`` (r at the last layer per distinct decaying λ), ``rho_tilde``, ``kappa``, ``theory_rho``;
    ``predicted``: ``saturation_depth`` (mode products), ``r_worst``, ``r_last``, ``saturation_bound``
    (generated, None when ρ̃ ≥ 1), ``saturation_bound_mpmath``, ``bound_vacuous``.
    """
    if spec.arch != "preln":
        return _arch_3_1(spec, ctx)
    reason = _preln_na(spec)
    if reason:
        return Verdict("3.1", "n/a", reason=reason)
    stack = spec.build()
    xbar = random_xbar(spec.d, spec.seed).to(dtype=next(stack.parameters()).dtype)
    sd = ncg.saturation_depth(stack, xbar, TAU)
    dense = ncg.dense_modes(stack, xbar)
    lam_dense, r_dense = dense.lambdas, dense.ratios
    L = sd.layers
    tol_r = ratio_tolerance(L, spec.T, spec.d, sd.kappa)
    worst_gen, worst_dense = sd.ratios.max(dim=1).values, r_dense.max(dim=1).values
    same_modes = (len(lam_dense) == len(sd.lambdas)
                  and all(abs(a - b) < 1e3 * ncg.EIG_TOL for a, b in zip(lam_dense, sd.lambdas)))
    ratio_err = float((r_dense - sd.ratios).abs().max()) if same_modes else math.inf
    depth_dense = ncg.first_saturated_layer(worst_dense, TAU)
    # ℓ* of both routes against its definition (exact: the same ratios, compared with τ)
    depth_def, depth_def_gen = depth_by_definition(worst_dense, TAU), depth_by_definition(worst_gen, TAU)
    search_ok = depth_dense == depth_def and sd.measured == depth_def_gen
    depth_agree = depth_dense == sd.measured or bool(
        ((worst_gen - TAU).abs() <= tol_r).any())           # a ratio within rounding of τ: either ℓ* is right
    envelope = torch.cumprod(sd.path_ratios, 0)[:, None]
    tol_env = L * 10 * spec.d * EPS                          # ≤ L products of norms, each ≤ 10·d·ε relative
    env_excess = float((sd.ratios - envelope * (1 + tol_env)).clamp_min(0).max())
    # the mode products' own size and the per-layer path ratios, both routes (relative)
    norm_err = float(((dense.persistent_norms - sd.persistent_norms).abs() / dense.persistent_norms).max())
    path_err = float(((dense.path_ratios - sd.path_ratios).abs() / dense.path_ratios).max())
    killed = abs(1 - spec.knob("decay", 0.0) / spec.layers) < 1e-12
    resolved = tol_r <= RESOLVED      # else the eigenbasis is too ill-conditioned for the autograd route
    errors = {"mode products vs autograd r / tol": ratio_err / tol_r if resolved else 0.0,
              "‖G_{≤ℓ}(1)‖ two routes / tol": norm_err / tol_r if resolved else 0.0,
              "ρ̃_ℓ two routes / tol": path_err / tol_r if resolved else 0.0,
              "ℓ* disagreement": 0.0 if depth_agree or not resolved else math.inf,
              "ℓ* search vs its definition": 0.0 if search_ok else math.inf,
              "r above Π ρ̃ envelope": env_excess / tol_env,
              # proved for hα ≠ 1; at hα = 1 the residual stream is killed and G_ℓ(0) = 0, so ρ = 0
              "stated ρ below 1": 0.0 if killed else max(0.0, 1 - 1e-12 - sd.theory_rho) / 1e-12}
    mp_bound = None
    if sd.bound_value is not None:
        mp_bound, borderline = mpmath_bound(TAU, sd.kappa, sd.rho)
        gap = min(abs(sd.bound_value - b) for b in ((mp_bound, mp_bound - 1) if borderline else (mp_bound,)))
        errors["generated bound vs mpmath"] = gap / 1e-12    # both are integers held exactly in float64
    vacuous = sd.bound_vacuous
    violated = not vacuous and (depth_def is None or depth_def > sd.bound)   # the bound against the definition's ℓ*
    errors["ℓ* above a non-vacuous bound"] = math.inf if violated else 0.0
    error = max(errors.values())
    measured = {"saturation_depth": depth_dense, "saturation_depth_definition": depth_def,
                "r_worst": worst_dense.tolist(), "r_last": r_dense[-1].tolist(),
                "lambdas": lam_dense, "rho_tilde": sd.rho, "kappa": sd.kappa, "theory_rho": sd.theory_rho,
                "ratio_disagreement": ratio_err, "persistent_norm_disagreement": norm_err,
                "path_ratio_disagreement": path_err, "errors": errors}
    predicted = {"saturation_depth": sd.measured, "saturation_depth_definition": depth_def_gen,
                 "r_worst": worst_gen.tolist(), "r_last": sd.ratios[-1].tolist(),
                 "saturation_bound": sd.bound_value, "saturation_bound_mpmath": mp_bound, "bound_vacuous": vacuous,
                 "ratio_tolerance": tol_r, "tau": TAU}
    kw = dict(measured=measured, predicted=predicted, error=error, tolerance=1.0)
    if error > 1.0:
        return Verdict("3.1", "fails", counterexample=spec.as_dict(), **kw)
    if not resolved:
        return Verdict("3.1", "conditional", condition=f"a float64-resolvable eigenbasis (here κ = {sd.kappa:.1e}: "
                       f"the autograd route's rounding bound {tol_r:.1e} > {RESOLVED:g}; only the mode products "
                       f"and the envelope are checked)", **kw)
    if vacuous:
        why = (f"ρ̃ = {sd.rho:.4f} ≥ 1" if sd.bound is None else f"bound {sd.bound} ≥ L = {L}")
        return Verdict("3.1", "conditional", condition=f"ρ̃ < 1 and bound < L (here {why}: the bound is vacuous; "
                       + ("no saturation depth" if depth_dense is None else f"ℓ* = {depth_dense}")
                       + " measured both ways)", **kw)
    return Verdict("3.1", "holds", **kw)


def _arch_3_1(spec, ctx) -> Verdict:
    """A variant: per-step dense Jacobians in the frozen kernel's eigenbasis, their products, ℓ* and ρ."""
    s = spec.build_arch()
    X = reference_input(s, spec.seed)
    A = s.frozen_kernel()
    per = [eigen_blocks(J, A, s.features) for J in step_jacobians(s, X)]
    lam, condS = per[0][0], per[0][2]
    prods = [torch.eye(s.features, dtype=F64).expand(len(lam), -1, -1)]
    for _, blocks, _ in per:
        prods.append(blocks @ prods[-1])
    r = torch.stack([torch.linalg.matrix_norm(p[1:], ord=2) / torch.linalg.matrix_norm(p[0], ord=2)
                     for p in prods[1:]])  # (steps, decaying modes)
    measured_depth = ncg.first_saturated_layer(r.max(-1).values, TAU)
    depth_def = depth_by_definition(r.max(-1).values, TAU)
    if measured_depth != depth_def:
        return Verdict("3.1", "fails", measured={"saturation_depth": measured_depth,
                                                 "saturation_depth_definition": depth_def},
                       reason="the ℓ* search disagrees with its definition min{ℓ : r_m ≤ τ ∀ m ≥ ℓ}",
                       counterexample=spec.as_dict())
    rho = max(float((torch.linalg.matrix_norm(b[1:], ord=2) / torch.linalg.svdvals(b[0])[-1]).max())
              for _, b, _ in per)
    bound = math.ceil(math.log(TAU / condS) / math.log(rho)) if rho < 1 else None
    measured = {"saturation_depth": measured_depth, "r_worst": r.max(-1).values.tolist(), "r_last": r[-1].tolist(),
                "rho": rho, "kappa": condS}
    predicted = {"saturation_bound": bound, "tau": TAU}
    if rho < 1:
        if measured_depth is not None and measured_depth <= bound:
            return Verdict("3.1", "holds", measured=measured, predicted=predicted)
        return Verdict("3.1", "fails", measured=measured, predicted=predicted, counterexample=spec.as_dict())
    return Verdict("3.1", "conditional", measured=measured, predicted=predicted,
                   condition=f"ρ < 1 (here ρ = {rho:.2f} ≥ 1: the bound is vacuous; the measured ℓ* "
                             f"{'= ' + str(measured_depth) if measured_depth is not None else 'does not exist'} "
                             f"at τ = {TAU})")


@claim("3.1", title="Saturation depth and its per-layer bound", family="coarse_graining",
       statement="r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖/‖G_{≤ℓ}(1)‖; ℓ*(τ) = min{ℓ : r_m(λ) ≤ τ ∀ m ≥ ℓ, every decaying λ} "
                 "≤ ⌈log(τ/κ)/log ρ⌉ when ρ < 1; stacks with c = 0 have no saturation depth at τ = 0.5.",
       assumptions=["gate 0, token-homogeneous reference, one frozen kernel (causal or full)",
                    "spectral norms; ρ is the persistent-path ratio ρ̃ (the paper's ρ is ≥ 1 for every "
                    "pre-LN stack, proved here)", "W_VO ≈ c·I + noise drawn with value_scale=c"],
       reconstruction=True,
       generated=["numerics.generated.coarse_graining.mode_product_step",
                  "numerics.generated.coarse_graining.mode_ratio",
                  "numerics.generated.coarse_graining.persistent_path_ratio",
                  "numerics.generated.coarse_graining.saturation_bound"],
       tests=["tests/test_coarse_graining.py::test_mode_ratio_below_path_product",
              "tests/test_coarse_graining.py::test_bound_holds_where_rho_below_one",
              "tests/test_coarse_graining.py::test_no_saturation_without_value_path",
              "tests/test_coarse_graining.py::test_theory_rho_never_below_one",
              "tests/test_coarse_graining.py::test_ledger_3_1_catches_wrong_mode_blocks"],
       control="c = 0 stacks: no saturation depth; r at the last layer stays above τ = 0.5 by the margin the "
               "mode products predict, measured by autograd within the rounding band",
       figure="mode_products",
       kind='prediction', setting='full kernel, value path W_VO ≈ 10–20·I (causal needs c ≳ 20); ρ rebuilt as ρ̃', standing=RECONSTRUCTION,
       headline="the paper's ρ is ≥ 1 for every pre-LN stack (proved), so its bound is vacuous, and it stays ≥ 1 with LN's null direction 1_d quotiented out (LN also kills the radial direction); with the rebuilt ρ̃ the bound holds and is non-vacuous only with a strong value path W_VO ≈ 10–20·I")
def check_3_1(ctx) -> ClaimResult:
    steps = symbolic_steps(th.prove_theory_rho_at_least_one())
    rho_, tau_, kappa_ = sp.symbols("rho tau kappa", positive=True)
    x = sp.log(tau_ / kappa_) / sp.log(rho_)
    steps.append(SymbolicStep("ρ^{log(τ/κ)/log ρ} = τ/κ (so ρ^bound ≤ τ/κ for ρ < 1)",
                              sp.simplify(sp.expand_log(sp.log(rho_ ** x), force=True)
                                          - sp.log(tau_ / kappa_)) == 0, "simplify",
                              "ceil only raises the exponent; with ρ < 1 that lowers ρ^m"))
    cases, unusable = ledger_cases("3.1", ctx)
    table, control_rows, errs = list(unusable), [], [math.inf] * len(unusable)
    for spec, v in cases:
        m, p = v.measured, v.predicted
        errs.append(v.error)
        c = spec.knob("value_scale")
        row = {"kernel": spec.kernel, "d": spec.d, "c": c, "seed": spec.seed,
               "ℓ* (mode products)": p["saturation_depth"], "ℓ* (autograd)": m["saturation_depth"],
               "ℓ* (definition)": m.get("saturation_depth_definition"),
               "max |Δr| two routes": m["ratio_disagreement"], "bound (generated)": p["saturation_bound"],
               "bound (mpmath)": p["saturation_bound_mpmath"], "bound vacuous": p["bound_vacuous"],
               "ρ̃": round(m["rho_tilde"], 4), "stated ρ": round(m["theory_rho"], 4), "κ": round(m["kappa"], 2),
               "r_last": [round(r, 3) for r in m["r_last"]], "status": v.status}
        table.append(row)
        if c == 0:
            control_rows.append((spec, v))
    useful = [r for r in table if r.get("bound vacuous") is False]
    # Control: without a value path (c = 0) the bound's hypothesis ρ̃ < 1 fails and so does saturation.
    # The mode products predict by how much r_last stays above τ; autograd measures it.
    ctl_ok, ctl_parts = bool(control_rows), []
    for spec, v in control_rows:
        pred, meas = max(v.predicted["r_last"]), max(v.measured["r_last"])
        ok = (v.measured["saturation_depth"] is None and v.predicted["saturation_depth"] is None
              and pred > TAU and abs(meas - pred) <= v.predicted["ratio_tolerance"])
        ctl_ok &= ok
        ctl_parts.append(f"{spec.kernel} seed {spec.seed}: r_last − τ predicted {pred - TAU:.4f}, measured "
                         f"{meas - TAU:.4f} (|Δ| {abs(meas - pred):.1e} ≤ {v.predicted['ratio_tolerance']:.1e}), "
                         f"ρ̃ = {v.measured['rho_tilde']:.3f}, no ℓ*")
    control = ControlResult("fails-as-predicted" if ctl_ok else "did-not-fail", "c = 0: " + "; ".join(ctl_parts))
    repro = [r for r in table if r.get("kernel") == "causal" and r.get("seed") == 0 and r.get("d") == 16
             and r.get("c") in PAPER_R]
    notes = "r at the last layer for λ = 1/2, 1/3, 1/6 (causal, seed 0) vs docs/theory.md §3: " + "; ".join(
        f"c={r['c']:g}: {r['r_last'][0]}, {r['r_last'][1]}, {r['r_last'][-1]} "
        f"(paper {', '.join(map(str, PAPER_R[int(r['c'])]))})" for r in repro)
    notes += (". Non-vacuous bounds (ρ̃ < 1 and bound < L): "
              + (", ".join(f"{r['kernel']} d={r['d']} c={r['c']:g} seed {r['seed']}: ℓ* = {r['ℓ* (autograd)']} ≤ "
                           f"{r['bound (generated)']:g}" for r in useful) or "none")
              + ". κ is slack: r lives on mode blocks, where the proof needs no κ.")
    if len(useful) < 5:
        errs.append(math.inf)   # the bound must be exercised where it says something
    numeric = NumericResult(
        cases=len(table), max_error=max(errs), tolerance=1.0,
        detail=f"normalised errors (≤ 1 passes): r_ℓ(λ) from the generated mode products vs the dense autograd "
               f"Jacobians (/ 10·L·T·d·ε·κ), the same ℓ* both ways and each equal to its definition min{{ℓ : "
               f"max_{{m ≥ ℓ}} r_m ≤ τ}} (suffix maxima), r_m ≤ Π ρ̃_ℓ, generated bound = mpmath's, "
               f"ℓ* ≤ bound on the {len(useful)} stacks where the bound is non-vacuous (≥ 5 required)",
        table=table)
    theory_rho_min = min((r["stated ρ"] for r in table if "stated ρ" in r), default=math.nan)
    quotient = [_quotient_row(spec) for spec, _ in cases]
    # ≤ 1 passes: the radial term within its ε prediction; every layer's quotient ratio above its predicted floor
    errs += [q["radial_error"] / q["radial_bound"] if q["above_floor"] else math.inf for q in quotient]
    numeric.max_error = max(errs)
    finding = ("The paper's ρ = max ‖G_ℓ(λ)‖/σ_min(G_ℓ(1)) is ≥ 1 for every pre-LN stack, not only 'when C_ℓ "
               "does not move the killed directions': LN₁ is translation invariant, so B_ℓ1 = 0 and G_ℓ(λ)1 = "
               "G_ℓ(1)1 for all λ, hence σ_min(G_ℓ(1)) ≤ ‖G_ℓ(λ)‖ (proved symbolically). No value_scale or "
               f"decay with hα ≠ 1 can draw ρ < 1 (min over these stacks {theory_rho_min:.3f}; at hα = 1 the residual "
               "stream is killed and G_ℓ(0) = 0); otherwise the bound as written is vacuous. Verified instead with ρ̃ = max ‖G_ℓ(λ)‖‖y_ℓ‖/‖y_{ℓ+1}‖, y_{ℓ+1} = G_ℓ(1)y_ℓ "
               "(the persistent mode's growth along its own direction), for which r_m ≤ Π ρ̃_ℓ; ρ̃ < 1 with a "
               "bound inside the stack is drawn with the full kernel (κ = 1) and value_scale c ≳ 10.")
    if quotient:
        finding += (" Quotienting 1_d out (span(1) is invariant: G_ℓ(λ)1 = (1 − hα)1) does not cure it: the ratio "
                    f"on 1⊥ is still ≥ 1 at every layer (min over these stacks {min(q['per_layer_min'] for q in quotient):.3f}) "
                    "because LN₁ is also scale invariant and kills the radial direction x̄_ℓ − mean(x̄_ℓ)1 up to its ε "
                    f"(measured ≤ predicted on every stack, largest {max(q['radial_error'] for q in quotient):.1e}); "
                    "that direction moves with ℓ, so no fixed quotient removes it (numerics/saturation_quotient.py).")
    return ClaimResult(symbolic=steps, numeric=numeric, control=control, notes=notes, finding=finding)


def _quotient_row(spec) -> dict:
    """3.1's ratio with 1_d quotiented out on the check's stack and x̄ (``numerics.saturation_quotient``)."""
    from numerics.saturation_quotient import quotient_saturation

    stack = spec.build()
    q = quotient_saturation(stack, random_xbar(spec.d, spec.seed).to(dtype=next(stack.parameters()).dtype))
    return {"per_layer_min": float(q.per_layer_rho_bar.min()), "radial_error": q.radial_error,
            "radial_bound": q.radial_bound, "above_floor": bool((q.per_layer_rho_bar >= q.per_layer_lower).all())}


# ============================================================================ Claim 3.2
def specs_3_2(arch, ctx):
    if arch != "preln":
        return [matrix_spec(arch, ctx, kernel=k, knobs={"block_size": 2, "value_scale": 20.0})
                for k in ("block", "causal")]
    seeds = [0] if ctx.quick else [0, 1, 2]
    out = []
    for seed in seeds:
        for kernel in ("full", "block", "causal"):
            for slow in ("off", "gate0", "gate"):
                out.append(_part_a_spec(kernel, slow, seed))
        for kernel in ("full", "block", "causal"):     # (b): 12 layers, a strong value path
            out.append(_part_a_spec(kernel, "gate0", seed).with_(layers=12, knobs={"value_scale": 20.0}))
    return out


def _part_a_spec(kernel: str, slow: str, seed: int) -> StackSpec:
    """T = 8, d = 8, 3 layers; slow path off (block kernel of length 4) / on at gate 0 / on at g = 0.5, P = 4."""
    if slow == "off":
        knobs = {"value_scale": 0.0, **({"block_size": 4} if kernel == "block" else {})}
        return StackSpec(T=8, d=8, layers=3, heads=2, kernel=kernel, seed=seed, knobs=knobs)
    return StackSpec(T=8, d=8, layers=3, heads=2, kernel=kernel, seed=seed, P=4,
                     knobs={"value_scale": 0.0, "gate": 0.5 if slow == "gate" else 0.0})


def coarse_block(spec) -> int | None:
    """The pooling block length: the slow path's P, else the kernel's block size, else the largest
    proper divisor of T (None when T is prime: no nontrivial pooling)."""
    for P in (spec.P, spec.knob("block_size")):
        if P:
            return P
    return next((P for P in range(spec.T // 2, 1, -1) if spec.T % P == 0), None)


def _initial_state(spec, dtype) -> tuple[torch.Tensor, str]:
    """1x̄ᵀ at gate 0; a random block-constant Π⁺Y₀ at g ≠ 0 (no homogeneous reference exists)."""
    T, d, P = spec.T, spec.d, coarse_block(spec)
    if spec.knob("gate", 0.0) == 0.0:
        return torch.ones(T, 1, dtype=dtype) * random_xbar(d, spec.seed).to(dtype), "1x̄ᵀ"
    Y0 = torch.randn(T // P, d, generator=torch.Generator().manual_seed(spec.seed + 100), dtype=F64)
    return (K.lift_matrix(T, P, F64) @ Y0).to(dtype), "block-constant Π⁺Y₀"


def direct_residuals(J: torch.Tensor, T: int, d: int, P: int) -> dict:
    """The three residuals of 3.2 by their definitions with Kronecker products of numerics.kernels'
    Π, Π⁺ (no generated code; token-major vec, index t·d + i), each over ‖J‖₂."""
    eye = torch.eye(d, dtype=J.dtype)
    pool, lift = K.pool_matrix(T, P, J.dtype), K.lift_matrix(T, P, J.dtype)
    Pi, Lift, Q = torch.kron(pool, eye), torch.kron(lift, eye), torch.kron(lift @ pool, eye)
    Jc = Pi @ J @ Lift
    nrm = torch.linalg.matrix_norm(J, ord=2)

    def rel(R):
        return float(torch.linalg.matrix_norm(R, ord=2) / nrm)

    return {"left": rel(Pi @ J - Pi @ J @ Q), "dual": rel(J.mT @ Lift - Lift @ Jc.mT), "two_sided": rel(J - Q @ J @ Q)}


def kernel_factors(A: torch.Tensor, P: int) -> float:
    """‖ΠA(I − Q)‖₂/‖A‖₂ of the frozen kernel (direct): 0 iff A = C ⊗ 11ᵀ/P-type (3.2a's condition)."""
    T = A.shape[-1]
    pool, lift = K.pool_matrix(T, P, A.dtype), K.lift_matrix(T, P, A.dtype)
    R = pool @ A @ (torch.eye(T, dtype=A.dtype) - lift @ pool)
    return float(torch.linalg.matrix_norm(R, ord=2) / torch.linalg.matrix_norm(A, ord=2))


@on_stack("3.2", specs=specs_3_2, homogeneous_reference=True)
def evaluate_3_2(spec, ctx) -> Verdict:
    """Block coarse-graining on one stack: (a) ΠJ(I − Q) = 0 exactly when the kernel leaves ker Π
    invariant, (b) ‖J − QJQ‖/‖J‖ ≤ r_ℓ(0) for kernels C ⊗ 11ᵀ/P, so ≤ τ past ℓ*(τ).

    preln: J_{≤ℓ} are the dense autograd depth Jacobians; residuals by definition (``direct_residuals``)
    against the generated ones (``numerics.coarse_graining.factoring_residuals``, rounding) and, at
    gate 0, against the derivation's prediction Σ_λ P_λ ⊗ G_{≤ℓ}(λ) (``ncg.spectral_residuals``) — which
    also predicts the size of the causal kernel's failure (its persistent mode on e₁ leaks through Q).
    The pooling block is ``coarse_block(spec)``.

    ``measured``: ``left``, ``dual`` (last depth), ``two_sided`` (per depth), ``kernel_residual``
    (‖ΠA(I−Q)‖/‖A‖); ``predicted``: ``left``, ``two_sided`` (per depth, gate 0 only), ``r0_bound``
    (r_ℓ(0) per depth, kernels that factor), ``saturation_depth`` (ℓ*(τ = 0.5) from the mode ratios),
    ``factors`` (kernel residual ≤ 1e-12).
    """
    if spec.arch != "preln":
        return _arch_3_2(spec, ctx)
    P = coarse_block(spec)
    if P is None or spec.T % P:
        return Verdict("3.2", "n/a", reason=f"T = {spec.T} has no block length P with T = nP, 1 < P < T")
    if spec.kernel == "alibi":
        return Verdict("3.2", "n/a", reason="alibi gives each head its own frozen kernel")
    if spec.dtype != "float64":
        return Verdict("3.2", "n/a", reason=FLOAT64_ONLY)
    stack = spec.build()
    dtype = next(stack.parameters()).dtype
    X0, where = _initial_state(spec, dtype)
    Js = ncg.depth_jacobians(stack, X0)
    T, d, L = spec.T, spec.d, spec.layers
    direct = [direct_residuals(J, T, d, P) for J in Js]
    gen = ncg.factoring_residuals(Js[-1], T, d, P)
    # generated vs definition: residuals of ≤ L products of (T·d)² matrices, relative: L·T·d·ε, ×100
    tol_gen = 100 * L * T * d * EPS
    gen_err = max(abs(gen.left - direct[-1]["left"]), abs(gen.dual - direct[-1]["dual"]),
                  abs(gen.two_sided - direct[-1]["two_sided"]))
    kres = kernel_factors(stack.frozen_kernel(), P)
    factors = kres <= EXACT
    errors = {"generated vs definition / tol": gen_err / tol_gen}
    measured = {"left": direct[-1]["left"], "dual": direct[-1]["dual"],
                "two_sided": [r["two_sided"] for r in direct], "kernel_residual": kres, "state": where,
                "P": P, "generated": {"left": gen.left, "dual": gen.dual, "two_sided": gen.two_sided}}
    predicted = {"factors": factors}
    if factors:   # (a) exact: products of ≤ L layer Jacobians and Π, Π⁺ in float64
        errors["(a) residual / 1e-12"] = max(direct[-1]["left"], direct[-1]["dual"]) / EXACT
    if where == "1x̄ᵀ":
        xbar = X0[0]
        pred, kappa = ncg.spectral_residuals(stack, xbar, P)
        # the dense product carries L·T·d·ε relative rounding, the spectral sum T·d·ε × its conditioning
        # (Σ‖P_λ‖²‖G_λ‖/‖J‖); ×10 margin
        tol_pred = 10 * T * d * EPS * (L + max(p["conditioning"] for p in pred))
        modes, _ = ncg.kernel_modes(stack.frozen_kernel())
        ratios = ncg.mode_ratios(ncg.mode_products(ncg.mode_blocks(stack, xbar, modes)))
        predicted.update(saturation_depth=ncg.first_saturated_layer(ratios.max(dim=1).values, TAU),
                         tolerance=tol_pred, kappa=kappa)
        if tol_pred <= RESOLVED:
            pred_err = max(max(abs(p["left"] - m["left"]), abs(p["two_sided"] - m["two_sided"]))
                           for p, m in zip(pred, direct))
            errors["derivation vs autograd / tol"] = pred_err / tol_pred
            predicted.update(left=pred[-1]["left"], two_sided=[p["two_sided"] for p in pred])
        else:
            predicted["unresolved"] = (f"the mode basis is too ill-conditioned (κ = {kappa:.1e}) for a float64 "
                                       f"prediction: its rounding bound {tol_pred:.1e} > {RESOLVED:g}")
        zero = [k for k, m in enumerate(modes) if abs(m.lam) < ncg.EIG_TOL]
        if factors and zero:
            r0 = ratios[:, zero[0] - 1].tolist()
            predicted["r0_bound"] = r0
            excess = max(m["two_sided"] - r for m, r in zip(direct, r0))
            errors["(b) ‖J−QJQ‖/‖J‖ − r(0), / tol"] = max(0.0, excess) / tol_pred
    error = max(errors.values())
    measured["errors"] = errors
    kw = dict(measured=measured, predicted=predicted, error=error, tolerance=1.0)
    if error > 1.0:
        return Verdict("3.2", "fails", counterexample=spec.as_dict(), **kw)
    if not factors:
        return Verdict("3.2", "conditional", condition=(
            f"the kernel leaves ker Π invariant (A = C ⊗ 11ᵀ/P: full, block); here ‖ΠA(I−Q)‖/‖A‖ = {kres:.3f}: "
            f"‖ΠJ(I−Q)‖/‖J‖ = {direct[-1]['left']:.3f}, ‖J−QJQ‖/‖J‖ = {direct[-1]['two_sided']:.3f}"
            + (" as the derivation predicts" if "left" in predicted else "")), **kw)
    return Verdict("3.2", "holds", **kw)


def _arch_3_2(spec, ctx) -> Verdict:
    """A variant: the one-sided leak ‖ΠJ(I − Q)‖_F/‖J‖_F of the state Jacobian (block length 2)."""
    s = spec.build_arch()
    J = state_jacobian(s, reference_input(s, spec.seed))
    T, F = s.config.T, s.features
    Pi = torch.kron(K.pool_matrix(T, 2), torch.eye(F, dtype=F64))
    Q = torch.kron(K.lift_matrix(T, 2) @ K.pool_matrix(T, 2), torch.eye(F, dtype=F64))
    I = torch.eye(T * F, dtype=F64)
    a = float(torch.linalg.norm(Pi @ J @ (I - Q)) / torch.linalg.norm(J))
    b = float(torch.linalg.norm(J - Q @ J @ Q) / torch.linalg.norm(J))
    measured, predicted = {"left": a, "two_sided": [b]}, {"tolerance_a": EXACT}
    if spec.kernel == "causal":
        if a > 1e-3:
            return Verdict("3.2", "conditional", measured=measured, predicted=predicted,
                           condition="kernels leave ker Π invariant (full/block); fails for causal (its persistent "
                                     "mode sits on the first token, e₁)"
                                     + (" and compress_gate = 0" if spec.arch == "compressed" else ""),
                           counterexample={**spec.as_dict(), "a_rel": a})
        return Verdict("3.2", "fails", measured=measured, predicted=predicted, counterexample=spec.as_dict())
    if a <= EXACT:
        return Verdict("3.2", "holds", measured=measured, predicted=predicted)
    return Verdict("3.2", "fails", measured=measured, predicted=predicted, counterexample=spec.as_dict())


def pooling_errors(table: list, sizes=((4, 2), (6, 3), (8, 4)), d: int = 3) -> list[float]:
    """Π and Π⁺ (``numerics.kernels``) against their definitions by reshaping: block means
    X.reshape(n, P, d).mean(1) and block copies Y.repeat_interleave(P, 0).  Normalised errors: a mean of
    P float64 numbers is exact to P·ε·max|X| (a copy exactly), so the tolerance is 4·P·ε·max|X|."""
    out = []
    g = torch.Generator().manual_seed(32)
    for T, P in sizes:
        X = torch.randn(T, d, dtype=F64, generator=g)
        Y = torch.randn(T // P, d, dtype=F64, generator=g)
        tol = 4 * P * EPS * float(X.abs().max())
        pool = float((K.pool_matrix(T, P) @ X - X.reshape(T // P, P, d).mean(1)).abs().max()) / tol
        lift = float((K.lift_matrix(T, P) @ Y - Y.repeat_interleave(P, 0)).abs().max()) / tol
        out += [pool, lift]
        table.append({"part": "Π, Π⁺", "T": T, "P": P, "pool vs block means / tol": pool,
                      "lift vs block copies / tol": lift})
    return out


@claim("3.2", title="Block coarse-graining: exact one-sided, approximate two-sided", family="coarse_graining",
       statement="(a) ΠJ = J_cΠ (dually JᵀΠ⁺ = Π⁺J_cᵀ) exactly when ΠA(I − Q) = 0: true for full and "
                 "block kernels, false for causal. (b) past ℓ*, J ≈ QJQ with ‖J − QJQ‖/‖J‖ ≤ r_ℓ(0).",
       assumptions=["T = nP; Π = I_n ⊗ 1ᵀ/P, Π⁺ = I_n ⊗ 1, Q = Π⁺Π",
                    "linearised at 1x̄ᵀ (gate 0) or, for g ≠ 0, at a block-constant state Π⁺Y₀ (the "
                    "trajectory stays block-constant by within-block permutation equivariance)",
                    "(b) needs a kernel of the form C ⊗ 11ᵀ/P (full, block) and saturation"],
       generated=["numerics.generated.coarse_graining.block_projector",
                  "numerics.generated.coarse_graining.left_factoring_residual",
                  "numerics.generated.coarse_graining.coarse_operator",
                  "numerics.generated.coarse_graining.dual_factoring_residual",
                  "numerics.generated.coarse_graining.two_sided_residual"],
       tests=["tests/test_coarse_graining.py::test_exact_factoring_full_and_block",
              "tests/test_coarse_graining.py::test_causal_does_not_factor",
              "tests/test_coarse_graining.py::test_two_sided_bounded_by_mode_ratio",
              "tests/test_coarse_graining.py::test_causal_two_sided_stays_order_one",
              "tests/test_coarse_graining.py::test_ledger_3_2_catches_wrong_prediction"],
       control="causal kernel: ΠA(I − Q) ≠ 0; the one-sided and two-sided residuals are O(1) and equal the "
               "derivation's Σ_λ P_λ ⊗ G_{≤ℓ}(λ) prediction (persistent mode on e₁, leading term √(1 − 1/P))",
       figure="coarse_graining_residual",
       kind='prediction', setting="full and block-causal fast kernels (the paper's causal kernel is the negative control)", standing=FAILS,
       headline="(a) ΠJ = J_cΠ and (b) J ≈ QJQ past ℓ* hold for full/block kernels; with the paper's causal kernel (a) misses by 0.1–0.2 and (b) stays ≈ 0.7 at every depth (the persistent mode is the first token)")
def check_3_2(ctx) -> ClaimResult:
    steps = symbolic_steps(th.prove_pool_lift() + th.prove_block_kernels_factor() + th.prove_power_induction()
                   + th.prove_kernel_grid(((4, 2), (8, 4)) if ctx.quick else ((4, 2), (6, 2), (6, 3), (8, 4))))
    cases, unusable = ledger_cases("3.2", ctx)
    table, errs, ctl = list(unusable), [math.inf] * len(unusable), []
    for spec, v in cases:
        m, p = v.measured, v.predicted
        errs.append(v.error)
        slow = "off" if spec.P is None else ("gate" if spec.knob("gate") else "gate0")
        part = "b" if spec.layers > 3 else "a"
        row = {"part": part, "kernel": spec.kernel, "slow path": slow, "state": m["state"], "seed": spec.seed,
               "‖ΠJ(I−Q)‖/‖J‖": m["left"], "dual": m["dual"], "predicted ‖ΠJ(I−Q)‖/‖J‖": p.get("left"),
               "status": v.status}
        if part == "b":
            depths = [0, 3, spec.layers - 1]
            row["‖J−QJQ‖/‖J‖ at depth 1, 4, 12"] = [round(m["two_sided"][k], 4) for k in depths]
            row["predicted"] = [round(p["two_sided"][k], 4) for k in depths]
            if "r0_bound" in p:
                row["r_ℓ(0) bound"] = [round(p["r0_bound"][k], 4) for k in depths]
        table.append(row)
        if spec.kernel == "causal" and "two_sided" in p:
            ctl.append((spec, v))
    # Control: the causal kernel breaks ΠA(I − Q) = 0; the derivation predicts how large both residuals are.
    ctl_ok, parts = bool(ctl), []
    for spec, v in ctl:
        m, p = v.measured, v.predicted
        dev = max(abs(p["left"] - m["left"]), abs(p["two_sided"][-1] - m["two_sided"][-1]))
        ok = m["kernel_residual"] > 1e-3 and m["left"] > 1e-3 and dev <= p["tolerance"]
        ctl_ok &= ok
        parts.append(f"L={spec.layers} c={spec.knob('value_scale'):g}: one-sided {m['left']:.4f} (predicted "
                     f"{p['left']:.4f}), two-sided {m['two_sided'][-1]:.4f} (predicted {p['two_sided'][-1]:.4f}), "
                     f"|Δ| {dev:.1e} ≤ {p['tolerance']:.1e}")
    errs += pooling_errors(table)
    P = 4
    control = ControlResult("fails-as-predicted" if ctl_ok else "did-not-fail",
                            "causal (gate 0): " + "; ".join(parts) + f". Saturated limit of the two-sided residual "
                            f"(J → 1e₁ᵀ ⊗ G(1)): √(1 − 1/P) = {math.sqrt(1 - 1 / P):.3f}; of the one-sided: "
                            f"√((1 − 1/P)/P) = {math.sqrt((1 - 1 / P) / P):.3f}")
    numeric = NumericResult(
        cases=len(table), max_error=max(errs), tolerance=1.0,
        detail="normalised errors (≤ 1 passes): generated residuals vs their definitions (/ 100·L·T·d·ε); "
               "(a) full/block residuals / 1e-12; at gate 0 the derivation's Σ_λ P_λ ⊗ G_{≤ℓ}(λ) residuals vs the "
               "autograd depth Jacobians (/ 10·κ·L·T·d·ε) at every depth; (b) ‖J−QJQ‖/‖J‖ ≤ r_ℓ(0)", table=table)
    finding = ("3.2(b) fails for the causal kernel (a stated counterexample): its persistent mode is carried "
               "by the first token (left eigenvector e₁ of A for λ = 1, an attention sink), which no block "
               "mean represents, so ‖J − QJQ‖/‖J‖ stays ≈ 0.7 at every depth even with a strong value path "
               f"(saturated limit √(1 − 1/P) = {math.sqrt(0.75):.3f}). (b) holds under the condition that the kernel "
               "has the form C ⊗ 11ᵀ/P (full, block-causal): then J − QJQ = (I − Q) ⊗ G_{≤ℓ}(0) exactly and the "
               "residual is ≤ r_ℓ(0), so it is ≤ τ past ℓ*(τ). (a) also holds at g ≠ 0 at any block-constant "
               "state (within-block permutation equivariance).")
    notes = ("docs/theory.md §3 (a): 1e−16 (full), 7e−17 (block), 0.19 (causal); here " +
             ", ".join(f"{r['kernel']}/{r['slow path']}: {r['‖ΠJ(I−Q)‖/‖J‖']:.2g}" for r in table
                       if r.get("part") == "a" and r.get("seed") == 0) +
             ". (b), c = 20: 0.62/0.26/0.097 (full), 0.56/0.22/0.076 (block), 0.74/0.68/0.73 "
             "(causal) in the paper; here (seed 0) " + "; ".join(f"{r['kernel']}: {r['‖J−QJQ‖/‖J‖ at depth 1, 4, 12']}"
                                                   for r in table if r.get("part") == "b" and r.get("seed") == 0) +
             " (W_VO = 20·I + noise and a different draw: same trend, faster decay).")
    # the causal kernel is the paper's: the control failing as predicted is the claim failing there
    return ClaimResult(symbolic=steps, numeric=numeric, control=control, notes=notes, finding=finding,
                       paper_setting="fails" if ctl_ok else "")
