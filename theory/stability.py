"""Stability margin and gate bound (docs/theory.md §5; Claims 5.1, 5.2) — derivations.

Setting (reconstruction, docs/theory.md §5).  Linearised with the gate g, layer ℓ acts on
the slow (block-mean) modes as G_ℓ + h g K_ℓ: G_ℓ the fast map, K_ℓ the slow path's
linearisation, h = 1/L.  With a_ℓ = ‖G_ℓ‖ > 0 and k_ℓ = ‖K_ℓ‖ ≥ 0 (any
submultiplicative norm) the gated product is bounded by

    ‖Π_ℓ (G_ℓ + h g K_ℓ)‖ ≤ Π_ℓ (a_ℓ + h|g| k_ℓ) = exp S(|g|),   S(g) = Σ_ℓ log(a_ℓ + h g k_ℓ).

* **stability margin** μ = −(1/(Lh)) Σ_ℓ log a_ℓ, so S(0) = −Lh μ;
* **gate bound** g*: the root of S(g*) = 0.  S is strictly increasing (S' > 0 as soon
  as one k_ℓ > 0) and concave (S'' < 0) on g ≥ 0, and S → ∞ as g → ∞: the root exists
  and is unique exactly when μ > 0.  Where μ ≤ 0 there is no certified gate.
* **small-h closed form** g₁ = −S(0)/S'(0) = μ / mean_ℓ(k_ℓ/a_ℓ) (≈ μ / mean k_ℓ as
  a_ℓ → 1): the Newton step from g = 0.  Because S is concave the tangent lies above
  S, so g₁ ≤ g*: the closed form is itself a safe (conservative) gate bound.
* **continuous depth**: with a_ℓ = ‖I + hF_ℓ‖ = 1 + h m(F_ℓ) + O(h²) (m the
  logarithmic norm), S(g) = h Σ (m_ℓ + g k_ℓ) + O(h²); if m(F) ≤ −μ and ‖K‖ ≤ κ the
  flow ẋ = (F + gK)x is stable for |g| < μ/κ (Grönwall).

Claim 5.2 (tightness): for aligned systems — G_ℓ, K_ℓ co-diagonal in one orthonormal
basis with positive entries and a common top direction — ‖Π(G_ℓ + hgK_ℓ)‖ = exp S(g)
for g ≥ 0, so the product expands exactly past g*.  For 2×2 systems the exact
stability boundary is the Jury (discrete: G + hgK) / Routh–Hurwitz (continuous:
F + gK) boundary; each condition is a polynomial of degree ≤ 2 in g whose
coefficients are generated here.
"""

from __future__ import annotations

import sympy as sp

FAMILY = "stability"

# Per-layer scalars: a = ‖G_ℓ‖, k = ‖K_ℓ‖, h = 1/L, g the gate (g ≥ 0: the bound uses |g|).
a, k, h, g = sp.symbols("a k h g", positive=True)
L = sp.Symbol("L", positive=True, integer=True)
mu, q = sp.symbols("mu q", positive=True)  # margin, mean(k/a)
S_val, dS_val = sp.symbols("S dS", real=True)  # S(g) and S'(g) at the current iterate
m_ln, kappa = sp.symbols("m kappa", real=True)  # logarithmic norm, slow-path bound

#: The per-layer term of S(g): S(g) = Σ_ℓ layer_log_growth(a_ℓ, k_ℓ, h, g).
LAYER_TERM = sp.log(a + h * g * k)


def layer_log_growth() -> sp.Expr:
    return LAYER_TERM


def layer_log_growth_dg() -> sp.Expr:
    """∂/∂g of the per-layer term: h k / (a + h g k)."""
    return sp.diff(LAYER_TERM, g)


def layer_margin_term() -> sp.Expr:
    """Per-layer contribution to μ = −(1/(Lh)) Σ log a_ℓ."""
    return -sp.log(a) / (L * h)


def newton_step() -> sp.Expr:
    """One Newton step on S: g − S(g)/S'(g)."""
    return g - S_val / dS_val


def small_h_gate_bound() -> sp.Expr:
    """g₁ = μ / mean(k/a): the Newton step from g = 0, written with the margin."""
    return mu / q


