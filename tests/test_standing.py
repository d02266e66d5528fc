"""What each verdict means (proofs_check.verdicts.standing): every claim declares its kind, setting and standing;
the vocabulary refuses a standing its kind and setting cannot support; a check that reports the claim
failing in the paper's setting overrides a declared "holds as stated"; and nothing in the printed
summary reads "verified" beside a claim that fails in the paper's setting."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from proofs_check.verdicts import standing as S
from proofs_check.runners.check import format_table, with_standing
from proofs_check.verdicts.registry import CLAIM_IDS, CLAIMS, load_checks
from proofs_check.verdicts.evidence import CheckContext, ClaimResult, ControlResult, NumericResult
from proofs_check.runners.ledger import run_claim
from proofs_check.report.document import render_markdown

THEORY = Path(__file__).resolve().parent.parent / "docs" / "theory.md"


@pytest.fixture(scope="module")
def claims():
    return load_checks()


def test_every_claim_declares_what_its_verdict_means(claims):
    for cid in CLAIM_IDS:
        c = claims[cid]
        assert c.kind in S.KINDS and c.standing in S.STANDINGS and c.setting and c.headline, cid
        S.validate_declaration(cid, kind=c.kind, setting=c.setting, standing=c.standing, condition=c.condition,
                               reconstruction=c.reconstruction)


def test_reconstructions_are_the_ones_docs_theory_marks(claims):
    """An independent route to the reconstruction flag: the claims named in docs/theory.md's table of
    rebuilt definitions."""
    theory = THEORY.read_text()
    table = theory.split("## Where the paper's definitions were rebuilt")[1]
    rebuilt = set(re.findall(r"(\d\.\d)", "".join(line.split("|")[1] for line in table.splitlines()
                                                  if line.startswith("| §"))))
    documented = set(re.findall(r"\*\*Claim (\d\.\d)", theory))   # a claim theory.md states
    flagged = {cid for cid, c in claims.items() if c.standing == S.RECONSTRUCTION or c.reconstruction}
    assert rebuilt == flagged & documented
    assert {"3.1", "5.1", "5.2", "7.3"} <= rebuilt


def test_the_settings_the_issue_names(claims):
    """The claims checked outside the paper's setting say so: 3.2 fails in it, 4.2 holds only read in the
    per-token loss, 3.1, 5.1 and 7.3 name the suite's setting, and no lemma claims the paper's stack."""
    assert claims["3.2"].standing == S.FAILS and claims["4.2"].standing == S.CONDITIONAL
    assert "per-token loss" in claims["4.2"].condition
    assert "full" in claims["4.2"].setting and "block" in claims["3.2"].setting
    assert "10–20" in claims["3.1"].setting and "α = 2" in claims["5.1"].setting
    assert "current block" in claims["7.3"].setting
    assert all(c.setting != S.PAPER for c in claims.values() if c.kind == "lemma")


@pytest.mark.parametrize("declaration, message", [
    (dict(kind="theorem", setting=S.PAPER, standing=S.HOLDS), "kind="),
    (dict(kind="identity", setting=S.PAPER, standing="verified"), "standing="),
    (dict(kind="prediction", setting="full kernel", standing=S.HOLDS), "cannot be 'holds as stated'"),
    (dict(kind="identity", setting=S.PAPER, standing=S.FAILS), "needs the setting in which the check passed"),
    (dict(kind="lemma", setting=S.PAPER, standing=S.HOLDS), "a lemma has no stack"),
    (dict(kind="lemma", setting="2×2 systems", standing=S.FAILS), "no paper's setting"),
    (dict(kind="identity", setting=S.PAPER, standing=S.CONDITIONAL), "must name the condition"),
    (dict(kind="prediction", setting="damped", standing=S.RECONSTRUCTION), "does not mark it a reconstruction"),
    (dict(kind="prediction", setting=" ", standing=S.CONDITIONAL, condition="c"), "setting must be"),
])
def test_the_vocabulary_refuses_unsupported_declarations(declaration, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        S.validate_declaration("9.9", condition=declaration.pop("condition", None), reconstruction=False,
                               **declaration)


def test_a_reconstruction_cannot_hold_as_stated():
    with pytest.raises(ValueError, match="marks it a reconstruction"):
        S.validate_declaration("9.9", kind="prediction", setting=S.PAPER, standing=S.HOLDS, condition=None,
                               reconstruction=True)


def test_evidence_overrides_the_declared_standing():
    assert S.reconcile(S.HOLDS, "fails", "verified")[0] == S.FAILS
    assert "found that it fails" in S.reconcile(S.CONDITIONAL, "fails", "verified")[1]
    assert S.reconcile(S.FAILS, "fails", "verified") == (S.FAILS, "")
    assert "did not run the paper's setting" in S.reconcile(S.FAILS, "", "verified")[1]
    assert S.reconcile(S.HOLDS, "", "verified") == (S.HOLDS, "")
    assert S.reconcile(S.HOLDS, "fails", "failed") == (S.HOLDS, "")   # a failed check is no evidence
    with pytest.raises(ValueError, match="paper_setting"):
        S.reconcile(S.HOLDS, "broken", "verified")


def _lying_claim(monkeypatch, claims):
    """Claim 1.2 declared 'holds as stated' with a check that reports it failing in the paper's setting."""
    result = ClaimResult(symbolic=[], numeric=NumericResult(cases=1, max_error=0.0, tolerance=1.0),
                         control=ControlResult("fails-as-predicted"), finding="it fails for the causal kernel",
                         paper_setting="fails")
    monkeypatch.setitem(CLAIMS, "1.2", replace(claims["1.2"], check=lambda ctx: result))
    return with_standing(run_claim("1.2", CheckContext()))


