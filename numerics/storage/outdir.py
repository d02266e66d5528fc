"""Output folders a command owns: a marker proves which command wrote a folder, a lock keeps one writer.

A command that writes a folder (``reproduce --out``, ``train --out``, ``sweep --out``) first
*claims* it with :func:`claim`:

* a new or empty folder is created and gets the marker ``.fastslow-owner.json`` naming the
  command and a random owner token (written through the atomic writer); while the claim is held,
  the atomic writer's temporaries under the folder carry that token in their names;
* a folder with this command's marker is the command's own, and is reused;
* a folder with another command's marker, or a non-empty folder without a marker, is refused
  (``InvalidInput``: exit 2, the folder and the first foreign entry named), before any work.
  Not foreign: the marker and lock, the atomic writer's own temporary files, the files the
  command reads as inputs (``inputs``), subfolders that other fastslow commands own (their
  marker), and what ``adopt`` accepts (a checkpoint folder's own manifest, for example);
* the folder is locked (``fcntl.flock`` on ``.fastslow.lock``, released when the claim ends or
  the process dies), so a second writer on the same folder is refused (exit 2) instead of
  mixing its files in.  Claims are re-entrant within one process.

A command removes only what it can prove it wrote: the atomic writer's temporaries of dead
writers that carry the folder's owner token (:func:`numerics.storage.io.remove_stale_temps`), and files
its own records name (a checkpoint's previous tensor file, named by the manifest it wrote).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import Callable

from numerics.storage.io import is_own_temp, register_token, remove_stale_temps, write_json
from numerics.stacks.params import InvalidInput

MARKER = ".fastslow-owner.json"
LOCK = ".fastslow.lock"
FORMAT = "fastslow-output"
_held: dict[str, list] = {}  # realpath -> [fd, depth]


def _marker(folder) -> dict | None:
    """The marker's content; None without one; {} for an unreadable or foreign one."""
    marker = Path(folder) / MARKER
    if not marker.is_file():
        return None
    try:
        data = json.loads(marker.read_bytes()[:65536].decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    ok = isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("command"), str)
    return data if ok else {}


def owner(folder: str | os.PathLike) -> str | None:
    """The command named by ``folder``'s marker; None without one; '?' for an unreadable one."""
    data = _marker(folder)
    return None if data is None else data.get("command", "?")


def token(folder: str | os.PathLike) -> str | None:
    """The owner token ``folder``'s marker records (names the temporaries written there), or None."""
    value = (_marker(folder) or {}).get("token")
    return value if _valid_token(value) else None


def _owned_tree(folder: Path) -> bool:
    """A folder some fastslow command owns, or one holding only such folders."""
    if (folder / MARKER).is_file():
        return True
    try:
        entries = list(folder.iterdir())
    except OSError:
        return False
    return all(e.is_dir() and not e.is_symlink() and _owned_tree(e) for e in entries)


def foreign_entries(folder: Path, inputs=(), adopt: Callable[[Path], bool] | None = None) -> list[Path]:
    """The entries of ``folder`` that no fastslow command can be shown to have written."""
    if adopt is not None and adopt(folder):
        return []
    out = []
    for entry in sorted(folder.iterdir()):
        if entry.name in (MARKER, LOCK) or entry.name in inputs or is_own_temp(entry):
            continue
        if entry.is_dir() and not entry.is_symlink() and _owned_tree(entry):
            continue
        out.append(entry)
    return out


def _valid_token(value) -> bool:
    return isinstance(value, str) and len(value) == 16 and all(c in "0123456789abcdef" for c in value)


def _unfinished_marker_token(folder: Path, command: str) -> str | None:
    """The token of a marker whose write was interrupted before its rename: the atomic writer's temporary
    of the marker, holding this command's marker with the token its own name carries (a record of this
    tool), so that the next claim adopts the token and removes the temporary."""
    for tmp in sorted(folder.glob(f".{MARKER}.fastslow-*.tmp")):
        try:
            data = json.loads(tmp.read_bytes()[:65536].decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if (isinstance(data, dict) and data.get("format") == FORMAT and data.get("command") == command
                and _valid_token(data.get("token")) and f"-{data['token']}-" in tmp.name):
            return data["token"]
    return None


def check(path, command: str, *, name: str = "--out", inputs=(), adopt=None) -> Path:
    """Refuse (InvalidInput) a folder ``command`` may not write into; return it.  Writes nothing."""
    folder = Path(path)
    if folder.is_symlink() and not folder.exists():
        raise InvalidInput(f"{name} {path}: a dangling symbolic link")
    if folder.exists() and not folder.is_dir():
        raise InvalidInput(f"{name} {path}: is a file, not a folder")
    if not folder.is_dir():
        return folder
    who = owner(folder)
    if who is not None and who != command:
        raise InvalidInput(f"{name} {path}: the folder belongs to fastslow {who} ({MARKER}), not fastslow "
                           f"{command}; choose another folder")
    if who is None:
        foreign = foreign_entries(folder, inputs, adopt)
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise InvalidInput(f"{name} {path}: the folder holds {foreign[0].name}{more}, which fastslow {command} "
                               f"did not write (no {MARKER}); choose a new or empty folder")
    return folder


def _lock(folder: Path, name: str, command: str) -> str:
    key = os.path.realpath(folder)
    if key in _held:
        _held[key][1] += 1
        return key
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InvalidInput(f"{name} {folder}: another fastslow process is writing into this folder "
                           f"(it holds {LOCK}); wait for it or choose another folder") from None
    _held[key] = [fd, 1]
    return key


def _unlock(key: str) -> None:
    entry = _held[key]
    entry[1] -= 1
    if entry[1] == 0:
        del _held[key]
        os.close(entry[0])  # closing the descriptor releases the flock


@contextlib.contextmanager
def claim(path, command: str, *, name: str = "--out", inputs=(), adopt=None, lock: bool = True):
    """Check ``path`` (:func:`check`), create it, lock it, mark it as ``command``'s, and remove the
    temporaries that killed writers left in it; yield the folder."""
    folder = check(path, command, name=name, inputs=inputs, adopt=adopt)
    folder.mkdir(parents=True, exist_ok=True)
    key = _lock(folder, name, command) if lock else None
    registered = False
    try:
        check(folder, command, name=name, inputs=inputs, adopt=adopt)  # again, now that no one else writes
        mark = token(folder) or _unfinished_marker_token(folder, command) or secrets.token_hex(8)
        register_token(folder, mark)
        registered = True
        if token(folder) is None:  # a new folder, or a marker written before owner tokens
            write_json(folder / MARKER, {"format": FORMAT, "command": command, "token": mark})
        remove_stale_temps(folder, mark)
        yield folder
    finally:
        if key is not None:
            _unlock(key)
        if registered and os.path.realpath(folder) not in _held:
            register_token(folder, None)
