"""Claim 7.3 on text (proofs_check.experiments.text_experiment): both arms train from the same weights, the frozen
arm's gates stay exactly 0, the decision rule gives the predicted gap and verdict on constructed
results, the command refuses flags that do not belong together, and the recorded run is flagged
when the code that produced it changed."""

from __future__ import annotations

import copy
import json

import pytest

from proofs_check.experiments import text_experiment as tx
from proofs_check.cli import main
from proofs_check.experiments.train import TextConfig

TINY = TextConfig(arch="hierarchical", d=4, layers=2, heads=2, T=16, P=4, tokens=4_000, batch=16, eval_every=8,
                  eval_windows=16)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return tx.run(tmp_path_factory.mktemp("text73"), TINY, seeds=(0, 1))


def test_arms_are_paired_and_the_frozen_gates_stay_zero(result):
    s = result["summary"]
    assert s["frozen_gates_zero"]
    assert len(result["runs"]) == 4 and {(r["arm"], r["seed"]) for r in result["runs"]} == {
        (a, seed) for a in tx.ARMS for seed in (0, 1)}
    coupled = [r for r in result["runs"] if r["arm"] == "coupled"]
    assert any(g != 0.0 for r in coupled for g in r["gates_final"])   # the learnt gates moved off 0
    # the paired gap is the mean over seeds of the two arms' mean validation losses (an independent route
    # through the per-run means instead of the per-sequence table); float64 sums of 16 numbers: 1e-12
    by = {(r["arm"], r["seed"]): r["final_eval_loss"] for r in result["runs"]}
    gap = sum(by["frozen", seed] - by["coupled", seed] for seed in (0, 1)) / 2
    assert abs(s["gap"] - gap) <= 1e-12
    assert s["interval"] == [s["gap"] - s["crit"], s["gap"] + s["crit"]]
    assert s["gate_reach"] == pytest.approx(sum(coupled[0]["lr"]), rel=1e-12)


def test_the_decision_rule_on_constructed_results(result):
    """Control: coupled runs replaced by the frozen ones give gap 0 exactly, neutral, no gate opening;
    every coupled loss raised by 0.1 gives gap −0.1 (to float64 rounding) and 'hurts' (crit is unchanged,
    since the per-seed differences only shift)."""
    same = copy.deepcopy(result)
    frozen = {r["seed"]: r for r in same["runs"] if r["arm"] == "frozen"}
    same["runs"] = [dict(frozen[r["seed"]], arm="coupled") if r["arm"] == "coupled" else r for r in same["runs"]]
    s = tx.summarise(same)
    assert s["gap"] == 0.0 and s["verdict"] == "neutral" and not s["gate_opens"]
    worse = copy.deepcopy(same)
    for r in worse["runs"]:
        if r["arm"] == "coupled":
            r["final_eval_per_seq"] = [v + 0.1 for v in r["final_eval_per_seq"]]
    w = tx.summarise(worse)
    assert w["gap"] == pytest.approx(-0.1, abs=1e-12) and w["crit"] == pytest.approx(s["crit"], abs=1e-12)
    assert w["verdict"] == "hurts"


def test_gate_opening_needs_one_sign_in_every_seed(result):
    r = copy.deepcopy(result)
    reach = r["summary"]["gate_reach"]
    coupled = [x for x in r["runs"] if x["arm"] == "coupled"]
    for x in coupled:
        x["gates_final"] = [0.5 * reach, 0.0]
    assert tx.summarise(r)["open_layers"] == [0]
    coupled[1]["gates_final"] = [-0.5 * reach, 0.0]
    assert not tx.summarise(r)["gate_opens"]


def test_statement_and_ledger_entry(result, monkeypatch, tmp_path):
    text = tx.statement(result)
    assert result["summary"]["verdict"] in text and "nats/byte" in text
    recorded = tmp_path / "text-7.3.json"
    recorded.write_text(json.dumps(result))
    monkeypatch.setattr(tx, "RECORDED", recorded)
    entry = tx.ledger_entry(tx.recorded())
    assert entry["status"] == "recorded" and entry["current"]
    stale = dict(result, source_key="0" * 20)
    recorded.write_text(json.dumps(stale))
    entry = tx.ledger_entry(tx.recorded())
    assert entry["status"] == "recorded with other code" and not entry["current"]
    lines = tx.report_section(tx.recorded(), tmp_path / "figures")
    assert any("differs from this checkout's" in line for line in lines)


@pytest.mark.parametrize("argv, message", [
    (["train", "--seeds", "1"], "--seeds belongs to --experiment 7.3"),
    (["train", "--experiment", "7.3", "--arch", "preln"], "not preln"),
    (["train", "--experiment", "7.3", "--seed", "3"], "takes --seeds"),
    (["train", "--experiment", "7.3", "--freeze-gates"], "--freeze-gates cannot go"),
    (["train", "--experiment", "7.3", "--figure", "x.txt"], ".png or .pdf"),
    (["train", "--freeze-gates"], "needs --arch hierarchical"),
    (["train", "--experiment", "7.3", "--json", "/proc/nope/r.json"], "--json"),
    (["train", "--experiment", "7.3", "--figure", "/proc/nope/f.png"], "--figure"),
    (["train", "--experiment", "7.3", "--workers", "0"], "--workers"),
])
def test_refusals(argv, message, capsys):
    try:
        code = main(argv)
    except SystemExit as exit_:  # refused when the command line is parsed
        code = exit_.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_fit_monitor_runs_before_training_and_at_every_validation(tmp_path):
    from proofs_check.experiments.train import train_text

    cfg = TextConfig(arch="preln", d=4, layers=1, heads=2, T=8, P=4, tokens=2_000, batch=16, eval_every=5,
                     eval_windows=8)
    calls = []
    manifest = train_text(cfg, tmp_path / "run", progress=False, threads=1,
                          monitor=lambda model: calls.append(model.training) or {"n": len(calls)})
    curves = manifest["curves"]
    assert [m["step"] for m in curves["monitor"]] == [0] + curves["eval_step"]
    assert [m["n"] for m in curves["monitor"]] == list(range(1, len(calls) + 1))
