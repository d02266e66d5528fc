"""Claims 3.1 and 3.2: saturation depth (reconstruction) and block coarse-graining (THEORY.md §3)."""

from __future__ import annotations

import math

import sympy as sp
import torch

from numerics import coarse_graining as ncg
from numerics import kernels as K
from numerics import random_stack
from numerics.stack import random_xbar
from proofs_check.ledger import (
    ClaimResult,
    ControlResult,
    NumericResult,
    SymbolicStep,
    claim,
    symbolic_steps,
)
from theory import coarse_graining as th

EPS = 2.0**-52
TAU = 0.5
#: THEORY.md §3 (i): r at the last layer for λ = 1/2, 1/3, 1/6 (causal, T = 6, d = 16, 16 layers).
THEORY_R = {0: (0.94, 0.93, 0.93), 5: (0.35, 0.24, 0.16), 20: (0.25, 0.15, 0.08)}


@claim("3.1", title="Saturation depth and its per-layer bound", family="coarse_graining",
       statement="r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖/‖G_{≤ℓ}(1)‖; ℓ*(τ) = min{ℓ : r_m(λ) ≤ τ ∀ m ≥ ℓ, every decaying λ} "
                 "≤ ⌈log(τ/κ)/log ρ⌉ when ρ < 1; stacks with c = 0 have no saturation depth at τ = 0.5.",
       assumptions=["gate 0, token-homogeneous reference, one frozen kernel (causal or full)",
                    "spectral norms; ρ is the persistent-path ratio ρ̃ (THEORY.md's ρ is ≥ 1 for every "
                    "pre-LN stack, proved here)", "W_VO ≈ c·I + noise drawn with value_scale=c"],
       reconstruction=True,
       generated=["numerics.generated.coarse_graining.mode_product_step",
                  "numerics.generated.coarse_graining.mode_ratio",
                  "numerics.generated.coarse_graining.persistent_path_ratio",
                  "numerics.generated.coarse_graining.saturation_bound"],
       tests=["tests/test_coarse_graining.py::test_mode_ratio_below_path_product",
              "tests/test_coarse_graining.py::test_bound_holds_where_rho_below_one",
              "tests/test_coarse_graining.py::test_no_saturation_without_value_path",
              "tests/test_coarse_graining.py::test_theory_rho_never_below_one"],
       control="c = 0 stacks: r stays near 1, no saturation depth at τ = 0.5 (reported as such)",
       figure="mode_products")
