"""Claim 6.4: the fast–slow split along depth, and its clock (docs/theory.md §6).

Setting: the token-homogeneous reference X_ℓ = 1x̄_ℓᵀ of a pre-LN stack at gate 0 (docs/theory.md §2).
The linearised layer acts on mode λ of the frozen kernel A by G_ℓ(λ) = (I + C_ℓ)((1 − hα)I + hλB_ℓ)
(Claim 2.1).  The persistent mode λ = 1 carries the coarse (homogeneous) component, the modes with
0 ≤ λ < 1 form the decaying bundle.

**Slow manifold (an identity).**  Every softmax row sums to one, so A(X)1 = 1 for every state and
every weight; with token-wise LN and MLP the layer maps 1yᵀ to 1y'ᵀ.  The coarse manifold
M = {1yᵀ} is invariant under the full nonlinear stack for any weights, and the linearisation
splits exactly into the persistent block G_ℓ(1) and the decaying blocks G_ℓ(λ): the fast equation
has no forcing from the slow variable, so the depth-wise slow manifold *is* M and its first-order
correction vanishes identically (``prove_coarse_manifold_invariant``).

**The clock.**  Call a layer *ideal* when W_VO = c·I, γ₁ = γ̄·1, β₁ = 0 and the MLP is switched off
(C_ℓ = 0).  Then the centred reference x̄ − mean(x̄) is only rescaled, by g_ℓ = 1 − hα + h b_ℓ with
b_ℓ = cγ̄/σ_ℓ (σ_ℓ = √(var x̄_ℓ + eps)), so its spread σ̃_ℓ = √var x̄_ℓ obeys σ̃_{ℓ+1} = g_ℓ σ̃_ℓ; and on
the d − 2 feature directions that LN₁ passes (orthogonal to 1 and x̂) every B_ℓ is b_ℓ·I.  Hence,
relative to the persistent mode, layer ℓ scales mode λ by

    q_ℓ(λ) = (1 − hα + hλb_ℓ)/(1 − hα + hb_ℓ) = λ + (1 − λ)(1 − hα)/g_ℓ        (``prove_ideal_layer``)

and the mode ratio r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖/‖G_{≤ℓ}(1)‖ of Claim 3.1 is r̂_ℓ(λ) = Π_{m≤ℓ} q_m(λ) exactly
(for 0 ≤ λ ≤ 1 the LN-passed directions carry the largest factor of both products).  The right side
needs only the growth g_ℓ = σ̃_{ℓ+1}/σ̃_ℓ of one d-vector, not the layer products: it is the clock.
In continuous depth (α = 0) d log r/dt = −(1 − λ)b and d log σ̃/dt = b, so

    r(λ) = (σ̃_ℓ/σ̃_0)^{−(1 − λ)}                                              (``prove_clock_power_law``)

— the decaying bundle shrinks as a power of the reference's spread, not exponentially in depth.
The discrete product lies above the power law by the first-order correction
log q + (1 − λ) log g = λ(1 − λ)(hb)²/2 + O((hb)³) per layer (``prove_discrete_correction``).

**Depth-wise ε.**  Per unit of the clock s = log σ̃ the persistent component drifts by 1 and mode λ
contracts by 1 − λ, so the ratio of slow drift to fast contraction is
ε(λ) = lim_{h→0} log g/(−log q(λ)) = 1/(1 − λ) (``prove_depth_epsilon``), and the bundle's slowest
member gives ε = 1/(1 − λ₂), λ₂ the largest decaying eigenvalue of A: 2 for causal, 1 for full.
ε ≥ 1 for every kernel: along depth the decaying bundle never contracts faster than the persistent
component drifts, so there is no Tikhonov-type scale separation at the reference; the boundary
layer lasts ε·log(1/τ) units of the clock, and a small ε can only come from a large spectral gap.

**Away from the ideal layer.**  A stack on the path θ(η) = θ_ideal + η(θ − θ_ideal) (the value-path
noise, the spread of γ₁, β₁ and the MLP's output scaled by η) has r_ℓ(λ; η) − r̂_ℓ(λ; η) = O(η):
both sides are Lipschitz in η and equal at η = 0.  At η = 1 the clock is a prediction about the
random or trained stack itself, measured, not proved.

Assumptions: gate 0; one frozen kernel with real eigenvalues in [0, 1] (causal, full, block, ALiBi
with one head); the ideal layer needs d ≥ 3 (LN₁ passes d − 2 directions) and b_ℓ > 0.
"""

from __future__ import annotations

import sympy as sp
from sympy import Symbol

FAMILY = "depth_slow_manifold"

lam = Symbol("lam", nonnegative=True)        # eigenvalue λ of the frozen kernel (decaying: λ < 1)
h = Symbol("h", positive=True)               # depth step 1/L
alpha = Symbol("alpha", nonnegative=True)    # residual decay α
growth = Symbol("growth", positive=True)     # g_ℓ = σ̃_{ℓ+1}/σ̃_ℓ, the reference spread's growth
ratio = Symbol("ratio", positive=True)       # σ̃_ℓ/σ̃_0
b = Symbol("b", positive=True)               # b_ℓ = cγ̄/σ_ℓ, the ideal value path's gain
t = Symbol("t", nonnegative=True)            # depth time


