"""Every table the suite prints or writes: plain text for the terminal, markdown for the report and docs.

:func:`text_table`: a header row, a rule of dashes under each column, then the rows; columns two spaces
apart, each as wide as its widest cell.  :func:`markdown_table`: a pipe table whose cells are set as
literal text (:func:`md_escape`: ``|``, ``*``, ``_`` … stay characters) unless a cell is
:class:`Markdown`, text that is already markdown (:func:`bold`, :func:`code`, a link).
:func:`md_escape` is also how every page the suite writes (report, findings, summaries) sets ledger text.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>$|])")


def md_escape(text) -> str:
    """Ledger text as literal markdown: ``g*``, ``θ_ℓ``, ``[1, 2]`` and ``|`` stay characters."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def _wrapped(text: str, width: int | None) -> list[str]:
    """A cell's lines: the whole text, or wrapped at spaces to ``width`` (a longer word stays whole)."""
    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False) or [""]


def text_table(rows: Sequence[Sequence], *, align: str | None = None, max_width: int | None = None,
               last_free: bool = False) -> list[str]:
    """Plain-text lines of ``rows`` (``rows[0]`` the header; cells become ``str``).

    ``align``: one character per column, ``<`` left (the default) or ``>`` right (numbers).  ``max_width``:
    a cell longer than this wraps onto continuation lines (nothing is cut).  ``last_free``: the last column
    is not padded and does not widen the rule (a free-text column such as a finding); its rule is as wide as
    its header."""
    n = len(rows[0])
    if any(len(row) != n for row in rows):
        raise ValueError(f"text_table: every row needs the header's {n} cells")
    align = align or "<" * n
    if len(align) != n or set(align) - {"<", ">"}:
        raise ValueError(f"text_table: align={align!r} needs one of '<' or '>' per column ({n})")
    wrapped = [[_wrapped(str(c), max_width) for c in row] for row in rows]
    widths = [max(len(part) for row in wrapped for part in row[i]) for i in range(n)]
    if last_free:
        widths[-1] = len(str(rows[0][-1]))

    def line(row):
        out = [c.rjust(w) if a == ">" else c.ljust(w) for c, w, a in zip(row, widths, align)]
        if last_free:
            out[-1] = row[-1]
        return "  ".join(out).rstrip()

    def physical(row):
        height = max(len(parts) for parts in row)
        return [line([parts[k] if k < len(parts) else "" for parts in row]) for k in range(height)]

    body = [text for row in wrapped[1:] for text in physical(row)]
    return physical(wrapped[0]) + ["  ".join("-" * w for w in widths)] + body


class Markdown(str):
    """Text that is already markdown: :func:`markdown_table` sets it as it is."""


def bold(text) -> Markdown:
    """``text`` as literal characters, in bold."""
    return Markdown(f"**{md_escape(text)}**")


def code(text) -> Markdown:
    """``text`` as inline code (a pipe inside stays in the cell)."""
    return Markdown("`" + str(text).replace("|", "\\|") + "`")


def markdown_table(header: Sequence, rows: Sequence[Sequence]) -> list[str]:
    """Lines of a markdown pipe table: the header, the ``|---|`` rule, one line per row.  A cell that is not
    :class:`Markdown` is escaped with ``md_escape``; a row needs the header's number of cells."""
    def cell(c) -> str:
        return str(c) if isinstance(c, Markdown) else md_escape(c)

    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"markdown_table: every row needs the header's {len(header)} cells, got {list(row)}")
    return (["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows])


__all__ = ["Markdown", "bold", "code", "markdown_table", "text_table"]
