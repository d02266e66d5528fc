"""Claims 2.1–2.4: factorisation of the linearised stack along the frozen kernel."""

from __future__ import annotations

import mpmath
import numpy as np
import torch

from numerics import factorisation as nf
from numerics import random_stack
from numerics.stack import random_xbar
from proofs_check.ledger import (
    ClaimResult,
    ControlResult,
    NumericResult,
    claim,
    symbolic_steps,
)
from theory import factorisation as th

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


CASES_2_1 = [(6, 8, 4, 2, "causal", {}), (6, 8, 3, 2, "full", {}), (6, 4, 3, 2, "block", {"block_size": 2}),
             (5, 4, 3, 1, "alibi", {})]


@claim("2.1", title="Factorisation along the frozen kernel", family="factorisation",
       statement="At X = 1x̄ᵀ the stack Jacobian in the basis S⊗I is block diagonal with blocks "
                 "G(λ) = Π_ℓ (I + C_ℓ)((1−hα)I + hλB_ℓ).",
       assumptions=["token-homogeneous reference", "gate 0", "one frozen kernel for all heads", "float64"],
       generated=["numerics.generated.factorisation.G_layer", "numerics.generated.factorisation.B_layer",
                  "numerics.generated.factorisation.C_layer", "numerics.generated.factorisation.ln_jacobian"],
       tests=["tests/test_factorisation.py::test_blocks_match_autograd",
              "tests/test_factorisation.py::test_inhomogeneous_reference_breaks_blocks"],
       control="inhomogeneous reference 1x̄ᵀ + δZ (δ = 0.1): off-block mass ≫ tolerance", figure="block_diagonality")
def check_2_1(ctx) -> ClaimResult:
    worst, rows = 0.0, []
    for i, (T, d, L, heads, kernel, kw) in enumerate(CASES_2_1 if not ctx.quick else CASES_2_1[:3]):
        st = random_stack(T, d, L, heads, kernel, seed=i, value_scale=1.0, decay=0.5 * (i % 2), **kw)
        off, blk, tol = factorisation_error(st, random_xbar(d, 100 + i))
        worst = max(worst, max(off, blk) / tol)
        rows.append({"kernel": kernel, "T": T, "d": d, "L": L, "off_block": off, "block_err": blk, "tol": tol})
    st = random_stack(6, 8, 4, 2, "causal", seed=0)
    xbar = random_xbar(8, 100)
    Z = torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    _, _, _, Jt = transformed(st, xbar.expand(6, 8) + 0.1 * Z)
    mass = nf.off_block_mass(Jt, 6, 8)
    return ClaimResult(
        symbolic=symbolic_steps(th.all_proofs("2.1", ctx.quick)),
        numeric=NumericResult(cases=len(rows), max_error=worst, tolerance=1.0,
                              detail="max over cases of max(|off-block|, |block − G|)/tol, tol = 64 eps cond(S) ‖J‖₂",
                              table=rows),
        control=ControlResult("fails-as-predicted" if mass > 1e-3 else "did-not-fail",
                              f"X = 1x̄ᵀ + 0.1 Z: relative off-block mass {mass:.3g} (≫ 1e-13 at the reference)"),
        notes="quick mode: causal/full/block; full mode adds ALiBi (1 head)")


def control_masses(deltas, kind, seed=0):
    """Relative off-block mass vs δ for one broken condition (T = 6, d = 8, 3 layers)."""
    T, d, L = 6, 8, 3
    xbar = random_xbar(d, 200 + seed)
    out = []
    for delta in deltas:
        if kind == "inhomogeneous":
            st = random_stack(T, d, L, 2, "causal", seed=seed)
            Z = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
            model, X, A = st, xbar.expand(T, d) + delta * Z, st.frozen_kernel()
        elif kind == "token-mixing":
            st = random_stack(T, d, L, 2, "causal", seed=seed)
            model, X, A = nf.TokenMixedStack(st, delta), xbar.expand(T, d).clone(), st.frozen_kernel()
        elif kind == "alibi-slopes":
            st = nf.set_alibi_slopes(random_stack(T, d, L, 2, "alibi", seed=seed), [0.5, 0.5 + delta])
            model, X, A = st, xbar.expand(T, d).clone(), st.frozen_kernels()[0]
        else:
            raise ValueError(f"kind={kind!r} is not inhomogeneous, token-mixing or alibi-slopes")
        _, S = nf.eigenbasis(A)
        J = nf.stack_jacobian(model, X).detach()
        out.append(nf.off_block_mass(nf.to_mode_coordinates(J, S, d), T, d))
    return out