def clock_factor_expr():
    """q_ℓ(λ) = λ + (1 − λ)(1 − hα)/g_ℓ: layer ℓ's factor on mode λ relative to the persistent mode."""
    return lam + (1 - lam) * (1 - h * alpha) / growth


def clock_power_expr():
    """r(λ) = (σ̃_ℓ/σ̃_0)^{−(1 − λ)}: the continuous-depth clock (α = 0)."""
    return ratio ** (-(1 - lam))


def depth_epsilon_expr():
    """ε(λ) = 1/(1 − λ): the persistent drift per unit of the clock over mode λ's contraction."""
    return 1 / (1 - lam)


def generated_functions():
    from theory.codegen import GenFunction

    return [
        GenFunction("clock_factor", (lam, growth, h, alpha), clock_factor_expr(), "6.4",
                    "q_ℓ(λ) = λ + (1 − λ)(1 − hα)/g_ℓ, g_ℓ = σ̃_{ℓ+1}/σ̃_ℓ: layer ℓ's factor on mode λ relative "
                    "to the persistent mode (exact for the ideal layer)."),
        GenFunction("clock_power", (lam, ratio), clock_power_expr(), "6.4",
                    "r(λ) = (σ̃_ℓ/σ̃_0)^{−(1 − λ)}: the continuous-depth clock (α = 0)."),
        GenFunction("depth_epsilon", (lam,), depth_epsilon_expr(), "6.4",
                    "ε(λ) = 1/(1 − λ): the persistent component's drift per unit clock over mode λ's "
                    "contraction."),
    ]


# ---- symbolic proofs: each returns a list of (name, proved, method, detail) -------------
def _ln(v, gamma_bar, eps):
    n = len(v)
    mu = sum(v) / n
    var = sum((vi - mu) ** 2 for vi in v) / n
    return sp.Matrix([gamma_bar * (vi - mu) / sp.sqrt(var + eps) for vi in v])


def prove_coarse_manifold_invariant(T: int = 3, n: int = 2):
    """Softmax rows sum to one for any scores, and an explicit causal pre-LN attention + MLP layer
    (symbolic weights, T tokens, d = n) maps 1yᵀ to a state with equal rows."""
    scores = sp.symbols(f"s0:{T}", real=True)
    ex = [sp.exp(s) for s in scores]
    row_sum = sp.simplify(sum(e / sum(ex) for e in ex))
    y = sp.symbols(f"y0:{n}", real=True)
    hs, eps = sp.symbols("h eps", positive=True)
    WQ, WK, WV = (sp.Matrix(n, n, sp.symbols(f"{p}0:{n * n}", real=True)) for p in "qkv")
    w1 = sp.Matrix(n, n, sp.symbols(f"w0:{n * n}", real=True))
    w2 = sp.Matrix(n, n, sp.symbols(f"u0:{n * n}", real=True))
    X = sp.Matrix([list(y)] * T)
    Z = sp.Matrix.vstack(*[_ln(list(X.row(i)), 1, eps).T for i in range(T)])
    S = (Z * WQ) * (Z * WK).T / sp.sqrt(n)
    rows = []
    for i in range(T):
        e = [sp.exp(S[i, j]) for j in range(i + 1)]
        rows.append([*(x / sum(e) for x in e), *([0] * (T - i - 1))])
    U = X + hs * sp.Matrix(rows) * Z * WV
    out = U + hs * (U * w1).applyfunc(sp.tanh) * w2
    equal = all(sp.simplify(out[i, j] - out[0, j]) == 0 for i in range(1, T) for j in range(n))
    return [("Σ_j softmax_j(s) = 1 for any scores", row_sum == 1, "simplify", f"T={T} symbolic scores"),
            ("the layer maps 1yᵀ onto M = {1y'ᵀ}", equal, "simplify",
             f"explicit causal attention + token-wise MLP, T={T}, d={n}, all weights symbolic: rows equal")]


