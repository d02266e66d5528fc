"""Derivations the architecture variants need (numerics/stacks/architectures/).

Column convention per token (x ∈ R^d), as in docs/theory.md §2.  At a token-homogeneous
reference every attention matrix is the frozen kernel A (A1 = 1), so a perturbation in
the eigenmode A s = λ s, E = s vᵀ, is mapped to s (G v)ᵀ: every variant whose
token-mixing is a polynomial in A has one mode block G(λ) per eigenvalue.  The blocks
are the chain rule applied to the sublayers in the variant's order; each sublayer
contributes its token-wise Jacobian or, for attention, (I·(1 − hα) + hλ W), W = W_VOᵀ:

* **post-LN**: U = LN₁((1−hα)X + h·Attn(X)), X' = LN₂(U + h·MLP(U)), so
  G_post(λ) = J₂ (I + h M)(J₁)((1 − hα) I + hλ W),  J₁ = J_LN₁ at (1−hα)x̄ + h Wx̄,
  M = J_MLP(ū), J₂ = J_LN₂ at ū + h MLP(ū).  Degree 1 in λ per layer, as in pre-LN.
* **looped with decay injection** (Parcae): x' = D x + Δ B e + (layer(x) − x),
  D = diag(exp(−Δa)); e is constant, so on x the mode block is M(λ) = D − I + G(λ)
  (G the tied layer's pre-LN block) and ‖M‖ ≤ e^{−Δ a_min} + ‖G − I‖ gives the
  **looped stability margin** μ(Δ) = −log‖M‖ ≥ −log(e^{−Δ a_min} + ‖G − I‖), positive
  once Δ > Δ* = −log(1 − ‖G − I‖)/a_min (needs ‖G − I‖ < 1).
* **mhc** (n streams, streams ⊗ tokens ⊗ features): layer ℓ is
  S'_i = Σ_j H_ij S_j + β_i (layer(y) − y), y = Σ_j α_j S_j, whose linearisation is
  H ⊗ I_T ⊗ I_d + βαᵀ ⊗ (Σ_m A^m ⊗ K_m − I): the **composite kernel** is the stream-mixing
  matrix tensored with the token kernel, and the (i, j) stream block of the mode block is
  H_ij I + β_i α_j (G(λ) − I).
* **Sinkhorn** (Franklin & Lorenz 1989, Birkhoff–Hopf): one round (row then column
  normalisation) of a positive matrix M contracts the Hilbert projective distance of the
  row sums to 1 by at least κ² = tanh(Δ(M)/4)², Δ(M) = log max_{ijkl} M_ij M_kl/(M_il M_kj).
  Columns sum to 1 exactly after a round and the entries sum to n, so the mean row sum is 1
  and max_i |r_i − 1| ≤ exp(d_H(r, 1)) − 1: after t rounds
  max_i |r_i − 1| ≤ exp(κ^{2(t−1)} d₁) − 1, d₁ the distance after the first round.
  A doubly stochastic H has ‖H‖₂ ≤ 1 (a convex combination of permutations), so the
  composite gain ‖H_L ⋯ H_1‖₂ = 1 at every depth; unconstrained mixing has no such bound.
* **compressed** attention: token t sees the block means of the complete blocks
  ((b+1)P − 1 ≤ t).  Its frozen kernel A_c (T×n) is uniform over the visible blocks and
  zero for t < P − 1, so (A_c Π) 1 ≠ 1: the compressed branch breaks token homogeneity
  (no reference trajectory when its gate is open) — :func:`compressed_row_sums`.
"""

from __future__ import annotations

import sympy as sp

FAMILY = "architectures"