def continuous_gate_bound() -> sp.Expr:
    """Continuous depth: stable for |g| < μ/κ with μ = −m(F) (m the logarithmic norm)."""
    return -m_ln / kappa


def symmetric_part_expr(F):
    """(F + Fᵀ)/2: the spectral logarithmic norm is its top eigenvalue, m(F) = max_{‖x‖=1} xᵀFx."""
    return (F + F.T) / 2


# -- monotonicity, uniqueness, closed form ---------------------------------------------------

def monotonicity_steps() -> dict[str, bool]:
    """Facts about the per-layer term for a, h, g > 0, k ≥ 0 (SymPy's assumption system).

    * ``increasing``: ∂_g log(a + hgk) = hk/(a + hgk) ≥ 0 (> 0 when k > 0);
    * ``concave``: ∂²_g ≤ 0;
    * ``unbounded``: log(a + hgk) → ∞ as g → ∞ when k > 0.
    A sum of such terms with one k_ℓ > 0 is strictly increasing, concave and unbounded,
    so S(g) = 0 has exactly one root g* > 0 iff S(0) < 0, i.e. iff μ > 0.
    """
    k0 = sp.Symbol("k", nonnegative=True)
    term = LAYER_TERM.subs(k, k0)
    d1 = sp.diff(term, g)
    d2 = sp.diff(term, g, 2)
    return {
        "increasing": bool(d1.is_nonnegative) and bool(sp.diff(LAYER_TERM, g).is_positive),
        "concave": bool(d2.is_nonpositive),
        "unbounded": sp.limit(LAYER_TERM, g, sp.oo) == sp.oo,
        "S(0) = -L h mu": sp.simplify(LAYER_TERM.subs(g, 0) - (-(L * h) * layer_margin_term()) ) == 0,
    }


def closed_form_identity() -> bool:
    """−S(0)/S'(0) = μ / mean(k/a) for every L.

    Two exact steps: the summand of S'(0) is h·(k/a) (so S'(0) = h R with R = Σ k_ℓ/a_ℓ),
    and with the sums kept as opaque symbols s₀ = Σ log a_ℓ, R, the Newton step from 0,
    −s₀/(hR), equals μ/mean = (−s₀/(Lh)) / (R/L)."""
    summand_ok = sp.simplify(layer_log_growth_dg().subs(g, 0) - h * (k / a)) == 0
    s0, R = sp.symbols("s0 R", positive=True)
    lhs = newton_step().subs({g: 0, S_val: s0, dS_val: h * R})
    rhs = small_h_gate_bound().subs({mu: -s0 / (L * h), q: R / L})
    return summand_ok and sp.simplify(lhs - rhs) == 0


def closed_form_is_lower_bound() -> bool:
    """Concavity ⇒ S(g₁) ≤ S(0) + S'(0) g₁ = 0 ⇒ g₁ ≤ g* (S increasing).

    Proved on the tangent: S(0) + S'(0)·(−S(0)/S'(0)) = 0 exactly; the inequality is
    concavity (``monotonicity_steps()['concave']``)."""
    tangent_at_newton = S_val + dS_val * newton_step().subs(g, 0)
    return sp.simplify(tangent_at_newton) == 0


def continuous_limit() -> dict[str, bool]:
    """The discrete bound tends to the continuous one as h → 0.

    * per-layer term with a = 1 + h m: log(1 + h(m + g k)) = h(m + gk) + O(h²);
    * L equal layers with a = exp(h m) (the exact flow bound, m < 0): the root
      g* = (1 − e^{hm})/(hk) of S has limit −m/k = continuous_gate_bound as h → 0.
    """
    m = sp.Symbol("m", negative=True)
    first = sp.series(LAYER_TERM.subs(a, 1 + h * m), h, 0, 2).removeO()
    roots = sp.solve(sp.Eq(LAYER_TERM.subs(a, sp.exp(h * m)), 0), g)
    limit_ok = len(roots) == 1 and sp.simplify(
        sp.limit(roots[0], h, 0) - continuous_gate_bound().subs({m_ln: m, kappa: k})) == 0
    return {"first order": sp.simplify(first - h * (m + g * k)) == 0, "h -> 0 limit": limit_ok}


