"""Writes: atomic for regular files, in place for FIFOs and devices, '-' is stdout, the umask is followed,
and no temporary file survives an exception, SIGINT or SIGTERM (a SIGKILL's leftovers are cleaned up)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from numerics.storage.io import atomic_path, remove_stale_temps, write_json, write_text

ROOT = Path(__file__).resolve().parents[1]


def temps(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*.tmp")]


def test_write_replaces_atomically_and_leaves_no_temp(tmp_path):
    target = tmp_path / "ledger.json"
    write_json(target, {"a": 1})
    write_json(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2} and temps(tmp_path) == []


def test_new_files_follow_the_umask(tmp_path):
    """mkstemp makes 0600 files; the written file must be 0666 & ~umask (0644 under umask 022)."""
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "a.txt", "x")
        os.umask(0o002)
        write_text(tmp_path / "b.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b.txt").stat().st_mode) == 0o664


def test_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    target.chmod(0o640)
    write_text(target, "new")
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_dash_writes_to_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_json("-", {"x": 1})
    assert json.loads(capsys.readouterr().out) == {"x": 1} and list(tmp_path.iterdir()) == []


def test_fifo_is_written_in_place_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo) as fh:
            got["text"] = fh.read()

    thread = threading.Thread(target=reader)
    thread.start()
    write_json(fifo, {"via": "fifo"})
    thread.join(10)
    assert json.loads(got["text"]) == {"via": "fifo"}
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and temps(tmp_path) == []


def test_devices_are_written_in_place(tmp_path):
    write_text("/dev/null", "discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_dev_stdout_goes_to_the_callers_stdout(tmp_path):
    """``--json /dev/stdout``: the caller's fd 1 receives the JSON; nothing is renamed over /dev/stdout."""
    out = tmp_path / "captured.txt"
    code = "from numerics.storage.io import write_json; write_json('/dev/stdout', {'ok': True})"
    with open(out, "w") as fh:
        subprocess.run([sys.executable, "-c", code], stdout=fh, check=True, cwd=ROOT)
    assert json.loads(out.read_text()) == {"ok": True}
    assert os.path.islink("/dev/stdout") or not os.path.isfile("/dev/stdout")


def test_symlink_target_is_replaced_and_the_link_kept(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_json(link, {"n": 3})
    assert link.is_symlink() and json.loads(real.read_text()) == {"n": 3}


def test_exception_inside_the_write_removes_the_temp(tmp_path):
    target = tmp_path / "fig.png"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("savefig failed")
    assert not target.exists() and temps(tmp_path) == []


def test_directory_target_is_refused(tmp_path):
    with pytest.raises(IsADirectoryError):
        write_text(tmp_path, "x")
    assert temps(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_a_write_removes_the_temp(tmp_path, sig):
    """A signal arriving while the temp file exists: the temp is removed, the target untouched."""
    target = tmp_path / "out.json"
    target.write_text("previous")
    code = f"""
import sys, time
from numerics.storage.io import atomic_path
with atomic_path({str(target)!r}) as tmp:
    tmp.write_text("partial")
    print("ready", flush=True)
    time.sleep(30)
"""
    # SIGINT at its default in the child: a shell that starts the tests in the background ignores it,
    # and Python installs its KeyboardInterrupt handler only when SIGINT is not ignored at start
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "ready"
    assert len(temps(tmp_path)) == 1
    proc.send_signal(sig)
    proc.wait(30)
    assert proc.returncode != 0
    assert temps(tmp_path) == [] and target.read_text() == "previous"


def test_stale_temps_of_dead_writers_are_removed_live_ones_and_user_files_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    token = "0123456789abcdef"  # the folder's owner token (its marker records it)
    stale = tmp_path / "figures" / f".a.png.fastslow-{dead}-{token}-x1y2abcd.tmp"
    stale.parent.mkdir()
    stale.write_bytes(b"")
    live = tmp_path / f".b.json.fastslow-{os.getppid()}-{token}-abcd1234.tmp"  # a running process's temp
    live.write_bytes(b"")
    user = tmp_path / "tmpq1w2.pdf.tmp"  # not the writer's naming: a user's file, however old
    user.write_bytes(b"")
    os.utime(user, (time.time() - 3600, time.time() - 3600))
    lookalike = tmp_path / f".notes.{dead}.draft.tmp"  # the writer's former naming, which a user's file can match
    lookalike.write_bytes(b"")
    untokened = tmp_path / f".c.png.fastslow-{dead}-x1y2abcd.tmp"  # the writer's naming, no record names it
    untokened.write_bytes(b"")
    other = tmp_path / f".c.png.fastslow-{dead}-fedcba9876543210-x1y2abcd.tmp"  # another folder's token
    other.write_bytes(b"")
    assert remove_stale_temps(tmp_path, None) == []
    removed = remove_stale_temps(tmp_path, token)
    assert removed == [stale]
    assert untokened.exists() and other.exists()
    assert live.exists() and user.exists() and lookalike.exists()
