"""The report's claims × architectures section: the grid of statuses, then one conditions table.

The grid (``proofs_check.runners.grid``) gives each cell a status; every cell that is not
**holds** carries the condition under which it holds, the reason it does not apply, or the
counterexample that breaks it.  The report shows that in words, one row per claim, status and
condition, with the architectures that share it; the raw evidence (measured errors,
tolerances, shrunk counterexamples) stays in ``matrix.json`` beside the report.
"""

from __future__ import annotations

import re

from proofs_check.report.prose import prose
from proofs_check.tables import Markdown, bold, markdown_table

ORDER = {"fails": 0, "conditional": 1, "n/a": 2}


_CACHE_PATH = re.compile(r"checkpoint \S*cache/\S+ does not fit this stack(?:: no tensor \S+)?")


def _reason(cell: dict) -> str:
    """A non-holds cell's condition or reason in words (its counterexample only as a pointer; a cache path
    and a tensor name as what they mean)."""
    text = _CACHE_PATH.sub("the cached trained checkpoint has a different shape (another depth or width)",
                           (cell.get("condition") or "").strip())
    example = cell.get("counterexample") or {}
    if cell["status"] == "fails" and example:
        seed = f" (seed {example['seed']})" if isinstance(example, dict) and "seed" in example else ""
        text = (text.rstrip(".") + "; " if text else "") + f"a counterexample was found{seed}, recorded in matrix.json"
    return text or "no condition recorded"


def conditions_rows(matrix: dict) -> list[tuple[str, str, str, list[str]]]:
    """(claim, status, condition, architectures) for every non-holds cell, cells that share claim,
    status and condition merged, in the grid's claim order, failures first."""
    ids = matrix["options"]["claims"]
    archs = matrix["options"]["archs"]
    merged: dict[tuple[str, str, str], list[str]] = {}
    for cell in matrix["cells"]:
        if cell["status"] == "holds":
            continue
        merged.setdefault((cell["claim"], cell["status"], _reason(cell)), []).append(cell["arch"])
    rank = {c: i for i, c in enumerate(ids)}
    keys = sorted(merged, key=lambda k: (rank.get(k[0], len(ids)), ORDER.get(k[1], 3), k[2]))
    return [(c, s, r, sorted(merged[(c, s, r)], key=lambda a: archs.index(a) if a in archs else len(archs)))
            for c, s, r in keys]


def grid_section(matrix: dict, figures: list[str] = ()) -> list[str]:
    """Markdown for the report: the grid (bold status per cell), its figures, and the conditions table."""
    from proofs_check.report.document import figure_md, figure_titles

    archs = matrix["options"]["archs"]
    ids = matrix["options"]["claims"]
    by = {(c["claim"], c["arch"]): c for c in matrix["cells"]}
    sizes = "quick (CI) sizes" if matrix["options"].get("quick", True) else "full sizes"
    lines = ["## Claims × architectures", "",
             f"Every claim on every variant at {sizes}. A cell **holds** when the claim is measured within its "
             "tolerance and its negative control fails; **conditional** when it holds only under a condition; "
             "**fails** when a counterexample was found; **n/a** when the claim does not apply. The conditions "
             "table below says why for every cell that does not simply hold; the measured evidence of each cell "
             "is in matrix.json.", ""]
    rows = [[cid] + [bold(by[(cid, a)]["status"]) if (cid, a) in by else "–" for a in archs] for cid in ids]
    lines += markdown_table(["claim"] + list(archs), rows) + [""]
    titles = figure_titles()
    for name in figures:
        lines += figure_md(name, titles.get(name))
    table = conditions_rows(matrix)
    lines += ["### Conditions", "",
              f"The {sum(len(a) for *_, a in table)} cells that do not simply hold, merged where a claim has the "
              "same status and condition on several architectures.", ""]
    lines += markdown_table(("claim", "status", "architectures", "condition or reason"),
                            [(cid, bold(status), ", ".join(arch_list), Markdown(prose(reason)))
                             for cid, status, reason, arch_list in table])
    return lines + [""]