def equal_layers_root() -> sp.Expr:
    """L identical layers: S(g) = L log(a + hgk) = 0 ⇔ g* = (1 − a)/(hk)."""
    roots = sp.solve(sp.Eq(L * LAYER_TERM, 0), g)
    return roots[0] if len(roots) == 1 else sp.nan


# -- aligned systems (Claim 5.2) ---------------------------------------------------------------

def aligned_product_norm_identity(layers: int = 3, dim: int = 2) -> bool:
    """For diagonal G_ℓ = diag(a_ℓi), K_ℓ = diag(k_ℓi) with a common top entry (index 0),
    the product's top entry is Π_ℓ(a_ℓ0 + hgk_ℓ0) = exp S(g) with a_ℓ = a_ℓ0, k_ℓ = k_ℓ0.

    Checked exactly: the product is diagonal with entries Π_ℓ(a_ℓi + hgk_ℓi) and
    entry 0 dominates every other entry termwise when a_ℓ0 ≥ a_ℓi, k_ℓ0 ≥ k_ℓi, g ≥ 0.
    """
    A = [[sp.Symbol(f"a_{l}_{i}", positive=True) for i in range(dim)] for l in range(layers)]
    Kd = [[sp.Symbol(f"k_{l}_{i}", positive=True) for i in range(dim)] for l in range(layers)]
    prod = sp.eye(dim)
    for l in range(layers):
        prod = (sp.diag(*A[l]) + h * g * sp.diag(*Kd[l])) * prod
    diagonal = all(prod[i, j] == 0 for i in range(dim) for j in range(dim) if i != j)
    top = sp.prod([A[l][0] + h * g * Kd[l][0] for l in range(layers)])
    S = sum(LAYER_TERM.subs({a: A[l][0], k: Kd[l][0]}) for l in range(layers))
    top_ok = sp.simplify(sp.expand_log(sp.log(prod[0, 0]) - S, force=True)) == 0
    # termwise domination: a_ℓ0 = a_ℓi + p, k_ℓ0 = k_ℓi + r with p, r ≥ 0.
    dom = True
    for i in range(1, dim):
        for l in range(layers):
            p, r = sp.symbols(f"p_{l}_{i} r_{l}_{i}", nonnegative=True)
            diff = (A[l][i] + p + h * g * (Kd[l][i] + r)) - (A[l][i] + h * g * Kd[l][i])
            dom = dom and bool(sp.expand(diff).is_nonnegative)
    return diagonal and top_ok and dom


# -- 2×2 exact boundaries -----------------------------------------------------------------------

G2 = sp.MatrixSymbol("G", 2, 2)
K2 = sp.MatrixSymbol("K", 2, 2)
F2 = sp.MatrixSymbol("F", 2, 2)
z = sp.Symbol("z")


def _explicit(M):
    return sp.Matrix(2, 2, lambda i, j: M[i, j])


def jury_conditions(M: sp.Matrix) -> list[sp.Expr]:
    """Jury's test for z² + c₁z + c₀ = det(zI − M): all roots in |z| < 1 iff
    p(1) > 0, p(−1) > 0 and 1 − c₀ > 0."""
    p = sp.Poly((z * sp.eye(2) - M).det(), z)
    c0 = p.all_coeffs()[-1]
    return [sp.expand(p.as_expr().subs(z, 1)), sp.expand(p.as_expr().subs(z, -1)), sp.expand(1 - c0)]


def routh_hurwitz_conditions(M: sp.Matrix) -> list[sp.Expr]:
    """Routh–Hurwitz for s² + c₁s + c₀ = det(sI − M): both roots in Re s < 0 iff c₁ > 0, c₀ > 0,
    i.e. −tr M > 0 and det M > 0."""
    p = sp.Poly((z * sp.eye(2) - M).det(), z)
    c1, c0 = p.all_coeffs()[1], p.all_coeffs()[2]
    return [sp.expand(c1), sp.expand(c0)]


def _coefficient_matrix(conditions: list[sp.Expr]) -> sp.Matrix:
    rows = []
    for c in conditions:
        poly = sp.Poly(c, g)
        if poly.degree() > 2:
            raise AssertionError(f"condition {c} has degree {poly.degree()} > 2 in g")
        rows.append([sp.expand(poly.coeff_monomial(g**j)) for j in range(3)])
    return sp.Matrix(rows)