CONTROL_KINDS = ("inhomogeneous", "token-mixing", "alibi-slopes")


@claim("2.2", title="Conditions of the factorisation; residual linear in each violation", family="factorisation",
       statement="Breaking (a) homogeneity, (b) token-wise sublayers or (c) commuting kernels by δ gives "
                 "off-block mass ∝ δ (fitted slope 1).",
       assumptions=["causal (a, b) / ALiBi 2 heads (c)", "T=6, d=8, 3 layers", "δ ∈ [1e-5, 1e-2]"],
       tests=["tests/test_factorisation.py::test_violations_slope_one"],
       control="at δ = 0 each variant is block diagonal to float64 (the slope-1 residual vanishes)",
       figure="factorisation_controls")
def check_2_2(ctx) -> ClaimResult:
    deltas = np.logspace(-5, -2, 4 if ctx.quick else 7)
    rows, worst = [], 0.0
    for kind in CONTROL_KINDS:
        masses = control_masses(deltas, kind)
        slope = float(np.polyfit(np.log(deltas), np.log(masses), 1)[0])
        worst = max(worst, abs(slope - 1))
        rows.append({"violation": kind, "slope": slope, **{f"δ={dl:.0e}": mv for dl, mv in zip(deltas, masses)}})
    zero = {kind: control_masses([0.0], kind)[0] for kind in CONTROL_KINDS}
    ok = all(v < 1e-12 for v in zero.values())
    return ClaimResult(
        symbolic=symbolic_steps(th.all_proofs("2.2", ctx.quick)),
        numeric=NumericResult(cases=len(rows), max_error=worst, tolerance=SLOPE_TOL,
                              detail="max |fitted slope − 1| of off-block mass vs δ", table=rows),
        control=ControlResult("fails-as-predicted" if ok else "did-not-fail",
                              "off-block mass at δ = 0: " + ", ".join(f"{k} {v:.1e}" for k, v in zero.items())
                              + " (< 1e-12: the residual is exactly the violation's)"),
        notes="here the 'control' is the unbroken condition: each violation is itself the negative control of 2.1")


def eigen_coordinate_errors(Ts, d=4, L=3, seed=0):
    """cond S (float64 and exact Pascal at 60 digits) and the float64 eigen-coordinate error
    ‖offdiag((S⁻¹⊗I) J (S⊗I))‖_max/‖J‖ per T (causal kernel)."""
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
        rows.append({"T": T, "cond_S_float64": float(torch.linalg.cond(S)), "cond1_S_exact": float(cond_exact),
                     "eigen_error": float(T4.abs().max() / J.abs().max())})
    return rows


def polynomial_form_error(T, d=16, L=8, seed=0, probes=8):
    """max over random probes E of ‖J_autograd E − Σ A^m E K_mᵀ‖ / (‖J‖_est ‖E‖) at 1x̄ᵀ, T tokens."""
    st = random_stack(T, d, L, 2, "causal", seed=seed)
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


@claim("2.3", title="Eigenvector-free form J = Σ A^m ⊗ K_m", family="factorisation",
       statement="G(λ) = Σ_m λ^m K_m, so J = Σ_m A^m ⊗ K_m; float64 to T = 256 (d = 16, L = 8). The causal "
                 "eigenbasis is exponentially ill-conditioned: float64 eigen-coordinates fail past T ≈ 24.",
       assumptions=["token-homogeneous reference", "causal kernel for the eigenbasis counterexample"],
       generated=["numerics.generated.factorisation.G_layer_coefficient_0",
                  "numerics.generated.factorisation.G_layer_coefficient_1"],
       tests=["tests/test_factorisation.py::test_polynomial_form", "tests/test_factorisation.py::test_eigenbasis_fails_float64"],
       control="float64 eigen-coordinates at T = 32: error ≈ eps·cond(S) = O(1)", figure="eigenbasis_conditioning")
