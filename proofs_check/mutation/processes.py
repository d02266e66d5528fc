"""The processes a mutation run starts, and how they end: with their parent, and without leftovers.

``fastslow mutate`` runs each mutant in a pool worker, which runs the mutant's ledger check and
tests in a child interpreter of its own process group (so that a timeout kills the whole group,
pytest's helpers included).  An interrupted run must not leave any of them behind:

* a pool worker asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG`` through
  ``ctypes``/``prctl``; Linux); on SIGTERM it kills the process groups of the children it is
  running (:func:`run_group`) and removes the scratch folders it holds (:func:`scratch`), then
  exits;
* a child asks for SIGKILL when the worker that started it dies (a SIGKILLed worker runs no
  ``finally``);
* on any exception in the parent (Ctrl-C included) the pool is shut down at once: queued mutants
  are cancelled and the workers are sent SIGTERM, instead of the pool finishing its queue.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile

PR_SET_PDEATHSIG = 1
_groups: set[int] = set()     # process groups of the children this process is running
_scratch: set[str] = set()    # scratch folders this process holds


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when the thread that started it ends; False where
    ``prctl`` is not available (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _cleanup() -> None:
    for group in list(_groups):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    for path in list(_scratch):
        shutil.rmtree(path, ignore_errors=True)


def _terminate(signum, frame):
    _cleanup()
    os._exit(128 + signum)  # not SystemExit: the pool's worker loop would catch it and take the next job


@contextlib.contextmanager
def scratch(prefix: str = "fastslow-"):
    """A scratch folder in TMPDIR, removed when the block ends, however it ends (SIGTERM included)."""
    path = tempfile.mkdtemp(prefix=prefix)
    _scratch.add(path)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        _scratch.discard(path)


def held(path) -> None:
    """Hold an existing scratch folder (removed on SIGTERM); :func:`released` when it is removed."""
    _scratch.add(os.fspath(path))


def released(path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    _scratch.discard(os.fspath(path))


def worker_init() -> None:
    """A pool worker's initializer: SIGTERM when the parent dies, and SIGTERM cleans up (:func:`_cleanup`)."""
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it then sends SIGTERM
    die_with_parent(signal.SIGTERM)
    if os.getppid() == 1:  # the parent died before the request took effect
        raise SystemExit(1)


def run_group(cmd: list[str], seconds: float, **kwargs) -> subprocess.CompletedProcess | None:
    """``cmd`` in a new process group that dies with its starter; the completed process, or None when it
    ran past ``seconds``.  On a timeout or any exception here (SIGTERM's ``SystemExit``, Ctrl-C) the whole
    group is killed before returning or re-raising."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=die_with_parent, **kwargs)
    _groups.add(proc.pid)
    try:
        out, err = proc.communicate(timeout=seconds)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            return None
        raise
    finally:
        _groups.discard(proc.pid)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def pool_map(fn, jobs: list[tuple], workers: int, progress=None) -> list:
    """``[fn(*job) for job in jobs]`` on a process pool of :func:`worker_init` workers, in order.  On any
    exception in this process the queued jobs are cancelled and every worker is sent SIGTERM."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, initializer=worker_init)
    try:
        futures = [pool.submit(fn, *job) for job in jobs]
        results = [f.result() for f in (progress(futures) if progress else futures)]
    except BaseException:
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            with contextlib.suppress(Exception):
                p.terminate()
        for p in processes:
            with contextlib.suppress(Exception):
                p.join(30)
        raise
    pool.shutdown(wait=True)
    return results
