"""The run log (docs/runs.json): the one-off runs whose time, memory or load the docs quote.

A doc that says "took 36 min 49 s wall, 519 CPU-s, peak RSS 4.4 GiB at load 20–30" quotes an entry of this log,
and ``tests/test_docs_numbers.py`` holds the quote to the entry.  An entry is either *timed* (written by
``python -m proofs_check.runlog time ID -- COMMAND ...``, which runs the command and measures it) or *transcribed*
(a run that predates the log: its numbers copied from the doc written when it ran, with no raw log kept; the entry
says so, and a rerun replaces it).

``time`` measures the command's wall time, the user and system CPU seconds of its process tree and the largest
resident set of any of its processes (``getrusage(RUSAGE_CHILDREN)``), and samples the 1-minute load average every
few seconds while it runs (its range and mean), with the UTC start, the git commit and the machine.  It writes the
entry atomically (replacing an entry of the same id) only when the command exits 0; otherwise it writes nothing and
exits with the command's status.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "docs" / "runs.json"
#: Seconds between two load-average samples while a timed command runs.
LOAD_EVERY_S = 5.0


class Run(BaseModel):
    """One run a doc quotes."""
    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="the name docs and ties use")
    command: str = Field(min_length=1, description="the command line that ran")
    source: Literal["timed", "transcribed"] = Field(
        description="timed: measured by `python -m proofs_check.runlog time`; transcribed: copied from the doc "
                    "written when the run happened (no raw log kept)")
    start: dt.datetime = Field(description="UTC start (a transcribed run keeps the precision the doc gave)")
    commit: str | None = Field(pattern=r"^[0-9a-f]{7,40}(-dirty)?$", description="git commit; None where not recorded")
    machine: str = Field(min_length=1, description="the machine, in words")
    load: tuple[float, float] | None = Field(
        description="lowest and highest 1-minute load average seen while it ran; None where not recorded")
    load_mean: float | None = Field(None, ge=0)
    wall_s: float = Field(gt=0)
    user_s: float | None = Field(None, ge=0, description="user CPU seconds of the process tree")
    system_s: float | None = Field(None, ge=0, description="system CPU seconds of the process tree")
    cpu_total_s: float | None = Field(None, ge=0, description="CPU seconds, user and system together, where a "
                                      "transcribed run reported only their sum")
    peak_rss_gib: float | None = Field(None, gt=0, description="largest resident set of any process of the run")
    note: str | None = Field(None, description="what else the doc says about the run (what was loaded, its outcome)")

    @model_validator(mode="after")
    def _load_ordered(self):
        if self.load is not None and not self.load[0] <= self.load[1]:
            raise ValueError(f"{self.id}: load range {self.load} is not (lowest, highest)")
        if self.source == "timed" and None in (self.load, self.user_s, self.system_s, self.peak_rss_gib):
            raise ValueError(f"{self.id}: a timed run records its load, CPU seconds and peak memory")
        if self.cpu_total_s is not None and (self.source == "timed" or self.user_s is not None):
            raise ValueError(f"{self.id}: cpu_total_s is for a transcribed run that reported only user + system")
        return self

    @property
    def cpu_s(self) -> float | None:
        """User plus system CPU seconds, where recorded (split or as their sum)."""
        if self.user_s is None or self.system_s is None:
            return self.cpu_total_s
        return self.user_s + self.system_s


class RunLog(BaseModel):
    """Every run the docs quote, by id."""
    model_config = ConfigDict(extra="forbid")
    runs: list[Run]

    @model_validator(mode="after")
    def _ids_unique(self):
        ids = [r.id for r in self.runs]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"run ids appear twice: {dup}")
        return self

    def __getitem__(self, run_id: str) -> Run:
        for r in self.runs:
            if r.id == run_id:
                return r
        raise KeyError(f"no run {run_id!r} in the run log")


def load(path: Path | None = None) -> RunLog:
    """The run log (default docs/runs.json), validated; an empty log where the file does not exist."""
    p = Path(path or RUNS)
    return RunLog.model_validate(json.loads(p.read_text())) if p.is_file() else RunLog(runs=[])


def save(log: RunLog, path: Path | None = None) -> None:
    from numerics.storage.io import write_text

    write_text(Path(path or RUNS), json.dumps(log.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n")


def record(run: Run, path: Path | None = None) -> None:
    """Add ``run`` to the log, replacing the entry of the same id."""
    log = load(path)
    save(RunLog(runs=[r for r in log.runs if r.id != run.id] + [run]), path)


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()}-core {model}"


def _commit() -> str | None:
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)

    head = git("rev-parse", "--short", "HEAD")
    if head.returncode:
        return None
    dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return head.stdout.strip() + ("-dirty" if dirty else "")


def time_command(run_id: str, argv: list[str], note: str | None = None) -> tuple[int, Run | None]:
    """Run ``argv`` and measure it; return its exit status and, when it exited 0, the run."""
    samples = [os.getloadavg()[0]]
    done = threading.Event()

    def sample():
        while not done.wait(LOAD_EVERY_S):
            samples.append(os.getloadavg()[0])

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = dt.datetime.now(dt.timezone.utc).replace(microsecond=0, tzinfo=None)
    commit = _commit()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    status = subprocess.run(argv).returncode
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    samples.append(os.getloadavg()[0])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if status:
        return status, None
    run = Run(id=run_id, command=shlex.join(argv), source="timed", start=start, commit=commit, machine=_machine(),
              load=(round(min(samples), 2), round(max(samples), 2)), load_mean=round(sum(samples) / len(samples), 2), wall_s=round(wall, 2),
              user_s=round(after.ru_utime - before.ru_utime, 2), system_s=round(after.ru_stime - before.ru_stime, 2),
              peak_rss_gib=round(after.ru_maxrss / 2**20, 3), note=note)
    return 0, run


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m proofs_check.runlog", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    timed = sub.add_parser("time", help="run a command, measure it, record it under ID",
                           usage="python -m proofs_check.runlog time ID [--note NOTE] -- COMMAND ...")
    timed.add_argument("id")
    timed.add_argument("--note")
    sub.add_parser("check", help="validate docs/runs.json")
    args = parser.parse_args(argv)
    if args.action == "check":
        print(f"{len(load().runs)} runs, valid")
        return 0
    if not re.fullmatch(Run.model_fields["id"].metadata[0].pattern, args.id):
        parser.exit(2, f"id: {args.id!r} is not a run id (lower-case letters, digits and '-')\n")
    if not command:
        parser.exit(2, "command: give the command to time after --\n")
    if shutil.which(command[0]) is None:
        parser.exit(2, f"command: {command[0]!r} is not an executable on PATH\n")
    status, run = time_command(args.id, command, args.note)
    if run is None:
        print(f"the command exited {status}; nothing recorded", file=sys.stderr)
        return status
    record(run)
    print(f"recorded {run.id}: {run.wall_s:.1f} s wall, {run.cpu_s:.1f} CPU-s, peak RSS {run.peak_rss_gib:.2f} GiB, "
          f"load {run.load[0]:.1f}–{run.load[1]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
