"""Fast–slow systems along tokens: slow manifolds, the master equation, the P² cost (docs/theory.md §6).

With ε = 1/P the fast variable x (token rate) and the slow variable y (block rate)
obey ε ẋ = f(x, y), ẏ = g(x, y).

Claim 6.1 (singular-perturbation expansion).  The slow manifold x = φ(y; ε) =
φ₀(y) + εφ₁(y) + ε²φ₂(y) + … solves the invariance equation
ε Dφ(y) g(φ, y) = f(φ, y): f(φ₀, y) = 0, φ₁ = f_x⁻¹ Dφ₀ g(φ₀, y), and in general φ_j
solves the linear equation f_x(φ₀, y) φ_j = (known terms of order j).  It is the
attracting manifold of the flow when Tikhonov's conditions hold along φ₀: the root
is isolated (det f_x ≠ 0) and attracting (every eigenvalue of f_x in the open left
half-plane, checked by the Routh–Hurwitz minors of its characteristic polynomial).
Then after a boundary layer of width O(ε |log ε|), dist(x, φ^{(k)}(y)) = O(ε^{k+1})
and the reduced flow ẏ = g(φ₀(y), y) tracks y with error O(ε).

Claim 6.2 (linear generator).  For f(x, y) = Q(y)ᵀ x with Q(y) an irreducible
generator, φ₀(y) = p_st(y), the master equation's stationary distribution (the
one-dimensional nullspace of Q(y)ᵀ, normalised by 1ᵀp = 1).  A reducible Q with two
closed classes has a two-dimensional nullspace: no unique slow manifold.

Claim 6.3 (cost).  The slow path attends over n = T/P block tokens: its score and
mixing products cost P² less than the fast path's, its projections P less.  FLOPs
are counted as 2·m·k·n per (m×k)(k×n) product (torch's FlopCounterMode convention);
elementwise work (softmax, pooling, bias) is not counted.

The solver ``expand_slow_manifold`` works for any SymPy f, g (column Matrices); the
test systems (``theory/fast_slow_systems.py``; Tikhonov's conditions: ``theory/tikhonov.py``) are (a) a scalar linear system with a closed-form manifold,
(b) Michaelis–Menten kinetics, (c) the linearised attention-coupled block model,
(d) a control whose fast subsystem repels, (e) 2- and 3-state master equations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import sympy as sp
from sympy import Matrix, Rational, Symbol, exp, symbols

from theory.fast_slow_systems import (  # noqa: F401  (the family's systems, importable from here)
    BLOCK_A, BLOCK_B, BLOCK_D, BLOCK_G, EPS, LINEAR_PARAMS, FastSlowSystem, block_model, linear_exact_manifold,
    linear_system, michaelis_menten, michaelis_menten_published, repelling_control)
from theory.tikhonov import TikhonovCondition, TikhonovReport, hurwitz_minors, tikhonov_conditions  # noqa: F401

FAMILY = "slow_manifold"
ORDERS = (0, 1, 2)  # orders whose truncations the numerics evaluate (Claim 6.1: slopes 1, 2, 3)


@dataclass
class SlowManifoldExpansion:
    """φ₀ … φ_k of the slow manifold, how φ₀ was found, and Tikhonov's verdict.

    ``implicit`` expansions are written in the symbols ``p`` standing for φ₀(y), with
    Dφ₀ = −f_x⁻¹ f_y (implicit function theorem); φ₀ itself is then found numerically
    by iterating the Newton step ``newton_step`` (x ↦ x − f_x⁻¹ f).
    """

    system: FastSlowSystem
    terms: list[Matrix]
    phi0_method: str  # "symbolic" | "newton"
    tikhonov: TikhonovReport | None
    p: Matrix | None = None
    newton_step: Matrix | None = None

    @property
    def order(self) -> int:
        return len(self.terms) - 1

    @property
    def implicit(self) -> bool:
        return self.phi0_method == "newton"

    def truncated(self, k: int) -> Matrix:
        """φ^{(k)} = Σ_{j ≤ k} ε^j φ_j."""
        if not 0 <= k <= self.order:
            raise ValueError(f"k={k} must lie in 0..{self.order} (the expansion's order)")
        return sum((EPS ** j * self.terms[j] for j in range(k + 1)), sp.zeros(*self.terms[0].shape))


def _solve_phi0(system: FastSlowSystem, branch: int | None):
    try:
        sols = sp.solve(list(system.f), list(system.x), dict=True)
    except NotImplementedError:
        return None
    if not sols or any(set(s) != set(system.x) for s in sols):
        return None
    roots = [Matrix([s[xi] for xi in system.x]) for s in sols]
    if len(roots) > 1 and branch is None:
        raise ValueError(f"f(φ₀, y) = 0 has {len(roots)} branches {[list(r) for r in roots]}: "
                         "choose one with branch= or phi0=")
    return roots[branch or 0]


def invariance_residual(system: FastSlowSystem, phi: Matrix, dphi: Matrix) -> Matrix:
    """ε Dφ g(φ, y) − f(φ, y) for a candidate φ(y; ε) and its y-Jacobian Dφ."""
    sub = dict(zip(system.x, phi))
    return EPS * dphi * system.g.subs(sub, simultaneous=True) - system.f.subs(sub, simultaneous=True)


def expand_slow_manifold(system: FastSlowSystem, order: int, *, phi0: Matrix | None = None,
                         branch: int | None = None, implicit: bool = False) -> SlowManifoldExpansion:
    """Solve ε Dφ g(φ, y) = f(φ, y) order by order up to ε^order.

    φ₀: ``phi0``, else the system's own branch, else SymPy's solve (``branch`` picks
    among several roots); if SymPy cannot solve f = 0, or ``implicit=True``, the
    expansion is written in symbols p = φ₀(y) with Dφ₀ = −f_x⁻¹ f_y and φ₀ is left to
    the generated Newton step.  For j ≥ 1, φ_j solves the linear equation obtained
    from the ε^j coefficient of the invariance residual, f_x(φ₀, y) φ_j = r_j.
    """
    if isinstance(order, bool) or not isinstance(order, int) or order < 0:
        raise ValueError(f"order={order!r} must be a non-negative integer")
    x, y, f = system.x, system.y, system.f
    m = x.shape[0]
    root = None if implicit else (phi0 if phi0 is not None else system.phi0)
    if root is None and not implicit:
        root = _solve_phi0(system, branch)
    p, newton = None, None
    if root is None:  # the Newton route
        p = Matrix(symbols(f"p1:{m + 1}", real=True))
        fx_p = f.jacobian(x).subs(dict(zip(x, p)))
        dphi0 = -fx_p.LUsolve(f.jacobian(y).subs(dict(zip(x, p))))
        root = p
        fx = f.jacobian(x)
        newton = sp.simplify(x - fx.LUsolve(f))

        def total_derivative(expr: Matrix) -> Matrix:
            return expr.jacobian(y) + expr.jacobian(p) * dphi0
    else:
        root = Matrix(root)

        def total_derivative(expr: Matrix) -> Matrix:
            return expr.jacobian(y)

    tik = None if p is not None else tikhonov_conditions(system, root)
    terms = [sp.simplify(root)]
    derivs = [total_derivative(terms[0])]
    for j in range(1, order + 1):
        z = Matrix(symbols(f"z1:{m + 1}"))
        phi = sum((EPS ** i * terms[i] for i in range(j)), sp.zeros(m, 1)) + EPS ** j * z
        dphi = sum((EPS ** i * derivs[i] for i in range(j)), sp.zeros(*derivs[0].shape))
        resid = invariance_residual(system, phi, dphi)
        coeff = resid.applyfunc(lambda e: sp.diff(e, EPS, j).subs(EPS, 0) / sp.factorial(j))
        A, rhs = sp.linear_eq_to_matrix(list(coeff), list(z))
        term = A.LUsolve(rhs).applyfunc(lambda e: sp.factor(sp.cancel(e)))
        terms.append(term)
        derivs.append(total_derivative(term))
    return SlowManifoldExpansion(system, terms, "newton" if p is not None else "symbolic", tik, p, newton)


def residual_order_ok(expansion: SlowManifoldExpansion) -> bool:
    """The invariance residual of φ^{(k)} is O(ε^{k+1}): its ε^0..ε^k coefficients vanish exactly."""
    sysm, k = expansion.system, expansion.order
    phi = expansion.truncated(k)
    if expansion.implicit:
        raise ValueError("residual_order_ok needs an explicit φ₀; compare implicit terms after substituting φ₀")
    resid = invariance_residual(sysm, phi, phi.jacobian(sysm.y))
    for j in range(k + 1):
        coeff = resid.applyfunc(lambda e: sp.diff(e, EPS, j).subs(EPS, 0))
        if not all(sp.simplify(c) == 0 for c in coeff):
            return False
    return True


# --------------------------------------------------------------------------- proofs used by the ledger

def linear_series_matches_exact(order: int = 3) -> bool:
    """φ^{(k)} of the linear system equals the Taylor polynomial of the exact manifold h(ε) y."""
    system = linear_system()
    exp_ = expand_slow_manifold(system, order)
    y = system.y[0]
    series = sp.series(linear_exact_manifold() * y, EPS, 0, order + 1).removeO()
    return sp.simplify(exp_.truncated(order)[0] - series) == 0


def michaelis_menten_matches_published() -> bool:
    """φ₀, φ₁ of Michaelis–Menten equal the published HTA / Segel–Slemrod terms (K, λ symbolic)."""
    terms = expand_slow_manifold(michaelis_menten(), 1).terms
    return all(sp.simplify(t[0] - pub) == 0 for t, pub in zip(terms, michaelis_menten_published()))


def implicit_matches_explicit(system: FastSlowSystem, order: int = 2) -> bool:
    """The Newton-route (implicit) expansion, with p = φ₀(y) substituted, equals the explicit one."""
    explicit = expand_slow_manifold(system, order)
    implicit = expand_slow_manifold(system, order, implicit=True)
    sub = dict(zip(implicit.p, explicit.terms[0]))
    return all(sp.simplify(ti.subs(sub) - te) == sp.zeros(*te.shape)
               for ti, te in zip(implicit.terms, explicit.terms))


# --------------------------------------------------------------------------- Claim 6.2: master equation

@dataclass
class StationaryResult:
    """p_st of Q (nullspace of Qᵀ with 1ᵀp = 1); ``unique`` False names the violated condition."""

    p: Matrix | None
    nullity: int
    unique: bool
    detail: str


def stationary_distribution(Q: Matrix) -> StationaryResult:
    """Solve Qᵀp = 0, 1ᵀp = 1; a nullspace of dimension ≠ 1 means no unique slow manifold."""
    if Q.shape[0] != Q.shape[1]:
        raise ValueError(f"Q must be square, got shape {Q.shape}")
    if not all(sp.simplify(s) == 0 for s in Q * sp.ones(Q.shape[0], 1)):
        raise ValueError("Q is not a generator: its rows must sum to 0")
    null = Q.T.nullspace(simplify=True)
    if len(null) != 1:
        return StationaryResult(None, len(null), False,
                                f"irreducibility violated: nullspace of Q(y)ᵀ has dimension {len(null)} "
                                f"(≠ 1), so f(x, y) = Q(y)ᵀx = 0 has no unique normalised root: "
                                "no unique slow manifold")
    v = null[0]
    p = (v / sum(v)).applyfunc(lambda e: sp.factor(sp.cancel(e)))
    return StationaryResult(p, 1, True, "nullspace of Q(y)ᵀ is one-dimensional")


def generator(rates: dict[tuple[int, int], sp.Expr], n: int) -> Matrix:
    """The generator with off-diagonal rates q_ij = rates[(i, j)] (0-based) and zero row sums."""
    Q = sp.zeros(n, n)
    for (i, j), q in rates.items():
        if i == j:
            raise ValueError(f"rates[({i}, {j})]: a rate needs i ≠ j")
        Q[i, j] = q
    for i in range(n):
        Q[i, i] = -sum(Q[i, j] for j in range(n) if j != i)
    return Q


def two_state_generator() -> tuple[Matrix, Symbol]:
    """2-state chain with arbitrary positive rate functions a(y) (1→2) and b(y) (2→1)."""
    y = Symbol("y", real=True)
    a, b = sp.Function("a", positive=True)(y), sp.Function("b", positive=True)(y)
    return generator({(0, 1): a, (1, 0): b}, 2), y


CHAIN_Y = Matrix(symbols("y1 y2", real=True))


def three_state_generator() -> Matrix:
    """3-state chain with Arrhenius-type rates q_ij(y) = exp(θ_ij·y) (all positive: irreducible)."""
    y1, y2 = CHAIN_Y
    return generator({(0, 1): exp(y1), (1, 0): 1, (1, 2): exp(y2), (2, 1): exp(-y1) / 2,
                      (0, 2): Rational(1, 2), (2, 0): exp(y2 - y1)}, 3)


def reducible_generator() -> Matrix:
    """Control: two closed classes {1, 2} and {3} (no transitions between them)."""
    y1, y2 = CHAIN_Y
    return generator({(0, 1): exp(y1), (1, 0): 1}, 3)


def three_state_symbolic_generator() -> tuple[Matrix, dict]:
    """3-state chain with independent positive rate symbols q_ij (for the tree formula)."""
    q = {(i, j): Symbol(f"q{i + 1}{j + 1}", positive=True) for i in range(3) for j in range(3) if i != j}
    return generator(q, 3), q


def markov_tree_formula(q: dict) -> Matrix:
    """p_st of a 3-state chain by the Markov chain tree theorem: p_i ∝ Σ spanning trees rooted at i."""
    w1 = q[(1, 0)] * q[(2, 0)] + q[(1, 2)] * q[(2, 0)] + q[(2, 1)] * q[(1, 0)]
    w2 = q[(0, 1)] * q[(2, 1)] + q[(0, 2)] * q[(2, 1)] + q[(2, 0)] * q[(0, 1)]
    w3 = q[(0, 2)] * q[(1, 2)] + q[(0, 1)] * q[(1, 2)] + q[(1, 0)] * q[(0, 2)]
    total = w1 + w2 + w3
    return Matrix([w1, w2, w3]) / total


def chain_system(Q: Matrix, name: str) -> FastSlowSystem:
    """ε ẋ = Q(y)ᵀ x (the master equation at token rate), ẏ = slow drift read from x.

    The drift ẏ₁ = x₁ − x₃ − y₁/2, ẏ₂ = x₂ − y₂/2 keeps y bounded.
    """
    x = Matrix(symbols("x1 x2 x3", real=True))
    y1, y2 = CHAIN_Y
    g = Matrix([x[0] - x[2] - y1 / 2, x[1] - y2 / 2])
    return FastSlowSystem(name, x, Matrix(CHAIN_Y), Q.T * x, g, doc=chain_system.__doc__)


def chain_reduced_system(Q: Matrix) -> FastSlowSystem:
    """The master equation on the simplex: x₃ = 1 − x₁ − x₂ eliminated (1ᵀx is conserved).

    Its Jacobian has the nonzero eigenvalues of Qᵀ, so the general solver and
    Tikhonov's conditions apply; φ₀ must equal p_st's first two entries.
    """
    full = chain_system(Q, "chain3_simplex")
    x1, x2, x3 = full.x
    sub = {x3: 1 - x1 - x2}
    rng = [{CHAIN_Y[0]: Rational(a, 2), CHAIN_Y[1]: Rational(b, 2)} for a in (-2, 0, 2) for b in (-2, 0, 2)]
    return FastSlowSystem("chain3_simplex", Matrix([x1, x2]), full.y, full.f[:2, :].subs(sub),
                          full.g.subs(sub), y_domain=rng)


# --------------------------------------------------------------------------- Claim 6.3: cost model

T_, P_, d_, H_, m_ = symbols("T P d heads mlp_width", positive=True, integer=True)


def attention_flops(T, d) -> dict[str, sp.Expr]:
    """Matmul FLOPs of numerics.stacks.stack.Attention on T tokens of width d (any number of heads).

    Q, K, V projections: 3 · 2·T·d·d_k·heads = 6Td²; scores q kᵀ: heads · 2·T²·d_k = 2T²d;
    mixing A v: 2T²d; output projection: 2Td².  (d_k · heads = d.)
    """
    return {"projections": 8 * T * d ** 2, "scores_mixing": 4 * T ** 2 * d}


def cost_model() -> dict[str, sp.Expr]:
    """Fast attention over T tokens vs the slow path over n = T/P block tokens (per layer)."""
    fast = attention_flops(T_, d_)
    slow = attention_flops(T_ / P_, d_)
    mlp = 4 * T_ * d_ * m_  # two products (T×d)(d×m), (T×m)(m×d)
    return {
        "fast_projections": fast["projections"], "fast_scores_mixing": fast["scores_mixing"],
        "slow_projections": slow["projections"], "slow_scores_mixing": slow["scores_mixing"],
        "fast_attention": sum(fast.values()), "slow_attention": sum(slow.values()), "mlp": mlp,
        "ratio_scores_mixing": sp.simplify(fast["scores_mixing"] / slow["scores_mixing"]),
        "ratio_projections": sp.simplify(fast["projections"] / slow["projections"]),
        "ratio_attention": sp.factor(sum(fast.values()) / sum(slow.values())),
        "slow_overhead": sp.factor(sum(slow.values()) / (sum(fast.values()) + mlp)),
    }


# --------------------------------------------------------------------------- generated functions

SYSTEMS = ("linear", "michaelis_menten", "block", "control")


@lru_cache(maxsize=None)
def numeric_system(name: str) -> FastSlowSystem:
    """The test system ``name`` with its numeric parameters substituted."""
    makers = {"linear": linear_system, "michaelis_menten": michaelis_menten, "block": block_model,
              "control": repelling_control,
              "chain3": lambda: chain_system(three_state_generator(), "chain3"),
              "chain3_reducible": lambda: chain_system(reducible_generator(), "chain3_reducible")}
    if name not in makers:
        raise ValueError(f"system={name!r} is not one of {', '.join(makers)}")
    return makers[name]().at_params()


@lru_cache(maxsize=None)
def numeric_expansion(name: str, order: int = max(ORDERS)) -> SlowManifoldExpansion:
    return expand_slow_manifold(numeric_system(name), order)


def _gen_system(name: str, claim: str) -> list:
    from theory.codegen import GenFunction

    sysm = numeric_system(name)
    args = tuple(sysm.x) + tuple(sysm.y) + (EPS,)
    rhs = Matrix.vstack(sysm.f / EPS, sysm.g)
    out = [GenFunction(f"{name}_rhs", args, rhs, claim,
                       f"[f/ε; g] of the {name} system: d(x, y)/dt, shape (..., {rhs.shape[0]}, 1)."),
           GenFunction(f"{name}_jac", args, rhs.jacobian(Matrix(args[:-1])), claim,
                       f"Jacobian of {name}_rhs in (x, y)."),
           ]
    if name.startswith("chain3"):
        return out
    expn = numeric_expansion(name)
    yargs = tuple(sysm.y) + (EPS,)
    for k in ORDERS:
        out.append(GenFunction(f"{name}_phi{k}", yargs, expn.truncated(k), claim,
                               f"Truncated slow manifold φ^({k})(y) = Σ_(j≤{k}) ε^j φ_j of the {name} system."))
    reduced = sysm.g.subs(dict(zip(sysm.x, expn.terms[0])), simultaneous=True)
    out.append(GenFunction(f"{name}_reduced", tuple(sysm.y), reduced, claim,
                           f"Tikhonov's reduced flow g(φ₀(y), y) of the {name} system."))
    return out


def generated_functions() -> list:
    from theory.codegen import GenFunction

    out = []
    for name in SYSTEMS:
        out += _gen_system(name, "6.1")
    mm = expand_slow_manifold(michaelis_menten().at_params(), 1, implicit=True)
    out.append(GenFunction("michaelis_menten_newton_step", (Symbol("c", real=True), Symbol("s", positive=True)),
                           mm.newton_step, "6.1",
                           "One Newton step c ↦ c − f_c⁻¹ f(c, s) towards φ₀(s) (the Newton route)."))
    out.append(GenFunction("michaelis_menten_phi1_implicit", (mm.p[0], Symbol("s", positive=True)),
                           mm.terms[1], "6.1", "φ₁ written in p = φ₀(s) (implicit function theorem)."))
    out += _gen_system("chain3", "6.2") + _gen_system("chain3_reducible", "6.2")
    pst = stationary_distribution(three_state_generator()).p
    out.append(GenFunction("chain3_stationary", tuple(CHAIN_Y), pst, "6.2",
                           "p_st(y) of the 3-state chain: Q(y)ᵀp = 0, 1ᵀp = 1."))
    cm = cost_model()
    for key in ("fast_attention", "slow_attention", "fast_scores_mixing", "slow_scores_mixing",
                "fast_projections", "slow_projections", "ratio_attention"):
        args = tuple(s for s in (T_, P_, d_) if s in cm[key].free_symbols)
        out.append(GenFunction(f"flops_{key}", args, cm[key], "6.3",
                               f"Matmul FLOPs model: {key.replace('_', ' ')} (2·m·k·n per product)."))
    return out
