"""Passages tied to their records (``tests/test_docs_numbers.py``'s ``QUOTES``, same shape: doc, passage name, the
function that regenerates the values, the pattern)."""

from __future__ import annotations

QUOTES: list = []
