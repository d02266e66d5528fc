"""Claims 2.1–2.4: factorisation of the linearised stack along the frozen kernel.

Each claim is one ``@on_stack`` function of a :class:`numerics.spec.StackSpec` (docs/theory.md §2):
the ledger's ``@claim`` check runs it on the preln specs and adds the symbolic steps and the
negative control; the claims × architectures matrix runs it on every variant's specs.
"""

from __future__ import annotations

import mpmath
import numpy as np
import torch

from numerics import factorisation as nf
from numerics import matrix_free as mf
from numerics import random_stack
from numerics.generated import factorisation as gen
from numerics.jacobians import commutator_error, eigen_blocks, flat_jacobian, loglog_slope, reference_input, \
    state_jacobian
from numerics.spec import StackSpec
from numerics.stack import random_xbar
from proofs_check.claims.on_stack import matrix_spec
from proofs_check.claims.standing import HOLDS, PAPER
from proofs_check.claims.evidence import ClaimResult, ControlResult, Derivation, NumericResult, symbolic_steps
from proofs_check.claims.registry import claim, evaluate, on_stack
from proofs_check.claims.on_stack import EXACT, Verdict, shrink
from theory import factorisation as th

F64 = torch.float64
EPS64 = float(torch.finfo(torch.float64).eps)
SLOPE_TOL = 0.1


def transformed(stack, X):
    """(λ, S, Jt) with Jt = (S⁻¹⊗I) J (S⊗I), J the autograd Jacobian at X."""
    A = stack.frozen_kernel()
    lam, S = nf.eigenbasis(A)
    J = nf.stack_jacobian(stack, X).detach()
    return lam, S, J, nf.to_mode_coordinates(J, S, stack.config.d)


def factorisation_error(stack, xbar):
    """(off-block abs max, block error abs max, tolerance) at 1x̄ᵀ; tolerance = 64 eps cond(S) ‖J‖₂
    (one similarity transform in float64 loses cond(S) digits of ‖J‖; 64 covers the T d-term sums)."""
    T, d = stack.config.T, stack.config.d
    lam, S, J, Jt = transformed(stack, xbar.expand(T, d).clone())
    _, G = nf.mode_blocks(stack, xbar)
    tol = 64 * EPS64 * float(torch.linalg.cond(S)) * float(torch.linalg.matrix_norm(J, 2))
    off = Jt.reshape(T, d, T, d).clone()
    idx = torch.arange(T)
    off[idx, :, idx, :] = 0
    blk = (nf.diagonal_blocks(Jt, T, d) - G.detach()).abs().max()
    return float(off.abs().max()), float(blk), tol


def generated_block_errors(stack, xbar):
    """The generated factors against autograd on the real stack at 1x̄ᵀ:
    (block error of Π_ℓ (I + C_ℓ)((1−hα)I + hλB_ℓ) from ``B_layer``/``C_layer``, LN Jacobian error of
    ``ln_jacobian`` at x̄_ℓ (LN₁) and ū_ℓ (LN₂) against ``jacrev`` of the stack's own LayerNorms,
    LN tolerance 64 eps max|J_LN|: a d-term sum of O(1/σ) entries in float64)."""
    T, d = stack.config.T, stack.config.d
    lam, S, J, Jt = transformed(stack, xbar.expand(T, d).clone())
    blocks = nf.diagonal_blocks(Jt, T, d)
    B, C = nf.layer_B_C(stack, xbar)
    eye = torch.eye(d, dtype=xbar.dtype)
    G = eye.expand(T, d, d).clone()
    h, alpha = stack.h, stack.config.decay
    for ell in range(B.shape[0]):
        G = (eye + C[ell]) @ ((1 - h * alpha) * eye + h * lam[:, None, None] * B[ell]) @ G
    blk = float((blocks - G).detach().abs().max())
    xs, us = nf.reference_tokens(stack, xbar)
    w = nf.layer_weights(stack)
    eps = torch.tensor(stack.config.ln_eps, dtype=xbar.dtype)
    ln_err, ln_scale = 0.0, 0.0
    for ell, layer in enumerate(stack.layers):
        for ln_, z, gamma in ((layer.ln1, xs[ell], w["gamma1"][ell]), (layer.ln2, us[ell], w["gamma2"][ell])):
            auto = torch.func.jacrev(ln_)(z[:, 0].detach()).detach()
            ln_err = max(ln_err, float((gen.ln_jacobian(z, gamma, eps) - auto).detach().abs().max()))
            ln_scale = max(ln_scale, float(auto.abs().max()))
    return blk, ln_err, 64 * EPS64 * ln_scale


CASES_2_1 = [(6, 8, 4, 2, "causal", {}), (6, 8, 3, 2, "full", {}), (6, 4, 3, 2, "block", {"block_size": 2}),
             (5, 4, 3, 1, "alibi", {})]
#: GPT-2's block (numerics.hf_gpt2): h = 1, gelu_new, query and output biases; run in every mode.
GPT2_CASE_2_1 = (6, 8, 3, 2, "causal", {"step": 1.0, "activation": "gelu_new", "attn_bias": True})


def paper_layer_errors(seed: int = 0) -> dict[str, float]:
    """Per kernel of CASES_2_1 (all four, every mode): ‖stack(X) − paper_forward(X)‖/‖stack(X)‖ at an
    inhomogeneous X: the stack whose Jacobian the claim factorises is the paper's layer, mask and
    score scale included (numerics.depth_flow.paper_forward: torch's reference ops, no shared code)."""
    from numerics.depth_flow import paper_forward

    out = {}
    for T, d, L, H, k, kw in CASES_2_1 + [GPT2_CASE_2_1]:
        st = StackSpec(T=T, d=d, layers=L, heads=H, kernel=k, seed=seed, knobs={"value_scale": 1.0, **kw}).build()
        X = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 11))
        with torch.no_grad():
            Y = st(X)
            out["gpt2-block" if kw.get("attn_bias") else k] = float((Y - paper_forward(st, X)).norm() / Y.norm())
    return out


def _factorisation_specs(arch, ctx):
    if arch == "preln":
        return [StackSpec(T=T, d=d, layers=L, heads=H, kernel=k, seed=ctx.seed + i,
                          knobs={"value_scale": 1.0, "decay": 0.5 * (i % 2), **kw})
                for i, (T, d, L, H, k, kw) in enumerate((CASES_2_1 if not ctx.quick else CASES_2_1[:3])
                                                        + [GPT2_CASE_2_1])]
    return [matrix_spec(arch, ctx)]


