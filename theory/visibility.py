"""Claims 4.1–4.2: visible and invisible parameter directions (docs/theory.md §4).

Observables: the persistent component x̄_L = wᵀX_L (w the left eigenvector of the frozen
kernel A for λ = 1, wᵀ1 = 1: e₁ for causal, 1/T for full, the block-0 mean for block) and
the frozen kernels.  Visible = row space of their Jacobian w.r.t. all parameters.

Claim 4.1.  (i) At the token-homogeneous reference the scores are constant along each
row, so the attention output does not depend on W_Q, W_K (``prove_qk_invisible``).
(ii) A token-dependent input offset p (T×d) moves x̄_L at first order by
Δx̄_L = G_{≤L}(1) pᵀw (``first_order_response``): with J = Σ_m A^m ⊗ K_m and wᵀA = wᵀ,
wᵀ(Σ_m A^m p K_mᵀ) = (wᵀp) Σ_m K_mᵀ (``prove_first_order_response``).  Offsets on the
decaying bundle, wᵀp = 0, therefore move x̄_L at second order only; mean-carrying ones
(wᵀp ≠ 0) at first order.  For the causal kernel the statement is stronger: e₁ᵀX_L is
the first token, which by causality depends on the first input token only, so an offset
with p₁ = 0 does not move it at any order.

Claim 4.2.  At gate 0 the slow path's linearisation at the reference is the injection
h · s ⊗ (W_slowᵀ LN₁(x̄_ℓ)) into layer ℓ's post-attention state U, with token pattern
s = Π⁺ S 1_n (S the one-block shift; s = 1 off block 0, 0 on block 0), because all pooled
tokens are equal and the slow kernel is frozen too.  Propagated by the token-wise MLP
sublayer and the later layers, J = Σ_m A^m ⊗ K_m, and read by wᵀ (wᵀA^m = wᵀ):

    ∂x̄_L/∂g_ℓ = h (wᵀs) D_ℓ W_slowᵀ LN₁(x̄_ℓ),   D_ℓ = ∂x̄_L/∂ū_ℓ = G_{>ℓ}(1)(I + C_ℓ)
                                                              (``gate_sensitivity``)

so the gate is visible iff wᵀs ≠ 0: the persistent component must see a block ≥ 1.
Full kernel: wᵀs = (n−1)/n; causal (w = e₁) and block-causal (w = block-0 mean): wᵀs = 0
exactly — block 0 receives zero from the shifted slow path and no later token feeds it
(``prove_gate_weights``).  At g ≠ 0 the slow value/output weights enter multiplied by g.
"""

from __future__ import annotations

import sympy as sp
from sympy import MatrixSymbol, OneMatrix, Symbol

from theory.coarse_graining import exact_kernel, exact_pool

FAMILY = "visibility"

T = Symbol("T", integer=True, positive=True)
n = Symbol("n", integer=True, positive=True)
d = Symbol("d", integer=True, positive=True)
h = Symbol("h", positive=True)
G1 = MatrixSymbol("G1", d, d)            # G_{≤L}(1), or D_ℓ = ∂x̄_L/∂ū_ℓ for the gate
p = MatrixSymbol("p", T, d)              # token-dependent offset (row convention)
w = MatrixSymbol("w", T, 1)              # persistent left vector
s = MatrixSymbol("s", T, 1)              # slow-path injection pattern
W_slow = MatrixSymbol("W_slow", d, d)    # slow path's W_VO (row convention)
z = MatrixSymbol("z", d, 1)              # LN₁(x̄_ℓ)
Pi_plus = MatrixSymbol("Pi_plus", T, n)
S = MatrixSymbol("S", n, n)


def first_order_response_expr(G=G1, offset=p, left=w):
    """Δx̄_L = G_{≤L}(1) pᵀ w (column): the first-order move of the persistent component."""
    return G * offset.T * left


def gate_sensitivity_expr():
    """∂x̄_L/∂g_ℓ = h D_ℓ W_slowᵀ LN₁(x̄_ℓ) (wᵀs), D_ℓ = ∂x̄_L/∂ū_ℓ."""
    return h * G1 * W_slow.T * z * (w.T * s)


def injection_pattern_expr():
    """s = Π⁺ S 1_n: the token pattern the lifted, one-block-shifted slow output lands on."""
    return Pi_plus * S * OneMatrix(n, 1)


def generated_functions():
    from theory.codegen import GenFunction

    return [
        GenFunction("first_order_response", (G1, p, w), first_order_response_expr(), claim="4.1",
                    doc="Δx̄_L = G_{≤L}(1) pᵀw: first-order move of the persistent component under "
                        "an input offset p (zero on the decaying bundle wᵀp = 0)."),
        GenFunction("gate_sensitivity", (h, G1, W_slow, z, w, s), gate_sensitivity_expr(),
                    claim="4.2", doc="∂x̄_L/∂g_ℓ at g = 0: h D_ℓ W_slowᵀ LN₁(x̄_ℓ) (wᵀs), "
                                    "D_ℓ = ∂x̄_L/∂ū_ℓ = G_{>ℓ}(1)(I + C_ℓ)."),
        GenFunction("injection_pattern", (Pi_plus, S), injection_pattern_expr(), claim="4.2",
                    doc="s = Π⁺S1_n: tokens that receive the lifted, one-block-shifted slow output."),
    ]


