"""Claims 1.1–1.2: the untied stack as explicit Euler steps of a non-autonomous ODE (docs/theory.md §1).

Claim 1.1.  With weights on a smooth path θ_ℓ = θ(ℓh), layer ℓ is
X ↦ U + h MLP(LN₂(U)), U = (1 − hα)X + h Attn(X), which equals X + h F(θ(ℓh), X) + O(h²)
with F(θ, X) = −αX + Attn(X) + MLP(LN₂(X)) (``prove_layer_is_euler_step``): the stack is a
first-order one-step scheme for dX/dt = F(θ(t), X), so the error at t = 1 is O(h).
For the scalar test system x′ = a(t) x, a(t) = a₀ + a₁ cos(πt) (the stack's cosine path),
the global Euler error is e(1) = h C + O(h²) with, from the variational equation
ê′ = a ê − x″/2, ê(0) = 0,

    C = −(x(1)/2) (a(1) − a(0) + ∫₀¹ a(s)² ds).

For the stack itself the error constant follows from the split layer's local defect: with
F = f₁ + g, f₁ = −αX + Attn(X), g = MLP∘LN₂, one layer minus the exact flow over [t, t + h] is
h² D + O(h³), D = g′f₁ − ½(∂_t F + F′F) (``prove_split_step_defect``), so
X_L − X(1) = h E(1) + O(h²) with E′ = F′(t, X(t)) E + D(t, X(t)), E(0) = 0.  Along the solution
½(∂_t F + F′F) = ½ dF/dt, so Ẽ = E + F/2 solves Ẽ′ = F′Ẽ + D̃, D̃ = g′f₁ − ½F′F, Ẽ(0) = F(0, X₀)/2,
and C = E(1) = Ẽ(1) − F(1, X(1))/2 needs no time derivative (``prove_shifted_variational``).

Claim 1.2.  The Jacobian of the stack is the depth-ordered product J_{L−1} ⋯ J_0 of the
layer Jacobians at the visited states (chain rule; checked against autograd).
"""

from __future__ import annotations

import sympy as sp
from sympy import Function, Symbol, cos, exp, integrate, pi

FAMILY = "depth_flow"

t, s = Symbol("t", real=True), Symbol("s", real=True)
a0, a1, x0 = Symbol("a0", real=True), Symbol("a1", real=True), Symbol("x0", real=True)
hs = Symbol("h", positive=True)
# the three directional derivatives the split-step defect is made of, as elementwise tensors
gf1, Ft, FF = Symbol("gf1", real=True), Symbol("Ft", real=True), Symbol("FF", real=True)


def rate(time=t):
    """a(t) = a₀ + a₁ cos(πt)."""
    return a0 + a1 * cos(pi * time)


def exact_solution(time=t):
    """x(t) = x₀ exp(∫₀ᵗ a)."""
    return x0 * exp(integrate(rate(s), (s, 0, time)))


def error_constant():
    """C = ê(1), ê solving the variational equation ê′ = a ê − x″/2, ê(0) = 0:
    ê(1) = −½ ∫₀¹ Φ(1, s) x″(s) ds with Φ(1, s) = x(1)/x(s)."""
    xs = exact_solution(s)
    x2 = sp.diff(exact_solution(t), t, 2).subs(t, s)
    integrand = sp.simplify(exact_solution(1) / xs * x2)
    return sp.simplify(-integrate(integrand, (s, 0, 1)) / 2)


def generated_functions():
    from theory.codegen import GenFunction

    return [
        GenFunction("scalar_rate", (a0, a1, t), rate(t), claim="1.1",
                    doc="a(t) = a₀ + a₁ cos(πt): the scalar test system x′ = a(t) x."),
        GenFunction("scalar_exact", (a0, a1, x0), exact_solution(1), claim="1.1",
                    doc="x(1) = x₀ exp(∫₀¹ a) for x′ = a(t) x."),
        GenFunction("euler_error_constant", (a0, a1, x0), error_constant(), claim="1.1",
                    doc="C with x_L − x(1) = C/L + O(1/L²) for explicit Euler on x′ = a(t) x."),
        GenFunction("shifted_defect", (gf1, FF), shifted_defect(), claim="1.1",
                    doc="D̃ = g′f₁ − ½F′F: the source of Ẽ′ = F′Ẽ + D̃, Ẽ = E + F/2, whose value at t = 1 "
                        "gives the stack's error constant C = Ẽ(1) − F(1, X(1))/2 (gf1 = g′f₁, FF = F′F)."),
    ]


def split_step_defect():
    """D = g′f₁ − ½(∂_t F + F′F) in the placeholders gf1 = g′f₁, Ft = ∂_t F, FF = F′F."""
    return gf1 - (Ft + FF) / 2


def shifted_defect():
    """D̃ = D + ½ ∂_t F: the split-step defect without its time derivative (placeholders gf1, FF)."""
    return sp.expand(split_step_defect() + Ft / 2)


def prove_shifted_variational():
    """If X′ = F(t, X) and E′ = F_x E + D, then Ẽ = E + F(t, X)/2 solves Ẽ′ = F_x Ẽ + D̃ (generic scalar
    f₁, g, so the identity holds componentwise for the directional derivatives of the stack)."""
    f1, g = Function("f1"), Function("g")
    xx, E = Symbol("x", real=True), Symbol("E", real=True)

    def F(tt, xv):
        return f1(tt, xv) + g(tt, xv)

    Ft_, Fx_ = sp.diff(F(t, xx), t), sp.diff(F(t, xx), xx)
    subs = {gf1: sp.diff(g(t, xx), xx) * f1(t, xx), Ft: Ft_, FF: Fx_ * F(t, xx)}
    D, Dt = split_step_defect().subs(subs), shifted_defect().subs(subs)
    # d/dt along X′ = F, E′ = F_x E + D:  d/dt (E + F(t, X)/2) = E′ + (F_t + F_x X′)/2
    dEt = Fx_ * E + D + (Ft_ + Fx_ * F(t, xx)) / 2
    ok = sp.simplify(dEt - Fx_ * (E + F(t, xx) / 2) - Dt) == 0
    return [("Ẽ = E + F/2 solves Ẽ′ = F_x Ẽ + g_x f₁ − ½F_x F", bool(ok), "simplify",
             "chain rule along X′ = F for generic non-autonomous f₁, g")]