def _factorisation_error(spec: StackSpec):
    """(‖J(A⊗I) − (A⊗I)J‖/‖J‖ at the homogeneous reference, the stack) for a variant's spec."""
    s = spec.build_arch()
    X = reference_input(s, spec.seed)
    return commutator_error(state_jacobian(s, X), s.frozen_kernel(), s.features), s


def _factorisation_preln(spec: StackSpec) -> Verdict:
    st = spec.build()
    xbar = random_xbar(spec.d, 100 + spec.seed)
    off, blk, tol = factorisation_error(st, xbar)
    blk_bc, ln_err, ln_tol = generated_block_errors(st, xbar)
    error = max(max(off, blk, blk_bc) / tol, ln_err / ln_tol)
    measured = {"off_block": off, "block_err": blk, "block_err_from_B_C": blk_bc, "ln_jacobian_err": ln_err,
                "tol": tol, "ln_tol": ln_tol}
    status = "holds" if error <= 1.0 else "fails"
    return Verdict("2.1", status, measured=measured, error=error, tolerance=1.0,
                   counterexample=None if status == "holds" else {"spec": spec.as_dict()})


@on_stack("2.1", specs=_factorisation_specs, homogeneous_reference=True)
def evaluate_2_1(spec: StackSpec, ctx) -> Verdict:
    """Block diagonality at 1x̄ᵀ in the kernel's eigenbasis; preln: every block equals the generated
    G(λ) (from ``G_layer`` and from ``B_layer``, ``C_layer``) and ``ln_jacobian`` equals autograd."""
    if spec.arch == "preln":
        return _factorisation_preln(spec)
    if spec.arch == "compressed":
        err, _ = _factorisation_error(spec)
        closed, _ = _factorisation_error(spec.with_(arch_options={"compress_gate": 0.0}))
        from hypothesis import strategies as hst

        cex = shrink(lambda p: _factorisation_error(spec.with_(seed=p["seed"], arch_options={
            "compress_gate": p["compress_gate"]}))[0] > 1e-8,
            hst.fixed_dictionaries({"seed": hst.integers(0, 20), "compress_gate": hst.floats(0.0, 2.0)}),
            max_examples=5)
        return Verdict("2.1", "fails", measured={"commutator_rel": err, "commutator_rel_gate0": closed,
                                                 "tolerance": EXACT},
                       error=err, tolerance=EXACT,
                       condition="compress_gate = 0 (then it is the preln stack): tokens before the first complete "
                                 "block see no compressed keys, A_c Π 1 ≠ 1, so no token-homogeneous reference exists",
                       counterexample={"arch": spec.arch, **(cex or {}), "T": spec.T, "P": spec.P, "d": spec.d,
                                       "layers": spec.layers})
    err, s = _factorisation_error(spec)
    X = reference_input(s, spec.seed, homogeneous=False)
    control = commutator_error(state_jacobian(s, X), s.frozen_kernel(), s.features)
    ev = {"commutator_rel": err, "tolerance": EXACT, "block_size": s.features,
          "control_inhomogeneous_commutator_rel": control}
    if spec.arch in ("postln", "mhc"):
        ev["generated_block_formula_rel_error"] = _block_formula_error(spec.arch, s, reference_input(s, spec.seed))
        ev["formula"] = ("theory.architectures.postln_mode_block" if spec.arch == "postln"
                         else "theory.architectures.mhc_mode_block (H ⊗ I + βαᵀ ⊗ (G(λ) − I))")
    ok = err <= EXACT and control > 1e-3 and ev.get("generated_block_formula_rel_error", 0.0) <= 1e-10
    cond = "almost everywhere (off the ReLU kink set)" if spec.arch == "relu" else None
    if not ok:
        return Verdict("2.1", "fails", measured=ev, error=err, tolerance=EXACT,
                       counterexample={"spec": spec.as_dict()})
    return Verdict("2.1", "conditional" if cond else "holds", measured=ev, error=err, tolerance=EXACT,
                   condition=cond)


def inhomogeneity_control(stack, xbar, Z, delta=1e-2, fd=1e-3):
    """(measured, predicted) relative off-block mass at X = 1x̄ᵀ + δZ.  First-order model: the blocks
    vanish off the diagonal at δ = 0, so mass(δ) = δ ‖offblock(dJ̃/dδ)‖/‖J̃(0)‖ + O(δ²), the derivative
    a central difference of autograd Jacobians (step fd: error fd²‖J‴‖/6 ≲ 1e-6 relative)."""
    T, d = stack.config.T, stack.config.d
    X0 = xbar.expand(T, d).clone()
    _, S, _, Jt0 = transformed(stack, X0)
    Jp = nf.to_mode_coordinates(nf.stack_jacobian(stack, X0 + fd * Z).detach(), S, d)
    Jm = nf.to_mode_coordinates(nf.stack_jacobian(stack, X0 - fd * Z).detach(), S, d)
    dJt = (Jp - Jm) / (2 * fd)
    slope = nf.off_block_mass(dJt, T, d) * float(dJt.norm() / Jt0.norm())
    _, _, _, Jt = transformed(stack, X0 + delta * Z)
    return nf.off_block_mass(Jt, T, d), delta * slope


CONTROL_DELTA_2_1 = 1e-2
CONTROL_BAND_2_1 = 10 * CONTROL_DELTA_2_1  # |measured/predicted − 1| ≤ 10δ: the O(δ²) term, relative O(δ)


@claim("2.1", title="Factorisation along the frozen kernel", family="factorisation",
       statement="At X = 1x̄ᵀ the stack Jacobian in the basis S⊗I is block diagonal with blocks "
                 "G(λ) = Π_ℓ (I + C_ℓ)((1−hα)I + hλB_ℓ).",
       assumptions=["token-homogeneous reference", "gate 0", "one frozen kernel for all heads", "float64"],
       generated=["numerics.generated.factorisation.G_layer", "numerics.generated.factorisation.B_layer",
                  "numerics.generated.factorisation.C_layer", "numerics.generated.factorisation.ln_jacobian",
                  "numerics.generated.factorisation.G_layer_gelu_tanh",
                  "numerics.generated.factorisation.C_layer_gelu_tanh", "numerics.generated.factorisation.gelu_tanh",
                  "numerics.generated.factorisation.ubar"],
       tests=["tests/test_factorisation.py::test_blocks_match_autograd",
              "tests/test_factorisation.py::test_inhomogeneous_reference_breaks_blocks",
              "tests/test_factorisation.py::test_ledger_2_1_catches_perturbed_generated",
              "tests/test_factorisation.py::test_ledger_2_1_catches_a_kernel_that_is_not_the_papers"],
       control="inhomogeneous reference 1x̄ᵀ + δZ (δ = 0.01): off-block mass = δ·‖offblock(dJ̃/dδ)‖/‖J̃‖ "
               "within 10δ relative", figure="block_diagonality",
       kind='identity', setting=PAPER, standing=HOLDS,
       headline='at 1x̄ᵀ attention is a data-free kernel, so the Jacobian is block diagonal per kernel eigenvalue for any weights, trained or not; off the reference it is not (O(1) off-block mass at spread 0.1)')
