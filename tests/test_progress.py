"""The progress policy (proofs_check.progress): in a log, one plain line per finished item."""

import io

from proofs_check.progress import track


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_log_gets_one_plain_line_per_item_naming_the_next():
    log = io.StringIO()
    assert list(track(["1.1", "1.2", "2.1"], "check claims", stream=log)) == ["1.1", "1.2", "2.1"]
    lines = log.getvalue().splitlines()
    assert len(lines) == 3 and "\x1b" not in log.getvalue() and "\r" not in log.getvalue()
    assert lines[0].startswith("check claims [1/3] 1.1 done in ") and lines[0].endswith("; next 1.2")
    assert lines[2].startswith("check claims [3/3] 2.1 done in ") and "next" not in lines[2]


def test_terminal_gets_a_bar_and_the_same_lines():
    tty = Terminal()
    list(track(["a", "b"], "figures", stream=tty, label=str.upper))
    text = tty.getvalue()
    assert "\r" in text  # tqdm redraws its bar in place
    assert "figures [1/2] A done in" in text and "figures [2/2] B done in" in text


def test_disabled_prints_nothing():
    log = io.StringIO()
    assert list(track(range(3), "x", stream=log, enabled=False)) == [0, 1, 2] and log.getvalue() == ""