def test_a_claim_failing_in_the_paper_setting_never_reads_holds_or_verified(monkeypatch, claims):
    record = _lying_claim(monkeypatch, claims)
    assert record["status"] == "verified" and record["declared_standing"] == S.HOLDS
    assert record["standing"] == S.FAILS and "found that it fails" in record["standing_conflict"]
    ledger = {"claims": [record], "options": {}}
    table = format_table(ledger)
    rows = [line for line in table.splitlines() if line.startswith("1.2 ")]
    assert len(rows) == 2   # the summary line and the mechanical row
    for row in rows:
        assert "verified" not in row
    columns = re.split(r"\s{2,}", rows[0])   # claim, kind, setting, status, ledger, finding
    assert columns[3] == S.FAILS and columns[4] == "passes off the paper's setting"
    assert columns[5].startswith("[declared 'holds as stated', but the check found")
    assert "passes off the paper's setting" in rows[1]
    md = S.summary_markdown(ledger)
    line = next(x for x in md.splitlines() if x.startswith("| 1.2 "))
    assert "verified" not in line and S.FAILS in line


def test_control_a_claim_that_holds_reads_verified(monkeypatch, claims):
    """The same claim whose check reports nothing about the paper's setting keeps 'holds as stated' and
    'verified': the rule above is not a blanket rewrite."""
    result = ClaimResult(symbolic=[], numeric=NumericResult(cases=1, max_error=0.0, tolerance=1.0),
                         control=ControlResult("fails-as-predicted"))
    monkeypatch.setitem(CLAIMS, "1.2", replace(claims["1.2"], check=lambda ctx: result))
    record = with_standing(run_claim("1.2", CheckContext()))
    assert record["standing"] == S.HOLDS and "standing_conflict" not in record
    summary = S.format_summary({"claims": [record]}).splitlines()[2]
    assert S.HOLDS in summary and " verified " in summary


def test_the_report_opens_with_the_summary(monkeypatch, claims, tmp_path):
    record = _lying_claim(monkeypatch, claims)
    md = render_markdown({"claims": [record], "options": {}}, tmp_path / "figures", {}, {})
    first = md.split("## Claim 1.2")[0]
    assert "## Summary" in first and S.FAILS in first
    assert md.index("## Summary") < md.index("## Claim 1.2") < md.index("## Appendix: the ledger")
    section = md.split("## Claim 1.2")[1]
    assert f"**Status: {S.FAILS}**" in section and "**verified**" not in section


def test_check_writes_the_summary_table(tmp_path, capsys):
    """``fastslow check --summary FILE``: the markdown table the README shows, one row per claim run; a
    summary path in a missing folder is refused (exit 2) before any check runs."""
    from proofs_check.cli import main

    out = tmp_path / "claims_summary.md"
    assert main(["check", "--claim", "6.3", "--no-progress", "--summary", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith("| 6.3 ")]
    assert len(rows) == 1 and "**holds as stated**" in rows[0] and "| lemma |" in rows[0]
    with pytest.raises(SystemExit) as refused:   # argparse refuses the path while parsing
        main(["check", "--claim", "6.3", "--summary", str(tmp_path / "missing" / "s.md")])
    assert refused.value.code == 2
    assert "--summary" in capsys.readouterr().err
