"""The rule that a standing is what its check measured in the paper's setting, on the ledger's records.

No claim reads *holds* (as stated or under a condition) or *verified* while its own measurement in the
paper's setting shows the claim failing, the effect absent or the bound vacuous; an outcome in the paper's
setting always comes with its measurement (quantity, number, criterion).  Enforced by
``proofs_check.verdicts.standing.refusal`` inside ``checked_ledger``, so ``fastslow check --json`` cannot
write a record that breaks it.  Negative controls: forged records (vacuous measured, holds read; an outcome
without its measurement; a measurement disagreeing with the outcome) are refused by name.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from proofs_check.runners.check import with_standing
from proofs_check.runners.ledger import run_claim
from proofs_check.verdicts.ledger_schema import checked_ledger
from proofs_check.verdicts import standing as S
from proofs_check.verdicts.evidence import CheckContext
from proofs_check.verdicts.registry import load_checks

LEDGER = Path(__file__).resolve().parents[1] / "docs" / "ledger.json"
NEGATIVE = {"fails": S.FAILS, "absent": S.ABSENT, "vacuous": S.VACUOUS}


def _assert_rule(record: dict) -> None:
    outcome = record.get("paper_setting") or ""
    if outcome:
        shown = record["measurement"]
        assert shown["outcome"] == outcome and shown["quantity"] and shown["value"] is not None, record["id"]
    if outcome in NEGATIVE and record["status"] == "verified":
        assert record["standing"] == NEGATIVE[outcome], record["id"]
        assert S.ledger_word(record) != "verified", record["id"]
    assert S.refusal(record) is None


def test_the_committed_ledger_keeps_the_rule():
    ledger = json.loads(LEDGER.read_text())
    for record in ledger["claims"]:
        _assert_rule(record)
    measured = {c["id"]: c["paper_setting"] for c in ledger["claims"]}
    # the standings the measurements set (numbers in docs/ledger.json): 1.1 absent on trained weights,
    # 3.1 / 5.1 / 5.3 vacuous, 6.4 absent (ε ≥ 1), 3.2 fails, 4.2 visible in the per-token loss
    assert {k: measured[k] for k in ("1.1", "3.1", "3.2", "4.2", "5.1", "5.3", "6.4")} == {
        "1.1": "absent", "3.1": "vacuous", "3.2": "fails", "4.2": "holds", "5.1": "vacuous", "5.3": "vacuous",
        "6.4": "absent"}


def test_a_live_record_keeps_the_rule():
    load_checks()
    record = with_standing(run_claim("3.1", CheckContext()))
    _assert_rule(record)
    value = record["measurement"]["value"]   # GPT-2's block at h = 1, and the suite's h = 1/L off the setting
    assert record["standing"] == S.VACUOUS and min(value["gpt2_block_h1_iid"]["paper_rho"]) >= 1
    assert value["off_setting_h_1_over_L"]["paper_rho_min"] >= 1


def _forged() -> dict:
    ledger = json.loads(LEDGER.read_text())
    record = copy.deepcopy(next(c for c in ledger["claims"] if c["id"] == "3.1"))
    return {**ledger, "claims": [record]}


def test_control_a_vacuous_measurement_read_as_holds_is_refused():
    ledger = _forged()
    assert checked_ledger(copy.deepcopy(ledger))                    # the record as the check wrote it passes
    ledger["claims"][0].update(standing=S.HOLDS)
    with pytest.raises(ValueError, match=r"claim 3\.1: its measurement in the paper's setting .* is vacuous, but its "
                                         r"standing reads 'holds as stated'"):
        checked_ledger(ledger)


def test_control_an_outcome_without_its_measurement_is_refused():
    ledger = _forged()
    ledger["claims"][0]["measurement"] = None
    with pytest.raises(ValueError, match="no measurement in the paper's setting"):
        checked_ledger(ledger)
    ledger = _forged()
    ledger["claims"][0]["measurement"]["outcome"] = "holds"
    with pytest.raises(ValueError, match="but its measurement's outcome is 'holds'"):
        checked_ledger(ledger)


def test_reconcile_derives_the_standing_from_the_measurement():
    assert S.reconcile(S.HOLDS, "vacuous", "verified") == (
        S.VACUOUS, "declared 'holds as stated', but the check found that it is vacuous in the paper's setting")
    assert S.reconcile(S.RECONSTRUCTION, "absent", "verified")[0] == S.ABSENT
    assert S.reconcile(S.VACUOUS, "vacuous", "verified") == (S.VACUOUS, "")
    assert S.reconcile(S.ABSENT, "holds", "verified")[0] == S.HOLDS          # a declared negative is overruled
    assert S.reconcile(S.VACUOUS, "vacuous", "error") == (S.VACUOUS, "")     # an error moves nothing
    with pytest.raises(ValueError, match="outcome"):
        S.measurement("μ", -0.78, "μ > 0", "")


def test_the_grid_never_reads_holds_where_the_measurement_is_negative():
    """The grid's preln column from the committed ledger: a claim measured failing, absent or vacuous in the
    paper's setting is *conditional* (verified only in its own setting), never *holds*; control: a claim with
    no such measurement keeps *holds*."""
    from proofs_check.runners.grid import preln_cell

    ledger = json.loads(LEDGER.read_text())
    for record in ledger["claims"]:
        cell = preln_cell(record)
        if record.get("paper_setting") in NEGATIVE:
            assert cell["status"] == "conditional" and record["measurement"]["short"] in cell["condition"]
    plain = next(c for c in ledger["claims"] if c["id"] == "1.2")
    assert preln_cell(plain)["status"] == "holds"


def test_control_grid_ledger_refuses_a_forged_standing(tmp_path):
    """``grid --ledger FILE`` reads the same rule: the forged record is refused (exit 2), the real one is not."""
    from proofs_check.inputs import InvalidInput, load_ledger

    ledger = _forged()
    good = tmp_path / "good.json"
    good.write_text(json.dumps(ledger))
    assert load_ledger(good)["claims"][0]["standing"] == S.VACUOUS
    ledger["claims"][0]["standing"] = S.HOLDS
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(ledger))
    with pytest.raises(InvalidInput, match="is vacuous, but its standing reads 'holds as stated'"):
        load_ledger(bad)
