"""Derivations typeset for people: LaTeX in the paper's notation, shown as MathML.

:func:`typeset` prints a SymPy expression with :class:`proofs_check.report.latex.PaperLatexPrinter`
(the symbol map of docs/theory.md, decimals for decimal constants) as the equation its docstring
names (``lhs = rhs``), abbreviating first: a subexpression that occurs more than once and is long
when printed becomes a name (ξ₁, Ξ₁ for a matrix) defined in a *where* list, so the factorised
Jacobians print in a few lines.  :meth:`Formula.block` draws it as presentation MathML, which the
browser renders with no network and no script.

The HTML helpers below (:func:`symbol_name`, :func:`sub`, :func:`sup`) set symbols inside ledger
prose (``proofs_check.report.prose``) as Unicode text.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass

import sympy
from sympy.printing.conventions import split_super_sub

from proofs_check.report.latex import PaperLatexPrinter, decimals, lhs_latex, to_mathml

GREEK = {name: chr(code) for name, code in (
    ("alpha", 0x3B1), ("beta", 0x3B2), ("gamma", 0x3B3), ("delta", 0x3B4), ("epsilon", 0x3B5), ("zeta", 0x3B6),
    ("eta", 0x3B7), ("theta", 0x3B8), ("iota", 0x3B9), ("kappa", 0x3BA), ("lambda", 0x3BB), ("mu", 0x3BC),
    ("nu", 0x3BD), ("xi", 0x3BE), ("pi", 0x3C0), ("rho", 0x3C1), ("sigma", 0x3C3), ("tau", 0x3C4),
    ("upsilon", 0x3C5), ("phi", 0x3C6), ("chi", 0x3C7), ("psi", 0x3C8), ("omega", 0x3C9))}
GREEK.update({name.capitalize(): chr(ord(ch) - 32) for name, ch in GREEK.items()})
GREEK.update({"lam": "λ", "eps": "ε", "ell": "ℓ"})
#: names whose trailing digit is a power, not an index (variances in theory/emissions.py)
POWER_NAMES = {"sigma2": "σ²", "s2": "s²"}
#: subscript words that are superscripts in the paper's notation (Π⁺ is the pseudo-inverse)
SUPER_WORDS = {"plus": "+", "minus": "−", "star": "*", "dag": "†"}
ACCENTS = {"bar": "\u0304", "hat": "\u0302", "tilde": "\u0303", "dot": "\u0307"}

SUBSCRIPT = dict(zip("0123456789+−=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
SUPERSCRIPT = dict(zip("0123456789+−=()in*†", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿ*†"))  # no ᵀ: it reads as a transpose

MINUS = "−"
WHERE_MIN = 60  # a repeated subexpression at least this long in LaTeX becomes a named definition


def _script(text: str, table: dict, tag: str) -> str:
    """``text`` (HTML) as Unicode sub/superscript characters when each has one, else in ``<tag>``."""
    short = len(text) <= 2 or text.isdigit()  # a word as Unicode letters reads worse than <sub>
    if text and short and "<" not in text and "&" not in text and all(ch in table for ch in text):
        return "".join(table[ch] for ch in text)
    return f"<{tag}>{text}</{tag}>"


def sub(text: str) -> str:
    return _script(text, SUBSCRIPT, "sub")


def sup(text: str) -> str:
    return _script(text, SUPERSCRIPT, "sup")


def symbol_name(name: str) -> str:
    """A SymPy symbol's name in the paper's notation: ``Pi_plus`` → Π⁺, ``W_VO`` → W<sub>VO</sub>,
    ``sigma2`` → σ², ``tbar`` → t̄, ``norm_G`` → ‖G‖."""
    name = name.lstrip("_")
    if name in POWER_NAMES:
        return POWER_NAMES[name]
    if name.startswith("norm_") and len(name) > 5:
        return f"‖{symbol_name(name[5:])}‖"
    base, supers, subs = split_super_sub(name)
    accent = next((a for a in ACCENTS if base.endswith(a) and len(base) > len(a)), None)
    if accent:
        base = base[:-len(accent)]
    text = GREEK.get(base, html.escape(base)) + (ACCENTS[accent] if accent else "")
    for s in subs:
        text += sup(SUPER_WORDS[s]) if s in SUPER_WORDS else sub("".join(GREEK.get(s, html.escape(s))))
    for s in supers:
        text += sup(GREEK.get(s, html.escape(s)))
    return text


@dataclass(frozen=True)
class Formula:
    """A typeset equation: its LaTeX, the definitions it uses (name, LaTeX) and a caption (HTML)."""

    latex: str
    where: tuple[tuple[str, str], ...] = ()
    caption: str = ""

    def block(self) -> str:
        """One HTML block (no blank line inside, so markdown keeps it whole): caption, MathML, definitions."""
        parts = ['<div class="formula">']
        if self.caption:
            parts.append(f'<div class="caption">{self.caption}</div>')
        parts.append(f'<div class="eq">{to_mathml(self.latex)}</div>')
        if self.where:
            defs = ", ".join(to_mathml(f"{name} = {body}", display=False) for name, body in self.where)
            parts.append(f'<div class="where">where {defs}</div>')
        parts.append("</div>")
        return "".join(parts)


def _bound_symbols(expr) -> set:
    return {v for node in sympy.preorder_traversal(expr) if isinstance(node, sympy.Lambda) for v in node.variables}


def _abbreviate(expr):
    """Repeated long subexpressions replaced by names; returns (expression, [(name, definition)])."""
    bound = _bound_symbols(expr)
    defs: list[tuple[sympy.Basic, sympy.Basic]] = []
    scalars = matrices = 0
    while True:
        counts: Counter = Counter()
        for tree in [expr] + [d for _, d in defs]:
            for node in sympy.preorder_traversal(tree):
                if not node.is_Atom and not isinstance(node, (sympy.Lambda, sympy.Tuple)) \
                        and not (node.free_symbols & bound):
                    counts[node] += 1
        # a power is left to its base (1/√ξ reads better than a name for it)
        repeated = [n for n, k in counts.items() if k > 1 and not isinstance(n, (sympy.MatrixSymbol, sympy.Pow))]
        sized = [(len(PaperLatexPrinter().doprint(n)), sympy.count_ops(n), n) for n in repeated]
        sized = [s for s in sized if s[0] >= WHERE_MIN]
        if not sized:
            return expr, defs
        _, _, node = max(sized, key=lambda s: (s[0], s[1]))
        if getattr(node, "is_Matrix", False) or isinstance(node, sympy.MatrixExpr):
            matrices += 1
            name = sympy.MatrixSymbol(f"Xi{matrices}", *node.shape)
        else:
            scalars += 1
            name = sympy.Symbol(f"xi{scalars}")
        expr = expr.xreplace({node: name})
        defs = [(n, d.xreplace({node: name})) for n, d in defs] + [(name, node)]


def typeset(expr, caption: str = "", doc: str = "", family: str = "") -> Formula:
    """The expression as a :class:`Formula`: ``lhs = rhs`` when ``doc`` names the left-hand side
    (``"r_ℓ(λ) = …"``), long repeated pieces named in its *where* list, decimal constants as decimals."""
    expr = decimals(sympy.sympify(expr))
    short, defs = _abbreviate(expr)
    printer = PaperLatexPrinter(family=family)
    main = printer.doprint(short)
    lhs = lhs_latex(doc) if doc else None
    where = [(printer.doprint(name), printer.doprint(body)) for name, body in defs]
    where += [(rf"{name}(y)", body + r"\text{, entrywise}") for name, body in printer.functions]
    return Formula(f"{lhs} = {main}" if lhs else main, tuple(where), caption)
