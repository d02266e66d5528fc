"""Claim 5.3: an a priori upper bound for the gate — where the slow path provably expands (docs/theory.md §5).

Claim 5.1's g* is a *lower* bound: for |g| < g* the gated product Π_ℓ(G_ℓ + hgK_ℓ) is non-expanding.
Its measured onset of expansion g_on ≥ g* says how tight it is.  An upper bound needs a lower bound on
the norm of a product from per-layer data, which norms do not give (‖AB‖ can vanish while ‖A‖, ‖B‖ do
not); the determinant does, because it is multiplicative:

    ‖Π_ℓ M_ℓ‖₂ ≥ ρ(Π_ℓ M_ℓ) ≥ |det Π_ℓ M_ℓ|^{1/N} = exp(S(g)/N),
    S(g) = Σ_ℓ log|det(G_ℓ + hgK_ℓ)| = Σ_ℓ [log|det G_ℓ| + Σ_i log|1 + hgμ_{ℓ,i}|],

μ_{ℓ,i} the eigenvalues of G_ℓ⁻¹K_ℓ (N × N maps on the slow modes).  So every g with S(g) > 0 expands
the slow path — in norm and in spectral radius — and with g⁺ the smallest such |g| (per sign),
g* ≤ g_on ≤ g⁺: the onset lies between two numbers computed from per-layer data alone, with no
product of layers.  Equality g* = g_on = g⁺ holds for scalar systems (G_ℓ = a_ℓI, K_ℓ = k_ℓI); for
diagonal systems with direction-dependent rates the onset is the smallest per-direction root and g⁺
the root of their average, so g⁺/g_on is predicted in closed form (the negative control).

Assumptions: every G_ℓ invertible (S is finite at g = 0); S(0) < 0 (the stack does not already expand
by the determinant); spectral norms.
"""

from __future__ import annotations

import sympy as sp
from sympy import Symbol

FAMILY = "gate_bounds"

h = Symbol("h", positive=True)
g = Symbol("g", real=True)
mu_re, mu_im = sp.symbols("mu_re mu_im", real=True)   # an eigenvalue μ = mu_re + i·mu_im of G⁻¹K
S = Symbol("S", real=True)                            # S(g) = Σ_ℓ log|det(G_ℓ + hgK_ℓ)|
N = Symbol("N", positive=True)                        # slow modes


def log_abs_factor_expr():
    """log|1 + hgμ| = ½ log((1 + hg Re μ)² + (hg Im μ)²): one eigenvalue's term of S(g)."""
    return sp.log((1 + h * g * mu_re) ** 2 + (h * g * mu_im) ** 2) / 2


def det_norm_bound_expr():
    """exp(S/N): the lower bound |det P|^{1/N} on ‖P‖₂ and ρ(P)."""
    return sp.exp(S / N)


def generated_functions():
    from theory.codegen import GenFunction

    return [
        GenFunction("log_abs_factor", (mu_re, mu_im, h, g), log_abs_factor_expr(), "5.3",
                    "log|1 + hgμ| = ½ log((1 + hg Re μ)² + (hg Im μ)²): one eigenvalue μ of G_ℓ⁻¹K_ℓ in S(g)."),
        GenFunction("det_norm_bound", (S, N), det_norm_bound_expr(), "5.3",
                    "exp(S/N) = |det Π_ℓ(G_ℓ + hgK_ℓ)|^{1/N} ≤ ρ ≤ ‖Π_ℓ(G_ℓ + hgK_ℓ)‖₂."),
    ]


# ---- symbolic proofs: each returns a list of (name, proved, method, detail) -------------
def prove_det_factorises(n: int = 2):
    """det(G + hgK) = det G · Π_i(1 + hgμ_i), μ_i the eigenvalues of G⁻¹K (explicit n × n, symbolic G, K):
    det(G + tK) = det G · det(I + tM), M = G⁻¹K, and det(I + tM) = Π(1 + tμ_i) is the characteristic
    polynomial of M at −1/t times (−t)ⁿ: checked by comparing the polynomial in t coefficient-wise."""
    Gm = sp.Matrix(n, n, sp.symbols(f"G0:{n * n}", real=True))
    Km = sp.Matrix(n, n, sp.symbols(f"K0:{n * n}", real=True))
    t, x = sp.symbols("t x")
    M = Gm.inv() * Km
    lhs = sp.cancel((Gm + t * Km).det() / Gm.det())
    # Π(1 + tμ_i) = (−t)ⁿ charpoly_M(−1/t), with charpoly(x) = det(xI − M)
    rhs = sp.expand((-t) ** n * M.charpoly(x).as_expr().subs(x, -1 / t))
    ok = sp.simplify(lhs - rhs) == 0
    return [("det(G + tK)/det G = Π_i(1 + tμ_i), μ = eig(G⁻¹K)", ok, "simplify", f"n={n}, G, K symbolic")]


def prove_log_modulus():
    """|1 + hgμ|² = (1 + hg Re μ)² + (hg Im μ)² for complex μ, so log|1 + hgμ| is the generated term."""
    z = 1 + h * g * (mu_re + sp.I * mu_im)
    ok = sp.simplify(sp.expand(z * sp.conjugate(z)) - ((1 + h * g * mu_re) ** 2 + (h * g * mu_im) ** 2)) == 0
    return [("|1 + hgμ|² = (1 + hg Re μ)² + (hg Im μ)²", ok, "simplify", "μ complex, h, g real")]


def prove_det_below_radius(n: int = 3):
    """|det P| = Π|λ_i| ≤ ρ(P)ⁿ (each |λ_i| ≤ ρ), and ρ(P) ≤ ‖P‖₂: here |λ_i| = ρ·s_i with 0 ≤ s_i ≤ 1, so
    ρⁿ − Π|λ_i| = ρⁿ(1 − Π s_i) ≥ 0 (symbolic n = 3)."""
    rho = Symbol("rho", positive=True)
    s = sp.symbols(f"s0:{n}", nonnegative=True)
    gap = sp.expand(rho ** n - sp.prod([rho * si for si in s]))
    ok = sp.simplify(gap - rho ** n * (1 - sp.prod(s))) == 0
    return [("|det P| ≤ ρ(P)^N ≤ ‖P‖^N", ok, "simplify",
             f"N = {n}: ρ^N − Π(ρ s_i) = ρ^N (1 − Π s_i) ≥ 0 for 0 ≤ s_i ≤ 1; ρ ≤ ‖·‖ for any operator norm")]


def scalar_gate_root(a, k, hh):
    """The root of Σ_ℓ log(a_ℓ + h g k_ℓ) = 0 for one direction (a_ℓ, k_ℓ > 0): the common value of g*, the
    onset and g⁺ for scalar systems, and the per-direction root of diagonal ones."""
    gg = Symbol("gg", positive=True)
    return sp.nsolve(sum(sp.log(ai + hh * gg * ki) for ai, ki in zip(a, k)), gg, 1.0)


def all_proofs():
    return tuple(prove_det_factorises() + prove_log_modulus() + prove_det_below_radius())
