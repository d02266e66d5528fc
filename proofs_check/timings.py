"""The performance log (docs/timings.json) and the README's timing sentences written from it.

Each entry is one timed run of a user-facing command: what was run, its wall time, the machine, the load average
at the start, the date and the git commit it ran on, and its parts (install, the suite, each reproduce step).  The
README quotes only what an entry holds: for each command the latest run on an idle machine, in bold, and the
slowest run under load, so a reader sees both the idle number and how far load stretches it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

ROOT = Path(__file__).resolve().parents[1]
TIMINGS = ROOT / "docs" / "timings.json"
#: A 1-minute load average at or below this, on the 2-core machines the log records, counts as idle.
IDLE_LOAD = 1.5


class Part(BaseModel):
    """One timed step of a run, optionally with its own steps."""
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="the step, as the README names it (e.g. `fastslow reproduce`)")
    wall_s: float = Field(gt=0, description="wall-clock seconds")
    outcome: str | None = Field(None, description="what the step reported (e.g. '1,747 passed, 17 skipped')")
    parts: list[Part] = Field(default_factory=list, description="its own timed steps")


class Timing(BaseModel):
    """One timed run of a command."""
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="what the README calls the run: 'the tests', 'reproduce'")
    command: str = Field(min_length=1, description="the command line that was timed")
    wall_s: float = Field(gt=0, description="wall-clock seconds of the whole command")
    machine: str = Field(min_length=1, description="the machine, in words (cores, CPU)")
    load: float | None = Field(ge=0, description="1-minute load average at the start; None where not recorded")
    idle: bool = Field(description="nothing else ran on the machine during the run")
    fresh_clone: bool = Field(description="run on a fresh clone (install included in wall_s)")
    date: dt.date
    commit: str | None = Field(pattern=r"^[0-9a-f]{7,40}$", description="the git commit it ran on; None where "
                               "the run predates the log and its commit was not recorded")
    parts: list[Part] = Field(default_factory=list)

    @model_validator(mode="after")
    def _idle_means_unloaded(self):
        if self.idle and self.load is not None and self.load > IDLE_LOAD:
            raise ValueError(f"{self.name}: idle with load average {self.load} > {IDLE_LOAD}")
        if not self.idle and self.load is None:
            raise ValueError(f"{self.name}: a run under load must record its load average")
        return self


class TimingLog(BaseModel):
    """Every timed run, oldest first (a later entry of the same date is the later run)."""
    model_config = ConfigDict(extra="forbid")
    runs: list[Timing] = Field(min_length=1)


def load_log(path: Path | None = None) -> TimingLog:
    """The performance log (default docs/timings.json), validated."""
    return TimingLog.model_validate(json.loads(Path(path or TIMINGS).read_text()))


def duration(seconds: float) -> str:
    """Seconds as the README writes them: '47 s', '9 min 15 s', '50 min'."""
    s = round(seconds)
    minutes, rest = divmod(s, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min" + (f" {rest} s" if rest else "")


def _part(p: Part) -> str:
    text = f"{p.name}: {p.outcome} in {duration(p.wall_s)}" if p.outcome else f"{p.name} {duration(p.wall_s)}"
    if p.parts:
        text += ": " + ", ".join(_part(q) for q in p.parts)
    return text


def _idle_sentence(runs: list[Timing]) -> str:
    machines = {r.machine for r in runs}
    shared = machines.pop() if len(machines) == 1 else None
    where = f" on {shared}" if shared else ""
    fresh = ", on fresh clones" if all(r.fresh_clone for r in runs) else ""
    items = []
    for r in runs:
        facts = [f"`{r.command}`", r.commit or "commit not recorded", r.date.isoformat()]
        facts += [] if shared else [r.machine]
        body = f"{r.name} ({', '.join(facts)}): **{duration(r.wall_s)}** wall"
        body += ", install included" if r.fresh_clone else ""
        if r.parts:
            body += " (" + "; ".join(_part(p) for p in r.parts) + ")"
        items.append(body)
    return f"Measured{where} with nothing else running{fresh}: " + "; ".join(items) + "."


def timing_lines(log: TimingLog) -> list[str]:
    """The README's timing sentences: per command the latest idle run, then the slowest run under load."""
    names = list(dict.fromkeys(r.name for r in log.runs))
    latest = {}
    for r in log.runs:                        # the log is in run order: a later entry of a date is the later run
        if r.idle and (r.name not in latest or r.date >= latest[r.name].date):
            latest[r.name] = r
    idle = [latest.get(n) for n in names]
    lines = [_idle_sentence([r for r in idle if r is not None])] if any(idle) else []
    for n in names:
        loaded = [r for r in log.runs if r.name == n and not r.idle]
        if loaded:
            worst = max(loaded, key=lambda r: r.wall_s)
            lines.append(f"Under load (load average {worst.load:g}, {worst.date.isoformat()}) {n} has taken up to "
                         f"{duration(worst.wall_s)}.")
    lines.append("Every run: [docs/timings.json](docs/timings.json); dated logs: "
                 "[docs/performance.md](docs/performance.md).")
    return lines


def timing_section(path: Path | None = None) -> str:
    return " ".join(timing_lines(load_log(path)))