def check_3_1(ctx) -> ClaimResult:
    steps = symbolic_steps(th.prove_theory_rho_at_least_one())
    rho_, tau_, kappa_ = sp.symbols("rho tau kappa", positive=True)
    x = sp.log(tau_ / kappa_) / sp.log(rho_)
    steps.append(SymbolicStep("ρ^{log(τ/κ)/log ρ} = τ/κ (so ρ^bound ≤ τ/κ for ρ < 1)",
                              sp.simplify(sp.expand_log(sp.log(rho_ ** x), force=True)
                                          - sp.log(tau_ / kappa_)) == 0, "simplify",
                              "ceil only raises the exponent; with ρ < 1 that lowers ρ^m"))
    seeds = [0] if ctx.quick else [0, 1, 2]
    cases = [(k, c, s) for s in seeds for k in ("causal", "full") for c in (0, 5, 20)]
    table, worst, bound_violations, control_ok, theory_rho_min = [], 0.0, 0, True, math.inf
    for kernel, c, seed in cases:
        st = random_stack(6, 16, 16, 2, kernel, seed=seed, value_scale=c)
        sd = ncg.saturation_depth(st, random_xbar(16, seed), TAU)
        envelope = torch.cumprod(sd.path_ratios, 0)[:, None]
        worst = max(worst, float((sd.ratios - envelope).clamp_min(0).max()))
        if sd.bound is not None and sd.bound < sd.layers and (sd.measured is None or sd.measured > sd.bound):
            bound_violations += 1
        theory_rho_min = min(theory_rho_min, sd.theory_rho)
        if c == 0:
            control_ok &= (sd.measured is None) and "no saturation depth" in str(sd)
        table.append({"kernel": kernel, "c": c, "seed": seed, "measured ℓ*": sd.measured,
                      "bound": sd.bound, "bound vacuous": sd.bound_vacuous, "ρ̃": round(sd.rho, 4),
                      "THEORY ρ": round(sd.theory_rho, 4), "κ": round(sd.kappa, 2),
                      "r_last": [round(r, 3) for r in sd.ratios[-1].tolist()]})
    # r_m ≤ Π ρ̃_ℓ: products of ≤ 16 spectral norms, each relative error ≤ 10·d·ε.
    tol = 16 * 10 * 16 * EPS
    repro = [row for row in table if row["kernel"] == "causal" and row["seed"] == 0]
    notes = "r at the last layer for λ = 1/2, 1/3, 1/6 (causal, seed 0) vs THEORY.md: " + "; ".join(
        f"c={row['c']}: {row['r_last'][0]}, {row['r_last'][1]}, {row['r_last'][-1]} "
        f"(THEORY {', '.join(map(str, THEORY_R[row['c']]))})" for row in repro)
    useful = [r for r in table if not r["bound vacuous"]]
    notes += (f". Non-vacuous bounds (ρ̃ < 1 and bound < L): "
              + (", ".join(f"{r['kernel']} c={r['c']} seed {r['seed']}: ℓ* = {r['measured ℓ*']} ≤ {r['bound']}"
                           for r in useful) or "none")
              + ". κ is slack: r lives on mode blocks, where the proof needs no κ (causal κ = "
              f"{table[0]['κ']} makes its bound vacuous).")
    numeric = NumericResult(
        cases=len(cases), max_error=worst + bound_violations, tolerance=tol,
        detail=f"max_m (r_m − Π_{{ℓ≤m}} ρ̃_ℓ)_+ = {worst:.2e} plus {bound_violations} stacks with bound < L "
               f"but ℓ* missing or above it; THEORY ρ ≥ {theory_rho_min:.4f} on every stack", table=table)
    control = ControlResult("fails-as-predicted" if control_ok else "did-not-fail",
                            "c = 0 stacks: " + "; ".join(f"{r['kernel']} seed {r['seed']}: r_last max "
                                                         f"{max(r['r_last']):.3f} > τ = {TAU}, "
                                                         f"measured ℓ* = {r['measured ℓ*']}"
                                                         for r in table if r["c"] == 0))
    finding = ("THEORY.md's ρ = max ‖G_ℓ(λ)‖/σ_min(G_ℓ(1)) is ≥ 1 for every pre-LN stack, not only 'when C_ℓ "
               "does not move the killed directions': LN₁ is translation invariant, so B_ℓ1 = 0 and G_ℓ(λ)1 = "
               "G_ℓ(1)1 for all λ, hence σ_min(G_ℓ(1)) ≤ ‖G_ℓ(λ)‖ (proved symbolically). No value_scale or "
               f"decay can draw ρ < 1 (min over these stacks {theory_rho_min:.3f}); the bound as written is "
               "always vacuous. Verified instead with ρ̃ = max ‖G_ℓ(λ)‖‖y_ℓ‖/‖y_{ℓ+1}‖, y_{ℓ+1} = G_ℓ(1)y_ℓ "
               "(the persistent mode's growth along its own direction), for which r_m ≤ Π ρ̃_ℓ; ρ̃ < 1 is "
               "drawn with value_scale c ≳ 5 (full kernel) or c ≳ 20 (causal).")
    return ClaimResult(symbolic=steps, numeric=numeric, control=control, notes=notes, finding=finding)


