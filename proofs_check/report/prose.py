"""Ledger text as prose: no Python operator, caret or raw subscript reaches the report.

Titles, statements, step names, findings and conditions are written by the checks as plain text
with the conventions of code (``W_VO``, ``x**2``, ``A^m``, ``g*_norm``, ``['W1', 'alpha']``).
:func:`prose` sets them as markdown (or HTML) in the notation of ``proofs_check.report.typeset``:
a symbol's subscript or superscript as one, a parameter name (``value_scale``) as code, a list of
names as the names, ``a*b`` as ``a·b``; file paths and everything else stay literal.
"""

from __future__ import annotations

import html
import re

from proofs_check.report.typeset import GREEK, MINUS, sub, sup, symbol_name
from proofs_check.report.values import numbers_in_prose

_PROSE = re.compile(
    r"(?P<path>(?<![\w/])[\w.-]+(?:/[\w.-]+)+\.(?:py|md|json|png|pdf|txt|toml))"              # a file path, as it is
    r"|(?P<names>\[(?:'[^'\[\]]*'(?:, )?)+\])"                                    # ['W1', 'alpha']: a list of names
    r"|(?<![\w\\/])(?P<ident>[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)(?![A-Za-z0-9{(/])"   # W_VO, Pi_plus, value_scale
    r"(?:(?:\*\*|\^)(?P<power>\{[^{}]+\}|\([^()]+\)|[-−]?(?:\d+|[^\W\d_])))?"                     # A_c^2
    r"|(?P<base>(?:(?<![\w\\/])[^\W_]+|(?<![\w\\])[^\W\d_](?![^\W_])|[∂Σ∇])[\u0300-\u036f′⁻¹ᵀ]*(?:\*(?!\*))?|[)‖|])"  # θ_ℓ, g*_norm, max_(…), ‖A‖^m
    r"(?:_(?P<low>\{[^{}]+\}|\([^()]+\)|[A-Za-z0-9ℓΑ-Ωα-ω]+)"                                # x̄_{b−1}, Σ_(j≤0), P_λ
    r"|(?:\*\*|\^)(?P<high>\{[^{}]+\}|\([^()]+\)|[-−]?(?:\d+(?:\.\d+)?|[^\W\d_])))")  # 2, T, (k+1)      # x**2, 4^T, ε^(k+1)
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>$|])")
_TIMES = re.compile(r"(?:(?<=[^\W_])|(?<=\)))\*(?=[^\W_]|\()")  # Python's a*b between operands: a·b (not g*, g*_norm or **)


_VERDICT_TAIL = re.compile(r":\s*True\b")                   # "A − QAQ = 0: True": the step's mark says it
_PY_WORDS = {"True": "yes", "False": "no", "None": "none"}
_PY_WORD = re.compile(r"(?<![\w'])(True|False|None)(?![\w'])")
_NUMBER_LIST = re.compile(r"\[((?:\s*[-−]?[\d./e+-]+\s*,){2,}\s*[-−]?[\d./e+-]+\s*)\]")  # [1/4, -1/4, 0]: a vector
_KEYWORD = re.compile(r"\b([a-z]\w*)='([^'\n]*)'")  # arch='postln': a keyword argument's repr


def plain(text: str) -> str:
    """Python's words out of ledger prose: a trailing ``: True`` dropped, True/False/None as words, a list of
    numbers as a vector (1/4, −1/4, 0; a pair [a, b] stays an interval), ``arch='postln'`` as "arch postln"."""
    text = _VERDICT_TAIL.sub("", text)
    text = _KEYWORD.sub(r"\1 \2", text)
    text = _NUMBER_LIST.sub(lambda m: "(" + m.group(1).replace("-", MINUS) + ")", text)
    return _PY_WORD.sub(lambda m: _PY_WORDS[m.group(1)], text)


def _md(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", text)


def _is_symbol(ident: str) -> bool:
    """``W_VO``, ``Pi_plus``, ``x_0``: a one-letter or Greek base with one subscript (not ``value_scale``)."""
    base, *subs = ident.split("_")
    return len(subs) == 1 and (len(base) == 1 or base in GREEK)


def prose(text, escape=_md) -> str:
    """Ledger text as markdown: ``A_B`` set as a subscript, ``x**2``/``x^2`` as a superscript, a
    parameter name (``value_scale``) as code, a list of names (``['W1', 'alpha']``) as the names
    (W₁, α); everything else literal (markdown characters escaped;
    ``escape=html.escape`` for HTML)."""
    text = _TIMES.sub("·", plain(numbers_in_prose(str(text))))
    out, last = [], 0
    for m in _PROSE.finditer(text):
        out.append(escape(text[last:m.start()]))
        last = m.end()
        if m.group("path"):
            out.append(escape(m.group("path")))
            continue
        if m.group("names"):
            out.append(", ".join(symbol_name(n) for n in re.findall(r"'([^']*)'", m.group("names"))))
            continue
        if m.group("ident"):
            ident = m.group("ident")
            if _is_symbol(ident):
                out.append(symbol_name(ident))
            else:
                out.append(f"<code>{html.escape(ident)}</code>" if escape is not _md else f"`{ident}`")
            if m.group("power"):
                out.append(sup(html.escape(m.group("power").strip("{}").removeprefix("(").removesuffix(")"))))
            continue
        script = (m.group("low") or m.group("high")).strip("{}")
        if script.startswith("(") and script.endswith(")"):
            script = script[1:-1]
        script = html.escape(script.replace("-", MINUS))
        out.append(escape(m.group("base")) + (sub(script) if m.group("low") else sup(script)))
    out.append(escape(text[last:]))
    return "".join(out).replace(" \\* ", " · ").replace(" * ", " · ")
