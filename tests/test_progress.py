"""The progress policy (proofs_check.progress): in a log, one plain line per finished item."""

import io
import time

from proofs_check.progress import track


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_log_gets_one_plain_line_per_item_naming_the_next():
    log = io.StringIO()
    assert list(track(["1.1", "1.2", "2.1"], "check claims", unit="claim", stream=log)) == ["1.1", "1.2", "2.1"]
    head, *lines = log.getvalue().splitlines()
    assert head == "check claims: 3 claims, first 1.1"  # a piped run says what it started before any item ends
    assert len(lines) == 3 and "\x1b" not in log.getvalue() and "\r" not in log.getvalue()
    assert lines[0].startswith("check claims [1/3] 1.1 done in ") and lines[0].endswith(" s left; next 1.2")
    assert ", about " in lines[1]
    assert lines[2].startswith("check claims [3/3] 2.1 done in ") and "next" not in lines[2]


def test_a_long_item_in_a_log_says_it_is_still_running():
    log = io.StringIO()
    for _ in track(["2.1"], "check claims", stream=log, heartbeat=0.05):
        time.sleep(0.3)
    lines = log.getvalue().splitlines()
    running = [line for line in lines if "still running" in line]
    assert lines[0] == "check claims: 1 item, first 2.1" and lines[-1].startswith("check claims [1/1] 2.1 done in ")
    assert len(running) >= 2 and running[0].startswith("check claims [1/1] 2.1 still running, ")  # ≈ 0.3/0.05 beats


def test_terminal_gets_a_bar_and_the_same_lines():
    tty = Terminal()
    list(track(["a", "b"], "figures", stream=tty, label=str.upper))
    text = tty.getvalue()
    assert "\r" in text  # tqdm redraws its bar in place
    assert "figures [1/2] A done in" in text and "figures [2/2] B done in" in text


def test_disabled_prints_nothing():
    log = io.StringIO()
    assert list(track(range(3), "x", stream=log, enabled=False)) == [0, 1, 2] and log.getvalue() == ""


def test_steps_in_a_log_reports_the_last_unit_with_the_time_left():
    from proofs_check.progress import steps

    log = io.StringIO()
    with steps("certificate", stream=log, log_every=3600) as report:
        for i in range(1, 5):
            report(i, 4, f"unit {i}")
    lines = log.getvalue().splitlines()  # throttled: only the last unit within the hour
    assert len(lines) == 1 and lines[0].startswith("certificate [4/4] unit 4, ") and "about 0 s left" in lines[0]


def test_steps_on_a_terminal_is_a_bar_with_the_time_left():
    from proofs_check.progress import steps

    tty = Terminal()
    with steps("certificate", stream=tty) as report:
        report(1, 2, "first")
        report(2, 2, "second")
    text = tty.getvalue()
    assert "certificate" in text and "2/2" in text and "<" in text  # tqdm's [elapsed<remaining]


def test_silenced_turns_off_track_and_steps():
    from proofs_check.progress import silenced, steps

    log = io.StringIO()
    with silenced():
        assert list(track([1, 2], "x", stream=log)) == [1, 2]
        with steps("y", stream=log, log_every=0) as report:
            report(1, 1, "z")
    assert log.getvalue() == ""


def test_gate_certificate_counts_every_unit_it_reports():
    """numerics calls the callback once per unit, done = 1 … total, the total fixed up front."""
    from numerics.stacks.spec import StackSpec
    from numerics.families.stability import gate_certificate

    stack = StackSpec(T=8, d=4, layers=2, heads=2, kernel="causal", P=4, seed=0).build()
    calls = []
    gate_certificate(stack, progress=lambda done, total, label: calls.append((done, total, label)))
    L = 2
    assert [c[0] for c in calls] == list(range(1, len(calls) + 1))
    assert {c[1] for c in calls} == {len(calls)}
    # factorisation route: per layer the slow branch and the MLP shift, one fast-map step, 2L norms, the enclosure
    assert len(calls) == 2 * L + 1 + 2 * L + 1
    assert calls[-1][2].startswith("interval enclosure")


def test_simulate_reports_the_certificate_s_progress(capsys):
    """``simulate``'s gate certificate, the bulk of its run, shows progress (here a log: one line at the end)."""
    from numerics.stacks.spec import StackSpec
    from proofs_check.experiments.simulate import simulate

    simulate(StackSpec(T=8, P=4, d=4, layers=2, heads=2, kernel="causal", seed=0, device="cpu"))
    err = capsys.readouterr().err
    assert "simulate: gate certificate [10/10] interval enclosure of μ and g*" in err, err
    simulate(StackSpec(T=8, P=4, d=4, layers=2, heads=2, kernel="causal", seed=0, device="cpu"), progress=False)
    assert capsys.readouterr().err == ""