def _direct_left_residual(J: torch.Tensor, T: int, d: int, P: int) -> float:
    """‖ΠJ(I − Q)‖₂/‖J‖₂ with Π ⊗ I_d and Q ⊗ I_d built from numerics.kernels' Π, Π⁺: the
    definition, computed without the generated code (token-major vec, index t·d + i)."""
    eye_d = torch.eye(d, dtype=J.dtype)
    pool, lift = K.pool_matrix(T, P, J.dtype), K.lift_matrix(T, P, J.dtype)
    Pi, Q = torch.kron(pool, eye_d), torch.kron(lift @ pool, eye_d)
    return float(torch.linalg.matrix_norm(Pi @ J - Pi @ J @ Q, ord=2) / torch.linalg.matrix_norm(J, ord=2))


def _stack(kernel: str, slow: str, layers: int, seed: int, value_scale: float = 0.0):
    """T = 8, P = 4, d = 8; slow ∈ off | gate0 | gate (g = 0.5)."""
    kw = dict(value_scale=value_scale, seed=seed)
    if slow == "off":
        return random_stack(8, 8, layers, 2, kernel, block_size=4 if kernel == "block" else None, **kw)
    return random_stack(8, 8, layers, 2, kernel, P=4, gate=0.5 if slow == "gate" else 0.0, **kw)


def _initial_state(slow: str, seed: int) -> tuple[torch.Tensor, str]:
    """1x̄ᵀ at gate 0; a random block-constant Π⁺Y₀ at g ≠ 0 (no homogeneous reference exists)."""
    if slow != "gate":
        return torch.ones(8, 1, dtype=torch.float64) * random_xbar(8, seed), "1x̄ᵀ"
    Y0 = torch.randn(2, 8, generator=torch.Generator().manual_seed(seed + 100), dtype=torch.float64)
    _, lift, _ = ncg.pooling(8, 4)
    return lift @ Y0, "block-constant Π⁺Y₀"


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
              "tests/test_coarse_graining.py::test_causal_two_sided_stays_order_one"],
       control="causal kernel: ΠA(I − Q) ≠ 0, one-sided residual O(0.1), two-sided residual stays ≈ 0.7",
       figure="coarse_graining_residual")