def jury_coefficients() -> sp.Matrix:
    """3×3: row i holds the coefficients (g⁰, g¹, g²) of Jury condition i for M = G + hgK."""
    return _coefficient_matrix(jury_conditions(_explicit(G2) + h * g * _explicit(K2)))


def routh_hurwitz_coefficients() -> sp.Matrix:
    """2×3: row i holds the coefficients (g⁰, g¹, g²) of the Routh–Hurwitz condition i for F + gK."""
    return _coefficient_matrix(routh_hurwitz_conditions(_explicit(F2) + g * _explicit(K2)))


def boundary_checks() -> dict[str, bool]:
    """Exact facts behind the 2×2 boundaries.

    * the characteristic polynomial is z² − tr M z + det M;
    * on the Jury boundary: an eigenvalue at z = 1 makes p(1) = 0, at z = −1 makes
      p(−1) = 0, a complex pair on |z| = 1 (z = e^{±iθ}) makes 1 − c₀ = 0;
    * on the Routh–Hurwitz boundary: an eigenvalue at s = 0 makes det = 0, a pair ±iω
      makes tr = 0;
    * the coefficient matrices reproduce the conditions (polynomial identity in g).
    """
    M = _explicit(G2)
    p = sp.expand((z * sp.eye(2) - M).det())
    char_ok = sp.expand(p - (z**2 - M.trace() * z + M.det())) == 0
    # companion forms with prescribed eigenvalues
    r, theta, s2 = sp.symbols("r theta s2", real=True)

    def companion(e1, e2):
        return sp.Matrix([[e1 + e2, -e1 * e2], [1, 0]])

    j = jury_conditions
    jury_ok = (sp.simplify(j(companion(1, r))[0]) == 0 and sp.simplify(j(companion(-1, r))[1]) == 0
               and sp.simplify(j(companion(sp.exp(sp.I * theta), sp.exp(-sp.I * theta)))[2]) == 0)
    w = sp.Symbol("omega", positive=True)
    rh = routh_hurwitz_conditions
    rh_ok = sp.simplify(rh(companion(0, s2))[1]) == 0 and \
        sp.simplify(rh(companion(sp.I * w, -sp.I * w))[0]) == 0
    gs = sp.Matrix([1, g, g**2])
    coeff_ok = (sp.expand((jury_coefficients() * gs) - sp.Matrix(
        jury_conditions(_explicit(G2) + h * g * _explicit(K2)))) == sp.zeros(3, 1)
        and sp.expand((routh_hurwitz_coefficients() * gs) - sp.Matrix(
            routh_hurwitz_conditions(_explicit(F2) + g * _explicit(K2)))) == sp.zeros(2, 1))
    return {"characteristic polynomial": char_ok, "Jury boundary": jury_ok,
            "Routh-Hurwitz boundary": rh_ok, "coefficients": coeff_ok}


# -- slow-mode maps of a real stack ----------------------------------------------------------

def compression_identity(n: int = 2, P: int = 2, dim: int = 2) -> bool:
    """(Π ⊗ I_d)(A ⊗ B)(Π⁺ ⊗ I_d) = (ΠAΠ⁺) ⊗ B, exactly, for symbolic A (T×T) and B (d×d).

    Row-major vec: a token operator A and a feature operator B act on vec(E) as A ⊗ B, so
    the fast layer map I ⊗ G(0) + A ⊗ (G(1) − G(0)) (Claim 2.3, affine in λ) compresses to
    the slow (block-mean) modes as I_n ⊗ G(0) + A_c ⊗ (G(1) − G(0)), A_c = ΠAΠ⁺."""
    T = n * P
    A = sp.Matrix(T, T, lambda i, j: sp.Symbol(f"A_{i}_{j}"))
    B = sp.Matrix(dim, dim, lambda i, j: sp.Symbol(f"B_{i}_{j}"))
    Pi = sp.kronecker_product(sp.eye(n), sp.ones(1, P) / P)
    Lift = sp.kronecker_product(sp.eye(n), sp.ones(P, 1))
    Id = sp.eye(dim)
    lhs = sp.kronecker_product(Pi, Id) * sp.kronecker_product(A, B) * sp.kronecker_product(Lift, Id)
    rhs = sp.kronecker_product(Pi * A * Lift, B)
    return sp.expand(lhs - rhs) == sp.zeros(n * dim, n * dim)