def check_2_1(ctx) -> ClaimResult:
    specs = _factorisation_specs("preln", ctx)
    verdicts = [evaluate("2.1", s, ctx) for s in specs]
    rows = [{"kernel": s.kernel, "T": s.T, "d": s.d, "L": s.layers, **v.measured} for s, v in zip(specs, verdicts)]
    worst = max((v.error if v.error is not None else float("inf")) for v in verdicts)
    layer_errs = paper_layer_errors(ctx.seed)
    rows.append({"paper layer rel. error": layer_errs, "tolerance": EXACT})
    # float64 forward passes of ≤ 4 layers on O(1) values agree to ~1e-16: EXACT = 1e-12 relative
    worst = max(worst, max(layer_errs.values()) / EXACT)
    st = random_stack(6, 8, 4, 2, "causal", seed=0)
    Z = torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    mass, predicted = inhomogeneity_control(st, random_xbar(8, 100), Z, CONTROL_DELTA_2_1)
    ok = abs(mass / predicted - 1) <= CONTROL_BAND_2_1
    return ClaimResult(
        symbolic=symbolic_steps(th.all_proofs("2.1", ctx.quick)),
        numeric=NumericResult(cases=len(rows), max_error=worst, tolerance=1.0,
                              detail="max over cases of max(|off-block|, |block − G_layer product|, "
                                     "|block − Π(I + C_layer)((1−hα)I + hλB_layer)|)/tol, tol = 64 eps cond(S) ‖J‖₂, "
                                     "and |ln_jacobian − autograd J_LN|/(64 eps max|J_LN|), and the stack's "
                                     "output against the paper's layer (torch reference ops; causal, full, block, "
                                     "ALiBi, GPT-2's block) relative/1e-12",
                              table=rows),
        control=ControlResult("fails-as-predicted" if ok else "did-not-fail",
                              f"X = 1x̄ᵀ + {CONTROL_DELTA_2_1} Z: relative off-block mass {mass:.4g} vs first-order "
                              f"prediction {predicted:.4g} (ratio {mass / predicted:.4f}, band ±{CONTROL_BAND_2_1}); "
                              "≈ 1e-15 at the reference"),
        notes="quick mode: causal/full/block; full mode adds ALiBi (1 head); both add GPT-2's block (h = 1, "
              "gelu_new, b_Q and b_O; causal)")


#: Claim 2.2's ledger stack: T = 6, d = 8, 3 layers, 2 heads, causal, seed 0.
VIOLATION_SPEC = StackSpec(T=6, d=8, layers=3, heads=2, kernel="causal", seed=0)


def violated(kind, spec: StackSpec, delta: float):
    """(model, X, A): the stack ``spec`` names with condition ``kind`` broken by δ, its input and the
    kernel whose eigenbasis is used.  (a) X = 1x̄ᵀ + δZ; (b) a token-mixing sublayer δ·M before each
    MLP; (c) the same weights with ALiBi score biases whose head slopes differ by δ
    (``spec.with_(kernel="alibi")``, every head but the first at slope 0.5 + δ; needs ≥ 2 heads)."""
    T, d = spec.T, spec.d
    xbar = random_xbar(d, 200 + spec.seed)
    if kind == "inhomogeneous":
        st = spec.build()
        Z = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(spec.seed + 1))
        return st, xbar.expand(T, d) + delta * Z, st.frozen_kernel()
    if kind == "token-mixing":
        st = spec.build()
        return nf.TokenMixedStack(st, delta), xbar.expand(T, d).clone(), st.frozen_kernel()
    if kind == "alibi-slopes":
        if spec.heads < 2:
            raise ValueError(f"heads={spec.heads}: condition (c) needs two heads with different kernels")
        st = nf.set_alibi_slopes(spec.with_(kernel="alibi").build(), [0.5] + [0.5 + delta] * (spec.heads - 1))
        return st, xbar.expand(T, d).clone(), st.frozen_kernels()[0]
    raise ValueError(f"kind={kind!r} is not inhomogeneous, token-mixing or alibi-slopes")


def control_masses(deltas, kind, spec: StackSpec | None = None):
    """Relative off-block mass of J̃ = (S⁻¹⊗I) J (S⊗I) vs δ for one broken condition (``violated``), on
    the stack ``spec`` names (its weights: a checkpoint's when it has one; default :data:`VIOLATION_SPEC`)."""
    spec = spec or VIOLATION_SPEC
    return [_off_block_mass(spec, *violated(kind, spec, delta))[0] for delta in deltas]


def _off_block_mass(spec: StackSpec, model, X, A) -> tuple[float, float]:
    """(relative off-block mass of J̃ in A's eigenbasis S, cond(S))."""
    _, S = nf.eigenbasis(A)
    J = nf.stack_jacobian(model, X).detach()
    return nf.off_block_mass(nf.to_mode_coordinates(J, S, spec.d), spec.T, spec.d), float(torch.linalg.cond(S))


CONTROL_KINDS = ("inhomogeneous", "token-mixing", "alibi-slopes")
MAX_DELTA = 1e-2         # the largest violation tried (the variants' grid ends there too)
LINEAR_MASS = 1e-2       # top of the δ grid: the off-block part ≤ 1 % of J̃, so the mass is c·δ to O((cδ)²)
FLOOR_MARGIN = 1e3       # bottom of the grid: the mass ≥ 1e3 × its float64 floor (the mass at δ = 0)
PROBE_DELTA = 1e-8


