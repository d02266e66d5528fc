"""The headline: an abstract of the ledger, the claims table and the real-Transformer bullets, generated.

Every sentence is built from a record: the ledger JSON (``fastslow check --json``) and the committed
measurement files under docs/ (docs/reach/*.json, docs/trained/*.json).  A number that is in no record
is not written.  ``python -m proofs_check.headline --write README.md`` rewrites README.md's generated
section (between ``<!-- generated:claims -->`` and ``<!-- /generated:claims -->``); ``--check`` exits 1
when README.md is stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from proofs_check.verdicts.vocabulary import Decision, Standing

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "docs" / "ledger.json"
BEGIN, END = "<!-- generated:claims -->", "<!-- /generated:claims -->"


def _ids(records) -> str:
    return ", ".join(r["id"] for r in records) or "none"


def _by_standing(ledger: dict, standing: str) -> list[dict]:
    return [c for c in ledger["claims"] if c.get("standing") == standing]


def abstract_lines(ledger: dict) -> list[str]:
    """The ledger in 5–8 lines: what holds, what fails or is absent or vacuous in the paper's setting, what
    was rebuilt, what did not run; each line names its claims, and a line with no claims is left out."""
    from proofs_check.verdicts.standing import PAPER_SETTING

    claims = ledger["claims"]
    holds = _by_standing(ledger, Standing.HOLDS)
    identities = [c for c in holds if c.get("kind") == "identity"]
    lines = [f"{len(claims)} claims, judged in the paper's setting ({PAPER_SETTING}) by what each check measured there."]
    if holds:
        text = f"Hold as stated: {_ids(holds)}"
        if identities:
            text += (f"; of these, {_ids(identities)} are identities, exact at their reference for any weights, "
                     "so their pass is no evidence about trained Transformers")
        lines.append(text + ".")
    for standing, verb in ((Standing.FAILS, "Fail in the paper's setting"),
                           (Standing.ABSENT, "Absent in the paper's setting (the effect is not there)"),
                           (Standing.VACUOUS, "Vacuous in the paper's setting (the bound cannot bind)")):
        records = _by_standing(ledger, standing)
        if records:
            lines.append(f"{verb}: " + "; ".join(_finding(c) for c in records) + ".")
    conditional = _by_standing(ledger, Standing.CONDITIONAL)
    if conditional:
        lines.append("Hold only under a condition the paper does not state: "
                     + "; ".join(f"{c['id']} ({c.get('condition') or 'condition named in the ledger'})"
                                 for c in conditional) + ".")
    rebuilt = _by_standing(ledger, Standing.RECONSTRUCTION)
    if rebuilt:
        lines.append(f"Rebuilt (docs/theory.md reconstructs the definition, so the paper's own statement is not what "
                     f"was checked): {_ids(rebuilt)}.")
    broken = [c for c in claims if c.get("status") in (Decision.ERROR, Decision.FAILED, Decision.SKIPPED)]
    if broken:
        lines.append("Not evidence either way: " + "; ".join(f"{c['id']} {c['status']}" for c in broken) + ".")
    return lines


def _finding(record: dict) -> str:
    text = (record.get("headline") or record.get("finding") or "").strip().rstrip(".")
    return f"{record['id']} ({text})" if text else record["id"]


def load_ledger(path: Path = LEDGER) -> dict:
    return json.loads(Path(path).read_text())


def generated_section(ledger: dict) -> str:
    """The text between the markers."""
    return "\n".join(abstract_lines(ledger))


def splice(readme: str, section: str) -> str:
    """``readme`` with the text between the markers replaced by ``section`` (ValueError without markers)."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README has no {BEGIN} … {END} section")
    return readme[:start + len(BEGIN)] + "\n" + section.strip() + "\n" + readme[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proofs_check.headline", description=__doc__.splitlines()[0])
    parser.add_argument("--ledger", type=Path, default=LEDGER, help="the ledger JSON (default docs/ledger.json)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", type=Path, metavar="README", help="rewrite the generated section of README")
    mode.add_argument("--check", type=Path, metavar="README", help="exit 1 when README's section is stale")
    args = parser.parse_args(argv)
    path = args.write or args.check
    readme = path.read_text()
    fresh = splice(readme, generated_section(load_ledger(args.ledger)))
    if args.check:
        if fresh != readme:
            print(f"{path}: the generated section is stale (python -m proofs_check.headline --write {path})",
                  file=sys.stderr)
            return 1
        return 0
    from numerics.io import write_text

    write_text(path, fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
