"""Claims 3.1–3.2: persistent/decaying modes, saturation depth, block coarse-graining (docs/theory.md §3).

Conventions: tokens are rows; a state is X ∈ R^{T×d}, T = nP, blocks of P tokens.
Pooling Π = I_n ⊗ 1ᵀ/P (n×T), lift Π⁺ = I_n ⊗ 1 (T×n), Q = Π⁺Π (block-constant projector).
The linearised stack at a token-homogeneous reference is J = Σ_m A^m ⊗ K_m (Claim 2.3),
whose block on eigenvalue λ of the frozen kernel A is G(λ) = Σ_m λ^m K_m; the mode
products are G_{≤ℓ}(λ) = G_ℓ(λ) ⋯ G_0(λ).

Claim 3.1 (reconstruction).  r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖ / ‖G_{≤ℓ}(1)‖ (spectral norm), and the
saturation depth ℓ*(τ) = min{ℓ : r_m(λ) ≤ τ for all m ≥ ℓ and every decaying λ}, with the
bound ℓ* ≤ ⌈log(τ/κ)/log ρ⌉.  Proof of the bound: ‖G_{≤m}(λ)‖ ≤ Π_ℓ ‖G_ℓ(λ)‖ and
‖G_{≤m}(1)‖ ≥ ‖G_{≤m}(1) y₀‖/‖y₀‖ for every y₀, so r_m ≤ Π_{ℓ≤m} ρ_ℓ ≤ ρ^{m+1}; once
ρ^{m+1} ≤ τ/κ ≤ τ (κ ≥ 1) we have r_m ≤ τ.  docs/theory.md's ρ = max ‖G_ℓ(λ)‖/σ_min(G_ℓ(1)) is
**never** below 1 for a pre-LN layer (``prove_theory_rho_at_least_one``): LN₁ is
translation invariant, so B_ℓ1 = 0 and G_ℓ(λ)1 = G_ℓ(1)1 for every λ, hence
σ_min(G_ℓ(1)) ≤ ‖G_ℓ(1)1‖/‖1‖ = ‖G_ℓ(λ)1‖/‖1‖ ≤ ‖G_ℓ(λ)‖.  The usable per-layer ratio
measures the persistent mode's growth along its own propagated direction,
ρ̃_ℓ = ‖G_ℓ(λ)‖ ‖y_ℓ‖/‖y_{ℓ+1}‖ with y_{ℓ+1} = G_ℓ(1) y_ℓ (``persistent_path_ratio``);
the same proof gives r_m ≤ Π ρ̃_ℓ, and ρ̃ < 1 on stacks with a strong value path.
κ (condition of the mode basis) is slack: r is defined on mode blocks, where κ = 1 would do.

Claim 3.2(a) (exact, one-sided).  ΠA(I − Q) = 0 for every kernel of the form A = C ⊗ 11ᵀ/P
(C any n×n block-level kernel): the full kernel (C = 11ᵀ/n) and the block-causal kernel
(C = the causal kernel on n blocks), for symbolic n, P (``prove_block_kernels_factor``).
Then ΠA = A_cΠ with A_c = ΠAΠ⁺ (since ΠΠ⁺ = I_n), by induction ΠA^m = A_c^mΠ, and
(Π ⊗ I)J = J_c(Π ⊗ I) with J_c = Σ_m A_c^m ⊗ K_m = (Π ⊗ I)J(Π⁺ ⊗ I); transposing and
Πᵀ = Π⁺/P gives JᵀΠ⁺ = Π⁺J_cᵀ.  The causal kernel is not of this form and its residual is
an exact nonzero rational (``prove_kernel_grid``).
Claim 3.2(b) (two-sided).  For A = C ⊗ 11ᵀ/P also AQ = A = QA, so QA^mQ = A^m for m ≥ 1 and
J − QJQ = (I − Q) ⊗ K_0 = (I − Q) ⊗ G(0): ‖J − QJQ‖/‖J‖ ≤ ‖G(0)‖/‖G(1)‖ = r(0), the mode
ratio of the λ = 0 mode — the two-sided factoring holds past ℓ* with error ≤ τ.  For the
causal kernel AQ ≠ A and the persistent mode lives on the first token (left eigenvector
e₁), which no block mean represents: the residual stays O(1).
"""