def violation_deltas(kind, spec: StackSpec, points: int):
    """(δ grid, None, True) on which violation ``kind`` is first order and above rounding; (None, why,
    True) when rounding leaves no such grid at this size; (None, why, False) when the mass at δ = 0 is
    above its float64 rounding bound 64 eps cond(S) (2.1's tolerance), so the unbroken stack fails.

    mass(δ) = c·δ + O(δ²) with c = ‖offblock(dJ̃/dδ)‖/‖J̃‖, and mass ≤ 1 by definition, so the linear
    range ends where c·δ reaches :data:`LINEAR_MASS`; c grows with cond(S) (the causal eigenbasis: cond(S)
    ≈ 1.6e2 at T = 6, 8.8e6 at T = 16).  Its floor is the mass at δ = 0, float64 rounding amplified by
    cond(S); the grid starts where c·δ is :data:`FLOOR_MARGIN` times that floor.  c is read off a probe at
    δ = 1e-8, moved up or down until its mass is in range.  The grid is three decades, or fewer when the
    floor leaves less; under one decade the violation is not resolvable at this size.
    """
    floor, cond_S = _off_block_mass(spec, *violated(kind, spec, 0.0))
    bound = 64 * EPS64 * cond_S
    if floor > bound:
        return None, (f"{kind}: off-block mass {floor:.1e} at δ = 0, above float64 rounding 64 eps cond(S) = "
                      f"{bound:.1e}: the unbroken stack is not block diagonal"), False
    probe = PROBE_DELTA
    for _ in range(4):
        m = control_masses([probe], kind, spec)[0]
        if m <= FLOOR_MARGIN * floor:
            probe *= 1e3
        elif m > LINEAR_MASS:
            probe *= LINEAR_MASS / m / 10
        else:
            break
    else:
        return None, (f"{kind}: no probe δ gives a mass between {FLOOR_MARGIN:g}× its rounding floor {floor:.1e} "
                      f"(≤ 64 eps cond(S) = {bound:.1e}) and {LINEAR_MASS:g}"), True
    c = m / probe
    hi = min(MAX_DELTA, LINEAR_MASS / c)
    lo = max(hi * 1e-3, FLOOR_MARGIN * floor / c)
    if hi / lo < 10:
        return None, (f"{kind}: the rounding floor {floor:.1e} at δ = 0 (≤ 64 eps cond(S) = {bound:.1e}) leaves less "
                      f"than one decade below the linear limit c·δ = {LINEAR_MASS:g} (c = {c:.2e})"), True
    return np.logspace(np.log10(lo), np.log10(hi), points), None, True


def _violation_specs(arch, ctx):
    if arch == "preln":
        return [VIOLATION_SPEC]
    kw = {"arch_options": {"compress_gate": 0.0}} if arch == "compressed" else {}
    return [matrix_spec(arch, ctx, **kw)]


def commutator_row(kind, spec: StackSpec, points: int) -> dict:
    """Violation ``kind`` measured by the commutator ‖J(A⊗I) − (A⊗I)J‖/‖J‖ on δ ∈ [1e-5, 1e-2], for sizes where
    the eigenbasis S cannot resolve the off-block mass (cond(S) ε ≳ 1).  A has distinct eigenvalues (the
    diagonal of a causal softmax kernel, 1/Σ_s e^(score)), so the commutator is zero exactly when the
    mode coordinates are block diagonal, and it is first order in δ like the mass; it needs no S, so its
    float64 floor is a T·d-term rounding, ≤ EXACT at δ = 0."""
    deltas = np.logspace(-5, np.log10(MAX_DELTA), points)
    values = []
    for delta in [0.0, *deltas]:
        model, X, A = violated(kind, spec, float(delta))
        values.append(commutator_error(nf.stack_jacobian(model, X).detach(), A, spec.d))
    return {"violation": kind, "measure": "commutator ‖[J, A⊗I]‖/‖J‖",
            "slope": float(np.polyfit(np.log(deltas), np.log(values[1:]), 1)[0]),
            "δ from": float(deltas[0]), "δ to": float(deltas[-1]), "from": values[1], "to": values[-1],
            "at δ=0": values[0]}


@on_stack("2.2", specs=_violation_specs, homogeneous_reference=True)
def evaluate_2_2(spec: StackSpec, ctx) -> Verdict:
    """Off-block mass linear in each violation δ (fitted slope 1 ± 0.1); preln, on the spec's own stack
    (a checkpoint's weights included): (a) homogeneity, (b) token-wise sublayers, (c) commuting kernels
    (≥ 2 heads); a variant: (a), with the same modules for (b), (c)."""
    if spec.arch == "preln":
        rows, worst, broken = [], 0.0, []
        points = 4 if ctx.quick else 7
        for kind in CONTROL_KINDS if spec.heads >= 2 else CONTROL_KINDS[:2]:
            deltas, why, rounding = violation_deltas(kind, spec, points)
            if deltas is None and not rounding:
                broken.append(why)
                rows.append({"violation": kind, "broken": why})
                continue
            if deltas is None:  # the eigenbasis cannot resolve it: the commutator, which needs no eigenvectors
                row = commutator_row(kind, spec, points)
                row["eigenbasis"] = why
                if row["at δ=0"] > EXACT:
                    broken.append(f"{kind}: ‖[J, A⊗I]‖/‖J‖ = {row['at δ=0']:.1e} at δ = 0 > {EXACT:g}: the unbroken "
                                  "stack does not commute with the kernel")
            else:
                masses = control_masses(deltas, kind, spec)
                row = {"violation": kind, "measure": "off-block mass",
                       "slope": float(np.polyfit(np.log(deltas), np.log(masses), 1)[0]),
                       "δ from": float(deltas[0]), "δ to": float(deltas[-1]), "from": masses[0], "to": masses[-1]}
            worst = max(worst, abs(row["slope"] - 1))
            rows.append(row)
        measured = {"rows": rows,
                    "untested": ["(c) commuting kernels: one head has one kernel"] if spec.heads < 2 else []}
        if broken:
            return Verdict("2.2", "fails", measured=measured, error=float("inf"), tolerance=SLOPE_TOL,
                           reason="; ".join(broken), counterexample={"spec": spec.as_dict()})
        status = "holds" if worst <= SLOPE_TOL else "fails"
        return Verdict("2.2", status, measured=measured, predicted={"slope": 1.0}, error=worst,
                       tolerance=SLOPE_TOL, counterexample=None if status == "holds" else {"spec": spec.as_dict()})
    s = spec.build_arch()
    deltas = (1e-4, 1e-3, 1e-2)
    offs = [commutator_error(state_jacobian(s, reference_input(s, spec.seed, delta=dl)), s.frozen_kernel(),
                             s.features) for dl in deltas]
    sl = loglog_slope(deltas, offs)
    ev = {"delta": list(deltas), "off_block_rel": offs, "slope": sl, "slope_band": [0.9, 1.1],
          "tested": "condition (a) homogeneity; (b) token-wise LN/MLP and (c) commuting kernels are "
                    "properties of the shared modules (numerics.stack), as in the preln check"}
    err = abs(sl - 1)
    if not 0.9 <= sl <= 1.1:
        return Verdict("2.2", "fails", measured=ev, error=err, tolerance=SLOPE_TOL,
                       counterexample={"spec": spec.as_dict()})
    if spec.arch == "compressed":
        return Verdict("2.2", "conditional", measured=ev, error=err, tolerance=SLOPE_TOL,
                       condition="an extra condition (d): every kernel row-stochastic (A1 = 1); the compressed "
                                 "branch violates it (tested with compress_gate = 0)")
    return Verdict("2.2", "holds", measured=ev, error=err, tolerance=SLOPE_TOL)


