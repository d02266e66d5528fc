"""Tikhonov's conditions along a root φ₀ of the fast subsystem (docs/theory.md §6, Claim 6.1):
the root is isolated (det f_x ≠ 0) and attracting (every eigenvalue of f_x in the open left
half-plane, checked by the Routh–Hurwitz minors of its characteristic polynomial)."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp
from sympy import Matrix, Symbol

from theory.fast_slow_systems import FastSlowSystem


@dataclass
class TikhonovCondition:
    """One condition of Tikhonov's theorem along φ₀: its name, the SymPy test, the verdict."""

    name: str
    expression: object
    holds: bool | None = None  # None: not decided
    detail: str = ""


@dataclass
class TikhonovReport:
    """Tikhonov's conditions along φ₀(y); ``violated`` names the first failing one."""

    conditions: list[TikhonovCondition]

    @property
    def holds(self) -> bool:
        return all(c.holds is True for c in self.conditions)

    @property
    def violated(self) -> TikhonovCondition | None:
        return next((c for c in self.conditions if c.holds is False), None)

    def summary(self) -> str:
        if self.holds:
            return "Tikhonov conditions hold: " + "; ".join(f"{c.name} ({c.detail})" for c in self.conditions)
        bad = self.violated
        if bad is None:
            undecided = [c.name for c in self.conditions if c.holds is None]
            return "Tikhonov conditions undecided: " + ", ".join(undecided)
        return f"Tikhonov condition violated: {bad.name}: {bad.detail}"


def hurwitz_minors(J: Matrix) -> list[sp.Expr]:
    """Leading principal minors Δ₁..Δ_m of the Hurwitz matrix of det(λI − J).

    All Δ_i > 0 ⇔ every eigenvalue of J has negative real part (Routh–Hurwitz).
    """
    lam = Symbol("lambda_")
    coeffs = sp.Poly((lam * sp.eye(J.shape[0]) - J).det(), lam).all_coeffs()  # a0 = 1, a1, .., am
    m = len(coeffs) - 1

    def a(k):
        return coeffs[k] if 0 <= k <= m else 0

    H = Matrix(m, m, lambda i, j: a(2 * (j + 1) - (i + 1)))
    return [sp.factor(H[:k, :k].det()) for k in range(1, m + 1)]


def _decide_positive(expr, points, params) -> tuple[bool | None, str]:
    """expr > 0 symbolically (SymPy assumptions) or else at every y point (exact evaluation)."""
    expr = sp.sympify(expr)
    for cand, how in ((expr, "symbolic"), (expr.subs(params), "symbolic at the parameter values")):
        verdict = cand.is_positive
        if verdict is not None:
            return bool(verdict), f"{sp.sstr(cand)} > 0 is {'true' if verdict else 'false'} ({how})"
    if not points:
        return None, f"{sp.sstr(expr)}: no y points to check"
    for pt in points:
        val = sp.N(expr.subs(params).subs(pt), 30)
        if not val.is_real or val <= 0:
            return False, f"{sp.sstr(expr)} = {sp.N(val, 6)} ≤ 0 at y = {pt}"
    return True, f"{sp.sstr(expr)} > 0 at {len(points)} y points"


def tikhonov_conditions(system: FastSlowSystem, phi0: Matrix) -> TikhonovReport:
    """Derive and check Tikhonov's conditions along x = φ₀(y).

    (T1) isolated root: det f_x(φ₀(y), y) ≠ 0;
    (T2) attracting: every eigenvalue of f_x(φ₀(y), y) has Re < 0, i.e. the Hurwitz
    minors Δ_i of its characteristic polynomial are all positive.
    """
    sub = dict(zip(system.x, phi0))
    J = sp.simplify(system.f.jacobian(system.x).subs(sub))
    pts = system.y_domain
    det = sp.factor(J.det())
    sym_nonzero = det.is_nonzero
    if sym_nonzero is not None:
        t1 = TikhonovCondition("isolated root: det f_x(φ₀, y) ≠ 0", det, bool(sym_nonzero),
                               f"det f_x = {sp.sstr(det)}")
    else:
        ok, why = _decide_positive(det ** 2, pts, system.params)
        t1 = TikhonovCondition("isolated root: det f_x(φ₀, y) ≠ 0", det, ok, why)
    minors = hurwitz_minors(J)
    verdicts = [_decide_positive(dm, pts, system.params) for dm in minors]
    bad = next((i for i, (ok, _) in enumerate(verdicts) if ok is False), None)
    if bad is not None:
        at = J.subs(system.params).subs(pts[0] if pts else {})
        eig = [sp.N(ev, 6) for ev in at.eigenvals(multiple=True)] if not at.free_symbols else "symbolic"
        t2 = TikhonovCondition("attracting: Re λ(f_x(φ₀, y)) < 0", minors, False,
                               f"Hurwitz minor Δ{bad + 1}: {verdicts[bad][1]}; eigenvalues {eig}")
    else:
        decided = all(ok is True for ok, _ in verdicts)
        t2 = TikhonovCondition("attracting: Re λ(f_x(φ₀, y)) < 0", minors, True if decided else None,
                               "; ".join(f"Δ{i + 1}: {why}" for i, (_, why) in enumerate(verdicts)))
    return TikhonovReport([t1, t2])


# --------------------------------------------------------------------------- expansion