def check_2_3(ctx) -> ClaimResult:
    Ts = [16, 64] if ctx.quick else [16, 64, 256]
    rows, worst = [], 0.0
    for T in Ts:
        err, tol = polynomial_form_error(T)
        worst = max(worst, err / tol)
        rows.append({"T": T, "error": err, "tol": tol})
    eig = eigen_coordinate_errors([4, 8, 16, 24, 32])
    at32 = eig[-1]
    ok = at32["eigen_error"] > 1e-2 and eig[0]["eigen_error"] < 1e-12
    return ClaimResult(
        symbolic=symbolic_steps(th.all_proofs("2.3", ctx.quick)),
        numeric=NumericResult(cases=len(rows), max_error=worst, tolerance=1.0,
                              detail="max over T of ‖J E − Σ A^m E K_mᵀ‖/‖E‖ (8 Gaussian probes, jvp) divided by "
                                     "64 (L+1) eps Σ‖A‖^m‖K_m‖", table=rows + eig),
        control=ControlResult("fails-as-predicted" if ok else "did-not-fail",
                              "float64 eigen-coordinates (relative off-block max): "
                              + ", ".join(f"T={r['T']}: {r['eigen_error']:.1e} (cond S {r['cond_S_float64']:.1e})"
                                          for r in eig)),
        finding="The causal kernel's eigenbasis is the Pascal matrix S_ik = C(i,k) (exact, rational): cond S grows "
                "like 4^T, so eigen-coordinates are usable in float64 only for T ≲ 24; the exact-rational proof "
                "S⁻¹AS = Λ at T = 32 (48 in full mode) shows the failure is rounding, not the factorisation. "
                "Use J = Σ A^m ⊗ K_m in float64.")


@claim("2.4", title="Q/K invisibility at the reference", family="factorisation",
       statement="∂(A, x̄_ℓ, G(λ))/∂(W_Q, W_K) = 0 at 1x̄ᵀ; off it the derivative is nonzero and linear in the "
                 "inhomogeneity.",
       assumptions=["token-homogeneous reference", "T=4, d=4, 2 layers, causal, 2 heads"],
       tests=["tests/test_factorisation.py::test_qk_invisible", "tests/test_factorisation.py::test_qk_visible_off_reference"],
       control="X = 1x̄ᵀ + δZ: ‖∂/∂(W_Q, W_K)‖ ∝ δ (slope 1)", figure=None)
def check_2_4(ctx) -> ClaimResult:
    at_ref = qk_derivative_norm(0.0)
    deltas = np.logspace(-4, -1, 4)
    vals = [qk_derivative_norm(float(dl)) for dl in deltas]
    slope = float(np.polyfit(np.log(deltas), np.log(vals), 1)[0])
    ok = abs(slope - 1) <= SLOPE_TOL
    return ClaimResult(
        symbolic=symbolic_steps(th.all_proofs("2.4", ctx.quick)),
        numeric=NumericResult(cases=1, max_error=at_ref, tolerance=1e-13,
                              detail=f"max |∂(A_ℓ, X_L, J)/∂(W_Q, W_K)| at 1x̄ᵀ = {at_ref:.3g} "
                                     "(tolerance: a few eps, softmax rows sum to 1 only to rounding)"),
        control=ControlResult("fails-as-predicted" if ok else "did-not-fail",
                              f"off the reference: " + ", ".join(f"δ={dl:.0e}: {v:.3g}" for dl, v in zip(deltas, vals))
                              + f"; fitted slope {slope:.3f} (predicted 1)"))