def generated_functions():
    """Every formula this family evaluates numerically, as SymPy."""
    from theory.codegen import GenFunction

    n = sp.Symbol("n", integer=True, positive=True)
    Gn = sp.MatrixSymbol("G", n, n)
    Kn = sp.MatrixSymbol("K", n, n)
    Fn = sp.MatrixSymbol("F", n, n)
    T_, nb, dd = sp.symbols("T nb d", integer=True, positive=True)
    Pi_s, A_s, Lift_s = sp.MatrixSymbol("Pi", nb, T_), sp.MatrixSymbol("A", T_, T_), sp.MatrixSymbol("Lift", T_, nb)
    Ac_s = sp.MatrixSymbol("A_c", nb, nb)
    K0_s, K1_s, C_s = sp.MatrixSymbol("G0", dd, dd), sp.MatrixSymbol("G1", dd, dd), sp.MatrixSymbol("C", dd, dd)
    return [
        GenFunction("layer_log_growth", (a, k, h, g), layer_log_growth(), "5.1",
                    "Per-layer term log(a + h g k) of S(g) = Σ_ℓ log(‖G_ℓ‖ + h g ‖K_ℓ‖)."),
        GenFunction("layer_log_growth_dg", (a, k, h, g), layer_log_growth_dg(), "5.1",
                    "∂/∂g of the per-layer term: h k / (a + h g k) > 0 (S increasing)."),
        GenFunction("layer_margin_term", (a, h, L), layer_margin_term(), "5.1",
                    "Per-layer term −log(a)/(L h) of the stability margin μ."),
        GenFunction("newton_step", (g, S_val, dS_val), newton_step(), "5.1",
                    "Newton step g − S/S' on the sum of logs."),
        GenFunction("small_h_gate_bound", (mu, q), small_h_gate_bound(), "5.1",
                    "Closed form g₁ = μ / mean(k/a) (Newton from 0; ≤ g* by concavity)."),
        GenFunction("continuous_gate_bound", (m_ln, kappa), continuous_gate_bound(), "5.1",
                    "Continuous depth: stable for |g| < −m(F)/κ (m the logarithmic norm)."),
        GenFunction("gated_layer_map", (Gn, Kn, h, g), Gn + h * g * Kn, "5.1",
                    "The gated linearised layer map on the slow modes, G + h g K."),
        GenFunction("symmetric_part", (Fn,), symmetric_part_expr(Fn), "5.1",
                    "(F + Fᵀ)/2, whose top eigenvalue is the spectral log-norm m(F)."),
        GenFunction("compressed_kernel", (Pi_s, A_s, Lift_s), Pi_s * A_s * Lift_s, "5.1",
                    "A_c = Π A Π⁺: a token kernel compressed to the n block-mean modes."),
        GenFunction("slow_mode_fast_map", (Ac_s, K0_s, K1_s),
                    sp.KroneckerProduct(sp.Identity(nb), K0_s) + sp.KroneckerProduct(Ac_s, K1_s), "5.1",
                    "G_ℓ on the slow modes (row-major vec): I_n ⊗ G_ℓ(0) + A_c ⊗ (G_ℓ(1) − G_ℓ(0))."),
        GenFunction("mlp_stage_factor", (C_s,), sp.Identity(dd) + C_s, "5.1",
                    "I + C_ℓ: the MLP stage's Jacobian, which carries the slow branch's output "
                    "(K_ℓ = (I_n ⊗ (I + C_ℓ)) D slow + the MLP operating-point term; token-wise)."),
        GenFunction("jury_coefficients", (G2, K2, h), jury_coefficients(), "5.2",
                    "Coefficients (g⁰, g¹, g²) of the three Jury conditions for G + hgK (2×2)."),
        GenFunction("routh_hurwitz_coefficients", (F2, K2), routh_hurwitz_coefficients(), "5.2",
                    "Coefficients (g⁰, g¹, g²) of the two Routh–Hurwitz conditions for F + gK (2×2)."),
    ]
