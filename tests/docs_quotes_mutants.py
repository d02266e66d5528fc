"""Passages of docs/equivalent_mutants.md tied to the survivors' tables, the equivalence rules and the code at
each run's commit (``tests/test_docs_numbers.py``'s ``QUOTES``, same shape; values in
``tests/docs_ties_mutants.py``).  The survivors' table patterns are built from the page's own rows with every
line number a group, so an edited line number still matches and is compared with the code."""

from __future__ import annotations

import re
from functools import partial

import docs_ties_mutants as M
from docs_ties import passage, run

DOC = M.DOC
ANY = r"[\s\S]*?"


def _anchor(title: str) -> str:
    return r"(?m)^## " + re.escape(title) + ANY


def _summary_pattern(title: str) -> str:
    rows = []
    for file, *_ in M.SUMMARY.findall(M.section(title)):
        key = re.sub(r"\W", "_", file)
        rows.append(passage(f"| `{file}` | {{{key}_total}} | {{{key}_killed}} | {{{key}_score}} | {{{key}_eq}} | "
                            f"{{{key}_dev}} | {{{key}_open}} |"))
    return _anchor(title) + passage("**{killed}/{total} = {score}** killed.") + ANY + r"\s*".join(rows)


def _survivors_pattern(title: str) -> str:
    rows = []
    for i, (file, line, mutation, rule) in enumerate(M.survivors(title)):
        number = "None" if line == "None" else rf"(?P<line_{i}>\d+)"
        rows.append(r"\| " + re.escape(file) + r" \| " + number + r" \| `" + re.escape(mutation) + r"` \| "
                    + re.escape(rule) + r" \|")
    return _anchor(title) + r"\| file \| line \| mutation \| rule \|\n\|---\|---\|---\|---\|\n" + r"\n".join(rows)


def _rules_pattern(title: str) -> str:
    return (_anchor(title) + passage("exactly (division by {one} is exact") + ANY
            + passage("by rounding only (~{rounding} relative)") + ANY + passage("**E6** (equivalent): flatten(")
            + r"(?P<dim>-\d+)\)")


_NOW, _EARLIER = M.SECTIONS

QUOTES: list = [
    (DOC, f"{title[:20]}: summary", partial(M.summary, title), _summary_pattern(title)) for title in M.SECTIONS
] + [
    (DOC, f"{title[:20]}: survivors' lines", partial(M.lines, title), _survivors_pattern(title))
    for title in M.SECTIONS
] + [
    (DOC, f"{title[:20]}: rules", M.rule_numbers, _rules_pattern(title)) for title in M.SECTIONS
] + [
    (DOC, "stack.py run, provenance", lambda: run("code-mutants-stack-2026-12-07"),
     passage("## numerics/stacks/stack.py, 2026-12-07 {hour}:{minute} UTC (commit b60a6a6,") + ANY
     + passage("idle 2-core VM, load {lo}–{hi}, {wall} s)")),
    (DOC, "the stack.py run before", M.run_before,
     passage("The run before (2026-12-04 {hour}:{minute}–{end_hour}:{end_minute}, commit 87177d0, load {lo}–{hi}) "
             "scored {killed}/{total} = {score}: its two extra survivors")),
]
