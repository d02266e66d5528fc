"""Where each section of the report comes from: the commit and date of the run that produced it.

A section computed by this ``reproduce`` carries this run's commit and date (:func:`this_run`); a
section drawn from a committed record (docs/trained/*.json, docs/scale/*.json, the sweep figures)
carries the commit and date that last changed that record (:func:`recorded`), so a reader can tell
a fresh measurement from an older one.
"""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, cwd=ROOT)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def this_run() -> dict:
    """This checkout's short commit (marked when the tree has uncommitted changes) and the UTC time now."""
    commit = _git("rev-parse", "--short=10", "HEAD") or "unknown commit"
    if _git("status", "--porcelain", "--untracked-files=no"):
        commit += " with uncommitted changes"
    now = datetime.datetime.now(datetime.timezone.utc)
    return {"commit": commit, "date": now.strftime("%Y-%m-%d %H:%M UTC")}


def recorded(path: Path) -> dict:
    """The commit and date that last changed a committed record, or ``uncommitted`` for a file git does not hold."""
    rel = Path(path).resolve().relative_to(ROOT) if Path(path).resolve().is_relative_to(ROOT) else Path(path)
    line = _git("log", "-1", "--format=%h %cs", "--", str(rel))
    if not line:
        return {"commit": "uncommitted", "date": "no commit date", "file": str(rel)}
    commit, date = line.split()
    return {"commit": commit, "date": date, "file": str(rel)}


def line(source: dict) -> str:
    """The provenance sentence set under a section's heading."""
    what = f"recorded in {source['file']}, " if source.get("file") else "this run, "
    return f"*Source: {what}commit {source['commit']}, {source['date']}.*"


def stamp(lines: list[str], source: dict) -> list[str]:
    """``lines`` with the provenance sentence after their first ``## `` heading (or first, without one)."""
    at = next((i + 1 for i, text in enumerate(lines) if text.startswith("## ")), 0)
    return lines[:at] + ["", line(source)] + lines[at:]
