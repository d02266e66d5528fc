"""README's timing sentences are written from the performance log docs/timings.json, never typed by hand.

The log is validated by its pydantic model; ``python -m proofs_check.headline --check README.md`` must find the
timing section fresh, and a hand-edited time, or a log entry that changed under it, makes it stale (the negative
controls).  The README's two quick-start commands stay outside every generated section.
"""

from __future__ import annotations

import json
import re

import pytest
from pydantic import ValidationError

from proofs_check import headline as H
from proofs_check import timings as T

README = H.ROOT / "README.md"
QUICK_START = ("pip install -e '.[dev]' && fastslow reproduce",
               "pip install -e '.[dev]' && python -m pytest -n 2 -q && MKL_CBWR=AVX512 python -m pytest -n 2 -q -m linalg")


def _section(text: str, name: str) -> str:
    begin, end = H.markers(name)
    return text[text.index(begin) + len(begin):text.index(end)]


def test_the_log_validates_and_the_readme_quotes_it():
    log = T.load_log()
    section = _section(README.read_text(), "timings")
    assert section.strip() == T.timing_section()
    quoted = [r for r in log.runs if r.commit and r.commit in section]
    assert {r.name for r in quoted} == {r.name for r in log.runs if r.idle}
    for run in quoted:
        assert T.duration(run.wall_s) in section
    assert H.main(["--check", str(README)]) == 0


def test_quick_start_commands_are_outside_the_generated_sections():
    text = README.read_text()
    for command in QUICK_START:
        assert text.count(command) == 1
        assert command not in _section(text, "timings") and command not in _section(text, "claims")


def test_control_a_hand_edited_time_is_stale(tmp_path):
    text = README.read_text()
    start = text.index(H.markers("timings")[0])
    quoted = re.search(r"\*\*(\d+) min (\d+) s\*\*", text[start:])       # the first quoted wall time
    hand_edited = f"**{int(quoted.group(1)) + 1} min {quoted.group(2)} s**"
    edited = text[:start] + text[start:].replace(quoted.group(0), hand_edited, 1)
    assert edited != text
    copy_ = tmp_path / "README.md"
    copy_.write_text(edited)
    assert H.main(["--check", str(copy_)]) == 1


def test_control_a_changed_log_entry_is_stale(tmp_path, monkeypatch):
    data = json.loads(T.TIMINGS.read_text())
    quoted = _section(README.read_text(), "timings")
    run = next(r for r in data["runs"] if r["idle"] and r["commit"] in quoted)
    run["wall_s"] += 60
    path = tmp_path / "timings.json"
    path.write_text(json.dumps(data))
    monkeypatch.setattr(T, "TIMINGS", path)
    assert H.main(["--check", str(README)]) == 1


def test_the_readme_quotes_the_latest_idle_run_and_the_slowest_loaded_one(tmp_path, monkeypatch):
    """A later idle run of the same date replaces the quoted one; a faster loaded run does not replace the
    slowest; an earlier idle run is not quoted."""
    data = json.loads(T.TIMINGS.read_text())
    tests = [r for r in data["runs"] if r["name"] == "the tests" and r["idle"]]
    newer = {**tests[-1], "wall_s": 700, "commit": "abcdef1"}
    older = {**tests[-1], "wall_s": 10, "commit": "1234567", "date": "2026-12-01"}
    loaded = {**[r for r in data["runs"] if not r["idle"]][0], "wall_s": 60}
    path = tmp_path / "timings.json"
    path.write_text(json.dumps({"runs": data["runs"] + [newer, older, loaded]}))
    monkeypatch.setattr(T, "TIMINGS", path)
    text = T.timing_section()
    assert "**11 min 40 s**" in text and "abcdef1" in text and "**12 min 3 s**" not in text
    assert "1234567" not in text and "up to 50 min" in text


@pytest.mark.parametrize("change, field", [
    ({"wall_s": -1}, "wall_s"),
    ({"commit": "not-a-sha"}, "commit"),
    ({"idle": True, "load": 6.0}, "idle with load average"),
    ({"idle": False, "load": None}, "must record its load average"),
    ({"when": "today"}, "when"),
])
def test_the_schema_refuses_a_bad_entry(change, field):
    run = {**json.loads(T.TIMINGS.read_text())["runs"][0], **change}
    with pytest.raises(ValidationError, match=field):
        T.TimingLog.model_validate({"runs": [run]})


def test_duration_is_written_as_the_readme_reads():
    assert [T.duration(s) for s in (47, 60, 555, 3000, 723.4)] == ["47 s", "1 min", "9 min 15 s", "50 min",
                                                                   "12 min 3 s"]
