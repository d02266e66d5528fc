"""Derivations as LaTeX in the paper's notation, drawn as MathML that a browser renders offline.

:class:`PaperLatexPrinter` is SymPy's ``LatexPrinter`` with the notation of docs/theory.md: a
symbol map from the derivations' Python names to the paper's symbols (``G_prev`` → G_{≤ℓ−1}(λ),
``norm_G`` → ‖G_ℓ(λ)‖, ``gf1`` → g′f₁, ``Pi_plus`` → Π⁺, ``tbar`` → t̄), ``I − 11ᵀ/d`` for
``Identity − OneMatrix/d``, ``diag``, ``ᵀ``, entries counted from 1, an entrywise map as a named
function defined below the formula, and an exact rational that stands for a decimal constant
(``8943/200000``, GELU's 0.044715) as that decimal.

:func:`lhs_latex` reads the left-hand side a generated function's docstring names
(``"r_ℓ(λ) = ‖…‖/‖…‖: …"`` → ``r_{\\ell}(\\lambda)``) so each derivation prints as an equation.
:func:`to_mathml` turns LaTeX into presentation MathML (``latex2mathml``), which Chromium, Firefox
and Safari draw natively: the report needs no network and no script.
"""

from __future__ import annotations

import re

import sympy
from sympy.printing.conventions import split_super_sub
from sympy.printing.latex import LatexPrinter

#: the paper's symbol for a derivation's Python name (docs/theory.md); other names follow the rules of
#: :func:`symbol_latex` (Greek letters, accents, one subscript)
SYMBOLS = {
    "G_prev": r"G_{\le \ell-1}(\lambda)", "norm_decaying": r"\lVert G_{\le \ell}(\lambda) \rVert",
    "norm_persistent": r"\lVert G_{\le \ell}(1) \rVert", "norm_G": r"\lVert G_{\ell}(\lambda) \rVert",
    "norm_y": r"\lVert y_{\ell} \rVert", "norm_y_next": r"\lVert y_{\ell+1} \rVert",
    "gf1": r"g' f_{1}", "Ft": r"\partial_t F", "FF": r"F' F", "growth": r"g_{\ell}",
    "Pi_plus": r"\Pi^{+}", "W_slow": r"W_{\mathrm{slow}}", "a_min": r"a_{\min}", "g_dev": r"\lVert G - I \rVert",
    "mu_re": r"\operatorname{Re}\mu", "mu_im": r"\operatorname{Im}\mu", "sigma2": r"\sigma^{2}", "s2": r"s^{2}",
    "lam": r"\lambda", "lambda_": r"\lambda", "eps": r"\varepsilon", "epsilon": r"\varepsilon", "ell": r"\ell",
    "ratio": r"\left(\tilde{\sigma}_{\ell}/\tilde{\sigma}_{0}\right)", "Lift": r"\Pi^{+}", "dS": "S'",
    "Sxx": r"\Sigma_{xx}", "sxy": r"\Sigma_{xy}", "syy": r"\Sigma_{yy}", "Delta_M": r"\Delta(M)",
}
#: symbols whose meaning is fixed within one theory family (``G`` is G_ℓ(λ) in §3's mode product)
FAMILY_SYMBOLS = {"coarse_graining": {"G": r"G_{\ell}(\lambda)"}}
GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
         "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega"}
ACCENTS = {"bar": r"\bar", "hat": r"\hat", "tilde": r"\tilde", "dot": r"\dot"}
SUPER_WORDS = {"plus": "+", "minus": "-", "star": "*", "dag": r"\dagger"}


def _letters(word: str) -> str:
    if word.lower() in GREEK:
        return "\\" + word
    if len(word) > 1 and not word.isdigit() and not set(word) <= set("ijklmn"):  # H_ij: two indices
        return rf"\mathrm{{{word}}}"
    return word


