"""Writes for everything the suite writes: atomic for regular files, in place for the rest.

A regular file is written to a temporary file in the same folder, flushed and fsynced,
then renamed over the target (and the folder fsynced), so an interrupted run leaves the
previous file or none, never half of one.  The temporary file is removed on any
exception, on SIGINT and on SIGTERM; a SIGKILL can leave one behind, and its name
(``.<target>.<pid>.<random>.tmp``) lets :func:`remove_stale_temps` find it later.

``-`` means standard output.  An existing target that is not a regular file (a FIFO, a
character device such as ``/dev/stdout`` or ``/dev/null``) is opened and written in
place, never replaced.  New files get the mode the umask allows (0666 & ~umask), and a
replaced regular file keeps its mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

STDOUT = "-"
TEMP_SUFFIX = ".tmp"
_TEMP_NAME = re.compile(r"^\..+\.(\d+)\.[^.]+\.tmp$")
_live_temps: set[str] = set()
_lock = threading.Lock()


class Terminated(BaseException):
    """Raised inside a write when SIGTERM arrives, so the temporary file is removed first."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _in_place(path: Path) -> bool:
    """True when ``path`` must be written in place: a FIFO, device or socket, or a name under
    /dev or /proc (``/dev/stdout`` is a link to whatever the caller's fd 1 is)."""
    if str(path.absolute()).startswith(("/dev/", "/proc/")):
        return path.exists()
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


@contextlib.contextmanager
def _sigterm_raises():
    """While the body runs, SIGTERM raises :class:`Terminated` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; on success fsync it and rename it over ``path``.

    For writers that take a file name (``savefig``, ``torch.save``).  The temporary file
    is removed on any exception, SIGINT or SIGTERM included.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    with _sigterm_raises():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.",
                                   suffix=TEMP_SUFFIX)
        os.close(fd)
        with _lock:
            _live_temps.add(tmp)
        try:
            yield Path(tmp)
            try:
                mode = stat.S_IMODE(os.stat(path).st_mode)
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            os.chmod(tmp, mode)
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            _fsync_dir(path.parent)
        finally:
            with _lock:
                _live_temps.discard(tmp)
            if os.path.exists(tmp):
                os.unlink(tmp)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data``: to stdout for ``-``, in place for a FIFO or device, else atomically."""
    if str(path) == STDOUT:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    path = Path(path)
    if str(path) == "" or str(path) == ".":
        raise ValueError("output path is empty")
    if _in_place(path):
        with open(path, "wb") as fh:
            fh.write(data)
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))  # replace the link's target, keep the link
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) the way :func:`write_bytes` does."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike, data) -> None:
    """Write ``data`` as indented JSON the way :func:`write_bytes` does."""
    write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def remove_stale_temps(folder: str | os.PathLike, *, min_age_s: float = 600.0) -> list[Path]:
    """Remove temporary files a killed writer left under ``folder``; return them.

    A temp file named by :func:`atomic_path` carries its writer's pid and is removed when
    that process is gone; any other ``*.tmp`` file is removed once older than ``min_age_s``
    (so a concurrent writer's file is never taken from under it).
    """
    import psutil

    removed = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    now = time.time()
    for tmp in folder.rglob(f"*{TEMP_SUFFIX}"):
        if not tmp.is_file():
            continue
        match = _TEMP_NAME.match(tmp.name)
        if match:
            pid = int(match.group(1))
            stale = (pid != os.getpid() or str(tmp) not in _live_temps) and not (
                pid != os.getpid() and psutil.pid_exists(pid))
        else:
            try:
                stale = now - tmp.stat().st_mtime > min_age_s
            except FileNotFoundError:
                continue
        if stale:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                removed.append(tmp)
    return removed
