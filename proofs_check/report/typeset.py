"""Derivations typeset for people: a SymPy printer whose output is HTML text with Unicode maths.

:class:`FormulaPrinter` is a SymPy ``StrPrinter`` with one ``_print_X`` per node, as SymPy's own
printers are built.  It writes the notation of docs/theory.md rather than SymPy's names:
``Π⁺`` for ``Pi_plus``, ``I − 11ᵀ/d`` for ``(-1/d)*OneMatrix + Identity``, ``diag(γ)`` for
``DiagMatrix(gamma)``, ``⊗``/``⊙`` for Kronecker and Hadamard products, an entrywise map as a
named function defined below the formula, subscripts and superscripts as Unicode characters
where every character has one (``x₀``, ``σ²``, ``Wᵀ``) and ``<sub>``/``<sup>`` otherwise.  The
output needs no network and no maths renderer: it is HTML that any browser (and GitHub's
markdown) draws.

:func:`typeset` abbreviates a long expression first: a subexpression that occurs more than once
and is long when printed becomes a name (``ξ₁``, ``Ξ₁`` for a matrix) defined in a *where* list,
so the factorised Jacobians print in a few lines.  Ledger text around the formulas is set by
``proofs_check.report.prose``.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass

import sympy
from sympy.printing.conventions import split_super_sub
from sympy.printing.str import StrPrinter

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
WHERE_MIN = 28  # a repeated subexpression at least this long when printed becomes a named definition


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


def _visible(text: str) -> str:
    return re.sub("<[^>]+>", "", text)


def juxtapose(texts: list[str]) -> str:
    """A product written by juxtaposition: one-letter factors touch (``2πσ²``, ``hλW``), longer
    names and parenthesised factors are set apart by a space (``W₂ᵀ diag(γ)``)."""
    out = texts[0] if texts else ""
    for prev, text in zip(texts, texts[1:]):
        simple = all(len(_visible(t)) <= 2 and "(" not in t and "/" not in t for t in (prev, text))
        numeral = _visible(prev).isdigit() and not _visible(text)[:1].isdigit()
        out += text if simple or numeral else " " + text
    return out


@dataclass(frozen=True)
class Formula:
    """A typeset expression: its HTML, the definitions it uses (name, HTML) and a caption."""

    html: str
    where: tuple[tuple[str, str], ...] = ()
    caption: str = ""

    def block(self) -> str:
        """One HTML block (no blank line inside, so markdown keeps it whole)."""
        parts = ['<div class="formula">']
        if self.caption:
            parts.append(f'<div class="caption">{self.caption}</div>')
        parts.append(f'<div class="eq">{self.html}</div>')
        if self.where:
            defs = "; ".join(f"{name} = {body}" for name, body in self.where)
            parts.append(f'<div class="where">where {defs}</div>')
        parts.append("</div>")
        return "".join(parts)


class FormulaPrinter(StrPrinter):
    """SymPy expressions as HTML text in the paper's notation (one ``_print_X`` per node)."""

    printmethod = "_fastslow_html"

    def __init__(self, settings=None):
        super().__init__(settings)
        self.functions: list[tuple[str, str]] = []  # entrywise maps defined below the formula

    # -- precedence: parenthesise an argument that binds looser than its context
    def _wrap(self, expr, weak=(sympy.Add, sympy.MatAdd)) -> str:
        text = self._print(expr)
        if isinstance(expr, weak) or (expr.is_Number and expr.is_negative) or text.startswith(MINUS):
            return f"({text})"
        return text

    def _factor(self, expr) -> str:
        """A factor of a product: sums, negative numbers and fractions in parentheses."""
        text = self._wrap(expr)
        if isinstance(expr, sympy.Rational) and not expr.is_Integer:
            return f"({text})"
        return text

    # -- atoms
    def _print_Symbol(self, expr):
        return symbol_name(expr.name)

    _print_Dummy = _print_Symbol

    def _print_MatrixSymbol(self, expr):
        return symbol_name(expr.name)

    def _print_Integer(self, expr):
        return str(expr.p) if expr.p >= 0 else MINUS + str(-expr.p)

    def _print_Rational(self, expr):
        sign = MINUS if expr.p < 0 else ""
        return f"{sign}{abs(expr.p)}/{expr.q}"

    def _print_Half(self, expr):
        return "1/2"

    def _print_Float(self, expr):
        return f"{float(expr):.6g}".replace("-", MINUS)

    def _print_Pi(self, expr):
        return "π"

    def _print_Exp1(self, expr):
        return "e"

    def _print_ImaginaryUnit(self, expr):
        return "i"

    def _print_Infinity(self, expr):
        return "∞"

    # -- scalar arithmetic
    def _terms(self, terms) -> str:
        """A sum, positive terms first, each negative one after ``−``."""
        signed = []
        for term in terms:
            text = self._print(term)
            negative = text.startswith(MINUS)
            signed.append((negative, text[1:].lstrip() if negative else text))
        signed.sort(key=lambda t: t[0])
        out = (MINUS if signed[0][0] else "") + signed[0][1]
        for negative, text in signed[1:]:
            out += f" {MINUS if negative else '+'} {text}"
        return out

    def _print_Add(self, expr, order=None):
        return self._terms(self._as_ordered_terms(expr, order=order))

    def _product(self, factors) -> str:
        return juxtapose([self._factor(f) for f in factors])

    def _print_Mul(self, expr):
        coeff, rest = expr.as_coeff_Mul()
        if coeff.is_negative:
            body = self._print(-expr)
            return MINUS + (f"({body})" if body.startswith(MINUS) else body)
        numer, denom = sympy.fraction(expr, exact=True)
        if denom != 1:
            top = self._print(numer)
            if isinstance(numer, sympy.Add):
                top = f"({top})"
            bottom = self._print(denom)
            if isinstance(denom, (sympy.Add, sympy.Mul)) or (isinstance(denom, sympy.Pow) and
                                                             not denom.exp.is_Integer and denom.exp != sympy.S.Half):
                bottom = f"({bottom})"
            return f"{top}/{bottom}"
        return self._product(sympy.Mul.make_args(expr))

    def _print_Pow(self, expr, rational=False):
        base, exp = expr.base, expr.exp
        if exp == sympy.S.Half:
            inner = self._print(base)
            return f"√{inner}" if base.is_Atom else f"√({inner})"
        if exp.is_negative:
            if exp == -1:
                return "1/" + self._factor(base) if not isinstance(base, (sympy.Mul, sympy.Pow)) else \
                    f"1/({self._print(base)})"
            return f"1/{self._print(sympy.Pow(base, -exp))}"
        if isinstance(base, sympy.Function) and exp.is_Integer and exp > 0 and len(base.args) == 1:
            return f"{self._fname(base)}{sup(str(exp))}({self._print(base.args[0])})"
        text = self._print(base)
        if isinstance(base, sympy.Symbol) and base.name in POWER_NAMES:
            return f"({text}){sup(self._print(exp))}"
        if not (base.is_Atom and not (base.is_Number and base.is_negative)) and not isinstance(
                base, (sympy.Function, sympy.MatrixSymbol)):
            text = f"({text})"
        return text + sup(self._print(exp))

    # -- functions
    NAMES = {"loggamma": "log Γ", "ceiling": None, "floor": None, "Abs": None}

    def _fname(self, expr) -> str:
        return self.NAMES.get(type(expr).__name__) or type(expr).__name__

    def _print_Function(self, expr):
        return f"{self._fname(expr)}({', '.join(self._print(a) for a in expr.args)})"

    def _print_exp(self, expr):
        arg = self._print(expr.args[0])
        return f"e{sup(arg)}" if len(re.sub("<[^>]+>", "", arg)) <= 24 else f"exp({arg})"

    def _print_ceiling(self, expr):
        return f"⌈{self._print(expr.args[0])}⌉"

    def _print_floor(self, expr):
        return f"⌊{self._print(expr.args[0])}⌋"

    def _print_Abs(self, expr):
        return f"|{self._print(expr.args[0])}|"

    def _print_Lambda(self, expr):
        variables = ", ".join(self._print(v) for v in expr.variables)
        return f"({variables} ↦ {self._print(expr.expr)})"

    # -- matrices
    def _print_Identity(self, expr):
        return "I"

    def _print_ZeroMatrix(self, expr):
        return "0"

    def _print_OneMatrix(self, expr):
        rows, cols = expr.shape
        return "1" if 1 in (rows, cols) else "11ᵀ"

    def _print_MatAdd(self, expr):
        return self._terms(expr.args)

    def _print_MatMul(self, expr):
        coeff, matrices = expr.as_coeff_matrices()
        if coeff.as_coeff_Mul()[0].is_negative:
            body = self._print(sympy.MatMul(-coeff, *matrices).doit() if -coeff != 1 else sympy.MatMul(*matrices))
            return MINUS + body
        numer, denom = sympy.fraction(coeff, exact=True)
        texts = [] if numer == 1 else [self._factor(numer) if not isinstance(numer, sympy.Mul)
                                       else self._print(numer)]
        texts += [self._wrap(m) for m in matrices]
        text = juxtapose(texts) if texts else "1"
        if denom != 1:
            bottom = self._print(denom)
            text += "/" + (f"({bottom})" if isinstance(denom, (sympy.Add, sympy.Mul)) else bottom)
        return text

    def _postfix(self, arg, mark: str) -> str:
        text = self._print(arg)
        return (text if isinstance(arg, (sympy.MatrixSymbol, sympy.Symbol)) else f"({text})") + mark

    def _print_Transpose(self, expr):
        return self._postfix(expr.arg, "ᵀ")

    def _print_Inverse(self, expr):
        return self._postfix(expr.arg, "⁻¹")

    def _print_MatPow(self, expr):
        return self._postfix(expr.base, sup(self._print(expr.exp)))

    def _print_Trace(self, expr):
        return f"tr({self._print(expr.arg)})"

    def _print_Determinant(self, expr):
        return f"det({self._print(expr.arg)})"

    def _print_DiagMatrix(self, expr):
        return f"diag({self._print(expr.args[0])})"

    _print_DiagonalizeVector = _print_DiagMatrix
    _print_DiagonalMatrix = _print_DiagMatrix

    def _print_KroneckerProduct(self, expr):
        return " ⊗ ".join(self._wrap(a, (sympy.MatAdd, sympy.MatMul)) for a in expr.args)

    def _print_HadamardProduct(self, expr):
        return " ⊙ ".join(self._wrap(a, (sympy.MatAdd, sympy.MatMul)) for a in expr.args)

    def _print_ElementwiseApplyFunction(self, expr):
        """``f`` applied to each entry: a named map (φ, ψ, …) defined below the formula."""
        fn = expr.function
        body = fn.expr if isinstance(fn, sympy.Lambda) else None
        var = sympy.Symbol("y")
        if body is not None:
            body = body.xreplace({fn.variables[0]: var})
        definition = self._print(body) if body is not None else self._print(fn)
        var = self._print(var)
        names = [n for n, _ in self.functions]
        for name, text in self.functions:
            if text.endswith(f"= {definition}"):
                break
        else:
            name = "φψχϑϖ"[len(names) % 5] + (sub(str(len(names) // 5 + 1)) if len(names) >= 5 else "")
            self.functions.append((name, f"{name}({var}) = {definition}"))
        return f"{name}({self._print(expr.expr)})"

    def _print_MatrixBase(self, expr):
        rows, cols = expr.shape
        if (rows, cols) == (1, 1):
            return self._print(expr[0, 0])
        cells = "".join('<span class="row">' + "".join(f'<span class="cell">{self._print(expr[i, j])}</span>'
                                                       for j in range(cols)) + "</span>" for i in range(rows))
        return f'<span class="mat">{cells}</span>'

    _print_ImmutableDenseMatrix = _print_MatrixBase
    _print_MutableDenseMatrix = _print_MatrixBase

    def _print_MatrixElement(self, expr):
        """``G[0, 1]`` as G₁₂: entries counted from 1, as in the paper."""
        i, j = (self._print(k + 1) for k in expr.indices)
        return self._print(expr.parent) + sub(i + j if len(i + j) == 2 else f"{i},{j}")

    def _print_Tuple(self, expr):
        return "(" + ", ".join(self._print(a) for a in expr) + ")"


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
        sized = [(len(FormulaPrinter().doprint(n)), sympy.count_ops(n), n) for n in repeated]
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


def typeset(expr, caption: str = "") -> Formula:
    """The expression as a :class:`Formula`, long repeated pieces named in its *where* list."""
    expr = sympy.sympify(expr)
    short, defs = _abbreviate(expr)
    printer = FormulaPrinter()
    main = printer.doprint(short)
    where = [(printer.doprint(name), printer.doprint(body)) for name, body in defs]
    where += [(text.split(" = ", 1)[0], text.split(" = ", 1)[1] + ", entrywise") for _, text in printer.functions]
    return Formula(main, tuple(where), caption)