from __future__ import annotations

import sympy as sp
from sympy import (Identity, KroneckerProduct, MatrixSymbol, OneMatrix, Symbol, ceiling, log)
from sympy.matrices.expressions.kronecker import combine_kronecker

FAMILY = "coarse_graining"

# ---- symbols ---------------------------------------------------------------------------
T = Symbol("T", integer=True, positive=True)       # tokens
n = Symbol("n", integer=True, positive=True)       # blocks
d = Symbol("d", integer=True, positive=True)       # features
Pi = MatrixSymbol("Pi", n, T)                      # pooling Π
Pi_plus = MatrixSymbol("Pi_plus", T, n)            # lift Π⁺
M = MatrixSymbol("M", T, T)                        # any token operator (A, or J per feature pair)
M_c = MatrixSymbol("M_c", n, n)                    # its coarse operator
G = MatrixSymbol("G", d, d)                        # a layer's mode block G_ℓ(λ)
G_prev = MatrixSymbol("G_prev", d, d)              # G_{≤ℓ-1}(λ)
tau, kappa, rho = sp.symbols("tau kappa rho", positive=True)
norm_G, norm_y, norm_y_next = sp.symbols("norm_G norm_y norm_y_next", positive=True)
norm_decaying, norm_persistent = sp.symbols("norm_decaying norm_persistent", positive=True)


def block_projector_expr():
    """Q = Π⁺Π: the projector onto block-constant token patterns."""
    return Pi_plus * Pi


def left_factoring_residual_expr(op=M):
    """ΠM(I − Q), written ΠM − ΠMΠ⁺Π: zero iff M leaves ker Π invariant."""
    return Pi * op - Pi * op * Pi_plus * Pi


def coarse_operator_expr(op=M):
    """M_c = ΠMΠ⁺: the coarse operator on n block tokens (J_c, A_c)."""
    return Pi * op * Pi_plus


def dual_factoring_residual_expr():
    """MᵀΠ⁺ − Π⁺M_cᵀ: the dual (adjoint) form of ΠM = M_cΠ."""
    return M.T * Pi_plus - Pi_plus * M_c.T


def two_sided_residual_expr(op=M):
    """M − QMQ: what the block-mean description Π⁺M_cΠ misses."""
    return op - Pi_plus * Pi * op * Pi_plus * Pi


def saturation_bound_expr():
    """⌈log(τ/κ)/log ρ⌉ (meaningful for ρ < 1)."""
    return ceiling(log(tau / kappa) / log(rho))


def generated_functions():
    from theory.codegen import GenFunction

    return [
        GenFunction("block_projector", (Pi_plus, Pi), block_projector_expr(), claim="3.2",
                    doc="Q = Π⁺Π, the projector onto block-constant token patterns (T×T)."),
        GenFunction("left_factoring_residual", (Pi, M, Pi_plus), left_factoring_residual_expr(),
                    claim="3.2", doc="ΠM(I − Π⁺Π): zero iff M leaves ker Π invariant (Claim 3.2a)."),
        GenFunction("coarse_operator", (Pi, M, Pi_plus), coarse_operator_expr(), claim="3.2",
                    doc="M_c = ΠMΠ⁺: the coarse operator on block tokens (A_c, or J_c per feature pair)."),
        GenFunction("dual_factoring_residual", (M, Pi_plus, M_c), dual_factoring_residual_expr(),
                    claim="3.2", doc="MᵀΠ⁺ − Π⁺M_cᵀ: the dual form of ΠM = M_cΠ."),
        GenFunction("two_sided_residual", (M, Pi_plus, Pi), two_sided_residual_expr(), claim="3.2",
                    doc="M − QMQ: the part of M the block-mean description misses (Claim 3.2b)."),
        GenFunction("mode_product_step", (G, G_prev), G * G_prev, claim="3.1",
                    doc="G_{≤ℓ}(λ) = G_ℓ(λ) G_{≤ℓ−1}(λ): one step of the mode product."),
        GenFunction("mode_ratio", (norm_decaying, norm_persistent), norm_decaying / norm_persistent,
                    claim="3.1", doc="r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖/‖G_{≤ℓ}(1)‖ from the two norms."),
        GenFunction("persistent_path_ratio", (norm_G, norm_y, norm_y_next),
                    norm_G * norm_y / norm_y_next, claim="3.1",
                    doc="ρ̃_ℓ = ‖G_ℓ(λ)‖ ‖y_ℓ‖/‖y_{ℓ+1}‖, y_{ℓ+1} = G_ℓ(1) y_ℓ: per-layer decay "
                        "relative to the persistent mode's growth along its propagated direction."),
        GenFunction("saturation_bound", (tau, kappa, rho), saturation_bound_expr(), claim="3.1",
                    doc="⌈log(τ/κ)/log ρ⌉: the computable bound on the saturation depth (ρ < 1)."),
    ]


