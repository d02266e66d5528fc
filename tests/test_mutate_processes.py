"""An interrupted ``fastslow mutate`` leaves no process and no scratch copy behind.

Before: a pool worker was reparented to PID 1 and blocked forever (~190 MB), its mutant's child
kept running in its own session, and the regenerated module stayed in TMPDIR.  Now the workers die
with the parent (``PR_SET_PDEATHSIG``), kill their child's process group on the way out and remove
the scratch folder (``proofs_check.mutation.processes``).  Both ways a run is interrupted are tried:
Ctrl-C (SIGINT to the foreground process group) and SIGKILL of the parent alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _descendants_when_running(proc, depth: int, timeout: float) -> list[psutil.Process]:
    """The parent's descendants once a chain of ``depth`` processes below it exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = psutil.Process(proc.pid).children(recursive=True)
        levels = {p.pid: p.ppid() for p in kids}
        chain = max((sum(1 for _ in _ancestry(pid, levels)) for pid in levels), default=0)
        if chain >= depth:
            return kids
        time.sleep(0.2)
    pytest.fail(f"no chain of {depth} processes under the parent within {timeout} s")


def _ancestry(pid, levels):
    while pid in levels:
        yield pid
        pid = levels[pid]


def _gone(pids, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.2)
    return alive


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("how", ["ctrl-c", "sigkill-parent"])
def test_an_interrupted_mutate_leaves_no_process_and_no_scratch(tmp_path, how):
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch_root), "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "proofs_check.cli", "mutate", "--theory-only", "--only",
                             "G-sign-flip", "--only", "G-factor-order", "--workers", "1", "--no-progress"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        kids = _descendants_when_running(proc, depth=2, timeout=240)  # a worker and its mutant's interpreter
        pids = [k.pid for k in kids]
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends to the foreground group
        else:
            proc.kill()
        proc.wait(60)
        left = _gone(pids, timeout=60)
        assert left == [], [psutil.Process(p).cmdline()[:4] for p in left if psutil.pid_exists(p)]
        assert [p.name for p in scratch_root.iterdir() if p.name.startswith("fastslow-")] == []
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True) if psutil.pid_exists(proc.pid) else []:
            p.kill()
        if proc.poll() is None:
            proc.kill()
