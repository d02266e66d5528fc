"""Writes for everything the suite writes: atomic for regular files, in place for the rest.

A regular file is written to a temporary file in the same folder, flushed and fsynced,
then renamed over the target (and the folder fsynced), so an interrupted run leaves the
previous file or none, never half of one.  The temporary file is removed on any
exception, on SIGINT and on SIGTERM; a SIGKILL can leave one behind.  Inside a folder a command
owns (``numerics.storage.outdir.claim``), the temporary's name carries that folder's owner token, which
only the folder's marker records: ``.<target>.fastslow-<pid>-<token>-<random>.tmp``.  So
:func:`remove_stale_temps` removes only temporaries a record of this tool names (the token) and
whose writer is gone; a file that merely looks like one, with a dead pid, is never touched.

Crash injection (for tests): with ``FASTSLOW_CRASH_AT_WRITE=N[:POINT]`` in the environment
the N-th atomic write of the process (counted from 1) stops the process with
``os._exit(CRASH_EXIT)`` at POINT: ``after-temp`` (the temporary file written, not yet
fsynced), ``after-fsync`` (fsynced, not renamed; the default) or ``after-rename`` (renamed,
the folder not yet fsynced).  ``FASTSLOW_WRITE_LOG=FILE`` appends each atomic write's target
to FILE, one per line, so a test can count a run's writes.

``-`` means standard output.  An existing target that is not a regular file (a FIFO, a
character device such as ``/dev/stdout`` or ``/dev/null``) is opened and written in
place, never replaced.  New files get the mode the umask allows (0666 & ~umask), and a
replaced regular file keeps its mode.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import stat
import sys
import tempfile
import threading
from pathlib import Path

STDOUT = "-"
TEMP_SUFFIX = ".tmp"
_TEMP_NAME = re.compile(r"^\..+\.fastslow-(\d+)-(?:([0-9a-f]{16})-)?[^.-]+\.tmp$")
_live_temps: set[str] = set()
_tokens: dict[str, str] = {}  # realpath of an owned folder -> its owner token
_lock = threading.Lock()

CRASH_ENV = "FASTSLOW_CRASH_AT_WRITE"
WRITE_LOG_ENV = "FASTSLOW_WRITE_LOG"
CRASH_POINTS = ("after-temp", "after-fsync", "after-rename")
CRASH_EXIT = 86
_writes = 0  # atomic writes this process has begun (crash injection counts them)


def reset_write_count() -> None:
    """Start counting atomic writes afresh (a forked child inherits its parent's count)."""
    global _writes
    _writes = 0


def _crash_plan() -> tuple[int, str] | None:
    """(N, POINT) from ``FASTSLOW_CRASH_AT_WRITE``, or None when it is unset."""
    text = os.environ.get(CRASH_ENV, "").strip()
    if not text:
        return None
    count, _, point = text.partition(":")
    point = point or "after-fsync"
    if not count.isascii() or not count.isdigit() or int(count) < 1 or point not in CRASH_POINTS:
        raise ValueError(f"{CRASH_ENV}={text!r} must be N[:POINT] with N ≥ 1 and POINT one of "
                         f"{', '.join(CRASH_POINTS)}")
    return int(count), point


def _maybe_crash(number: int, point: str) -> None:
    plan = _crash_plan()
    if plan is not None and plan == (number, point):
        os._exit(CRASH_EXIT)


def is_own_temp(path: str | os.PathLike) -> bool:
    """True for a temporary file named by :func:`atomic_path` (``.<target>.fastslow-<pid>-<random>.tmp``)."""
    return bool(_TEMP_NAME.match(Path(path).name))


def register_token(folder: str | os.PathLike, token: str | None) -> None:
    """Name the temporaries written under ``folder`` with ``token`` (None: stop)."""
    key = os.path.realpath(folder)
    with _lock:
        if token is None:
            _tokens.pop(key, None)
        else:
            _tokens[key] = token


def _token_for(folder: Path) -> str | None:
    """The token of the nearest owned folder at or above ``folder``."""
    if not _tokens:
        return None
    path = Path(os.path.realpath(folder))
    for part in [path, *path.parents]:
        token = _tokens.get(str(part))
        if token is not None:
            return token
    return None


def _json_safe(data, where: str = "", found: list | None = None):
    """``data`` with every NaN and ±inf float replaced by None; ``found`` collects where they were."""
    if isinstance(data, float) and not math.isfinite(data):
        found.append(f"{where or '(top level)'}={data}")
        return None
    if isinstance(data, dict):
        return {k: _json_safe(v, f"{where}.{k}" if where else str(k), found) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_json_safe(v, f"{where}[{i}]", found) for i, v in enumerate(data)]
    return data


def json_safe(data) -> tuple[object, list[str]]:
    """(``data`` with every NaN and ±inf float replaced by None, the fields that were)."""
    found: list[str] = []
    return _json_safe(data, found=found), found


def json_text(data, target: str = "") -> str:
    """Strict JSON (RFC 8259: no NaN or Infinity tokens): a non-finite float is written as null, and a
    note on standard error names the fields, so that every reader parses the file and none reads a
    null as a number."""
    safe, found = json_safe(data)
    if found:
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        print(f"fastslow: note: {target or 'JSON'}: {len(found)} non-finite value(s) written as null "
              f"({', '.join(found[:3])}{more})", file=sys.stderr)
    return json.dumps(safe, indent=2, default=str, allow_nan=False) + "\n"


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
    global _writes
    with _lock:
        _writes += 1
        number = _writes
    log = os.environ.get(WRITE_LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{path}\n")
    with _sigterm_raises():
        token = _token_for(path.parent)
        tag = f"{os.getpid()}-{token}-" if token else f"{os.getpid()}-"
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.fastslow-{tag}", suffix=TEMP_SUFFIX)
        os.close(fd)
        with _lock:
            _live_temps.add(tmp)
        try:
            try:
                yield Path(tmp)
            except Exception as exc:
                _reraise_disk_full(exc, path)
                raise
            _maybe_crash(number, "after-temp")
            try:
                mode = stat.S_IMODE(os.stat(path).st_mode)
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            os.chmod(tmp, mode)
            try:
                with open(tmp, "rb+") as fh:
                    os.fsync(fh.fileno())
            except OSError as exc:
                _reraise_disk_full(exc, path)
                raise
            _maybe_crash(number, "after-fsync")
            os.replace(tmp, path)
            _maybe_crash(number, "after-rename")
            _fsync_dir(path.parent)
        finally:
            with _lock:
                _live_temps.discard(tmp)
            if os.path.exists(tmp):
                os.unlink(tmp)


#: free bytes below which a failed write is taken for a full disk (a writer such as torch.save reports
#: ENOSPC as a RuntimeError without its errno)
DISK_FULL_BYTES = 1 << 20


def _reraise_disk_full(exc: BaseException, path: Path) -> None:
    """Raise ``OSError(ENOSPC, ..., path)`` when ``exc`` is a write that failed because the disk is full:
    an ENOSPC/EDQUOT OSError, or any error while the target's file system has under
    :data:`DISK_FULL_BYTES` free.  The CLI reports it in one line naming the file (exit 1)."""
    import errno

    code = getattr(exc, "errno", None)
    if code not in (errno.ENOSPC, errno.EDQUOT):
        try:
            info = os.statvfs(path.parent)
        except OSError:
            return
        if info.f_bavail * info.f_frsize >= DISK_FULL_BYTES:
            return
        code = errno.ENOSPC
    raise OSError(code, f"{os.strerror(code)} (while writing; nothing was replaced)", str(path)) from exc


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
    if path.is_symlink():  # replace the link's target, keep the link
        target = Path(os.path.realpath(path))
        if target.is_symlink() or not target.parent.is_dir():  # a loop, or a link to nowhere
            raise FileNotFoundError(f"{path} is a symbolic link loop or a dangling link (to {os.readlink(path)}); "
                                    "not written")
        path = target
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) the way :func:`write_bytes` does."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike, data) -> None:
    """Write ``data`` as indented strict JSON (:func:`json_text`) the way :func:`write_bytes` does."""
    write_text(path, json_text(data, str(path)))


#: the largest input file read whole (a ledger, a spec, a config): larger ones are refused unread
MAX_INPUT_BYTES = 64 * 2**20


def read_input(path: str | os.PathLike, name: str, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of an input file, read only if it is a regular file of at most ``max_bytes``.

    A FIFO (whose open would block until a writer comes), a device (``/dev/zero`` never ends), a
    folder or a file above the cap is refused with a ValueError naming ``name`` and the path,
    before a byte is read; so is a file that grows past the cap while it is read."""
    text = os.fspath(path)
    try:
        info = os.stat(text)
    except FileNotFoundError:
        raise ValueError(f"{name} {text}: no such file") from None
    except OSError as err:
        raise ValueError(f"{name} {text}: cannot be read ({type(err).__name__}: {err.strerror or err})") from None
    if stat.S_ISDIR(info.st_mode):
        raise ValueError(f"{name} {text}: is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{name} {text}: not a regular file (a FIFO, device or socket is not read)")
    if info.st_size > max_bytes:
        raise ValueError(f"{name} {text}: {info.st_size} bytes, more than the {max_bytes} an input may have")
    try:
        fd = os.open(text, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # replaced since the stat
                raise ValueError(f"{name} {text}: not a regular file")
            data = fh.read(max_bytes + 1)
    except OSError as err:
        raise ValueError(f"{name} {text}: cannot be read ({type(err).__name__}: {err.strerror or err})") from None
    if len(data) > max_bytes:
        raise ValueError(f"{name} {text}: grew past the {max_bytes} bytes an input may have while it was read")
    return data


def remove_stale_temps(folder: str | os.PathLike, token: str | None) -> list[Path]:
    """Remove the temporaries that killed writers left under ``folder``; return them.

    Only names of :func:`atomic_path`'s form that carry ``token`` (the folder's owner token, which
    only this tool's marker records) are touched, and only when their writer is gone (its pid is not
    running, or it is this process and the file is not one of its live temporaries).  Any other
    file, a look-alike with a dead pid included, is never removed; without a token nothing is.
    """
    import psutil

    removed = []
    folder = Path(folder)
    if not token or not folder.is_dir():
        return removed
    for tmp in folder.rglob(f"*{TEMP_SUFFIX}"):
        match = _TEMP_NAME.match(tmp.name)
        if not match or match.group(2) != token or tmp.is_symlink() or not tmp.is_file():
            continue
        pid = int(match.group(1))
        if pid == os.getpid():
            stale = str(tmp) not in _live_temps
        else:
            stale = not psutil.pid_exists(pid)
        if stale:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                removed.append(tmp)
    return removed
