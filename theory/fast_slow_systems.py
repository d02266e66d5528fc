"""The fast–slow systems of Claim 6.1 (docs/theory.md §6): ε ẋ = f(x, y), ẏ = g(x, y) with ε = 1/P.

``FastSlowSystem`` holds f, g and their symbols; the test systems are (a) a scalar linear system
with a closed-form manifold, (b) Michaelis–Menten kinetics, (c) the linearised attention-coupled
block model, (d) a control whose fast subsystem repels.  ``theory.slow_manifold`` expands their
slow manifolds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp
from sympy import Matrix, Rational, Symbol, symbols

EPS = Symbol("epsilon", positive=True)


@dataclass
class FastSlowSystem:
    """ε ẋ = f(x, y), ẏ = g(x, y) with x, y, f, g SymPy column Matrices.

    ``phi0`` fixes the branch of f(φ₀, y) = 0 (None: solve for it); ``params`` maps
    symbolic parameters to the values the numerics use; ``y_domain`` is a list of
    y points (dicts) at which Tikhonov's conditions are checked when they are not
    decided symbolically.
    """

    name: str
    x: Matrix
    y: Matrix
    f: Matrix
    g: Matrix
    phi0: Matrix | None = None
    params: dict = field(default_factory=dict)
    y_domain: list = field(default_factory=list)
    doc: str = ""

    def __post_init__(self):
        for attr in ("x", "y", "f", "g"):
            if not isinstance(getattr(self, attr), sp.MatrixBase) or getattr(self, attr).shape[1] != 1:
                raise ValueError(f"{attr} must be a SymPy column Matrix")
        if self.f.shape[0] != self.x.shape[0]:
            raise ValueError(f"f has {self.f.shape[0]} rows but x has {self.x.shape[0]}")
        if self.g.shape[0] != self.y.shape[0]:
            raise ValueError(f"g has {self.g.shape[0]} rows but y has {self.y.shape[0]}")

    def at_params(self) -> "FastSlowSystem":
        """The same system with its parameters replaced by their numeric values."""
        sub = self.params
        return FastSlowSystem(self.name, self.x, self.y, self.f.subs(sub), self.g.subs(sub),
                              None if self.phi0 is None else self.phi0.subs(sub), {},
                              self.y_domain, self.doc)


LINEAR_PARAMS = (*symbols("a b", positive=True), *symbols("c d", real=True))


def linear_system() -> FastSlowSystem:
    """ε ẋ = −a x + b y, ẏ = c x + d y (scalar).

    The invariant line x = h(ε) y solves ε h (c h + d) = −a h + b, i.e.
    ε c h² + (ε d + a) h − b = 0, whose root analytic at ε = 0 is the closed form
    h(ε) = 2b / ((ε d + a) + √((ε d + a)² + 4 ε b c)).  With a = b = 1, c = −1, d = 0 the
    coefficients of h are the Catalan numbers (radius of convergence 1/4); the
    numerics use c = −1/4 (radius 1), so that ε ≤ 1/16 is well inside it.
    """
    a, b, c, d = LINEAR_PARAMS
    x, y = Symbol("x", real=True), Symbol("y", real=True)
    return FastSlowSystem("linear", Matrix([x]), Matrix([y]), Matrix([-a * x + b * y]),
                          Matrix([c * x + d * y]),
                          params={a: 1, b: 1, c: Rational(-1, 4), d: Rational(-1, 2)},
                          doc=linear_system.__doc__)


def linear_exact_manifold() -> sp.Expr:
    """The closed-form slope h(ε) of the linear system's invariant line (see ``linear_system``)."""
    a, b, c, d = LINEAR_PARAMS
    return 2 * b / ((EPS * d + a) + sp.sqrt((EPS * d + a) ** 2 + 4 * EPS * b * c))