# ---- symbolic proofs: each returns a list of (name, proved, method, detail) -------------
P_sym = Symbol("P", integer=True, positive=True)


def _kron_pool():
    """Π = I_n ⊗ 1ᵀ/P and Π⁺ = I_n ⊗ 1 for symbolic n, P (T = nP)."""
    return (KroneckerProduct(Identity(n), OneMatrix(1, P_sym) / P_sym),
            KroneckerProduct(Identity(n), OneMatrix(P_sym, 1)))


def _kron_zero(expr) -> tuple[bool, str]:
    """(True, method) when the Kronecker-structured matrix expression reduces to the zero matrix.

    Symbolic n, P through the mixed-product rule; where SymPy's ``combine_kronecker`` cannot
    (its ``kronecker_mat_add`` raises TypeError on a sum of Kronecker and other terms), the
    expression is evaluated exactly on a grid of (n, P) with every matrix symbol's entries symbolic.
    """
    try:
        out = combine_kronecker(sp.expand(expr).doit())
        out = combine_kronecker(out.doit()) if not out.is_ZeroMatrix else out
        return bool(getattr(out, "is_ZeroMatrix", False)) or out == 0, "simplify"
    except TypeError:
        zero = True
        for n_, P_ in ((2, 2), (2, 3), (3, 2)):
            e = expr.subs({n: n_, P_sym: P_})
            e = e.xreplace({m: sp.Matrix(*m.shape, lambda i, j: sp.Symbol(f"{m.name}_{i}{j}"))
                            for m in e.atoms(MatrixSymbol)})
            zero = zero and sp.simplify(sp.Matrix(e.as_explicit())).is_zero_matrix
        return bool(zero), "exact, (n, P) ∈ {(2, 2), (2, 3), (3, 2)}"


def prove_pool_lift():
    """ΠΠ⁺ = I_n for symbolic n, P (Kronecker mixed product, 1ᵀ1/P = 1)."""
    pool, lift = _kron_pool()
    val = combine_kronecker((pool * lift).doit()).doit()
    ok = val == Identity(n) or sp.simplify(val - Identity(n)) == sp.ZeroMatrix(n, n)
    return [("ΠΠ⁺ = I_n", bool(ok), "simplify", f"(I_n ⊗ 1ᵀ/P)(I_n ⊗ 1) -> {val} (symbolic n, P)")]


