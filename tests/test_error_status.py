"""A check or form that raises is an *error*: no evidence either way, never *failed*, *fails* or *n/a*.

An exception is forced (monkeypatch) into every claim's ledger check and into every on-stack and
matrix-free form.  Each must come out *error* with the exception's one-line summary, make
``fastslow check`` (and ``check --stack``, ``grid``) exit non-zero, and never be a counterexample or a
sweep's worst case.  Controls: the same paths without the exception read verified / holds and exit 0,
so the assertions are not met by a blanket rewrite.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from proofs_check.runners import grid
from proofs_check.runners.check import exit_code, with_standing
from proofs_check.runners.ledger import run_claim
from proofs_check.verdicts.ledger_schema import checked_ledger
from proofs_check.sweep.summary import summarise
from proofs_check.verdicts import on_stack as O
from proofs_check.verdicts.evidence import CheckContext, ClaimResult, ControlResult, NumericResult
from proofs_check.verdicts.ids import CLAIM_IDS
from proofs_check.verdicts.registry import CLAIMS, ledger_cases, load_checks, on_stack_claims, scale_claims
from proofs_check.verdicts.vocabulary import Decision, StackVerdict

load_checks()
MESSAGE = "forced failure of the form\nsecond line of the message"
SUMMARY = "RuntimeError: forced failure of the form"


def _raise(*args, **kwargs):
    raise RuntimeError(MESSAGE)


def _holds_result(ctx=None):
    return ClaimResult(symbolic=[], numeric=NumericResult(cases=1, max_error=0.0, tolerance=1.0),
                       control=ControlResult("fails-as-predicted"))


@pytest.fixture(scope="module")
def claims():
    return load_checks()


@pytest.fixture(scope="module")
def environment():
    from proofs_check.environment import environment as env

    return env("cpu")


#: every claim with a ledger check (a claim of docs/theory.md without one is *skipped*, not run)
CHECKED = [cid for cid in CLAIM_IDS if CLAIMS.get(cid) is not None and CLAIMS[cid].check is not None]


@pytest.mark.parametrize("cid", CHECKED)
def test_a_check_that_raises_is_an_error(monkeypatch, claims, environment, cid):
    monkeypatch.setitem(CLAIMS, cid, replace(claims[cid], check=_raise, generated=[]))
    record = with_standing(run_claim(cid, CheckContext()))
    assert record["status"] == Decision.ERROR
    assert record["detail"] == f"check raised {SUMMARY}" and "RuntimeError" in record["traceback"]
    assert record["standing"] == record["declared_standing"]     # no evidence: the declaration is not moved
    ledger = checked_ledger({"claims": [record], "environment": environment, "options": {"profile": "ci",
                                                                                          "quick": True}})
    assert exit_code(ledger) == 1
    cell = grid.preln_cell(record)
    assert cell["status"] == StackVerdict.ERROR and cell["counterexample"] is None
    assert grid.exit_code({"cells": [cell]}) == 1


def test_control_a_check_that_returns_is_verified(monkeypatch, claims):
    monkeypatch.setitem(CLAIMS, "1.2", replace(claims["1.2"], check=_holds_result, generated=[]))
    record = with_standing(run_claim("1.2", CheckContext()))
    assert record["status"] == Decision.VERIFIED and exit_code({"claims": [record]}) == 0
    assert grid.exit_code({"cells": [grid.preln_cell(record)]}) == 0


def _first_spec(claim):
    return claim.specs("preln", CheckContext())[0]


@pytest.mark.parametrize("cid", on_stack_claims())
def test_an_on_stack_form_that_raises_is_an_error(monkeypatch, claims, cid):
    claim = replace(claims[cid], on_stack=_raise)
    monkeypatch.setitem(CLAIMS, cid, claim)
    spec = _first_spec(claim)
    v = claim.evaluate(spec, CheckContext())
    assert v.status == StackVerdict.ERROR and v.reason == f"evaluation raised {SUMMARY}"
    assert v.counterexample is None and "traceback" in v.measured
    combined = O.combine(cid, [O.Verdict(cid, "fails", error=2.0, tolerance=1.0), v])
    assert combined.status == StackVerdict.ERROR          # never hidden behind another stack's fails
    with pytest.raises(RuntimeError, match="forced failure"):
        ledger_cases(cid, CheckContext())                # the ledger's check raises, so it records error
    with O.raising(), pytest.raises(RuntimeError, match="forced failure"):
        claim.evaluate(spec, CheckContext())
    stack = {"claims": [{"id": cid, "status": v.status, "verdict": v.as_dict()}]}
    assert exit_code(stack) == 1                          # check --stack
    json.dumps(v.as_dict())                               # the word, as JSON stores it



@pytest.mark.parametrize("cid", scale_claims())
def test_a_matrix_free_form_that_raises_is_an_error(monkeypatch, claims, cid):
    claim = replace(claims[cid], matrix_free=_raise)
    v = O.matrix_free_verdict(claim, _first_spec(claims[cid]))
    assert v.status == StackVerdict.ERROR and v.reason == f"matrix-free form raised {SUMMARY}"
    assert v.counterexample is None



def test_control_a_form_that_returns_is_not_an_error(claims):
    v = O.Verdict("2.1", "holds", error=0.0, tolerance=1.0)
    assert O.combine("2.1", [v]).status == StackVerdict.HOLDS
    assert exit_code({"claims": [{"id": "2.1", "status": v.status}]}) == 0


def test_the_cli_exits_non_zero_on_an_error(monkeypatch, claims, tmp_path):
    """``fastslow check`` and ``fastslow grid`` (the preln column from that ledger) exit 1 on an error; the
    same commands with the check returning exit 0."""
    from proofs_check.cli import main

    monkeypatch.setitem(CLAIMS, "6.3", replace(claims["6.3"], check=_raise, generated=[]))
    out = tmp_path / "ledger.json"
    assert main(["check", "--claim", "6.3", "--no-progress", "--json", str(out)]) == 1
    assert json.loads(out.read_text())["claims"][0]["status"] == "error"
    assert main(["grid", "--only-arch", "preln", "--claim", "6.3", "--ledger", str(out), "--no-progress"]) == 1
    monkeypatch.setitem(CLAIMS, "6.3", replace(claims["6.3"], check=_holds_result, generated=[]))
    assert main(["check", "--claim", "6.3", "--no-progress", "--json", str(out)]) == 0
    assert main(["grid", "--only-arch", "preln", "--claim", "6.3", "--ledger", str(out), "--no-progress"]) == 0


def test_a_sweep_never_takes_an_error_for_a_counterexample():
    rows = pd.DataFrame([
        {"claim": "2.1", "verdict": "holds", "error_ratio": 0.1},
        {"claim": "2.1", "verdict": "error", "error_ratio": None},
        {"claim": "2.1", "verdict": "conditional", "error_ratio": 0.5},
    ])
    rows = rows.assign(error=None, tolerance=None, seed=0, reason=None, arch="preln", point="{}", row_key="k",
                       kernel="causal", T=4, P=None, d=4, layers=1, heads=1, dtype="float64")
    from proofs_check.sweep.grid import knob_defaults

    rows = rows.assign(**{k: v for k, v in knob_defaults().items()})
    entry = summarise(rows)["2.1"]
    assert entry["counts"]["error"] == 1
    assert entry["fraction_holds"] == pytest.approx(1 / 2)       # holds / (holds + conditional); error apart
    assert entry["worst"]["verdict"] == "conditional"