d = sp.Symbol("d", integer=True, positive=True)
lam, h, alpha = sp.symbols("lam h alpha", real=True)
Delta, a_min, g_dev = sp.symbols("Delta a_min g_dev", positive=True)
rate, d1, t = sp.symbols("rate d1 t", positive=True)
Hilbert = sp.Symbol("Delta_M", positive=True)
H_ij, beta_i, alpha_j = sp.symbols("H_ij beta_i alpha_j", real=True)
W = sp.MatrixSymbol("W", d, d)  # W_VOᵀ (column convention)
J1 = sp.MatrixSymbol("J1", d, d)
J2 = sp.MatrixSymbol("J2", d, d)
M = sp.MatrixSymbol("M", d, d)
G = sp.MatrixSymbol("G", d, d)
a_vec = sp.MatrixSymbol("a", d, 1)
I = sp.Identity(d)


def postln_mode_block() -> sp.MatrixExpr:
    """G_post(λ) = J₂ (I + hM) J₁ ((1 − hα) I + hλ W): chain rule through LN₁ ∘ (residual + attention), LN₂ ∘ (residual + MLP)."""
    attention = (1 - h * alpha) * I + h * lam * W
    return J2 * (I + h * M) * J1 * attention


def injection_decay() -> sp.MatrixExpr:
    """The injection's diagonal exp(−Δ a) as a (d, 1) vector."""
    return a_vec.applyfunc(lambda x: sp.exp(-Delta * x))


def looped_mode_block() -> sp.MatrixExpr:
    """M(λ) = diag(exp(−Δa)) − I + G(λ): the looped-with-injection step on the x part of a mode."""
    return sp.DiagMatrix(injection_decay()) - I + G


def looped_margin_lower() -> sp.Expr:
    """μ(Δ) ≥ −log(e^{−Δ a_min} + ‖G − I‖) (triangle inequality on M = D + (G − I))."""
    return -sp.log(sp.exp(-Delta * a_min) + g_dev)


def looped_critical_delta() -> sp.Expr:
    """Δ* solving the margin bound = 0: −log(1 − ‖G − I‖)/a_min (exists for ‖G − I‖ < 1)."""
    (sol,) = sp.solve(sp.Eq(looped_margin_lower(), 0), Delta)
    return sp.simplify(sol)


def mhc_mode_block() -> sp.MatrixExpr:
    """Stream block (i, j) of the mhc mode block: H_ij I + β_i α_j (G(λ) − I)."""
    return H_ij * I + beta_i * alpha_j * (G - I)


def sinkhorn_rate() -> sp.Expr:
    """Birkhoff–Hopf contraction per Sinkhorn round: κ² = tanh(Δ(M)/4)²."""
    return sp.tanh(Hilbert / 4) ** 2


def sinkhorn_marginal_bound() -> sp.Expr:
    """max_i |r_i − 1| after t rounds ≤ exp(rate^{t−1} d₁) − 1."""
    return sp.exp(rate ** (t - 1) * d1) - 1


# ----------------------------------------------------------------------------- symbolic proofs
def postln_block_is_chain_rule(dim: int = 2) -> bool:
    """Differentiate an explicit post-LN token map in mode λ (symbolic 2×2 weights, generic
    token-wise maps f₁, m, f₂ given by their Jacobians) and compare with :func:`postln_mode_block`.

    The mode perturbation ε v enters as x + ε v on the persistent part and the attention adds
    hλ W ε v; linear token-wise maps with matrices J₁, M, J₂ stand in for the Jacobians.
    """
    eps = sp.Symbol("epsilon")
    Wm, J1m, Mm, J2m = (sp.Matrix(dim, dim, lambda i, j, s=s: sp.Symbol(f"{s}{i}{j}")) for s in "WJMK")
    v = sp.Matrix(dim, 1, lambda i, j: sp.Symbol(f"v{i}"))
    Id = sp.eye(dim)
    u = J1m * ((1 - h * alpha) * eps * v + h * lam * Wm * eps * v)
    out = J2m * (u + h * Mm * u)
    jac = out.diff(eps)
    sub = {W: Wm, J1: J1m, M: Mm, J2: J2m}
    formula = postln_mode_block().subs(sub).as_explicit() * v
    del Id
    return sp.simplify(jac - formula) == sp.zeros(dim, 1)


