"""Measured values and their column names as a reader reads them: no Python repr reaches the page.

:func:`label` turns a check's row key into a column header: a declared label where the key is a code
name (``generated_vs_mpmath`` → "generated vs mpmath", ``g_star_vs_bisection`` → "g* vs bisection"),
the key itself where it is already notation (``ρ̃``, ``‖ΠJ(I−Q)‖/‖J‖``).  :func:`number` writes a
float with its magnitude (``2.2 × 10⁻¹⁶``, never ``2.2e-16``, which a table cell can break at the
minus sign); a value above 10¹⁵ is written as a bound (``> 10¹⁵``), since at that size it says only
that a quantity is vacuous.  :func:`cell` writes any measured value: a list as its entries, a mapping
as ``name value`` pairs, a flag as yes/no, a missing value as —.
"""

from __future__ import annotations

import math
import re

MISSING = "—"  # a quantity that does not exist for that row (e.g. no saturation depth)
HUGE = 1e15    # above this a measured ratio is a vacuous bound, not a number to read
NBSP = "\u202f"  # narrow no-break space: 2.2 × 10⁻¹⁶ never wraps inside

#: declared column labels for row keys that are code names
LABELS = {
    "rel_error": "rel. error", "fd_error": "finite-difference error", "fd_bound": "finite-difference bound",
    "fd_slope_h": "finite-difference slope in h", "off_block": "off-block mass", "block_err": "block error",
    "block_err_from_B_C": "block error from B, C", "ln_jacobian_err": "LN Jacobian error", "tol": "tolerance",
    "ln_tol": "LN tolerance", "cond_S_float64": "cond(S), float64", "cond1_S_exact": "cond₁(S), exact",
    "eigen_error": "eigenvalue error", "predicted_error": "predicted error", "r_last": "r at the last layers",
    "g_star_vs_bisection": "g* vs bisection", "mu_vs_direct": "μ vs direct", "g_small_h_vs_direct": "g₁ vs direct",
    "S_vs_direct": "S vs direct", "max_log_norm_below_g_star": "max log-norm below g*",
    "max_log_norm_exp_below_bound": "max log-norm of exp below the bound", "mu": "μ", "g_lo": "g low",
    "g_hi": "g high", "g_small_h": "g₁ (small h)", "log_norm_below": "log-norm below", "G_route_error": "G: two routes",
    "K_route_error": "K: two routes", "error_at_smallest_eps": "error at the smallest ε",
    "dist_to_p_st": "distance to p_st", "generated_vs_mpmath": "generated vs mpmath", "model_ratio": "model ratio",
    "ratio_error": "ratio error", "ratio_scores_mixing": "ratio, scores mixing",
    "ratio_projections": "ratio, projections",
}
WORDS = {"vs": "vs", "err": "error", "tol": "tolerance", "rel": "rel.", "star": "*", "mu": "μ", "eps": "ε",
         "lam": "λ", "st": "st", "num": "number", "max": "max", "min": "min"}
_CODE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$")
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def label(key) -> str:
    """A row key as a column header (declared label, else the code name's words)."""
    key = str(key)
    if key in LABELS:
        return LABELS[key]
    if not _CODE_NAME.match(key):
        return key
    words = [WORDS.get(w, w) for w in key.split("_")]
    return re.sub(r" \*", "*", " ".join(words))


def word(text: str) -> str:
    """A categorical value (``michaelis_menten``, ``dist_k0``) as words."""
    return text.replace("_", " ") if _CODE_NAME.match(text) else text


def power_of_ten(exponent: int) -> str:
    return "10" + str(exponent).translate(_SUPERSCRIPT)


def number(x: float, digits: int = 3) -> str:
    """A float with its magnitude: 0.0472, 1.23 × 10⁻¹⁶, 5.9 × 10⁵, > 10¹⁵ (a vacuous size); NaN as —."""
    if math.isnan(x):
        return MISSING
    if math.isinf(x) or abs(x) > HUGE:
        return ("> " if x > 0 else "< −") + power_of_ten(int(math.log10(HUGE)))
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:.{digits}g}".replace("-", "−")
    mant, exp = f"{x:.{digits - 1}e}".split("e")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return f"{mant.replace('-', '−')}{NBSP}×{NBSP}{power_of_ten(int(exp))}"


def cell(value, _top: bool = True) -> str:
    """One measured value as text (see the module docstring)."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return number(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10 ** 15 else number(float(value))
    if isinstance(value, (list, tuple)):
        shown = ", ".join(cell(v, False) for v in value[:8])
        return shown + (", …" if len(value) > 8 else "")
    if isinstance(value, dict):
        inner = "; ".join(f"{word(str(k))} {cell(v, False)}" for k, v in value.items())
        return inner if _top else f"({inner})"
    return word(str(value))


_LONG_NUMBER = re.compile(r"(=\s*)?(?<![\w.])(\d{13,}(?:\.\d+)?|\d+\.\d+e[-+]?\d+|\d+e[-+]\d+)(?![\w.])")


def numbers_in_prose(text: str) -> str:
    """Ledger prose with each run-together number (``54981769109387232.00``, ``9.99e-16``) written by :func:`number`."""
    def one(m: re.Match) -> str:
        x = float(m.group(2))
        if abs(x) > HUGE:  # "ρ = 5.5e16" says the bound is vacuous
            return number(x) + " (vacuous)"
        return (m.group(1) or "") + number(x)

    return _LONG_NUMBER.sub(one, text)
