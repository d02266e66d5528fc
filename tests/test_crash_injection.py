"""Crash safety by deterministic crash injection at every write (as SQLite tests its commits).

``FASTSLOW_CRASH_AT_WRITE=N:POINT`` makes the N-th atomic write of a process stop it hard
(``os._exit``) after the temporary file is written, after it is fsynced, or after the rename
(``numerics.storage.io``).  For each of ``train``, ``sweep`` and ``reproduce`` (a small run of each)
the test runs it once uninterrupted, counting its writes (``FASTSLOW_WRITE_LOG``); then, for
every N, a fresh folder is crashed at the N-th write (the point cycles through the three), the
crash is confirmed by its exit status, every file left under its final name must be whole (it
parses), and a rerun must finish with no temporary file left and outputs equal to the
uninterrupted run's (timings and the run's own bookkeeping aside).

Each run is a forked child of this process (the imports are paid once), with one torch thread.
``reproduce`` runs its real write path (claim, JSON, figures folder, copied figures, ledger,
report) on canned results: its computations (derive --check, the claims, the matrix, the scale
ledger, the figures) take minutes and write nothing themselves; each has its own tests.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
import traceback
from pathlib import Path

import pandas as pd
import pytest
import torch

from numerics.storage import io
POINTS = io.CRASH_POINTS
CHILD_TIMEOUT = 120.0  # seconds; a child past this is killed and the test fails


def run(scenario, out: Path, *, crash: str | None = None, log: Path | None = None) -> int:
    """``scenario(out)`` in a forked child; its exit status (io.CRASH_EXIT when the crash was injected)."""
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            for key, value in ((io.CRASH_ENV, crash), (io.WRITE_LOG_ENV, log and str(log))):
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            io.reset_write_count()
            torch.set_num_threads(1)
            sink = os.open(out.parent / f"{out.name}.child.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(sink, 1)
            os.dup2(sink, 2)
            code = scenario(out)
        except BaseException:
            traceback.print_exc()
            code = 71
        finally:
            os._exit(code)
    deadline = time.monotonic() + CHILD_TIMEOUT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"{scenario.__name__} into {out} ran past {CHILD_TIMEOUT} s")
        time.sleep(0.02)


def files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def assert_whole(folder: Path) -> None:
    """Every file under its final name parses: only the writer's temporaries may be partial."""
    import pyarrow.parquet as pq

    for path in files(folder):
        if io.is_own_temp(path) or path.name == ".fastslow.lock":
            continue
        if path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".parquet":
            pq.read_table(path)
        elif path.suffix == ".pt":
            torch.load(path, weights_only=True)
        elif path.suffix == ".png":
            assert path.read_bytes().startswith(b"\x89PNG"), path
        elif path.suffix in (".md", ".html", ".toml"):
            path.read_text(encoding="utf-8")


def crash_every_write(scenario, outputs, tmp_path: Path) -> int:
    """The whole protocol for one scenario; returns the number of writes it covered."""
    log = tmp_path / "writes.log"
    reference = tmp_path / "reference"
    assert run(scenario, reference, log=log) == 0, (reference.parent / "reference.child.log").read_text()
    writes = len(log.read_text().splitlines())
    assert writes >= 3
    expected = outputs(reference)
    for n in range(1, writes + 1):
        point = POINTS[n % len(POINTS)]
        out = tmp_path / f"crash-{n}"
        code = run(scenario, out, crash=f"{n}:{point}")
        assert code == io.CRASH_EXIT, (n, point, code, (tmp_path / f"crash-{n}.child.log").read_text())
        assert_whole(out)
        assert run(scenario, out) == 0, (n, point, (tmp_path / f"crash-{n}.child.log").read_text())
        left = [p for p in files(out) if io.is_own_temp(p)]
        assert left == [], (n, point, left)
        assert outputs(out) == expected, (n, point)
    return writes


def _warm_matplotlib() -> bytes:
    """Draw and save one figure here, so that the children inherit matplotlib's fonts and caches."""
    import io as _io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, 1])
    ax.set_title("warm-up")
    buffer = _io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