# ---- symbolic proofs: lists of (name, proved, method, detail) ----------------------------
def exact_persistent_vector(A: sp.Matrix) -> sp.Matrix:
    """The left eigenvector w of A for λ = 1 with wᵀ1 = 1, exactly (one-dimensional here)."""
    null = (A.T - sp.eye(A.shape[0])).nullspace()
    if len(null) != 1:
        raise ValueError(f"λ = 1 has {len(null)} left eigenvectors; expected exactly one")
    v = null[0]
    return v / sum(v)


def prove_persistent_vectors(T_: int = 8, P_: int = 4):
    """w = e₁ (causal), 1/T (full), block-0 mean (block), exactly."""
    expect = {"causal": sp.Matrix([1] + [0] * (T_ - 1)),
              "full": sp.ones(T_, 1) / T_,
              "block": sp.Matrix([sp.Rational(1, P_)] * P_ + [0] * (T_ - P_))}
    out = []
    for kind, want in expect.items():
        got = exact_persistent_vector(exact_kernel(kind, T_, P_))
        out.append((f"persistent vector, {kind}", got == want, "exact-rational",
                    f"w = {list(got)} (T={T_}, P={P_})"))
    return out


def prove_first_order_response(T_: int = 4, P_: int = 2, k: int = 2, depth: int = 3):
    """wᵀ(Σ_m A^m p K_mᵀ) = (G(1) pᵀ w)ᵀ with G(1) = Σ_m K_m, for exact kernels, symbolic p, K_m."""
    pe = sp.Matrix(MatrixSymbol("p", T_, k))
    Ks = [sp.Matrix(MatrixSymbol(f"K{m}", k, k)) for m in range(depth)]
    out = []
    for kind in ("causal", "full", "block"):
        A = exact_kernel(kind, T_, P_)
        we = exact_persistent_vector(A)
        lhs = we.T * sum((A ** m * pe * Ks[m].T for m in range(depth)), sp.zeros(T_, k))
        rhs = sp.Matrix(first_order_response_expr().subs(
            {G1: sum(Ks, sp.zeros(k, k)), p: pe, w: we}).doit().as_explicit()).T
        ok = all(sp.expand(e) == 0 for e in lhs - rhs)
        out.append((f"first-order response, {kind}", ok, "simplify",
                    f"wᵀ Σ_m A^m p K_mᵀ = (G(1)pᵀw)ᵀ, T={T_}, m < {depth}, p and K_m symbolic"))
    return out


def prove_qk_invisible(T_: int = 3):
    """At equal rows (q_i = q, k_j = k, v_j = v) the attention output Σ_j softmax(q·k_j) v_j
    equals v for every q, k: its derivative w.r.t. W_Q, W_K is zero."""
    qs = sp.symbols("q0:2", real=True)
    ks = sp.symbols("k0:2", real=True)
    v = sp.Symbol("v", real=True)
    score = sum(a * b for a, b in zip(qs, ks))
    weights = [sp.exp(score) / sum(sp.exp(score) for _ in range(T_)) for _ in range(T_)]
    out_ = sum(wt * v for wt in weights)
    ok = all(sp.simplify(sp.diff(out_, x)) == 0 for x in qs + ks) and sp.simplify(out_ - v) == 0
    return [("attention output independent of q, k at a homogeneous state", ok, "simplify",
             f"Σ_j softmax(q·k)_j v = v for T = {T_}, symbolic q, k ∈ R², v")]


def exact_injection_pattern(T_: int, P_: int) -> sp.Matrix:
    """s = Π⁺S1_n exactly (the generated formula's expression, on exact matrices)."""
    n_ = T_ // P_
    _, lift = exact_pool(T_, P_)
    shift = sp.Matrix(n_, n_, lambda i, j: 1 if i == j + 1 else 0)
    return sp.Matrix(injection_pattern_expr().subs({Pi_plus: lift, S: shift, n: n_}).doit().as_explicit())


def prove_gate_weights(T_: int = 8, P_: int = 4):
    """wᵀA^m s = wᵀs, and wᵀs = (n−1)/n (full), 0 (causal), 0 (block), exactly."""
    n_ = T_ // P_
    s_ = exact_injection_pattern(T_, P_)
    want = {"full": sp.Rational(n_ - 1, n_), "causal": 0, "block": 0}
    out = []
    for kind, value in want.items():
        A = exact_kernel(kind, T_, P_)
        we = exact_persistent_vector(A)
        ws = (we.T * s_)[0]
        powers = all((we.T * A ** m * s_)[0] == ws for m in range(1, 4))
        out.append((f"wᵀs = {value}, {kind}", bool(ws == value and powers), "exact-rational",
                    f"s = {list(s_)}, wᵀs = {ws}, wᵀA^m s = wᵀs for m = 1..3 (T={T_}, P={P_})"))
    return out
