"""The inventory of numbers quoted in docs/: each is generated, tied by a test, definitional, or listed as untied.

A number in a doc is
(a) *generated* when it lies in a section between ``<!-- generated:NAME -->`` markers, which
    ``python -m proofs_check.headline --check FILE`` holds to its record (README.md, docs/claims.md);
(b, c) *tied* when a passage of ``tests/test_docs_numbers.py``'s ``QUOTES`` covers it: the test reruns the
    computation, reads the record, or evaluates the mathematical constant, and compares;
*definitional* when one of :data:`RULES` covers it (a claim's number, a setting the run was given, a check's
    acceptance band, a date or version, an equation's constant), each rule with its reason;
*untied* otherwise: a measurement nothing checks.  The untied ones are listed in docs_numbers_untied.json, by doc,
    heading and the words before the number.  The list only shrinks: a number that is not on it fails the test
    (tie it, or, for a definitional number, add a rule with its reason), and an entry no longer found fails too
    (the number was tied or removed: ``python tests/docs_inventory.py --write`` rewrites the list, and the diff
    shows what left it).

Code (fenced, indented, inline) and link targets are not prose and are not scanned.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNTIED = Path(__file__).with_name("docs_numbers_untied.json")
#: The docs this inventory covers: every page of docs/ (and its sub-folders) and the README.
DOCS = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")))
#: Parts of a doc that code writes from a committed record, each held to its record by a test: (doc, the heading
#: the part begins at, the test).  They count as generated.
GENERATED_PARTS = (
    ("docs/depth_study.md", "## Results",
     "tests/test_depth_study.py::test_committed_results_match_the_committed_record"),
)
#: Pre-registrations: text frozen when it was registered and dated (the settings, thresholds and decision rule,
#: and the observations an amendment was made on), never edited after the data were seen.  Its numbers are what
#: was registered, not measurements of today's code; tests/test_preregistrations.py holds the registered settings
#: to the record of the run that followed.  (doc, the heading it begins at or None for the top, the heading it
#: ends at or None for the end.)
FROZEN = (
    ("docs/depth_study.md", "## Pre-registration", "## Results"),
    ("docs/trained/text-7.3-capacity.md", None, None),
    ("docs/trained/text-7.3-power.md", "## Pre-registered decision rule", "## Outcome"),
)

NUMBER = re.compile(r"(?<![\w.·/^_])[−-]?\d+(?:,\d{3})*(?:\.\d+)?(?:e[−-]?\d+)?(?!\w)")
_CLAIM = r"(?<![\d.])(?:1\.[12]|2\.[1-4]|3\.[12]|4\.[12]|5\.[1-3]|6\.[1-4]|7\.[1-3]|8\.1)(?![\d])"
_ONE = r"[−-]?\d+(?:,\d{3})*(?:\.\d+)?(?:e[−-]?\d+)?"
_RANGE = rf"{_ONE}(?:\s*(?:…|–|\.\.\.|,|and)\s*{_ONE})*"
#: Definitional numbers: (reason, pattern); every number inside a match is covered.
RULES = (
    ("a claim's or section's number",
     r"(?:Claims?|claims?|§|Sections?)\s*\d+(?:\.\d+)?(?:(?:,\s*|\s+and\s+|\s*–\s*|\s*…\s*|\s+or\s+|\s*/\s*)"
     r"(?:§\s*)?\d+(?:\.\d+)?)*"),
    ("a claim's number in a table's first column, a bold heading or a list of claims",
     rf"(?m)^\|\s*{_CLAIM}(?:\([ab]\))?(?=\s*[|:/]|\s+[A-Za-z])|\*\*{_CLAIM}|(?<=[(/–,] ){_CLAIM}(?=[,)/–]|\(a\))"
     rf"|(?<=[(/–,]){_CLAIM}(?=[,)/–]|\(a\))|{_CLAIM}(?=\(a\)|/{_CLAIM})|(?<=/){_CLAIM}"
     rf"|{_CLAIM}(?:(?:, | and |–| or |, and ){_CLAIM})+|{_CLAIM}(?= \*)|(?<=ledger's ){_CLAIM}|(?<=\n\| ){_CLAIM}(?=, {_CLAIM})"
     rf"|(?:(?<=for )|(?<=of )){_CLAIM}(?=[:;,.)]| check| table| and)"
     rf"|(?<=\| ){_CLAIM}(?= \|)|(?<=\(){_CLAIM}(?=:)|(?<=on ){_CLAIM}(?= the )"),
    ("a claim's number used as its name ('7.3's interval', '7.3 on text')",
     r"(?<![\d.])\d\.\d(?=(?:'s|’s| on text))"),
    ("a setting the run was given (sizes, seeds, the value scale c, tolerances τ, option values)",
     rf"(?<![\w/*])(?:T|d|L|P|n|c|m|k|α|τ|η|h|d_k|seed|seeds|--\w[\w-]*)\s*(?:=|∈|≥|≤)?\s*[\[(]?{_RANGE}[\])]?"),
    ("a size the run was given", r"\d[\d.,]*\s*k?[ -](?:layers?|heads?|seeds?|bytes|steps|tokens|workers|examples"
                                 r"|cores?|threads?|windows|probes?|directions|families)\b"),
    ("a check's acceptance band, a constant in its code", r"[−-]?\d[\d.]*\s*±\s*\d[\d.]*"),
    ("an exponent's base (2⁻⁴⁰, 10⁻⁶) or a root's argument (√2)", r"\d+[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+|√\d+"),
    ("a date, version, identifier or citation",
     r"\b20\d\d(?:-\d\d-\d\d)?\b|\b\d+\.\d+\.\d+\b|\b(?:GPT|v|RFC|float|int|bfloat|arXiv|PEP)[- ]?\d[\d.]*"
     r"|\b\d{4}\.\d{5}\b"),
    ("the integers 0 and ±1 of a formula (an identity, an index, a bound's threshold)",
     r"(?<![\d.,])[−-]?[01](?![\d.,]\d|\d)"),
    ("a depth or size the run was given", r"(?:at depths?|L = |over)\s*" + _RANGE),
    ("a software or command-line constant (Python ≥ 3.11, AVX-512, exit status 2)",
     r"Python ≥ \d\.\d+|AVX-512|(?:exit|exits)(?: with)? (?:status |code )?\d+(?:,? \d+)*(?: or \d+)?"
     r"|\b130 an interrupt"),
    ("a file's name (text-7.3-power.md)", r"[\w./-]*\d[\w./-]*\.(?:md|json|png|py|toml|parquet)\b"),
    ("an ordinal of a list or a heading ('(3)', '## 2. numerics/')", r"(?<=\()\d(?=\))|(?m:^#+\s+\d+(?=\.))"),
    ("a budget the project sets itself (the suite's time on 2 cores)", r"under ~\d+ minutes on 2 cores"),
    ("the confidence level the summary's interval is computed at (proofs_check.sweep.summary.CONFIDENCE)",
     r"\b95 % Wilson interval"),
    ("the dimension of a slice or plot (2-D: two axes)", r"\b[23]-D\b"),
    ("an example input a refusal is shown on", r"\(1e-50 in float32|a 4-task\b"),
    ("a check's tolerance constant, as its code states it", r"below 64·eps|clock to 10·L·\(d\+1\)"),
    ("a perturbation or gate the check applies (its size is chosen, not measured)",
     r"1x̄ᵀ \+ 0\.1 Z|relative\s+spread 0\.3 and 1|at g = 1\.1 g\*|\(1 \+ 10⁻⁶, 2, 4\)|e\^\{−3\}"),
    ("an order or count the theory states (a prediction's exponent, LN's two removed directions, N slow "
     "directions of the setting)",
     r"grows like 4\^T|Slope 2 is verified|give about −0\.5 and 0|the d − 2\s+features|the N = 16 slow"),
    ("the size of a model system", r"2 × 2 systems|2- and\s+3-state"),
    ("the value scales at which the draws reach ρ̃ < 1 (a property of the drawing, stated as a range of c)",
     r"c ≳ 5 \(full\) or\s+c ≳ 20"),
    ("a claim's number", r"Bayes gap of 7\.2"),
    ("an equation's constant (1/L, 1 − λ, O(h²), c·I)",
     r"O\([^)]*\)|\b1\s*/\s*\w|\(1\s*[−+]|\b1\s*[−+]\s*(?=[\wλhαεδ(])|[×·]\s*\d|\d\s*[×·]"),
)


def _part(text: str, begin: str | None, end: str | None) -> tuple[int, int]:
    """The character span from heading ``begin`` (None: the top) to heading ``end`` (None: the end)."""
    def at(heading):
        m = re.search(rf"(?m)^{re.escape(heading)}\b", text)
        assert m, f"no heading {heading!r}"
        return m.start()
    return (0 if begin is None else at(begin)), (len(text) if end is None else at(end))


def prose(text: str, doc: str = "") -> str:
    """``text`` with generated sections and parts, frozen pre-registrations, code and link targets blanked
    (offsets kept)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    parts = [_part(text, begin, end) for d, begin, end in [(d, b, None) for d, b, _ in GENERATED_PARTS] + list(FROZEN)
             if d == doc]
    for a, b in parts:
        text = text[:a] + re.sub(r"[^\n]", " ", text[a:b]) + text[b:]
    text = re.sub(r"<!-- generated:(\w+) -->.*?<!-- /generated:\1 -->", blank, text, flags=re.S)
    text = re.sub(r"```.*?```", blank, text, flags=re.S)
    text = re.sub(r"(?m)^    .*$", blank, text)
    text = re.sub(r"`[^`\n]*`", blank, text)
    return re.sub(r"\]\([^)]*\)", blank, text)


