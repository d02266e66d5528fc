"""Atomic writes for everything the suite writes: a temporary file in the same folder, then a rename.

An interrupted run leaves the previous file or none, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` atomically: a temporary file in the target's folder, then ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str | os.PathLike, data) -> None:
    """Write ``data`` as indented JSON, atomically."""
    write_text(path, json.dumps(data, indent=2, default=str))