@claim("2.2", title="Conditions of the factorisation; residual linear in each violation", family="factorisation",
       statement="Breaking (a) homogeneity, (b) token-wise sublayers or (c) commuting kernels by δ gives "
                 "off-block mass ∝ δ (fitted slope 1).",
       assumptions=["causal (a, b) / ALiBi 2 heads (c)", "T=6, d=8, 3 layers",
                    "δ grid per violation: c·δ ≤ 1e-2 and ≥ 1e3 × the mass's float64 floor, δ ≤ 1e-2"],
       tests=["tests/test_factorisation.py::test_violations_slope_one"],
       control="at δ = 0 each variant is block diagonal to float64 (the slope-1 residual vanishes)",
       figure="factorisation_controls",
       kind='identity', setting=PAPER, standing=HOLDS,
       headline='breaking homogeneity, token-wise sublayers or commuting kernels (ALiBi heads of different slopes) by δ leaves an off-block residual linear in δ')
def check_2_2(ctx) -> ClaimResult:
    spec = _violation_specs("preln", ctx)[0]
    v = evaluate("2.2", spec, ctx)
    rows = v.measured.get("rows", [])
    zero = {kind: control_masses([0.0], kind, spec)[0]
            for kind in CONTROL_KINDS}
    ok = all(m < 1e-12 for m in zero.values())
    return ClaimResult(
        symbolic=symbolic_steps(th.all_proofs("2.2", ctx.quick)),
        numeric=NumericResult(cases=len(rows), max_error=v.error if v.error is not None else float("inf"),
                              tolerance=SLOPE_TOL, detail="max |fitted slope − 1| of off-block mass vs δ", table=rows),
        control=ControlResult("fails-as-predicted" if ok else "did-not-fail",
                              "off-block mass at δ = 0: " + ", ".join(f"{k} {m:.1e}" for k, m in zero.items())
                              + " (< 1e-12: the residual is exactly the violation's)"),
        notes="here the 'control' is the unbroken condition: each violation is itself the negative control of 2.1")


def eigen_coordinate_errors(Ts, d=4, L=3, seed=0):
    """Per T (causal kernel): cond S (float64, and the exact Pascal 1-norm condition at 60 digits), the
    float64 eigen-coordinate error ‖offdiag((S⁻¹⊗I) J (S⊗I))‖_max/‖J‖_max, and its first-order
    prediction: with W = fl(S⁻¹) and R = WS − I (computed exactly at 60 digits), W J S = (I + R) Ĝ for
    Ĝ = blockdiag G(λ_k), so the off-block (k, l) entries are R_kl G(λ_l) up to the products' own rounding."""
    rows = []
    mpmath.mp.dps = 60
    for T in Ts:
        st = random_stack(T, d, L, 1, "causal", seed=seed)
        xbar = random_xbar(d, 300)
        A = st.frozen_kernel()
        K = nf.polynomial_coefficients(st, xbar).detach()
        J = nf.polynomial_jacobian(A, K)
        lam, S = nf.eigenbasis(A)
        Jt = nf.to_mode_coordinates(J, S, d)
        T4 = Jt.reshape(T, d, T, d).clone()
        idx = torch.arange(T)
        T4[idx, :, idx, :] = 0
        P = mpmath.matrix([[mpmath.binomial(i, k) for k in range(T)] for i in range(T)])
        cond_exact = mpmath.mnorm(P, 1) * mpmath.mnorm(P ** -1, 1)  # 1-norm condition at 60 digits
        Wm = mpmath.matrix(torch.linalg.inv(S).tolist()) * mpmath.matrix(S.tolist())
        R = torch.tensor([[float(Wm[a, b]) - (a == b) for b in range(T)] for a in range(T)], dtype=torch.float64)
        R.fill_diagonal_(0)
        G = torch.einsum("km,mij->kij", torch.stack([lam ** m for m in range(K.shape[0])], dim=1), K)
        predicted = float((R.abs() * G.abs().amax(dim=(1, 2))[None, :]).max() / J.abs().max())
        rows.append({"T": T, "cond_S_float64": float(torch.linalg.cond(S)), "cond1_S_exact": float(cond_exact),
                     "eigen_error": float(T4.abs().max() / J.abs().max()), "predicted_error": predicted})
    return rows


EIGEN_BAND = (0.5, 2.0)  # measured / first-order prediction: the similarity's own rounding eps·|W||J||S| aside


def _polynomial_specs(arch, ctx):
    if arch == "preln":
        return [StackSpec(T=T, d=16, layers=8, heads=2, kernel="causal", seed=ctx.seed)
                for T in ([16, 64] if ctx.quick else [16, 64, 256])]
    kw = {"arch_options": {"compress_gate": 0.0}} if arch == "compressed" else {}
    return [matrix_spec(arch, ctx, T=6, layers=2, **kw)]  # hrm: one cycle, as before