def symbol_latex(name: str) -> str:
    """A derivation's symbol name as LaTeX in the paper's notation (``W_VO`` → W_{\\mathrm{VO}})."""
    name = name.lstrip("_")
    if name in SYMBOLS:
        return SYMBOLS[name]
    if name.startswith("norm_") and len(name) > 5:
        return rf"\lVert {symbol_latex(name[5:])} \rVert"
    base, supers, subs = split_super_sub(name)
    accent = next((a for a in ACCENTS if base.endswith(a) and len(base) > len(a)), None)
    if accent:
        base = base[:-len(accent)]
    text = _letters(base)
    if accent:
        text = f"{ACCENTS[accent]}{{{text}}}"
    lows = [_letters(s) for s in subs if s not in SUPER_WORDS]
    highs = [SUPER_WORDS[s] for s in subs if s in SUPER_WORDS] + [_letters(s) for s in supers]
    if lows:
        text += "_{" + ",".join(lows) + "}"
    if highs:
        text += "^{" + ",".join(highs) + "}"
    return text


def _decimal_denominator(q: int) -> bool:
    """``q`` = 2^a 5^b divisible by 1000: p/q is a decimal constant of three or more places written as an
    exact rational (GELU's 8943/200000); 1/125 or 3/20 stay fractions."""
    if q % 1000:
        return False
    for f in (2, 5):
        while q % f == 0:
            q //= f
    return q == 1


def decimals(expr):
    """``expr`` with each exact rational that stands for a decimal constant as that decimal."""
    found = {r for r in expr.atoms(sympy.Rational) if not r.is_Integer and _decimal_denominator(int(r.q))}
    return expr.xreplace({r: sympy.Float(repr(float(r)), 15) for r in found}) if found else expr


class PaperLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer with the paper's symbols and matrix notation."""

    def __init__(self, settings=None, family: str = ""):
        super().__init__(settings)
        self.symbols = FAMILY_SYMBOLS.get(family, {})
        self.functions: list[tuple[str, str]] = []  # entrywise maps defined below the formula

    def _print_Symbol(self, expr, style="plain"):
        return self.symbols.get(expr.name) or symbol_latex(expr.name)

    _print_Dummy = _print_Symbol

    def _print_MatrixSymbol(self, expr):
        return self.symbols.get(expr.name) or symbol_latex(expr.name)

    def _print_Float(self, expr):
        text = f"{float(expr):.6g}"
        if "e" in text:
            mant, exp = text.split("e")
            return rf"{mant} \cdot 10^{{{int(exp)}}}"
        return text

    def _print_loggamma(self, expr, exp=None):
        return rf"\log\Gamma\left({self._print(expr.args[0])}\right)"

    def _print_MatrixBase(self, expr):
        return self._print(expr[0, 0]) if expr.shape == (1, 1) else super()._print_MatrixBase(expr)

    _print_ImmutableDenseMatrix = _print_MatrixBase
    _print_MutableDenseMatrix = _print_MatrixBase

    def _print_MatAdd(self, expr):
        """A matrix sum, positive terms first, each negative one after ``-`` (I − 11ᵀ/d)."""
        signed = []
        for term in expr.args:
            text = self._print(term).strip()
            negative = text.startswith("-")
            signed.append((negative, text[1:].strip() if negative else text))
        signed.sort(key=lambda t: t[0])
        out = ("- " if signed[0][0] else "") + signed[0][1]
        return out + "".join(f" {'-' if neg else '+'} {text}" for neg, text in signed[1:])

    def _print_Identity(self, expr):
        return "I"

    def _print_OneMatrix(self, expr):
        rows, cols = expr.shape
        return r"\mathbf{1}" if 1 in (rows, cols) else r"\mathbf{1}\mathbf{1}^{\top}"

    def _print_Transpose(self, expr):
        arg = self._print(expr.arg)
        if not isinstance(expr.arg, (sympy.MatrixSymbol, sympy.Symbol)):
            arg = rf"\left({arg}\right)"
        return f"{{{arg}}}^{{\\top}}"

    def _print_DiagMatrix(self, expr):
        return rf"\operatorname{{diag}}\left({self._print(expr.args[0])}\right)"

    _print_DiagonalizeVector = _print_DiagMatrix
    _print_DiagonalMatrix = _print_DiagMatrix

    def _print_MatrixElement(self, expr):
        """``G[0, 1]`` as G₁₂: entries counted from 1, as in the paper."""
        i, j = (self._print(k + 1) for k in expr.indices)
        return f"{{{self._print(expr.parent)}}}_{{{i}{j if len(i + j) == 2 else ',' + j}}}"

    def _print_ElementwiseApplyFunction(self, expr):
        """``f`` applied to each entry: a named map (φ, ψ, …) defined below the formula."""
        fn = expr.function
        var = sympy.Symbol("y")
        body = fn.expr.xreplace({fn.variables[0]: var}) if isinstance(fn, sympy.Lambda) else None
        definition = self._print(body) if body is not None else self._print(fn)
        for name, text in self.functions:
            if text == definition:
                break
        else:
            names = [r"\varphi", r"\psi", r"\chi", r"\vartheta", r"\varpi"]
            k = len(self.functions)
            name = names[k % 5] + (f"_{{{k // 5 + 1}}}" if k >= 5 else "")
            self.functions.append((name, definition))
        return rf"{name}\left({self._print(expr.expr)}\right)"


