"""Reach of the reference claims: how well predictions made at 1x̄ᵀ describe a stack at real inputs.

Claims 2.1–2.4 are exact at the token-homogeneous reference X₀ = 1x̄ᵀ (docs/theory.md §2).  A
real input X has a **token spread** s = ‖X − 1x̄ᵀ‖_F / ‖X‖_F, with x̄ the token mean (the
homogeneous state nearest X, so 0 ≤ s < 1).  Along a direction E with zero token mean,
X(s) = 1x̄ᵀ + t Ê, ‖Ê‖_F = 1, has spread s when t = s √T ‖x̄‖ / √(1 − s²) (Ê ⊥ 1x̄ᵀ).

**Factorised form (2.1/2.3).**  J_fact = Σ_m A^m ⊗ K_m is built at 1x̄ᵀ; the true action is
J(X)V = jvp(f, X, V).  Because J_fact = J(X₀) exactly and f is smooth,

    J(X)V − J_fact V = t a + (t²/2) b + O(t³),   a = D²f(X₀)[Ê, V],  b = D³f(X₀)[Ê, Ê, V],

so the relative error e(s) = ‖J(X)V − J_fact V‖ / ‖J(X)V‖ is first order in s with coefficient
c₁ = ‖a‖ √T ‖x̄‖ / ‖J(X₀)V‖ (exponent 1, not 2: a ≠ 0 because the softmax Jacobian couples
tokens as soon as they differ).  Its local log–log slope is

    d ln e / d ln s = (1 + κ t)/(1 − s²) + O(t²),  κ = ⟨a, b⟩/(2‖a‖²) − ⟨J₀V, a⟩/‖J₀V‖²,

and |κ| ≤ κ̄ = ‖b‖/(2‖a‖) + ‖a‖/‖J₀V‖ (Cauchy–Schwarz): the slope's predicted departure from 1.
a and b are nested forward-mode derivatives at X₀ alone: the prediction is made at the reference.

**Q/K invisibility (2.4).**  At X₀ the output does not depend on W_Q, W_K.  Off the reference a
change δW_Q changes the scores of row i by a part that varies over keys only through the token
deviations (O(t)); the softmax Jacobian (rows summing to zero) meets value rows that differ
only by O(t): the output moves at O(t²), slope 2.  The Jacobian J(X) moves at O(t), slope 1
(its softmax-derivative term already carries one factor of the deviations).

Probes are pooled: a ratio of norms is Σ over probes of squared norms, square-rooted.
Assumptions: a pre-LN ``Stack`` (or a tail of one, :func:`tail_stack`), gate 0, one frozen
kernel shared by all heads, float64.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call, jvp, vmap

from numerics.linearised import matrix_free as mf
QK = ("W_Q", "W_K")
VALUE = ("W_V", "W_O")


# ---- spread and the inputs along a direction -----------------------------------------------
def token_mean(X: torch.Tensor) -> torch.Tensor:
    """x̄ = the token mean of X (..., T, d) -> (..., d): the homogeneous state 1x̄ᵀ nearest X."""
    return X.mean(-2)


def token_spread(X: torch.Tensor) -> torch.Tensor:
    """s = ‖X − 1x̄ᵀ‖_F / ‖X‖_F with x̄ the token mean, per leading index."""
    E = X - token_mean(X)[..., None, :]
    return torch.linalg.matrix_norm(E) / torch.linalg.matrix_norm(X)


def centred_direction(E: torch.Tensor) -> torch.Tensor:
    """E with its token mean removed, scaled to unit Frobenius norm (ValueError if it vanishes)."""
    Ec = E - E.mean(-2, keepdim=True)
    n = float(torch.linalg.matrix_norm(Ec))
    if n == 0.0:
        raise ValueError("the direction is token-homogeneous: it has no spread to sweep")
    return Ec / n


def deviation_size(xbar: torch.Tensor, T: int, s: float) -> float:
    """t with spread(1x̄ᵀ + tÊ) = s for a unit centred Ê: t = s √T ‖x̄‖ / √(1 − s²)."""
    if not 0.0 <= s < 1.0:
        raise ValueError(f"spread s={s!r} must lie in [0, 1)")
    return s * math.sqrt(T) * float(xbar.norm()) / math.sqrt(1.0 - s * s)


def at_spread(xbar: torch.Tensor, direction: torch.Tensor, s: float) -> torch.Tensor:
    """X = 1x̄ᵀ + t Ê (T, d) with token mean x̄ and spread exactly s along ``direction``."""
    T = direction.shape[-2]
    return xbar.expand(T, -1) + deviation_size(xbar, T, s) * centred_direction(direction)


def tail_stack(stack, start: int):
    """Layers ``start``..L−1 of ``stack`` as a stack of their own (same step h: the layers keep theirs)."""
    if not 0 <= start < len(stack.layers):
        raise ValueError(f"start={start} must lie in 0..{len(stack.layers) - 1}")
    tail = copy.copy(stack)
    tail._modules = dict(stack._modules)
    tail.layers = nn.ModuleList(list(stack.layers)[start:])
    return tail


# ---- 2.1 / 2.3: the factorised form against the true action ---------------------------------
def pooled_ratio(num: torch.Tensor, den: torch.Tensor) -> float:
    """√(Σ_i ‖num_i‖²) / √(Σ_i ‖den_i‖²) over the probes (leading dimension)."""
    return float(num.norm() / den.norm().clamp_min(torch.finfo(den.dtype).tiny))


def factorised_error(stack, X: torch.Tensor, V: torch.Tensor, action: mf.JacobianAction | None = None,
                     xbar: torch.Tensor | None = None) -> float:
    """e = ‖J(X)V − J_fact V‖ / ‖J(X)V‖ pooled over the probes V (k, T, d); J_fact built at 1x̄ᵀ
    (x̄ = the token mean of X unless given, or ``action`` when one is already built)."""
    if action is None:
        action = mf.JacobianAction(stack, token_mean(X) if xbar is None else xbar)
    with mf_unchecked(stack):
        exact = mf.stack_jvp(stack, X, V)
    return pooled_ratio(action(V) - exact, exact)


def mf_unchecked(stack):
    from numerics.stacks.stack import unchecked_inputs

    return unchecked_inputs(stack)


def _forward(stack, params: dict | None = None):
    base = {n: p.detach() for n, p in stack.named_parameters()}
    base.update(params or {})
    return lambda x: functional_call(stack, base, (x,))


def directional_derivatives(F, X0: torch.Tensor, Ehat: torch.Tensor, order: int) -> list[torch.Tensor]:
    """[F(X₀), DF[Ê], D²F[Ê, Ê], …] up to ``order``: the Taylor coefficients (times k!) of F(X₀ + tÊ)."""
    out, g = [], F
    for k in range(order + 1):
        out.append(g(X0))
        g = (lambda prev: lambda x: jvp(prev, (x,), (Ehat,))[1])(g)
    return out


@dataclass
class Expansion:
    """r(t) = ‖N(t)‖/‖D(t)‖ with N(t) = Σ_{k≥p} tᵏ n_k/k! and D(t) = d₀ + t d₁ + …, N's lowest order p.

    r ≈ c tᵖ with c = ‖n_p‖/(p!‖d₀‖); the local slope d ln r/d ln t = p + κt + O(t²) with
    κ = ⟨n_p, n_{p+1}⟩/((p+1)‖n_p‖²) − ⟨d₀, d₁⟩/‖d₀‖², and |κ| ≤ κ̄ = ‖n_{p+1}‖/((p+1)‖n_p‖) + ‖d₁‖/‖d₀‖.
    In the spread, t = (t/s)·s/√(1 − s²): r ≈ c (t/s)ᵖ sᵖ and the s-slope adds p s²/(1 − s²).
    """

    order: int
    n_p: torch.Tensor
    n_next: torch.Tensor
    d0: torch.Tensor
    d1: torch.Tensor
    t_per_s: float

    @property
    def coefficient(self) -> float:
        """c_s with r ≈ c_s sᵖ near s = 0."""
        return float(self.n_p.norm()) / (math.factorial(self.order) * float(self.d0.norm())) * self.t_per_s ** self.order

    @property
    def kappa(self) -> float:
        p, n = self.order, float(self.n_p.norm())
        return float((self.n_p * self.n_next).sum()) / ((p + 1) * n * n) - float((self.d0 * self.d1).sum()) / float(self.d0.norm()) ** 2

    @property
    def kappa_bar(self) -> float:
        return float(self.n_next.norm()) / ((self.order + 1) * float(self.n_p.norm())) + float(self.d1.norm()) / float(self.d0.norm())

    def t(self, s: float) -> float:
        return self.t_per_s * s / math.sqrt(1.0 - s * s)

    def predicted(self, s: float) -> float:
        """r(s) to the next order: ‖tᵖ n_p/p! + t^{p+1} n_{p+1}/(p+1)!‖ / ‖d₀ + t d₁‖."""
        t, p = self.t(s), self.order
        num = t ** p * self.n_p / math.factorial(p) + t ** (p + 1) * self.n_next / math.factorial(p + 1)
        return pooled_ratio(num, self.d0 + t * self.d1)

    def slope_tolerance(self, s_max: float) -> float:
        """The fitted slope's predicted departure from p over a window up to s_max: κ̄ t_max (first order in
        t; Cauchy–Schwarz on |κ|) plus p s_max²/(1 − s_max²) (the exact t(s))."""
        return self.kappa_bar * self.t(s_max) + self.order * s_max ** 2 / (1.0 - s_max ** 2)

    def as_dict(self) -> dict:
        return {"order": self.order, "coefficient": self.coefficient, "kappa": self.kappa,
                "kappa_bar": self.kappa_bar, "t_per_s": self.t_per_s}


def expansion(numerator, denominator, X0: torch.Tensor, Ehat: torch.Tensor, order: int, t_per_s: float) -> Expansion:
    """The :class:`Expansion` of ‖numerator(X)‖/‖denominator(X)‖ along X₀ + tÊ, lowest order ``order``
    (the orders below it must vanish at X₀; they are returned in ``Expansion.n_p``'s place if not)."""
    with torch.no_grad():
        n = directional_derivatives(numerator, X0, Ehat, order + 1)
        d = directional_derivatives(denominator, X0, Ehat, 1)
    return Expansion(order, n[order], n[order + 1], d[0], d[1], t_per_s)


def vanishing_orders(numerator, X0: torch.Tensor, Ehat: torch.Tensor, order: int) -> list[float]:
    """‖D^k N(X₀)[Ê,…]‖ for k < ``order``: the orders the expansion assumes vanish (rounding level)."""
    with torch.no_grad():
        return [float(v.norm()) for v in directional_derivatives(numerator, X0, Ehat, order - 1)]


def factorised_expansion(stack, xbar: torch.Tensor, direction: torch.Tensor, V: torch.Tensor) -> Expansion:
    """2.1/2.3: e(s) = ‖J(X)V − J_fact V‖/‖J(X)V‖ along ``direction``: order 1, n₁ = D²f[Ê, V],
    n₂ = D³f[Ê, Ê, V], d₀ = J₀V = J_fact V, d₁ = n₁ (the prediction, from X₀ alone)."""
    f = _forward(stack)
    X0 = xbar.expand(V.shape[-2], -1).clone()
    Ehat = centred_direction(direction).to(X0.dtype)

    def jv(x):
        return vmap(lambda v: jvp(f, (x,), (v,))[1])(V)

    with mf_unchecked(stack):
        J0V = jv(X0).detach()
        return expansion(lambda x: jv(x) - J0V, jv, X0, Ehat, 1, math.sqrt(V.shape[-2]) * float(xbar.norm()))


def factorised_taylor(stack, xbar: torch.Tensor, direction: torch.Tensor, V: torch.Tensor) -> Expansion:
    """:func:`factorised_expansion` in one pass: a triple-nested ``jvp`` of x ↦ (f(x), Df(x)[V]) along Ê returns
    J₀V, a = D²f[Ê, V] and b = D³f[Ê, Ê, V] together (the separate route evaluates J₀V three times, a twice and
    b once, in six passes).  At GPT-2-small size that is one pass of ≈ 2.5 single jvps instead of ≈ 9."""
    f = _forward(stack)
    X0 = xbar.expand(V.shape[-2], -1).clone()
    Ehat = centred_direction(direction).to(X0.dtype)

    def jv(x):
        return vmap(lambda v: jvp(f, (x,), (v,))[1])(V)

    def jv_and_slope(x):                  # (J(x)V, D(J·V)(x)[Ê])
        return jvp(jv, (x,), (Ehat,))

    with mf_unchecked(stack), torch.no_grad():
        (J0V, a), (_, b) = jvp(jv_and_slope, (X0,), (Ehat,))
    return Expansion(1, a, b, J0V, a, math.sqrt(V.shape[-2]) * float(xbar.norm()))


def qk_expansion(stack, xbar: torch.Tensor, direction: torch.Tensor, seed: int = 0,
                 V: torch.Tensor | None = None) -> Expansion:
    """2.4: the Q/K share :func:`qk_share` along ``direction``: order 2 on the output (V None), order 1 on
    the Jacobian action J(X)V."""
    X0 = xbar.expand(direction.shape[-2], -1).clone()
    Ehat = centred_direction(direction).to(X0.dtype)
    tq, tv = relative_tangents(stack, QK, seed), relative_tangents(stack, VALUE, seed + 1)
    with mf_unchecked(stack):
        return expansion(lambda x: parameter_derivative(stack, x, tq, V),
                         lambda x: parameter_derivative(stack, x, tv, V), X0, Ehat, 1 if V is not None else 2,
                         math.sqrt(X0.shape[-2]) * float(xbar.norm()))


def spread_curve(stack, xbar: torch.Tensor, direction: torch.Tensor, V: torch.Tensor,
                 spreads) -> list[dict]:
    """e(s) of the factorised form along ``direction`` at each spread: rows {s, error}."""
    action = mf.JacobianAction(stack, xbar)
    return [{"s": float(s), "error": factorised_error(stack, at_spread(xbar, direction, float(s)), V, action)}
            for s in spreads]


# ---- 2.4: the Q/K derivative off the reference -----------------------------------------------
def relative_tangents(stack, leaves, seed: int) -> dict[str, torch.Tensor]:
    """A Gaussian tangent for every parameter whose leaf name is in ``leaves``, scaled per tensor to
    the tensor's own Frobenius norm (a unit relative perturbation of each weight matrix)."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, p in stack.named_parameters():
        if name.rsplit(".", 1)[-1] in leaves:
            z = torch.randn(p.shape, generator=g, dtype=torch.float64, device="cpu").to(p)
            out[name] = z * (p.detach().norm() / z.norm())
    return out


def parameter_derivative(stack, X: torch.Tensor, tangents: dict, V: torch.Tensor | None = None) -> torch.Tensor:
    """∂f(X)[δθ] (V None) or ∂(J(X)V)[δθ] (V (T, d)): the output's, or the Jacobian action's, change
    along the parameter tangent ``tangents`` (forward mode, nested for the Jacobian)."""
    names = list(tangents)
    base = {n: p.detach() for n, p in stack.named_parameters()}

    def out(*ps):
        f = lambda x: functional_call(stack, {**base, **dict(zip(names, ps))}, (x,))  # noqa: E731
        return f(X) if V is None else jvp(f, (X,), (V,))[1]

    with mf_unchecked(stack), torch.no_grad():
        return jvp(out, tuple(base[n] for n in names), tuple(tangents[n] for n in names))[1]


def qk_share(stack, X: torch.Tensor, seed: int = 0, V: torch.Tensor | None = None) -> float:
    """‖∂[δθ_QK]‖ / ‖∂[δθ_VO]‖: the Q/K weights' effect against the value path's, for unit relative
    tangents of each, on the output (V None) or on the Jacobian action J(X)V."""
    qk = parameter_derivative(stack, X, relative_tangents(stack, QK, seed), V)
    vo = parameter_derivative(stack, X, relative_tangents(stack, VALUE, seed + 1), V)
    return pooled_ratio(qk, vo)


# ---- real trajectories ---------------------------------------------------------------------
def trajectory_spreads(stack, X: torch.Tensor) -> torch.Tensor:
    """s_ℓ of X_0 .. X_L for inputs X (..., T, d): shape (L+1, ...)."""
    with torch.no_grad(), mf_unchecked(stack):
        return token_spread(stack.trajectory(X))


# ---- 3.2(a): the coarse-graining identity off the reference -------------------------------------
def coarse_residual_expansion(stack, xbar: torch.Tensor, direction: torch.Tensor, V: torch.Tensor, P: int):
    """3.2(a) along ``direction``: ‖Π J(X)(I − Q)V‖ / ‖J(X)V‖ (Π block-mean pooling, Q = Π⁺Π), exactly 0 at
    1x̄ᵀ for kernels with ΠA(I − Q) = 0 (full, block); order 1 off it.  Returns (Expansion, measure(X))."""
    from numerics.families.coarse_graining import pooling

    T = V.shape[-2]
    Pi, _, Q = pooling(T, P, V.dtype, V.device)
    W = V - Q @ V                                           # (I − Q)V: the within-block deviations
    f = _forward(stack)
    X0 = xbar.expand(T, -1).clone()
    Ehat = centred_direction(direction).to(X0.dtype)

    def num(x):
        return Pi @ vmap(lambda w: jvp(f, (x,), (w,))[1])(W)

    def den(x):
        return vmap(lambda v: jvp(f, (x,), (v,))[1])(V)

    def measure(X):
        with mf_unchecked(stack), torch.no_grad():
            return pooled_ratio(num(X), den(X))

    with mf_unchecked(stack):
        ex = expansion(num, den, X0, Ehat, 1, math.sqrt(T) * float(xbar.norm()))
    return ex, measure