def polynomial_form_error(T, d=16, L=8, seed=0, probes=8, stack=None):
    """max over random probes E of ‖J_autograd E − Σ A^m E K_mᵀ‖ / (‖J‖_est ‖E‖) at 1x̄ᵀ, T tokens."""
    st = random_stack(T, d, L, 2, "causal", seed=seed) if stack is None else stack
    xbar = random_xbar(d, 400)
    A = st.frozen_kernel()
    K = nf.polynomial_coefficients(st, xbar).detach()
    X = xbar.expand(T, d).clone()
    E = torch.randn(probes, T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 5))
    JE = torch.func.vmap(lambda e: torch.func.jvp(st, (X,), (e,))[1])(E).detach()
    PE = nf.apply_polynomial_jacobian(A, K, E)
    scale = sum(float(torch.linalg.matrix_norm(A, 2)) ** m * float(torch.linalg.matrix_norm(K[m], 2))
                for m in range(L + 1))
    err = float(((JE - PE).flatten(1).norm(dim=1) / E.flatten(1).norm(dim=1)).max())
    # float64: each of the L+1 terms is formed by ≤ T d-term sums; 64 (L+1) eps Σ‖A‖^m‖K_m‖ bounds it
    return err, 64 * (L + 1) * EPS64 * scale


def matrix_free_adjoint(spec: StackSpec, probes: int = 4) -> tuple[dict, list[Derivation]]:
    """The matrix-free action's transpose (``numerics.matrix_free``, the route of ``check --scale`` and of
    trained stacks above T·d = 256) on ``spec``'s stack at 1x̄ᵀ: Jᵀ·U against ``torch.func.vjp`` and the
    adjoint identity ⟨U, J·V⟩ = ⟨Jᵀ·U, V⟩ on Gaussian probes, each over its rounding tolerance: γ = n·u with
    n = L(2T + 11d) (``matrix_free.rounding_tolerance``) for the vjp, n + T·d for the two inner products."""
    st, xbar = spec.build(), random_xbar(spec.d, 400)
    action = mf.JacobianAction(st, xbar)
    U = mf.probes(probes, spec.T, spec.d, seed=spec.seed + 31)
    V = mf.probes(probes, spec.T, spec.d, seed=spec.seed + 32)
    err = mf.adjoint_errors(action, st, mf.reference_state(st, xbar), U, V)
    n = mf.dot_product_length(spec.T, spec.d, spec.layers)
    u = mf.unit_roundoff(F64)
    tols = [Derivation(f"Jᵀ vs vjp (T={spec.T})", mf.rounding_tolerance(spec.T, spec.d, spec.layers, F64), u, n),
            Derivation(f"⟨U, JV⟩ = ⟨JᵀU, V⟩ (T={spec.T})", (n + spec.T * spec.d) * u, u, n + spec.T * spec.d)]
    row = {"T": spec.T, "Jᵀ vs vjp / κ": err["vjp"], "adjoint identity / κ": err["adjoint"],
           "Jᵀ vs vjp / γ": err["vjp"] / tols[0].value, "adjoint / tol": err["adjoint"] / tols[1].value}
    return row, tols


# the dense form of a preln stack is already jvp probes (no (Td)² Jacobian): it runs up to the ledger's full
# size T·d = 256·16
@on_stack("2.3", specs=_polynomial_specs, homogeneous_reference=True, dense_features=4096)
def evaluate_2_3(spec: StackSpec, ctx) -> Verdict:
    """J = Σ_m A^m ⊗ K_m; preln: probes by jvp against the generated coefficients' K_m; a variant: the
    blocks are a polynomial of the variant's attention degree D in λ (and not of degree D − 1)."""
    if spec.arch == "preln":
        err, tol = polynomial_form_error(spec.T, d=spec.d, L=spec.layers, seed=spec.seed, stack=spec.build())
        status = "holds" if err <= tol else "fails"
        return Verdict("2.3", status, measured={"T": spec.T, "error": err, "tol": tol}, error=err, tolerance=tol,
                       counterexample=None if status == "holds" else {"spec": spec.as_dict()})
    s = spec.build_arch()
    lam, blocks, condS = eigen_blocks(state_jacobian(s, reference_input(s, spec.seed)), s.frozen_kernel(), s.features)
    D = s.attention_degree()

    def fit_residual(deg):
        V = torch.stack([lam ** m for m in range(deg + 1)], dim=1)  # (T, deg+1)
        flat = blocks.reshape(len(lam), -1)
        coef = torch.linalg.lstsq(V, flat).solution
        return float(torch.linalg.norm(V @ coef - flat) / torch.linalg.norm(flat))

    res, res_low = fit_residual(D), fit_residual(D - 1)
    tol = 1e-10  # float64 × cond(S) ≈ 1e2 × Vandermonde conditioning at T = 6
    ev = {"T": spec.T, "degree": D, "poly_residual": res, "tolerance": tol, "cond_S": condS,
          "control_degree_minus_1_residual": res_low}
    if res <= tol and res_low > 1e-6:
        return Verdict("2.3", "holds", measured=ev, error=res, tolerance=tol)
    return Verdict("2.3", "fails", measured=ev, error=res, tolerance=tol,
                   counterexample={"spec": spec.as_dict()})


@claim("2.3", title="Eigenvector-free form J = Σ A^m ⊗ K_m", family="factorisation",
       statement="G(λ) = Σ_m λ^m K_m, so J = Σ_m A^m ⊗ K_m; float64 to T = 256 (d = 16, L = 8). The causal "
                 "eigenbasis is exponentially ill-conditioned: float64 eigen-coordinates fail past T ≈ 24.",
       assumptions=["token-homogeneous reference", "causal kernel for the eigenbasis counterexample"],
       generated=["numerics.generated.factorisation.G_layer_coefficient_0",
                  "numerics.generated.factorisation.G_layer_coefficient_1"],
       tests=["tests/test_factorisation.py::test_polynomial_form", "tests/test_factorisation.py::test_eigenbasis_fails_float64"],
       control="float64 eigen-coordinates: error = (fl(S⁻¹)S − I)·blocks to first order (within a factor 2), "
               "O(1) at T = 32", figure="eigenbasis_conditioning",
       kind='identity', setting=PAPER, standing=HOLDS,
       headline='J = Σ A^m ⊗ K_m to rounding up to T = 256 for any weights at the reference; the causal eigenbasis is the Pascal matrix (cond ≈ 4^T), so eigen-coordinates fail past T ≈ 24 in float64')