def prove_block_kernels_factor():
    """For A = C ⊗ 11ᵀ/P (C symbolic n×n): ΠA(I−Q) = 0 and AQ = A = QA, symbolic n, P.

    Full kernel: C = 11ᵀ/n; block-causal kernel: C = causal kernel on n blocks
    (``prove_kernel_grid`` checks both identifications entrywise)."""
    pool, lift = _kron_pool()
    C = MatrixSymbol("C", n, n)
    A = KroneckerProduct(C, OneMatrix(P_sym, P_sym) / P_sym)
    one_sided = left_factoring_residual_expr(A).subs({Pi: pool, Pi_plus: lift})
    right = A - A * lift * pool
    left = A - lift * pool * A
    out = []
    for name, expr in (("ΠA(I − Q) = 0 for A = C ⊗ 11ᵀ/P", one_sided),
                       ("A(I − Q) = 0 for A = C ⊗ 11ᵀ/P", right),
                       ("(I − Q)A = 0 for A = C ⊗ 11ᵀ/P", left)):
        proved, method = _kron_zero(expr)
        out.append((name, proved, method, "Kronecker mixed product with 1ᵀ11ᵀ = P·1ᵀ, symbolic C"
                    + (", symbolic n, P" if method == "simplify" else "")))
    return out


def exact_kernel(kind: str, T_: int, P_: int) -> sp.Matrix:
    """The frozen kernel (rows = uniform weights over the allowed tokens), exact rationals."""
    def allowed(i, j):
        if kind == "full":
            return True
        if kind == "block":
            return j // P_ <= i // P_
        if kind == "causal":
            return j <= i
        raise ValueError(f"kind={kind!r} is not one of causal, full, block")

    rows = []
    for i in range(T_):
        cnt = sum(allowed(i, j) for j in range(T_))
        rows.append([sp.Rational(int(allowed(i, j)), cnt) for j in range(T_)])
    return sp.Matrix(rows)