def check_3_2(ctx) -> ClaimResult:
    steps = symbolic_steps(th.prove_pool_lift() + th.prove_block_kernels_factor() + th.prove_power_induction()
                   + th.prove_kernel_grid(((4, 2), (8, 4)) if ctx.quick else ((4, 2), (6, 2), (6, 3), (8, 4))))
    seeds = [0] if ctx.quick else [0, 1, 2]
    table, exact_err, bound_excess, causal_left, causal_two = [], 0.0, 0.0, [], []
    for seed in seeds:
        for kernel in ("full", "block", "causal"):
            for slow in ("off", "gate0", "gate"):
                st = _stack(kernel, slow, 3, seed)
                X0, where = _initial_state(slow, seed)
                J = ncg.depth_jacobians(st, X0)[-1]
                res = ncg.factoring_residuals(J, 8, 8, 4)
                # the generated one-sided residual against its definition (rounding of 64×64 products)
                exact_err = max(exact_err, abs(res.left - _direct_left_residual(J, 8, 8, 4)))
                table.append({"part": "a", "kernel": kernel, "slow path": slow, "state": where, "seed": seed,
                              "‖ΠJ(I−Q)‖/‖J‖": res.left, "dual": res.dual})
                if kernel == "causal":
                    causal_left.append(res.left)
                else:
                    exact_err = max(exact_err, res.left, res.dual)
        # (b): 12 layers, c = 20, depths 1, 4, 12, against the mode-ratio bound r(0)
        for kernel in ("full", "block", "causal"):
            st = _stack(kernel, "gate0", 12, seed, value_scale=20.0)
            X0, _ = _initial_state("gate0", seed)
            Js = ncg.depth_jacobians(st, X0)
            two = [ncg.factoring_residuals(Js[k - 1], 8, 8, 4).two_sided for k in (1, 4, 12)]
            row = {"part": "b", "kernel": kernel, "seed": seed, "c": 20,
                   "‖J−QJQ‖/‖J‖ at depth 1, 4, 12": [round(v, 4) for v in two]}
            if kernel != "causal":
                modes, _ = ncg.kernel_modes(st.frozen_kernel())
                zero = [i for i, m in enumerate(modes) if abs(m.lam) < ncg.EIG_TOL]
                r0 = ncg.mode_ratios(ncg.mode_products(ncg.mode_blocks(st, X0[0], modes)))[:, zero[0] - 1]
                r0 = [float(r0[k - 1]) for k in (1, 4, 12)]
                row["r_ℓ(0) bound"] = [round(v, 4) for v in r0]
                bound_excess = max(bound_excess, max(t - r for t, r in zip(two, r0)))
            else:
                causal_two.append(two[-1])
            table.append(row)
    # Exact identities: products of 3 layer Jacobians (64×64) and Π, Π⁺: ≤ 3·64·ε·cond ≈ 1e-13.
    tol = 1e-12
    numeric = NumericResult(
        cases=len(table), max_error=max(exact_err, bound_excess), tolerance=tol,
        detail=f"(a) full/block, slow path off / gate 0 / gate 0.5: max relative residual {exact_err:.2e} "
               f"(and the generated ‖ΠJ(I−Q)‖/‖J‖ equals the directly computed one for every kernel); "
               f"(b) max(‖J−QJQ‖/‖J‖ − r_ℓ(0)) = {bound_excess:.2e} (≤ 0: the mode-ratio bound holds)",
        table=table)
    control_ok = min(causal_left) > 1e-3 and min(causal_two) > 0.5
    control = ControlResult("fails-as-predicted" if control_ok else "did-not-fail",
                            f"causal: ‖ΠJ(I−Q)‖/‖J‖ ∈ [{min(causal_left):.3f}, {max(causal_left):.3f}] "
                            f"(THEORY 0.19); ‖J−QJQ‖/‖J‖ at depth 12 (c = 20) ∈ "
                            f"[{min(causal_two):.3f}, {max(causal_two):.3f}] (THEORY 0.73)")
    finding = ("3.2(b) fails for the causal kernel (a stated counterexample): its persistent mode is carried "
               "by the first token (left eigenvector e₁ of A for λ = 1, an attention sink), which no block "
               "mean represents, so ‖J − QJQ‖/‖J‖ stays ≈ 0.7 at every depth even with a strong value path. "
               "(b) holds under the condition that the kernel has the form C ⊗ 11ᵀ/P (full, block-causal): "
               "then J − QJQ = (I − Q) ⊗ G_{≤ℓ}(0) exactly and the residual is ≤ r_ℓ(0), so it is ≤ τ past ℓ*(τ). "
               "(a) also holds at g ≠ 0 at any block-constant state (within-block permutation equivariance).")
    notes = ("THEORY.md (a): 1e−16 (full), 7e−17 (block), 0.19 (causal); here " +
             ", ".join(f"{r['kernel']}/{r['slow path']}: {r['‖ΠJ(I−Q)‖/‖J‖']:.2g}" for r in table
                       if r["part"] == "a" and r["seed"] == 0) +
             ". THEORY.md (b), c = 20: 0.62/0.26/0.097 (full), 0.56/0.22/0.076 (block), 0.74/0.68/0.73 "
             "(causal); here (seed 0) " + "; ".join(f"{r['kernel']}: {r['‖J−QJQ‖/‖J‖ at depth 1, 4, 12']}"
                                                   for r in table if r["part"] == "b" and r["seed"] == 0) +
             " (W_VO = 20·I + noise and a different draw: same trend, faster decay).")
    return ClaimResult(symbolic=steps, numeric=numeric, control=control, notes=notes, finding=finding)

# ----------------------------------------------------------------------------- other architectures
# The matrix's per-architecture evaluators: (arch, ctx) -> (status, condition, evidence, counterexample).

import math  # noqa: E402