def doubly_stochastic_gain_2x2() -> bool:
    """‖H‖₂ ≤ 1 for every 2×2 doubly stochastic H = [[p, 1−p], [1−p, p]]: eigenvalues 1 and 2p − 1 ∈ [−1, 1]."""
    p = sp.Symbol("p", nonnegative=True)
    Hm = sp.Matrix([[p, 1 - p], [1 - p, p]])
    eig = set(Hm.eigenvals())  # H is symmetric: ‖H‖₂ = max |eigenvalue|
    ok = eig == {sp.Integer(1), 2 * p - 1}
    bounded = sp.solve_univariate_inequality(sp.Abs(2 * p - 1) <= 1, p, relational=False)
    return bool(ok and sp.Interval(0, 1).is_subset(bounded))


def compressed_row_sums(T: int, P: int) -> sp.Matrix:
    """Exact row sums of the compressed frozen kernel lifted to tokens, A_c Π⁺-free form: (T, 1).

    Row t is 1 when some block is complete at t ((b+1)P − 1 ≤ t), else 0.
    """
    n = T // P
    rows = []
    for tok in range(T):
        visible = [b for b in range(n) if (b + 1) * P - 1 <= tok]
        rows.append(sum((sp.Rational(1, len(visible)) for _ in visible), sp.Integer(0)))
    return sp.Matrix(rows)


def looped_critical_delta_checks() -> bool:
    """At Δ* the margin bound is exactly zero, and it increases with Δ."""
    zero = sp.simplify(looped_margin_lower().subs(Delta, looped_critical_delta()))
    slope = sp.simplify(sp.diff(looped_margin_lower(), Delta))
    return zero == 0 and bool(sp.ask(sp.Q.positive(slope), sp.Q.positive(a_min) & sp.Q.positive(Delta)
                                     & sp.Q.positive(g_dev)))


def generated_functions():
    from theory.codegen import GenFunction

    return [
        GenFunction("postln_mode_block", (lam, h, alpha, W, J1, M, J2), postln_mode_block(), "2.1",
                    "Post-LN layer's mode block G_post(λ) = J₂(I + hM)J₁((1−hα)I + hλW), W = W_VOᵀ."),
        GenFunction("injection_decay", (Delta, a_vec), injection_decay(), "5.1",
                    "Parcae decay injection's diagonal exp(−Δa), (d, 1)."),
        GenFunction("looped_mode_block", (Delta, a_vec, G), looped_mode_block(), "5.1",
                    "Looped step with decay injection on mode λ: diag(exp(−Δa)) − I + G(λ)."),
        GenFunction("looped_margin_lower", (Delta, a_min, g_dev), looped_margin_lower(), "5.1",
                    "Lower bound on the looped stability margin: −log(exp(−Δ a_min) + ‖G − I‖)."),
        GenFunction("looped_critical_delta", (a_min, g_dev), looped_critical_delta(), "5.1",
                    "Decay Δ* above which the looped margin bound is positive: −log(1 − ‖G − I‖)/a_min."),
        GenFunction("mhc_mode_block", (H_ij, beta_i, alpha_j, G), mhc_mode_block(), "2.1",
                    "Stream block (i, j) of the mhc mode block: H_ij I + β_i α_j (G(λ) − I)."),
        GenFunction("sinkhorn_rate", (Hilbert,), sinkhorn_rate(), "2.1",
                    "Birkhoff–Hopf contraction of one Sinkhorn round, tanh(Δ(M)/4)²."),
        GenFunction("sinkhorn_marginal_bound", (rate, d1, t), sinkhorn_marginal_bound(), "2.1",
                    "Row-sum error bound after t Sinkhorn rounds: exp(rate^(t−1) d₁) − 1."),
    ]