def exact_pool(T_: int, P_: int) -> tuple[sp.Matrix, sp.Matrix]:
    """Π (n×T) and Π⁺ (T×n) as exact rational matrices."""
    n_ = T_ // P_
    pool = sp.Matrix(n_, T_, lambda b, t: sp.Rational(1, P_) if t // P_ == b else 0)
    lift = sp.Matrix(T_, n_, lambda t, b: 1 if t // P_ == b else 0)
    return pool, lift


def _explicit(expr, subs):
    return sp.Matrix(expr.subs(subs).doit().as_explicit()) if not isinstance(expr, sp.MatrixBase) \
        else expr.subs(subs)


def kernel_residuals(kind: str, T_: int, P_: int, powers: int = 3) -> dict:
    """Exact ΠA^m(I − Q) for m = 1..powers, and A − QAQ, from the generated-code expressions."""
    A = exact_kernel(kind, T_, P_)
    pool, lift = exact_pool(T_, P_)
    out = {}
    for m in range(1, powers + 1):
        out[f"left_{m}"] = sp.simplify(left_factoring_residual_expr(M).subs(
            {Pi: pool, Pi_plus: lift, M: A ** m}).doit().as_explicit())
    out["two_sided"] = sp.Matrix(two_sided_residual_expr(M).subs(
        {Pi: pool, Pi_plus: lift, M: A}).doit().as_explicit())
    return out


def prove_kernel_grid(grid=((4, 2), (6, 2), (6, 3), (8, 4))):
    """On exact (T, P): full and block kernels factor (ΠA^m(I−Q) = 0, A − QAQ = 0, and equal
    C ⊗ 11ᵀ/P); the causal kernel does not (exact nonzero rational residual)."""
    steps = []
    for T_, P_ in grid:
        n_ = T_ // P_
        for kind in ("full", "block"):
            res = kernel_residuals(kind, T_, P_)
            C = exact_kernel("full" if kind == "full" else "causal", n_, 1)
            kron_ok = exact_kernel(kind, T_, P_) == sp.kronecker_product(C, sp.ones(P_, P_) / P_)
            zero = all(r.is_zero_matrix for r in res.values())
            steps.append((f"{kind} kernel factors through Π (T={T_}, P={P_})", bool(zero and kron_ok),
                          "exact-rational",
                          f"ΠA^m(I−Q) = 0 for m = 1..3, A − QAQ = 0, A = C ⊗ 11ᵀ/P: {kron_ok}"))
        res = kernel_residuals("causal", T_, P_)
        r = res["left_1"]
        nz = [e for e in r if e != 0]
        steps.append((f"causal kernel does not factor (T={T_}, P={P_})", bool(nz), "exact-rational",
                      f"ΠA(I−Q) has {len(nz)} nonzero exact entries, e.g. {nz[0] if nz else 0}; "
                      f"first row {list(r.row(0))}"))
    return steps


def prove_power_induction():
    """ΠA = A_cΠ  ⟹  ΠA^m = A_c^mΠ (m = 2, 3), from ΠA(I − Q) = 0 and ΠΠ⁺ = I, noncommutatively.

    With noncommuting symbols p (Π), q (Π⁺), a (A): ΠA = ΠAΠ⁺Π is the hypothesis; rewriting
    every occurrence of p·a into p·a·q·p and then p·q into 1 turns p·a^m into (paq)^m·p."""
    p, q, a = sp.symbols("p q a", commutative=False)
    steps = []
    for m in (2, 3):
        expr = p * a ** m
        for _ in range(m):  # use the hypothesis once per factor of a, left to right
            expr = sp.expand(expr).subs(p * a, p * a * q * p)
        expr = sp.expand(expr).subs(p * q, 1)
        ok = sp.expand(expr - (p * a * q) ** m * p) == 0
        steps.append((f"ΠA^{m} = A_c^{m}Π", bool(ok), "simplify",
                      f"p·a^{m} -> {sp.expand(expr)} under pa = paqp, pq = 1"))
    return steps


def prove_theory_rho_at_least_one(k: int = 3):
    """G_ℓ(λ) − G_ℓ(1) = h(λ − 1)(I + C_ℓ)B_ℓ and B_ℓ1 = 0 (LN₁ translation invariant).

    G_ℓ(λ) = (I + C_ℓ)((1 − hα)I + hλB_ℓ) is the form of Claim 2.1 (theory/factorisation.py
    derives B_ℓ, C_ℓ; here they stay opaque symbolic k×k matrices, the step does not depend on
    them).  B_ℓ = W_VOᵀ J_LN₁ and LN(z + t1) = LN(z), so B_ℓ1 = 0 and G_ℓ(λ)1 = G_ℓ(1)1.
    Consequence: docs/theory.md's ρ = max ‖G_ℓ(λ)‖/σ_min(G_ℓ(1)) ≥ 1 for every pre-LN layer."""
    lam, h, alpha, t = sp.symbols("lam h alpha t", real=True)
    B = sp.Matrix(MatrixSymbol("B", k, k))
    C = sp.Matrix(MatrixSymbol("C", k, k))
    eye = sp.eye(k)

    def G_form(lv):
        return (eye + C) * ((1 - h * alpha) * eye + h * lv * B)

    diff = G_form(lam) - G_form(1) - h * (lam - 1) * (eye + C) * B
    ok_diff = all(sp.expand(e) == 0 for e in diff)
    zs = sp.symbols(f"z0:{k}", real=True)
    gs = sp.symbols(f"g0:{k}", real=True)
    eps = sp.Symbol("eps", positive=True)

    def ln(v):
        mu = sum(v) / k
        var = sum((vi - mu) ** 2 for vi in v) / k
        return [gs[i] * (v[i] - mu) / sp.sqrt(var + eps) for i in range(k)]

    shifted = ln([zi + t for zi in zs])
    ok_kill = all(sp.simplify(a - b) == 0 for a, b in zip(shifted, ln(zs)))
    return [("G(λ) − G(1) = h(λ−1)(I+C)B", ok_diff, "simplify",
             f"entrywise, k = {k}, B_ℓ, C_ℓ symbolic: ker B_ℓ ⊆ ker(G_ℓ(λ) − G_ℓ(1))"),
            ("LN(z + t1) = LN(z), so B_ℓ1 = 0", ok_kill, "simplify",
             f"explicit LN at d = {k} with symbolic z, γ, eps: G_ℓ(λ)1 = G_ℓ(1)1 for every λ, "
             "so σ_min(G_ℓ(1)) ≤ ‖G_ℓ(λ)‖ and ρ ≥ 1")]
