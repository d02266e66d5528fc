"""Where the numbers of docs/equivalent_mutants.md come from.

Each section of the page is one mutation run: a summary table (per file: mutants, killed, score and the
survivors by kind) and the survivors' table (file, line, mutation, rule).  The summary is held to the survivors'
table (equivalent, device-only and open are the counts of its rows by kind, mutants − killed its row count, the
score killed/mutants, the headline the column sums); each survivor's rule is the one
``proofs_check.mutation.equivalents.classify`` gives its mutation today, in the function that holds its line at
the run's commit (where the table shows the whole mutation); each survivor's line is where the
mutated line stands in the file at the commit that recorded the run (git history; skipped in a checkout
without it); the rules' numbers are those of ``equivalents.RULES``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = "docs/equivalent_mutants.md"
#: Each section's heading start and the commit whose files its survivors' lines refer to, with the path each
#: file had there (the earlier run predates numerics/'s regrouping into stacks/).
SECTIONS = {
    "numerics/stacks/stack.py, 2026-12-07": ("b60a6a6", {}),
    "Every mutated file, the earlier full run": ("4c269a4", {"numerics/stacks/": "numerics/"}),
}
SURVIVOR = re.compile(r"(?m)^\| (numerics/\S+) \| (\d+|None) \| `(.*?)` \| (\S+) \|$")
SUMMARY = re.compile(r"(?m)^\| `(numerics/\S+)` \| (\d+) \| (\d+) \| ([\d.]+) \| (\d+) \| (\d+) \| (\d+) \|$")


def section(title: str) -> str:
    """The text of the section whose heading starts with ``title``."""
    text = (ROOT / DOC).read_text()
    parts = re.split(r"(?m)^## ", text)
    (body,) = [p for p in parts if p.startswith(title)]
    return body


def survivors(title: str) -> list[tuple[str, str, str, str]]:
    """(file, line, mutation, rule) of each row of the section's survivors' table."""
    return SURVIVOR.findall(section(title))


#: The survivors' table prints a mutation cut at this many characters (equivalents.markdown).
SHOWN = 160


def _kind(rule: str) -> str:
    """The kind of a listed rule key ('**open**' where none applied)."""
    from proofs_check.mutation.equivalents import RULES

    return {r.key: r.kind for r in RULES}.get(rule, "open")


def _classified(function: str, mutation: str) -> str:
    """The rule key ``classify`` gives a mutation of ``function`` today ('**open**' where none applies)."""
    from proofs_check.mutation.equivalents import classify

    rule = classify({"mutant": function, "mutation": mutation})
    return rule.key if rule else "**open**"


def summary(title: str) -> dict:
    """The summary table's numbers as the survivors' table implies them, per file (prefix = the file's stem)."""
    rows = survivors(title)
    out, killed_sum, total_sum = {}, 0, 0
    for file, total, killed, _score, _eq, _dev, _open in SUMMARY.findall(section(title)):
        mine = [r for r in rows if r[0] == file]
        kinds = [_kind(rule) for *_, rule in mine]
        key = re.sub(r"\W", "_", file)
        out |= {f"{key}_total": int(killed) + len(mine), f"{key}_killed": int(total) - len(mine),
                f"{key}_score": int(killed) / int(total), f"{key}_eq": kinds.count("equivalent"),
                f"{key}_dev": kinds.count("device-only"), f"{key}_open": kinds.count("open")}
        killed_sum, total_sum = killed_sum + int(killed), total_sum + int(total)
    return out | {"killed": killed_sum, "total": total_sum, "score": killed_sum / total_sum}


def _source(commit: str, path: str) -> list[str]:
    out = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        pytest.skip(f"this checkout has no {commit}:{path} (a shallow clone)")
    return [line.strip() for line in out.stdout.splitlines()]


def lines(title: str) -> dict:
    """Each survivor's line (group line_i) where its mutated line stands at the run's commit: the quoted line
    when it holds the mutated text, else the nearest line that does; and each rule as ``classify`` gives it."""
    commit, renames = SECTIONS[title]
    out = {}
    for i, (file, line, mutation, rule) in enumerate(survivors(title)):
        if line == "None":
            continue
        path = file
        for new, old in renames.items():
            path = path.replace(new, old)
        source = _source(commit, path)
        old_text = mutation.split("  ->  ")[0].strip()
        hits = [n + 1 for n, text in enumerate(source) if text == old_text]
        assert hits, f"{file}: '{old_text}' is not a line of {commit}:{path}"
        at = min(hits, key=lambda n: abs(n - int(line)))
        out[f"line_{i}"] = at
        if len(mutation) < SHOWN:      # the whole mutation is shown: classify it in its function, as mutate does
            function = next((m.group(1) for text in reversed(source[:at])
                             if (m := re.match(r"def (\w+)\(", text))), "")
            assert _classified(function, mutation) == rule, \
                f"{file}:{line} is listed as {rule}; classify gives {_classified(function, mutation)}"
    return out


def rule_numbers() -> dict:
    """The numbers inside the rules' reasons, read from equivalents.RULES."""
    from proofs_check.mutation.equivalents import RULES

    why = {r.key: r.why for r in RULES}
    (one,) = re.findall(r"division by ([\d.]+)", why["E3"])
    (rounding,) = re.findall(r"rounding only \(~([\de.-]+) relative\)", why["E5"])
    (dim,) = re.findall(r"flatten\((-\d+)\)", why["E6"])
    return {"one": float(one), "rounding": float(rounding), "dim": int(dim)}


def run_before() -> dict:
    """The stack.py run before the current one: its time and load from the run log, its score from its counts, and
    its survivors the current run's plus the two it names (mutants − killed = survivors)."""
    from docs_ties import run

    out = run("code-mutants-stack-2026-12-04")
    end = (out["hour"] * 60 + out["minute"]) * 60 + out["wall"]
    m = re.search(r"scored (\d+)/(\d+) = ", section("numerics/stacks/stack.py, 2026-12-07"))
    killed, total = int(m.group(1)), int(m.group(2))
    extra = len(survivors("numerics/stacks/stack.py, 2026-12-07")) + 2
    return out | {"end_hour": int(end // 3600), "end_minute": int(end % 3600 // 60), "killed": total - extra,
                  "total": killed + extra, "score": killed / total}