def check_2_3(ctx) -> ClaimResult:
    specs = _polynomial_specs("preln", ctx)
    verdicts = [evaluate("2.3", s, ctx) for s in specs]
    rows = [dict(v.measured) for v in verdicts]
    worst = max((v.error / v.tolerance if v.error is not None else float("inf")) for v in verdicts)
    adjoint = [matrix_free_adjoint(s) for s in specs]
    derivations = [d for _, tols in adjoint for d in tols]
    worst = max([worst] + [max(r["Jᵀ vs vjp / γ"], r["adjoint / tol"]) for r, _ in adjoint])
    eig = eigen_coordinate_errors([4, 8, 16, 24, 32])
    ratios = [r["eigen_error"] / r["predicted_error"] for r in eig]
    ok = (eig[-1]["eigen_error"] > 1e-2 and eig[0]["eigen_error"] < 1e-12
          and all(EIGEN_BAND[0] <= q <= EIGEN_BAND[1] for q in ratios))
    return ClaimResult(
        symbolic=symbolic_steps(th.all_proofs("2.3", ctx.quick)),
        numeric=NumericResult(cases=len(rows), max_error=worst, tolerance=1.0,
                              detail="max over T of ‖J E − Σ A^m E K_mᵀ‖/‖E‖ (8 Gaussian probes, jvp) divided by "
                                     "64 (L+1) eps Σ‖A‖^m‖K_m‖; the matrix-free Jᵀ (numerics.matrix_free) against "
                                     "vjp / γ and the adjoint identity ⟨U, JV⟩ = ⟨JᵀU, V⟩ / (γ + T·d·u), 4 probes",
                              table=rows + [r for r, _ in adjoint] + eig, derivations=derivations),
        control=ControlResult("fails-as-predicted" if ok else "did-not-fail",
                              "float64 eigen-coordinates (relative off-block max) vs the first-order prediction "
                              f"max|R_kl G(λ_l)|, R = fl(S⁻¹)S − I (ratio band {EIGEN_BAND}): "
                              + ", ".join(f"T={r['T']}: {r['eigen_error']:.1e} vs {r['predicted_error']:.1e} "
                                          f"(cond S {r['cond_S_float64']:.1e})" for r in eig)),
        finding="The causal kernel's eigenbasis is the Pascal matrix S_ik = C(i,k) (exact, rational): cond S grows "
                "like 4^T, so eigen-coordinates are usable in float64 only for T ≲ 24; the exact-rational proof "
                "S⁻¹AS = Λ at T = 32 (48 in full mode) shows the failure is rounding, not the factorisation. "
                "Use J = Σ A^m ⊗ K_m in float64.")


def _qk_specs(arch, ctx):
    if arch == "preln":  # the paper's block, and GPT-2's (h = 1, gelu_new, the query bias b_Q among the tangents)
        base = StackSpec(T=4, d=4, layers=2, heads=2, kernel="causal", seed=ctx.seed)
        return [base, base.with_(knobs={"step": 1.0, "activation": "gelu_new", "attn_bias": True})]
    return [matrix_spec(arch, ctx)]


def _qk_invisibility(spec: StackSpec, homogeneous=True):
    """Relative change of the output and the state Jacobian when W_Q, W_K are redrawn (a variant)."""
    s = spec.build_arch()
    X = reference_input(s, spec.seed, homogeneous=homogeneous)
    with torch.no_grad():
        out0 = s(X)
    J0 = state_jacobian(s, X)
    g = torch.Generator().manual_seed(spec.seed + 99)
    with torch.no_grad():
        for name, p in s.named_parameters():
            if name.endswith("W_Q") or name.endswith("W_K"):
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
        out1 = s(X)
    J1 = state_jacobian(s, X)
    return max(float((out1 - out0).norm() / out0.norm()), float(torch.linalg.norm(J1 - J0) / torch.linalg.norm(J0)))


@on_stack("2.4", specs=_qk_specs, homogeneous_reference=True)
def evaluate_2_4(spec: StackSpec, ctx) -> Verdict:
    """W_Q, W_K invisible at 1x̄ᵀ: preln, ∂(A_ℓ, X_L, J)/∂(W_Q, W_K) = 0 by autograd; a variant,
    redrawing W_Q, W_K leaves output and Jacobian unchanged (and changes them off the reference)."""
    if spec.arch == "preln":
        at_ref = qk_derivative_norm(0.0, spec)
        status = "holds" if at_ref <= 1e-13 else "fails"
        return Verdict("2.4", status, measured={"qk_derivative_max": at_ref}, error=at_ref, tolerance=1e-13,
                       counterexample=None if status == "holds" else {"spec": spec.as_dict()})
    err = _qk_invisibility(spec)
    control = _qk_invisibility(spec, homogeneous=False)
    ev = {"rel_change_after_redrawing_WQ_WK": err, "tolerance": EXACT, "control_inhomogeneous": control}
    if err <= EXACT and control > 1e-6:
        return Verdict("2.4", "holds", measured=ev, error=err, tolerance=EXACT)
    if spec.arch == "compressed":
        ev["rel_change_gate0"] = _qk_invisibility(spec.with_(arch_options={"compress_gate": 0.0}))
        from hypothesis import strategies as hst

        cex = shrink(lambda p: _qk_invisibility(spec.with_(seed=p["seed"], arch_options={
            "compress_gate": p["compress_gate"]})) > 1e-8,
            hst.fixed_dictionaries({"seed": hst.integers(0, 20), "compress_gate": hst.floats(0.0, 2.0)}),
            max_examples=5)
        return Verdict("2.4", "fails", measured=ev, error=err, tolerance=EXACT,
                       condition="compress_gate = 0: after the first layer the early tokens differ (no compressed "
                                 "keys yet), the scores are no longer constant and W_Q, W_K become visible",
                       counterexample={"arch": spec.arch, **(cex or {}), "T": spec.T, "P": spec.P})
    return Verdict("2.4", "fails", measured=ev, error=err, tolerance=EXACT, counterexample={"spec": spec.as_dict()})


@claim("2.4", title="Q/K invisibility at the reference", family="factorisation",
       statement="∂(A, x̄_ℓ, G(λ))/∂(W_Q, W_K) = 0 at 1x̄ᵀ; off it the derivative is nonzero and linear in the "
                 "inhomogeneity.",
       assumptions=["token-homogeneous reference", "T=4, d=4, 2 layers, causal, 2 heads; the paper's block and "
                    "GPT-2's (h = 1, gelu_new, query bias b_Q differentiated with W_Q, W_K)"],
       tests=["tests/test_factorisation.py::test_qk_invisible", "tests/test_factorisation.py::test_qk_visible_off_reference"],
       control="X = 1x̄ᵀ + δZ: ‖∂/∂(W_Q, W_K)‖ ∝ δ (slope 1)", figure=None,
       kind='identity', setting=PAPER, standing=HOLDS,
       headline='W_Q, W_K are invisible at 1x̄ᵀ for any weights (to rounding); off the reference their derivative grows linearly with the spread')