# ---------------------------------------------------------------- train
def train_scenario(out: Path) -> int:
    from proofs_check.experiments.train import TextConfig, train_text

    cfg = TextConfig(d=8, layers=1, heads=2, T=8, tokens=384, batch=8, eval_every=2, eval_windows=4)
    train_text(cfg, out, progress=False, threads=1, checkpoint_every=2)  # 6 steps, saves at 2, 4, 6
    return 0


def train_outputs(out: Path) -> dict:
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.pop("sha256")  # of the tensor file, compared by its tensors below
    manifest.pop("binding")  # covers that hash
    manifest["curves"].pop("seconds")
    tensors = torch.load(out / manifest["weights"], weights_only=True)
    flat = {f"{group}.{k}": v for group in ("model",) for k, v in tensors[group].items()}
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    return {"manifest": manifest, "files": names,
            "tensors": {k: v.tolist() for k, v in flat.items()}}


def test_train_survives_a_crash_at_every_write(tmp_path):
    train_scenario(tmp_path / "warm-up")  # the imports and the corpus, paid once for the children
    assert crash_every_write(train_scenario, train_outputs, tmp_path) >= 7  # marker + 3 × (tensors, manifest)


# ---------------------------------------------------------------- sweep
CLAIM = "crash-toy"


def _toy(spec, ctx):
    from proofs_check.verdicts import on_stack
    x = spec.layers * spec.knob("value_scale", 0.0)
    return on_stack.Verdict(CLAIM, "holds" if x < 3 else "fails", measured={"x": x}, error=x, tolerance=3.0)


def sweep_scenario(out: Path) -> int:
    import contextlib

    import distributed

    from proofs_check.verdicts import registry
    from proofs_check.cli import main
    from proofs_check.sweep import run as sweep_run

    registry.on_stack(CLAIM, specs=lambda arch, ctx: [])(_toy)

    @contextlib.contextmanager
    def in_process(scheduler=None, workers=None):
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                      silence_logs=50) as cluster, distributed.Client(cluster) as client:
            yield client

    sweep_run.connect = in_process
    spec = out.parent / "crash.toml"
    spec.write_text(f'name = "crash"\nbatch = 2\n[[sweep]]\nclaim = "{CLAIM}"\nlayers = [1, 2]\n'
                    'value_scale = [1.0, 2.0]\nT = 4\nd = 4\n[[sweep.figure]]\nx = "layers"\ny = "value_scale"\n'
                    'value = "measured_x"\n')
    return main(["sweep", str(spec), "--out", str(out), "--resume", "--no-progress", "--figures", str(out / "figures")])


def sweep_outputs(out: Path) -> dict:
    from proofs_check.sweep.store import Store

    rows = Store(out).read().drop(columns=["seconds", "worker"]).sort_values("row_key").reset_index(drop=True)
    summary = json.loads((out / "summary.json").read_text())
    summary.pop("run")  # this run's own bookkeeping: tasks skipped and written, seconds
    return {"rows": rows.astype(str).to_dict("records"), "summary": summary,
            "spec": (out / "spec.toml").read_text(),
            "figures": sorted(p.name for p in (out / "figures").iterdir()),
            "batches": len(Store(out).batches())}


def test_sweep_survives_a_crash_at_every_write(tmp_path):
    import distributed  # noqa: F401  (imported once for the children)
    import matplotlib.pyplot  # noqa: F401

    import proofs_check.cli.sweep  # noqa: F401
    import proofs_check.sweep.figures  # noqa: F401
    import proofs_check.sweep.run  # noqa: F401
    from proofs_check.sweep.grid import source_hash

    source_hash()  # hashed once: every child keys its rows on the same code
    _warm_matplotlib()
    assert crash_every_write(sweep_scenario, sweep_outputs, tmp_path) >= 8  # marker, spec, 2 × 2, summary, figure


# ---------------------------------------------------------------- reproduce
CANNED: dict = {}  # filled by the test before the children fork


class _Derived:
    ok = True

    def __str__(self):
        return "every generated module matches its derivation (canned)"


