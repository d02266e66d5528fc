"""Passages of docs/ARCHITECTURE.md, docs/cli.md and docs/report/README.md tied to the constants and runs that give
their numbers (``tests/test_docs_numbers.py``'s ``QUOTES``, same shape)."""

from __future__ import annotations

import docs_ties_house as H
from docs_ties import passage

QUOTES: list = [
    ("docs/ARCHITECTURE.md", "longest module", H.module_lines,
     passage("A family module that outgrows {lines} lines keeps")),
    ("docs/report/README.md", "browser window", H.report_width, passage("headless Chromium at {width} px")),
    ("docs/cli.md", "seed range", H.seed_bound, passage("an integer 0 ≤ N < {base}**{exp} − 1 |")),
    ("docs/cli.md", "help and spinning threads", H.help_and_threads,
     passage("`fastslow --help` took {help_wall} s wall on the 2-core VM at load {help_lo}–{help_hi}") + r"[\s\S]*?"
     + passage("measured at load {lo}–{hi} on 2 cores") + r"[\s\S]*?"
     + passage("`simulate` at its defaults took {simulate_active_wall} s with spinning threads and "
               "{simulate_passive_wall} s without, `check --claim 1.1` {check_1_1_active_wall} s and "
               "{check_1_1_passive_wall} s, with the same numbers")),
]