from numerics.jacobians import (commutator_error, eigen_blocks, flat_jacobian, loglog_slope,  # noqa: E402
                                reference_input, state_jacobian, step_jacobians)
from proofs_check.on_stack import EXACT, arch_evaluator, arch_stack, shrink  # noqa: E402

F64 = torch.float64


@arch_evaluator("3.1")
def arch_eval_3_1(arch, ctx):
    kw = {"arch_options": {"compress_gate": 0.0}} if arch == "compressed" else {}
    s = arch_stack(arch, seed=ctx.seed, value_scale=20.0, layers=4, **kw)
    X = reference_input(s, ctx.seed)
    A = s.frozen_kernel()
    tau = 0.5
    Js = step_jacobians(s, X)
    per = [eigen_blocks(J, A, s.features) for J in Js]
    lam, condS = per[0][0], per[0][2]
    prods = [torch.eye(s.features, dtype=F64).expand(len(lam), -1, -1)]
    for _, blocks, _ in per:
        prods.append(blocks @ prods[-1])
    r = torch.stack([torch.linalg.matrix_norm(p[1:], ord=2) / torch.linalg.matrix_norm(p[0], ord=2)
                     for p in prods[1:]])  # (steps, decaying modes)
    below = (r.max(-1).values <= tau).tolist()
    measured = next((ell for ell in range(len(below)) if all(below[ell:])), None)
    rho = max(float((torch.linalg.matrix_norm(b[1:], ord=2) /
                     torch.linalg.svdvals(b[0])[-1]).max()) for _, b, _ in per)
    bound = math.ceil(math.log(tau / condS) / math.log(rho)) if rho < 1 else None
    ev = {"tau": tau, "measured_saturation_depth": measured, "rho": rho, "kappa": condS, "bound": bound,
          "r_last": r[-1].tolist(), "value_scale": 20.0}
    if rho < 1:
        if measured is not None and measured <= bound:
            return "holds", None, ev, None
        return "fails", None, ev, {"arch": arch, "seed": ctx.seed, "value_scale": 20.0}
    return ("conditional", f"ρ < 1 (here ρ = {rho:.2f} ≥ 1: the bound is vacuous; the measured ℓ* "
            f"{'= ' + str(measured) if measured is not None else 'does not exist'} at τ = {tau})", ev, None)


@arch_evaluator("3.2")
def arch_eval_3_2(arch, ctx):
    kw = {"arch_options": {"compress_gate": 0.0}} if arch == "compressed" else {}

    def leak(kernel):
        s = arch_stack(arch, seed=ctx.seed, kernel=kernel, block_size=2, value_scale=20.0, **kw)
        J = state_jacobian(s, reference_input(s, ctx.seed))
        from numerics.kernels import lift_matrix, pool_matrix

        T, F = s.config.T, s.features
        Pi = torch.kron(pool_matrix(T, 2), torch.eye(F, dtype=F64))
        Q = torch.kron(lift_matrix(T, 2) @ pool_matrix(T, 2), torch.eye(F, dtype=F64))
        I = torch.eye(T * F, dtype=F64)
        return (float(torch.linalg.norm(Pi @ J @ (I - Q)) / torch.linalg.norm(J)),
                float(torch.linalg.norm(J - Q @ J @ Q) / torch.linalg.norm(J)))

    (a_block, b_block), (a_causal, b_causal) = leak("block"), leak("causal")
    ev = {"a_block_rel": a_block, "a_causal_rel": a_causal, "b_block_rel": b_block, "b_causal_rel": b_causal,
          "tolerance_a": EXACT}
    if a_block <= EXACT and a_causal > 1e-3:
        return ("conditional", "kernels leave ker Π invariant (full/block); fails for causal (its persistent "
                "mode sits on the first token, e₁)" + (" and compress_gate = 0" if arch == "compressed" else ""),
                ev, {"arch": arch, "seed": ctx.seed, "kernel": "causal", "a_rel": a_causal})
    return "fails", None, ev, {"arch": arch, "seed": ctx.seed, "kernel": "block"}