def qk_derivative_norm(delta, T=4, d=4, L=2, seed=0):
    """max |∂/∂(W_Q, W_K)| of (attention matrices A_ℓ, final state X_L, stack Jacobian) at 1x̄ᵀ + δZ."""
    st = random_stack(T, d, L, 2, "causal", seed=seed)
    xbar = random_xbar(d, 500)
    Z = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 3))
    X = xbar.expand(T, d) + delta * Z
    params = {k: v.detach() for k, v in st.named_parameters()}
    qk = {k: v for k, v in params.items() if k.endswith("W_Q") or k.endswith("W_K")}

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

    D = torch.func.jacrev(observables)(qk)
    return float(max(v.abs().max() for v in D.values()))


class _Weights(torch.nn.Module):
    """Calls ``Attention.weights`` under ``functional_call`` (the attention matrices)."""

    def __init__(self, attn):
        super().__init__()
        self.attn = attn

    def forward(self, z):
        return self.attn.weights(z)

# ----------------------------------------------------------------------------- other architectures
# The matrix's per-architecture evaluators: (arch, ctx) -> (status, condition, evidence, counterexample).

import math  # noqa: E402

from numerics.jacobians import (commutator_error, eigen_blocks, flat_jacobian, loglog_slope,  # noqa: E402
                                reference_input, state_jacobian, step_jacobians)
from proofs_check.on_stack import EXACT, arch_evaluator, arch_stack, shrink  # noqa: E402

F64 = torch.float64


def _factorisation_error(arch, seed, **kw):
    s = arch_stack(arch, seed=seed, **kw)
    X = reference_input(s, seed)
    return commutator_error(state_jacobian(s, X), s.frozen_kernel(), s.features), s


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


@arch_evaluator("2.1")
def arch_eval_2_1(arch, ctx):
    if arch == "compressed":
        err, _ = _factorisation_error(arch, ctx.seed)
        closed, _ = _factorisation_error(arch, ctx.seed, arch_options={"compress_gate": 0.0})
        from hypothesis import strategies as st

        cex = shrink(lambda p: _factorisation_error(arch, p["seed"], arch_options={
            "compress_gate": p["compress_gate"]})[0] > 1e-8,
            st.fixed_dictionaries({"seed": st.integers(0, 20), "compress_gate": st.floats(0.0, 2.0)}),
            max_examples=5)
        return ("fails", "compress_gate = 0 (then it is the preln stack): tokens before the first complete "
                "block see no compressed keys, A_c Π 1 ≠ 1, so no token-homogeneous reference exists",
                {"commutator_rel": err, "commutator_rel_gate0": closed, "tolerance": EXACT},
                {"arch": arch, **(cex or {}), "T": 4, "P": 2, "d": 4, "layers": 3})
    err, s = _factorisation_error(arch, ctx.seed)
    X = reference_input(s, ctx.seed, homogeneous=False)
    control = commutator_error(state_jacobian(s, X), s.frozen_kernel(), s.features)
    ev = {"commutator_rel": err, "tolerance": EXACT, "block_size": s.features,
          "control_inhomogeneous_commutator_rel": control}
    if arch in ("postln", "mhc"):
        ev["generated_block_formula_rel_error"] = _block_formula_error(arch, s, reference_input(s, ctx.seed))
        ev["formula"] = ("theory.architectures.postln_mode_block" if arch == "postln"
                         else "theory.architectures.mhc_mode_block (H ⊗ I + βαᵀ ⊗ (G(λ) − I))")
    ok = err <= EXACT and control > 1e-3 and ev.get("generated_block_formula_rel_error", 0.0) <= 1e-10
    cond = {"relu": "almost everywhere (off the ReLU kink set)",
            "looped": None, "hrm": None, "mhc": None, "postln": None}.get(arch)
    if not ok:
        return "fails", None, ev, {"arch": arch, "seed": ctx.seed}
    return ("conditional" if cond else "holds"), cond, ev, None