def prove_ideal_layer(n: int = 3):
    """For W_VO = cI, γ₁ = γ̄1, β₁ = 0, C = 0 (explicit d = n, symbolic x̄, c, γ̄, h, α, eps):
    (i) the centred reference is rescaled by g = 1 − hα + hb, b = cγ̄/σ; (ii) on v ⊥ 1, x̂ (the
    cross product for d = 3) B v = b v, so G(λ)v/G(1)v = (1 − hα + hλb)/g = λ + (1 − λ)(1 − hα)/g."""
    xs = sp.symbols(f"x0:{n}", real=True)
    c, gb, hs, al, eps = sp.symbols("c gammabar h alpha eps", positive=True)
    x = sp.Matrix(xs)
    mu = sum(xs) / n
    var = sum((xi - mu) ** 2 for xi in xs) / n
    sigma = sp.sqrt(var + eps)
    ln = _ln(list(xs), gb, eps)
    nxt = (1 - hs * al) * x + hs * c * ln
    centred, centred_next = x - mu * sp.ones(n, 1), nxt - sum(nxt) / n * sp.ones(n, 1)
    bb = c * gb / sigma
    g = 1 - hs * al + hs * bb
    ok_growth = all(sp.simplify(e) == 0 for e in (centred_next - g * centred))
    B = c * ln.jacobian(x)
    one = sp.ones(n, 1)
    v = one.cross(centred) if n == 3 else None
    Bv = B * v
    ok_range = all(sp.simplify(e) == 0 for e in (Bv - bb * v))
    # G(λ)v = (1 − hα)v + hλBv, so G(λ)v = (1 − hα + hλb)v on v, for every λ (λ = 1: g v)
    Gv = (1 - hs * al) * v + hs * lam * Bv
    ratio_ok = ok_range and all(sp.simplify(e) == 0 for e in (Gv - (1 - hs * al + hs * lam * bb) * v))
    gb_ = 1 - h * alpha + h * b          # the same quotient with b kept as a symbol
    q = sp.cancel((1 - h * alpha + h * lam * b) / gb_ - clock_factor_expr().subs(growth, gb_))
    return [("ideal layer: centred reference rescaled by g = 1 − hα + hb", ok_growth, "simplify",
             f"d={n}, b = cγ̄/√(var x̄ + eps), symbolic x̄, c, γ̄, h, α, eps"),
            ("ideal layer: B v = b v on v ⊥ 1, x̂", ok_range, "simplify", f"d={n}, v = 1 × (x̄ − mean x̄)"),
            ("q(λ) = G(λ)v/G(1)v = λ + (1 − λ)(1 − hα)/g", ratio_ok and q == 0, "simplify",
             "(1 − hα + hλb)/(1 − hα + hb) equals the generated clock_factor")]


def prove_clock_power_law():
    """With d log σ̃/dt = b(t) and d log r/dt = −(1 − λ)b(t) (the ideal layer as h → 0, α = 0),
    r = (σ̃/σ̃_0)^{−(1 − λ)} for any gain b(t): both sides solve the same ODE from r(0) = 1."""
    sig = sp.Function("sigma")(t)
    s0 = sp.Symbol("sigma0", positive=True)
    bt = sp.diff(sp.log(sig), t)
    r = clock_power_expr().subs(ratio, sig / s0)
    ode = sp.simplify(sp.diff(sp.log(r), t) + (1 - lam) * bt)
    init = sp.simplify(r.subs(sig, s0))
    step = sp.series(sp.log(clock_factor_expr().subs({alpha: 0, growth: 1 + h * b})), h, 0, 2).removeO()
    rate = sp.simplify(step - (-(1 - lam) * h * b))
    return [("r = (σ̃/σ̃_0)^{−(1−λ)} solves d log r/dt = −(1 − λ) d log σ̃/dt, r(0) = 1", ode == 0 and init == 1,
             "simplify", "σ̃(t) an arbitrary positive function"),
            ("log q(λ) = −(1 − λ)hb + O(h²)", rate == 0, "simplify", "series of the generated clock_factor in h")]


def prove_discrete_correction():
    """log q(λ) + (1 − λ) log g = λ(1 − λ)x²/2 + O(x³), x = hb (α = 0): the discrete clock lies
    above the power law by this first-order correction per layer."""
    x = sp.Symbol("x", positive=True)
    e = sp.log(clock_factor_expr().subs({alpha: 0, growth: 1 + x})) + (1 - lam) * sp.log(1 + x)
    ser = sp.series(e, x, 0, 3).removeO()
    ok = sp.simplify(ser - lam * (1 - lam) * x ** 2 / 2) == 0
    return [("log q + (1 − λ) log g = λ(1 − λ)(hb)²/2 + O((hb)³)", ok, "simplify", f"series: {sp.factor(ser)}")]


def prove_depth_epsilon():
    """ε(λ) = lim_{h→0} log g/(−log q(λ)) = 1/(1 − λ) (α = 0, g = 1 + hb), and ε ≥ 1 on 0 ≤ λ < 1."""
    q = clock_factor_expr().subs({alpha: 0, growth: 1 + h * b})
    eps_lim = sp.limit(sp.log(1 + h * b) / (-sp.log(q)), h, 0)
    ok = sp.simplify(eps_lim - depth_epsilon_expr()) == 0
    lower = sp.simplify(depth_epsilon_expr() - 1 - lam / (1 - lam)) == 0
    return [("ε(λ) = lim log g/(−log q) = 1/(1 − λ)", ok, "simplify", f"limit = {eps_lim}"),
            ("ε(λ) − 1 = λ/(1 − λ) ≥ 0 on 0 ≤ λ < 1", lower, "simplify",
             "no kernel makes the decaying bundle contract faster than the persistent drift")]


def all_proofs(quick: bool = True):
    steps = (prove_coarse_manifold_invariant(2 if quick else 3) + prove_ideal_layer() + prove_clock_power_law()
             + prove_discrete_correction() + prove_depth_epsilon())
    return tuple(steps)