def reproduce_scenario(out: Path) -> int:
    import proofs_check.runners.check
    import proofs_check.runners.derive
    import proofs_check.report.figures
    import proofs_check.report.sections
    import proofs_check.runners.grid
    import proofs_check.runners.scale
    from proofs_check.runners import reach
    from proofs_check.experiments import text_experiment
    from proofs_check.report.reproduce import reproduce

    def render(only, ctx, folder, formats=("png",)):
        path = Path(folder) / "canned.png"
        with io.atomic_path(path) as tmp:
            tmp.write_bytes(CANNED["png"])
        return {"canned": [path]}

    proofs_check.runners.derive.derive = lambda **kw: _Derived()
    proofs_check.runners.check.run_checks = lambda *a, **k: {"claims": [], "options": {"profile": "ci"}}
    proofs_check.runners.grid.run_matrix = lambda *a, **k: {"options": {"archs": ["preln"], "claims": [], "quick": True},
                                                      "cells": []}
    proofs_check.runners.scale.run_scale = lambda *a, **k: {"claims": []}
    reach.run = lambda ctx: {}
    proofs_check.report.sections.reach_section = lambda result: []
    text_experiment.recorded = lambda: CANNED["text-7.3"]
    proofs_check.report.figures.render = render
    return reproduce(out, quick=True, device="cpu", allow_drift=True)


_TIMINGS_MD = re.compile(r"## (?:Appendix: )?[Tt]imings\n.*?(?=\n## |\Z)", re.S)
_TIMINGS_HTML = re.compile(r"<h2[^>]*>(?:Appendix: )?[Tt]imings</h2>.*?(?=<h2|\Z)", re.S)


#: A section's provenance for this run (``report.provenance.this_run``) and the abstract's "checked by this run
#: (commit …, date time UTC)": the commit, marked when the tree is dirty (other tests may write tracked files
#: meanwhile), and the time to the minute — bookkeeping of the run, which a rerun a minute later changes.
_THIS_RUN = re.compile(r"this run(?:, | \()commit [^,<*]+, \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


def reproduce_outputs(out: Path) -> dict:
    result = {}
    for path in files(out):
        name = str(path.relative_to(out))
        if path.name.startswith(".fastslow") or io.is_own_temp(path):
            continue
        if name == "ledger.json":
            ledger = json.loads(path.read_text())
            ledger.pop("timings")
            ledger.pop("provenance")       # the commit and the minute the run wrote it (see _THIS_RUN)
            result[name] = ledger
        elif name == "report.md":
            result[name] = _THIS_RUN.sub("this run", _TIMINGS_MD.sub("", path.read_text()).replace(str(out), "OUT"))
        elif name == "report.html":
            result[name] = _THIS_RUN.sub("this run", _TIMINGS_HTML.sub("", path.read_text()).replace(str(out), "OUT"))
        else:
            result[name] = path.read_bytes()
    return result


def test_reproduce_survives_a_crash_at_every_write(tmp_path):
    import matplotlib.pyplot  # noqa: F401  (imported once for the children)

    import proofs_check.runners.check  # noqa: F401
    import proofs_check.runners.grid  # noqa: F401
    import proofs_check.report.document  # noqa: F401
    import proofs_check.report.reproduce  # noqa: F401
    import proofs_check.verdicts.standing  # noqa: F401
    import proofs_check.experiments.text_experiment

    CANNED["png"] = _warm_matplotlib()
    CANNED["text-7.3"] = proofs_check.experiments.text_experiment.recorded()  # hashes the sources: seconds, no write
    assert crash_every_write(reproduce_scenario, reproduce_outputs, tmp_path) >= 10


def test_the_switch_names_itself_when_malformed(tmp_path, monkeypatch):
    monkeypatch.setenv(io.CRASH_ENV, "three:somewhere")
    with pytest.raises(ValueError, match="FASTSLOW_CRASH_AT_WRITE='three:somewhere'"):
        io.write_text(tmp_path / "x.txt", "x")
    assert list(tmp_path.iterdir()) == []
