"""Ledger text set as literal markdown, for every page the suite writes (report, summary tables)."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>$|])")


def md_escape(text) -> str:
    """Ledger text as literal markdown: ``g*``, ``θ_ℓ``, ``[1, 2]`` and ``|`` stay characters."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))