def check_2_4(ctx) -> ClaimResult:
    spec, *others = _qk_specs("preln", ctx)
    at_ref = max(v.error if v.error is not None else float("inf")
                 for v in (evaluate("2.4", s, ctx) for s in [spec, *others]))
    deltas = np.logspace(-4, -1, 4)
    vals = [qk_derivative_norm(float(dl), spec) for dl in deltas]
    slope = float(np.polyfit(np.log(deltas), np.log(vals), 1)[0])
    ok = abs(slope - 1) <= SLOPE_TOL
    return ClaimResult(
        symbolic=symbolic_steps(th.all_proofs("2.4", ctx.quick)),
        numeric=NumericResult(cases=1 + len(others), max_error=at_ref, tolerance=1e-13,
                              detail=f"max |∂(A_ℓ, X_L, J)/∂(W_Q, W_K[, b_Q])| at 1x̄ᵀ = {at_ref:.3g}, the paper's "
                                     "block and GPT-2's "
                                     "(tolerance: a few eps, softmax rows sum to 1 only to rounding)"),
        control=ControlResult("fails-as-predicted" if ok else "did-not-fail",
                              "off the reference: " + ", ".join(f"δ={dl:.0e}: {m:.3g}" for dl, m in zip(deltas, vals))
                              + f"; fitted slope {slope:.3f} (predicted 1)"))


QK_DIRECTIONS = 4


def qk_derivative_norm(delta, spec: StackSpec | None = None, directions: int = QK_DIRECTIONS):
    """max |D·v| over ``directions`` Gaussian tangents v (unit-variance entries in every layer's W_Q, W_K),
    D = ∂(attention matrices A_ℓ, final state X_L, stack Jacobian)/∂(W_Q, W_K) at 1x̄ᵀ + δZ, on the stack
    ``spec`` names (its weights: a checkpoint's when it has one).

    Each D·v is one forward-over-reverse ``torch.func.jvp`` (cost a few stack Jacobians, at any
    parameter count).  A nonzero linear map D has D·v = 0 only on a hyperplane of v, a null set of
    the Gaussian, so D·v = 0 for a random v means D = 0 with probability 1; |D·v| ≈ ‖D row‖₂."""
    spec = spec or StackSpec(T=4, d=4, layers=2, heads=2, kernel="causal", seed=0)
    st = spec.build()
    T, d, L = spec.T, spec.d, spec.layers
    params = {k: v.detach() for k, v in st.named_parameters()}
    like = next(iter(params.values()))
    xbar = random_xbar(d, 500)
    Z = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(spec.seed + 3))
    X = (xbar.expand(T, d) + delta * Z).to(dtype=like.dtype, device=like.device)
    qk = {k: v for k, v in params.items() if k.endswith(("W_Q", "W_K", "b_Q"))}  # b_Q: GPT-2's query bias

    def observables(qk_params):
        p = {**params, **qk_params}

        def run(x):
            return torch.func.functional_call(st, p, (x,))

        As, x = [], X
        for ell in range(L):
            lp = {k.split(".", 2)[2]: v for k, v in p.items() if k.startswith(f"layers.{ell}.")}
            layer = st.layers[ell]
            z = torch.func.functional_call(layer.ln1, {"gamma": lp["ln1.gamma"], "beta": lp["ln1.beta"]}, (x,))
            attn_p = {"attn." + k[5:]: v for k, v in lp.items() if k.startswith("attn.")}
            As.append(torch.func.functional_call(_Weights(layer.attn), attn_p, (z,)))
            x = torch.func.functional_call(layer, lp, (x,))
        J = torch.func.jacrev(run)(X)
        return torch.cat([torch.stack(As).flatten(), x.flatten(), J.flatten()])

    g = torch.Generator().manual_seed(spec.seed + 17)
    worst = 0.0
    for _ in range(directions):
        v = {k: torch.randn(t.shape, generator=g, dtype=torch.float64).to(dtype=t.dtype, device=t.device)
             for k, t in qk.items()}
        _, Dv = torch.func.jvp(observables, (qk,), (v,))
        worst = max(worst, float(Dv.abs().max()))
    return worst


class _Weights(torch.nn.Module):
    """Calls ``Attention.weights`` under ``functional_call`` (the attention matrices)."""

    def __init__(self, attn):
        super().__init__()
        self.attn = attn

    def forward(self, z):
        return self.attn.weights(z)


def _block_formula_error(arch, s, X):
    """The generated block formula for postln / mhc against the extracted per-layer block."""
    from numerics.generated import architectures as gen

    A = s.frozen_kernel()
    errs = []
    s0 = s.embed(X).detach()
    sbar = s0[0]
    for i in range(s.n_steps):
        J = flat_jacobian(lambda z, i=i: s.step(i, z), s0)
        lam, blocks, _ = eigen_blocks(J, A, s.features)
        layer = s.base.layers[i]
        for k in range(len(lam)):
            lt = lam[k]
            if arch == "postln":
                W = layer.attn.value_output().T
                pre1 = (1 - layer.h * layer.decay) * sbar + layer.h * sbar @ layer.attn.value_output()
                J1 = flat_jacobian(layer.ln1, pre1)
                u = layer.ln1(pre1).detach()
                M = flat_jacobian(layer.mlp, u)
                J2 = flat_jacobian(layer.ln2, u + layer.h * layer.mlp(u).detach())
                pred = gen.postln_mode_block(lt, torch.tensor(layer.h, dtype=F64),
                                             torch.tensor(layer.decay, dtype=F64), W, J1, M, J2)
            else:  # mhc: stream blocks from the inner layer's own block G(λ)
                n, d = s.n, s.config.d
                ybar = (s.read_weights()[i][:, None] * sbar.reshape(n, d)).sum(0).detach()
                Y = ybar.expand(s.config.T, d).clone()
                Gl = eigen_blocks(flat_jacobian(layer, Y), A, d)[1][k]
                H, al, be = s.stream_mixing()[i], s.read_weights()[i], s.write_weights()[i]
                pred = gen.mhc_mode_block(H, be[:, None], al[None, :], Gl)  # (n, n, d, d)
                pred = pred.permute(0, 2, 1, 3).reshape(n * d, n * d)
            errs.append(float((blocks[k] - pred).detach().abs().max() / blocks[k].abs().max()))
        with torch.no_grad():
            s0 = s.step(i, s0)
            sbar = s0[0]
    return max(errs)
