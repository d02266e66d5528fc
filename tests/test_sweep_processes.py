"""A sweep's local Dask workers die with the sweep: SIGKILL of the parent leaves no worker process behind.

Dask starts each worker with a pipe from the parent and exits the child when that pipe closes
(``distributed.process.AsyncProcess``), so no signal handler of ours is needed; this test holds that
behaviour against a Dask upgrade."""

import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("distributed")


def _children(pid: int) -> set[int]:
    """Every descendant of ``pid`` read from /proc (Linux)."""
    found, frontier = set(), [pid]
    while frontier:
        p = frontier.pop()
        kids = []
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            tasks = []
        for t in tasks:  # a child belongs to the thread that forked it
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids += [int(k) for k in f.read().split()]
            except OSError:
                pass
        found.update(kids)
        frontier.extend(kids)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_the_sweep_leaves_no_worker(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "proofs_check.cli", "sweep", "saturation", "--out",
                             str(tmp_path / "out"), "--workers", "2", "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline, workers = time.monotonic() + 120, set()
        time.sleep(1)
        while time.monotonic() < deadline and len(workers) < 3 and proc.poll() is None:
            time.sleep(0.5)
            workers = _children(proc.pid)   # the Dask workers and multiprocessing's helper
        if len(workers) < 3:
            pytest.skip("the sweep ended or did not start its workers in time; nothing to kill")
        descendants = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(c) for c in descendants):
            time.sleep(0.5)
        assert not [c for c in descendants if _alive(c)], "worker processes outlived the sweep"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for c in _children(proc.pid):
            if _alive(c):
                os.kill(c, signal.SIGKILL)


def test_control_a_child_without_the_parent_pipe_is_seen_surviving():
    """Control: a plain child (no pipe to its parent) outlives a SIGKILLed parent, and the same
    detection reports it alive — so the test above can fail."""
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '60']); "
                               "time.sleep(60)"], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not _children(parent.pid):
            time.sleep(0.1)
        orphans = _children(parent.pid)
        assert orphans
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        time.sleep(1)
        assert all(_alive(c) for c in orphans)
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