@arch_evaluator("2.2")
def arch_eval_2_2(arch, ctx):
    kw = {"arch_options": {"compress_gate": 0.0}} if arch == "compressed" else {}
    s = arch_stack(arch, seed=ctx.seed, **kw)
    deltas = (1e-4, 1e-3, 1e-2)
    offs = [commutator_error(state_jacobian(s, reference_input(s, ctx.seed, delta=dl)), s.frozen_kernel(), s.features)
            for dl in deltas]
    sl = loglog_slope(deltas, offs)
    ev = {"delta": list(deltas), "off_block_rel": offs, "slope": sl, "slope_band": [0.9, 1.1],
          "tested": "condition (a) homogeneity; (b) token-wise LN/MLP and (c) commuting kernels are "
                    "properties of the shared modules (numerics.stack), as in the preln check"}
    if not 0.9 <= sl <= 1.1:
        return "fails", None, ev, {"arch": arch, "seed": ctx.seed}
    if arch == "compressed":
        return ("conditional", "an extra condition (d): every kernel row-stochastic (A1 = 1); the compressed "
                "branch violates it (tested with compress_gate = 0)", ev, None)
    return "holds", None, ev, None


@arch_evaluator("2.3")
def arch_eval_2_3(arch, ctx):
    kw = {"arch_options": {"compress_gate": 0.0}} if arch == "compressed" else {}
    layers = 2
    s = arch_stack(arch, T=6, layers=layers if arch != "hrm" else 2, seed=ctx.seed, **kw)
    A = s.frozen_kernel()
    lam, blocks, condS = eigen_blocks(state_jacobian(s, reference_input(s, ctx.seed)), A, s.features)
    D = s.attention_degree()

    def fit_residual(deg):
        V = torch.stack([lam ** m for m in range(deg + 1)], dim=1)  # (T, deg+1)
        flat = blocks.reshape(len(lam), -1)
        coef = torch.linalg.lstsq(V, flat).solution
        return float(torch.linalg.norm(V @ coef - flat) / torch.linalg.norm(flat))

    res, res_low = fit_residual(D), fit_residual(D - 1)
    tol = 1e-10  # float64 × cond(S) ≈ 1e2 × Vandermonde conditioning at T = 6
    ev = {"T": 6, "degree": D, "poly_residual": res, "tolerance": tol, "cond_S": condS,
          "control_degree_minus_1_residual": res_low}
    if res <= tol and res_low > 1e-6:
        return "holds", None, ev, None
    return "fails", None, ev, {"arch": arch, "seed": ctx.seed, "T": 6}


def _qk_invisibility(arch, seed, homogeneous=True, **kw):
    s = arch_stack(arch, seed=seed, **kw)
    X = reference_input(s, seed, homogeneous=homogeneous)
    with torch.no_grad():
        out0 = s(X)
    J0 = state_jacobian(s, X)
    g = torch.Generator().manual_seed(seed + 99)
    with torch.no_grad():
        for name, p in s.named_parameters():
            if name.endswith("W_Q") or name.endswith("W_K"):
                p.copy_(torch.randn(p.shape, generator=g, dtype=F64))
        out1 = s(X)
    J1 = state_jacobian(s, X)
    return max(float((out1 - out0).norm() / out0.norm()), float(torch.linalg.norm(J1 - J0) / torch.linalg.norm(J0)))


@arch_evaluator("2.4")
def arch_eval_2_4(arch, ctx):
    err = _qk_invisibility(arch, ctx.seed)
    control = _qk_invisibility(arch, ctx.seed, homogeneous=False)
    ev = {"rel_change_after_redrawing_WQ_WK": err, "tolerance": EXACT, "control_inhomogeneous": control}
    if err <= EXACT and control > 1e-6:
        return "holds", None, ev, None
    if arch == "compressed":
        closed = _qk_invisibility(arch, ctx.seed, arch_options={"compress_gate": 0.0})
        ev["rel_change_gate0"] = closed
        from hypothesis import strategies as st

        cex = shrink(lambda p: _qk_invisibility(arch, p["seed"], arch_options={
            "compress_gate": p["compress_gate"]}) > 1e-8,
            st.fixed_dictionaries({"seed": st.integers(0, 20), "compress_gate": st.floats(0.0, 2.0)}),
            max_examples=5)
        return ("fails", "compress_gate = 0: after the first layer the early tokens differ (no compressed "
                "keys yet), the scores are no longer constant and W_Q, W_K become visible", ev,
                {"arch": arch, **(cex or {}), "T": 4, "P": 2})
    return "fails", None, ev, {"arch": arch, "seed": ctx.seed}