def prove_split_step_defect():
    """For generic smooth f₁(t, x), g(t, x) and F = f₁ + g: the exact flow of x′ = F(t, x) from t is
    y(h) = x + hF + (h²/2)(∂_t F + F_x F) + O(h³), and the split layer u = x + h f₁(t, x),
    x′ = u + h g(t, u) differs from it by h² D + O(h³), D = g_x f₁ − ½(∂_t F + F_x F)."""
    xx = Symbol("x", real=True)
    f1, g = Function("f1"), Function("g")

    def F(tt, xv):
        return f1(tt, xv) + g(tt, xv)

    Ft_, Fx_ = sp.diff(F(t, xx), t), sp.diff(F(t, xx), xx)
    flow = xx + hs * F(t, xx) + hs**2 / 2 * (Ft_ + Fx_ * F(t, xx))
    residual = sp.series(sp.diff(flow, hs) - F(t + hs, flow), hs, 0, 2).removeO().doit()
    u = xx + hs * f1(t, xx)
    step = u + hs * g(t, u)
    defect = sp.series(step - flow, hs, 0, 3).removeO().doit()
    D = split_step_defect().subs({gf1: sp.diff(g(t, xx), xx) * f1(t, xx), Ft: Ft_, FF: Fx_ * F(t, xx)})
    ok_flow = sp.simplify(residual) == 0
    ok_defect = sp.simplify(defect - hs**2 * D) == 0
    return [("exact flow to O(h³): x + hF + (h²/2)(∂_t F + F_x F)", bool(ok_flow), "series",
             "y′(h) − F(t + h, y(h)) = O(h²) for generic f₁, g"),
            ("split layer − exact flow = h² (g_x f₁ − ½(∂_t F + F_x F)) + O(h³)", bool(ok_defect), "series",
             "series in h of the attention/MLP split step with generic non-autonomous f₁, g")]


def prove_error_constant():
    """ê(t) = −½ x(t)(a(t) − a(0) + ∫₀ᵗ a²) solves ê′ = a ê − x″/2, ê(0) = 0, and ê(1) = C."""
    x = exact_solution(t)
    e = -x / 2 * (rate(t) - rate(0) + integrate(rate(s) ** 2, (s, 0, t)))
    ode = sp.simplify(sp.diff(e, t) - rate(t) * e + sp.diff(x, t, 2) / 2)
    ok = ode == 0 and sp.simplify(e.subs(t, 0)) == 0 and sp.simplify(e.subs(t, 1) - error_constant()) == 0
    return [("Euler error constant from the variational equation", bool(ok), "simplify",
             "ê′ − aê + x″/2 = 0, ê(0) = 0, ê(1) = C = −(x(1)/2)(a(1) − a(0) + ∫a²)")]


def prove_euler_one_step():
    """One Euler step's local error is (h²/2) x″ + O(h³): x(t+h) − (x + h a x) for the scalar system."""
    x = exact_solution(t)
    local = sp.series(x.subs(t, t + hs) - (x + hs * rate(t) * x), hs, 0, 3).removeO()
    ok = sp.simplify(local - hs**2 / 2 * sp.diff(x, t, 2)) == 0
    return [("Euler local error = h² x″/2 + O(h³)", bool(ok), "simplify", "series in h of x(t+h) − x − h a x")]


def prove_layer_is_euler_step():
    """The split layer u = (1 − hα)x + h f(x), x′ = u + h g(u) equals x + h(−αx + f(x) + g(x)) + O(h²)
    for arbitrary smooth sublayers f (attention) and g (MLP∘LN₂)."""
    xx, al = Symbol("x", real=True), Symbol("alpha", real=True)
    f, g = Function("f"), Function("g")
    u = (1 - hs * al) * xx + hs * f(xx)
    step = u + hs * g(u)
    ser = sp.series(step, hs, 0, 2).removeO()
    ok = sp.simplify(ser - (xx + hs * (-al * xx + f(xx) + g(xx)))) == 0
    return [("layer = X + h F(θ, X) + O(h²)", bool(ok), "simplify",
             "series in h of the split attention/MLP step with generic sublayers f, g")]


def prove_chain_rule():
    """D(φ₂∘φ₁)(x) = Dφ₂(φ₁(x)) Dφ₁(x) for generic maps of R² (depth order matters)."""
    xs = sp.Matrix(sp.symbols("x0:2", real=True))
    f1 = sp.Matrix([Function(f"p{i}")(*xs) for i in range(2)])
    ys = sp.Matrix(sp.symbols("y0:2", real=True))
    f2 = sp.Matrix([Function(f"q{i}")(*ys) for i in range(2)])
    comp = f2.subs(dict(zip(ys, f1)), simultaneous=True)
    lhs = comp.jacobian(xs)
    rhs = f2.jacobian(ys).subs(dict(zip(ys, f1)), simultaneous=True) * f1.jacobian(xs)
    ok = all(sp.simplify(e) == 0 for e in (lhs - rhs))
    return [("chain rule J(φ₂∘φ₁) = J₂(φ₁(x)) J₁(x)", ok, "simplify", "generic maps of R²")]
