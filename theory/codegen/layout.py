"""Line layout of generated statements: a long expression gets one term per line.

Only whitespace is inserted, inside parentheses, so the layout never changes
how Python parses a statement.
"""

from __future__ import annotations

import re

WIDTH = 88
#: Operator levels tried in turn: a long expression is split at the first level
#: that occurs outside brackets (``*`` and ``@`` share one Python precedence).
_LEVELS = ((" + ", " - "), (" @ ", " * "))


def _split(expr: str, operators) -> list[str]:
    """``expr`` cut before each top-level operator (outside brackets and strings)."""
    terms, depth, quote, start = [], 0, None, 0
    for i, char in enumerate(expr):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and i > start and expr[i:i + 3] in operators:
            terms.append(expr[start:i])
            start = i + 1
    return terms + [expr[start:]]


def is_group(expr: str) -> bool:
    """True for ``(...)`` whose first parenthesis closes at the last character."""
    return expr.startswith("(") and _closing(expr) == len(expr) - 1


def _closing(expr: str) -> int:
    depth = 0
    for i, char in enumerate(expr):
        depth += char in "([{"
        depth -= char in ")]}"
        if depth == 0:
            return i
    return -1


def format_expression(expr: str, indent: str) -> list[str]:
    """Lines holding ``expr`` at ``indent``; long ones split term by term, recursively."""
    if len(indent) + len(expr) <= WIDTH:
        return [indent + expr]
    for operators in _LEVELS:
        terms = _split(expr, operators)
        if len(terms) > 1:
            break
    else:
        return [indent + expr]
    lines = []
    for term in terms:
        operator, body = (term[:2], term[2:]) if term[1:2] == " " and term[0] in "+-@*" \
            else ("", term)
        if len(indent) + len(term) <= WIDTH:
            lines.append(indent + term)
        elif is_group(body):
            lines += [f"{indent}{operator}("]
            lines += format_expression(body[1:-1], indent + "    ") + [f"{indent})"]
        elif operators is _LEVELS[0] and len(_split(body, _LEVELS[1])) > 1:
            # a long product inside a sum: parenthesized (safe, it binds tighter anyway)
            lines += [f"{indent}{operator}("]
            lines += format_expression(body, indent + "    ") + [f"{indent})"]
        else:
            lines.append(indent + term)
    return lines


def wrap_statement(line: str) -> list[str]:
    """A ``name = ...`` or ``return ...`` line, wrapped in parentheses when too long."""
    if len(line) <= WIDTH:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    match = re.fullmatch(r"(return |\w+ = )(.*)", line.lstrip())
    if not match:
        return [line]
    body = format_expression(match[2], indent + "    ")
    if len(body) == 1:
        return [line]
    return [f"{indent}{match[1]}("] + body + [f"{indent})"]