def _key(text: str, start: int, number: str) -> str:
    before = " ".join(text[max(0, start - 60):start].split()[-3:])
    return f"{before} ⟦{number}⟧"


def _heading(text: str, start: int) -> str:
    heads = re.findall(r"(?m)^#+ .*$|^\*\*Claim [\d.]+[^*]*\*\*", text[:start])
    return heads[-1].strip("#* ") if heads else "(top)"


def untied(doc: str, text: str, tied: list[tuple[int, int]]) -> list[tuple[str, str]]:
    """(heading, key) of every number in ``text`` that no generated section, tie or rule covers."""
    body = prose(text, doc)
    covered = bytearray(len(body))
    for a, b in tied:
        covered[a:b] = b"\x01" * (b - a)
    for _, pattern in RULES:
        for m in re.finditer(pattern, body):
            covered[m.start():m.end()] = b"\x01" * (m.end() - m.start())
    return [(_heading(text, m.start()), _key(text, m.start(), m.group()))
            for m in NUMBER.finditer(body) if not all(covered[m.start():m.end()])]


def inventory(tied_spans) -> dict[str, dict[str, list[str]]]:
    """doc -> heading -> the untied numbers' keys, for every doc in :data:`DOCS`."""
    out: dict[str, dict[str, list[str]]] = {}
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for heading, key in untied(doc, text, tied_spans(doc, text)):
            out.setdefault(doc, {}).setdefault(heading, []).append(key)
    return out


def flat(inv: dict) -> Counter:
    return Counter((doc, h, k) for doc, heads in inv.items() for h, keys in heads.items() for k in keys)


def load_untied() -> dict:
    return json.loads(UNTIED.read_text())


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from test_docs_numbers import tied_spans

    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/docs_inventory.py --write")
    UNTIED.write_text(json.dumps(inventory(tied_spans), ensure_ascii=False, indent=1) + "\n")