# ----------------------------------------------------------------------------- a docstring's left-hand side
_UNICODE = {"λ": r"\lambda", "ℓ": r"\ell", "ρ": r"\rho", "σ": r"\sigma", "ε": r"\varepsilon", "φ": r"\varphi",
            "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "Δ": r"\Delta", "μ": r"\mu",
            "τ": r"\tau", "κ": r"\kappa", "θ": r"\theta", "η": r"\eta", "Π": r"\Pi", "Σ": r"\Sigma",
            "≤": r"\le ", "≥": r"\ge ", "−": "-", "‖": r"\Vert ", "⁺": "^{+}", "ᵀ": r"^{\top}", "⁻¹": "^{-1}",
            "∂": r"\partial ", "·": r"\cdot ", "₀": "_{0}", "₁": "_{1}", "₂": "_{2}", "²": "^{2}", "′": "'"}
_ACCENTED = re.compile("(.)([\u0304\u0303\u0302])")
_ACCENT_CMD = {"\u0304": r"\bar", "\u0303": r"\tilde", "\u0302": r"\hat"}
_LHS = re.compile(r"^([^\s:=,;]{1,24}(?:\([^()\s]{1,12}\))?) = ")


def unicode_latex(text: str) -> str:
    """Short Unicode maths from a docstring (``ρ̃_ℓ``, ``G_{≤ℓ}(λ)``, ``Δx̄_L``) as LaTeX."""
    text = _ACCENTED.sub(lambda m: f"{_ACCENT_CMD[m.group(2)]}{{{m.group(1)}}}", text)
    for ch in sorted(_UNICODE, key=len, reverse=True):
        text = text.replace(ch, _UNICODE[ch])
    return re.sub(r"_(\\[A-Za-z]+|[A-Za-z0-9])", r"_{\1}", text)


def lhs_latex(doc: str) -> str | None:
    """The symbol a docstring defines (``"q_ℓ(λ) = …: …"`` → ``q_{\\ell}(\\lambda)``), or None."""
    m = _LHS.match(doc.strip())
    if not m or m.group(1).startswith(("exp(", "log(")):  # "exp(S/N) = …" restates the expression
        return None
    return unicode_latex(m.group(1))


def to_mathml(latex: str, display: bool = True) -> str:
    """Presentation MathML of ``latex`` (drawn natively by the browser)."""
    from latex2mathml.converter import convert

    return convert(latex, display="block" if display else "inline")
