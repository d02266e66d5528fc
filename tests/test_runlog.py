"""The run log (docs/runs.json): every entry validates, ``time`` measures a command and records it only when it
succeeds, and bad input exits 2 before anything runs."""

from __future__ import annotations

import datetime as dt
import json
import sys

import pytest
from pydantic import ValidationError

from proofs_check import runlog as R


def test_the_committed_log_validates():
    log = R.load()
    assert all(r.id for r in log.runs)


def test_time_records_a_command_and_its_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "RUNS", tmp_path / "runs.json")
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    assert R.main(["time", "burn", "--", sys.executable, "-c", burn]) == 0
    (run,) = R.load().runs
    assert run.id == "burn" and run.source == "timed"
    # the child burnt ≥ 0.3 s of CPU in a loop that only reads the clock, so its CPU seconds are at least that
    # (getrusage counts them to the tick, 10 ms) and the wall time covers them
    assert run.cpu_s >= 0.29 and run.wall_s >= 0.29
    assert run.peak_rss_gib > 0 and run.load[0] <= run.load_mean <= run.load[1]


def test_a_failing_command_records_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "RUNS", tmp_path / "runs.json")
    assert R.main(["time", "fails", "--", sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert not (tmp_path / "runs.json").exists()


def test_a_note_before_the_command_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "RUNS", tmp_path / "runs.json")
    assert R.main(["time", "noted", "--note", "OMP_WAIT_POLICY=PASSIVE", "--", sys.executable, "-c", "pass"]) == 0
    (run,) = R.load().runs
    assert run.note == "OMP_WAIT_POLICY=PASSIVE" and run.command.endswith("-c pass")


def test_rerun_replaces_the_entry_of_its_id(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "RUNS", tmp_path / "runs.json")
    for _ in range(2):
        assert R.main(["time", "same", "--", sys.executable, "-c", "pass"]) == 0
    assert [r.id for r in R.load().runs] == ["same"]


@pytest.mark.parametrize("argv, word", [(["time", "Bad_Id", "--", "true"], "id"), (["time", "ok"], "command"),
                                        (["time", "ok", "--", "no-such-program-xyz"], "command")])
def test_bad_input_exits_2_naming_the_parameter(tmp_path, monkeypatch, capsys, argv, word):
    monkeypatch.setattr(R, "RUNS", tmp_path / "runs.json")
    with pytest.raises(SystemExit) as e:
        R.main(argv)
    assert e.value.code == 2 and capsys.readouterr().err.startswith(word)
    assert not (tmp_path / "runs.json").exists()


def _entry(**change) -> dict:
    base = dict(id="x", command="c", source="timed", start=dt.datetime(2026, 12, 7), commit="abcdef0",
                machine="m", load=(1.0, 2.0), load_mean=1.5, wall_s=3.0, user_s=1.0, system_s=0.5, peak_rss_gib=0.1)
    return {**base, **change}


@pytest.mark.parametrize("change", [{"load": (2.0, 1.0)}, {"user_s": None}, {"id": "Upper"}, {"wall_s": 0},
                                    {"cpu_total_s": 1.5}])
def test_the_schema_refuses_an_inconsistent_entry(change):
    with pytest.raises(ValidationError):
        R.Run(**_entry(**change))
    R.Run(**_entry())


def test_duplicate_ids_are_refused():
    with pytest.raises(ValidationError, match="twice"):
        R.RunLog.model_validate(json.loads(json.dumps({"runs": [_entry(), _entry()]}, default=str)))


def test_a_transcribed_total_is_the_cpu_seconds_where_user_and_system_were_not_split():
    run = R.Run(**_entry(source="transcribed", user_s=None, system_s=None, cpu_total_s=57.0))
    assert run.cpu_s == 57.0
    with pytest.raises(ValidationError):
        R.Run(**_entry(source="transcribed", cpu_total_s=57.0))      # a split run has no separate total