def michaelis_menten() -> FastSlowSystem:
    """Michaelis–Menten kinetics in the standard nondimensional form.

        ds/dt = −s + (s + K − λ) c,      ε dc/dt = s − (s + K) c,

    s the substrate (slow), c the complex (fast), ε = e₀/s₀, K = (k₋₁ + k₂)/(k₁ s₀),
    λ = k₂/(k₁ s₀), 0 < λ < K.  Published first terms (Heineken, Tsuchiya & Aris,
    Math. Biosci. 1 (1967) 95–113; Segel & Slemrod, SIAM Rev. 31 (1989) 446–477):

        c = s/(s + K) + ε K λ s/(s + K)⁴ + O(ε²).
    """
    s, c = Symbol("s", positive=True), Symbol("c", real=True)
    K, lam = symbols("K lambda", positive=True)
    return FastSlowSystem("michaelis_menten", Matrix([c]), Matrix([s]),
                          Matrix([s - (s + K) * c]), Matrix([-s + (s + K - lam) * c]),
                          params={K: 1, lam: Rational(1, 2)}, doc=michaelis_menten.__doc__)


def michaelis_menten_published() -> list[sp.Expr]:
    """[φ₀, φ₁] of Michaelis–Menten as published (HTA 1967, Segel–Slemrod 1989)."""
    s = Symbol("s", positive=True)
    K, lam = symbols("K lambda", positive=True)
    return [s / (s + K), K * lam * s / (s + K) ** 4]


# The linearised attention-coupled block model (module docstring of ``block_model``).
BLOCK_A = Matrix([[1, Rational(1, 2)], [Rational(-1, 2), 1]])
BLOCK_G = Matrix([[1, 0], [Rational(1, 2), 1]])
BLOCK_B = Matrix([[Rational(1, 2), 0], [Rational(1, 4), Rational(1, 2)]])
BLOCK_D = Matrix([[1, Rational(1, 4)], [0, 1]])


def block_model(fast_matrix: Matrix = BLOCK_A) -> FastSlowSystem:
    """The linearised attention-coupled block model (docs/theory.md §0, §6), two features.

    Reduction.  Linearise the hierarchical layer at the token-homogeneous reference
    and keep a two-dimensional feature subspace.  The fast variable x ∈ R² is a
    token's state in that subspace: per token (one token = ε = 1/P units of slow
    time) the fast path relaxes it with rate matrix A (decay minus the value gain,
    restricted to the subspace; −A Hurwitz) towards the lifted, gated slow-path
    output G y (G = g·W_slow).  The slow variable y ∈ R² is the block mode read by
    block-mean pooling: it is fed by the pooled token state through B and damped by D.

        ε ẋ = −A x + G y,      ẏ = B x − D y.

    The manifold is the line x = H(ε) y with ε H (B H − D) = −A H + G; φ₀ = A⁻¹G y.
    ``fast_matrix`` replaces A (the control uses one with a negative eigenvalue).
    """
    x = Matrix(symbols("x1 x2", real=True))
    y = Matrix(symbols("y1 y2", real=True))
    return FastSlowSystem("block", x, y, -fast_matrix * x + BLOCK_G * y, BLOCK_B * x - BLOCK_D * y,
                          doc=block_model.__doc__)


def repelling_control() -> FastSlowSystem:
    """Control: ε ẋ = (x − y)(1 − (x − y)²), ẏ = −x/2 on the branch φ₀ = y.

    f_x(φ₀) = +1: the branch is repelling (Tikhonov's attracting condition fails);
    trajectories leave it for the attracting branches x = y ± 1, so dist(x, φ^{(k)}(y))
    stays O(1) however small ε is.
    """
    x, y = Symbol("x", real=True), Symbol("y", real=True)
    u = x - y
    return FastSlowSystem("control", Matrix([x]), Matrix([y]), Matrix([u * (1 - u ** 2)]),
                          Matrix([-x / 2]), phi0=Matrix([y]), doc=repelling_control.__doc__)
