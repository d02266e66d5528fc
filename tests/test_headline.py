"""README.md's claims section is generated from the committed ledger and records, never typed by hand.

``python -m proofs_check.headline --check README.md`` must find the section fresh; a hand-edited number
in it, or a record that changed under it, makes it stale (the negative controls).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from proofs_check import headline as H

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def ledger():
    return H.load_ledger()


def test_readme_section_is_fresh():
    assert H.main(["--check", str(README)]) == 0


def test_control_a_hand_edited_number_is_stale(tmp_path, ledger):
    section = H.generated_section(ledger)
    start = README.read_text().index(H.BEGIN)
    edited = README.read_text()[:start] + README.read_text()[start:].replace("0.47", "0.48", 1)
    assert "0.47" in section and edited != README.read_text()
    copy_ = tmp_path / "README.md"
    copy_.write_text(edited)
    assert H.main(["--check", str(copy_)]) == 1


def test_control_a_changed_record_is_stale(tmp_path, ledger):
    changed = copy.deepcopy(ledger)
    record = next(c for c in changed["claims"] if c["id"] == "6.4")
    record["measurement"]["short"] = record["measurement"]["short"].replace("2", "3", 1)
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(changed))
    assert H.main(["--check", str(README), "--ledger", str(path)]) == 1


def test_abstract_is_five_to_eight_lines_and_names_every_negative_standing(ledger):
    lines = H.abstract_lines(ledger)
    assert 5 <= len(lines) <= 8
    text = "\n".join(lines)
    for c in ledger["claims"]:
        if c.get("standing") in {s for s, _ in H.NEGATIVE}:
            assert c["id"] in text and c["measurement"]["short"] in text


def test_the_table_shows_each_claims_standing_and_measurement(ledger):
    table = H.claims_table(ledger)
    assert len(table) == 2 + len(ledger["claims"])
    for c, row in zip(ledger["claims"], table[2:]):
        assert row.startswith(f"| {c['id']} |")
        if c.get("measurement"):
            assert c["measurement"]["short"].split()[0] in row.replace("\\", "")   # the row escapes Markdown (W\\_Q)


def test_a_readme_without_markers_is_refused(tmp_path):
    bare = tmp_path / "README.md"
    bare.write_text("# fastslow\n")
    with pytest.raises(ValueError, match="generated:claims"):
        H.main(["--check", str(bare)])
