"""A sweep's output folder holds one sweep's rows, each once, from one spec and one code.

No cluster is started here: rows are made with ``store.make_row`` from the tasks ``grid.expand``
lists (the rows a worker would return), and every refusal is checked to come before a cluster
(``connect`` is replaced by a function that fails the test).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from numerics.storage import outdir
from proofs_check.verdicts import on_stack, registry
from proofs_check.cli import main
from proofs_check.sweep import spec as sweep_spec
from proofs_check.sweep.grid import expand, row_key, source_hash
from proofs_check.sweep.run import run_sweep
from proofs_check.sweep.store import Store, make_row
from proofs_check.sweep.summary import summarise
from proofs_check.validation import InvalidInput

CLAIM = "integrity-toy"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def toy_claim(monkeypatch):
    registry.on_stack(CLAIM, specs=lambda arch, ctx: [])(lambda spec, ctx: None)

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr("proofs_check.sweep.run.connect", no_cluster)
    yield
    registry.CLAIMS.pop(CLAIM, None)


def toy(seeds=2, layers=(1, 2), name="toy", **extra) -> dict:
    return {"name": name, "sweep": [{"claim": CLAIM, "seeds": seeds, "layers": list(layers), "T": 4, "d": 4,
                                     **extra}]}


def rows_of(spec) -> list[dict]:
    return [make_row(t.payload(), on_stack.Verdict(CLAIM, "holds", error=0.0, tolerance=1.0), 0.0, "w", "v")
            for t in expand(spec)]


def stored(out: Path, data: dict) -> sweep_spec.SweepSpec:
    """``out`` as a finished sweep of ``data``: claimed, every row stored."""
    spec = sweep_spec.parse(data)
    with outdir.claim(out, "sweep"):
        Store(out).append(rows_of(spec))
    return spec


def write_spec(folder: Path, data: dict, name="toy.toml") -> Path:
    lines = [f'name = "{data["name"]}"', "[[sweep]]"]
    def value(v):  # TOML: an inline table for a dict, JSON's syntax for the rest
        return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}" if isinstance(v, dict) else json.dumps(v)

    lines += [f"{k} = {value(v)}" for k, v in data["sweep"][0].items()]
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_user_spec_toml_and_foreign_results_are_refused_untouched(tmp_path, capsys):
    spec_file = write_spec(tmp_path, toy())
    out = tmp_path / "mine"
    out.mkdir()
    (out / "spec.toml").write_text("# my own notes\n")
    assert main(["sweep", str(spec_file), "--out", str(out), "--no-progress"]) == 2
    assert "spec.toml" in capsys.readouterr().err
    assert (out / "spec.toml").read_text() == "# my own notes\n" and sorted(p.name for p in out.iterdir()) == [
        "spec.toml"]
    other = tmp_path / "other"
    (other / "results").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1]}), other / "results" / "data.parquet")
    assert main(["sweep", str(spec_file), "--out", str(other), "--no-progress"]) == 2
    assert "results" in capsys.readouterr().err
    assert [p.name for p in (other / "results").iterdir()] == ["data.parquet"]


def test_existing_spec_toml_of_the_own_sweep_is_never_overwritten(tmp_path):
    out = tmp_path / "out"
    data = toy()
    spec = stored(out, data)
    (out / "spec.toml").write_text("# the first run's spec, annotated\n")
    run = run_sweep(spec, out, resume=True, progress=False)  # every row stored: no cluster
    assert run.skipped == len(expand(spec)) and (out / "spec.toml").read_text().startswith("# the first run")


def test_a_second_sweep_on_the_same_out_is_refused(tmp_path, capsys):
    spec_file = write_spec(tmp_path, toy())
    out = tmp_path / "out"
    code = ("import sys, time; from numerics.storage import outdir\n"
            "with outdir.claim(sys.argv[1], 'sweep'):\n    print('held', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(out)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        assert main(["sweep", str(spec_file), "--out", str(out), "--no-progress"]) == 2
        assert "another fastslow process is writing" in capsys.readouterr().err
    finally:
        proc.kill()
        proc.wait()


def test_summary_counts_each_row_key_once(tmp_path):
    """Two writers that each stored the same rows (the old failure): the store reads every key once,
    so the summary's n, and with it the Wilson interval, is the number of distinct rows."""
    out = tmp_path / "out"
    spec = stored(out, toy(seeds=3))
    batch = Store(out).batches()[0]
    (out / "results" / "batch-99990101T000000-duplicat.parquet").write_bytes(batch.read_bytes())
    assert len(pd.read_parquet(out / "results")) == 2 * len(expand(spec))  # on disk: every row twice
    df = Store(out).read()
    assert len(df) == len(expand(spec)) and df.row_key.is_unique
    assert summarise(df)[CLAIM]["rows"] == len(expand(spec)) == 6


def test_resume_with_another_spec_is_refused(tmp_path):
    out = tmp_path / "out"
    stored(out, toy())
    with pytest.raises(InvalidInput, match="holds rows of another spec"):
        run_sweep(sweep_spec.parse(toy(layers=(1, 2, 3))), out, resume=True, progress=False)
    with pytest.raises(InvalidInput, match="pass --resume"):
        run_sweep(sweep_spec.parse(toy()), out, progress=False)


def test_rows_of_other_code_are_refused_and_keyed_apart(tmp_path, monkeypatch):
    out = tmp_path / "out"
    data = toy()
    spec = stored(out, data)
    task = expand(spec)[0]
    assert task.key == row_key(CLAIM, task.spec, task.spec_hash, source_hash())
    assert row_key(CLAIM, task.spec, task.spec_hash, "0" * 16) != task.key  # the code is part of the key
    monkeypatch.setattr("proofs_check.sweep.grid.source_hash", lambda: "0" * 16)
    with pytest.raises(InvalidInput, match="computed by other code"):
        run_sweep(spec, out, resume=True, progress=False)


def test_foreign_parquet_in_results_is_named(tmp_path):
    out = tmp_path / "out"
    spec = stored(out, toy())
    pq.write_table(pa.table({"a": [1]}), out / "results" / "batch-x.parquet")
    with pytest.raises(InvalidInput, match=r"batch-x\.parquet is not a batch of a fastslow sweep"):
        run_sweep(spec, out, resume=True, progress=False)
    (out / "results" / "batch-x.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InvalidInput, match=r"batch-x\.parquet is not a batch"):
        Store(out).read()


def test_store_writes_through_the_atomic_writer(tmp_path, monkeypatch):
    log = tmp_path / "writes.log"
    monkeypatch.setenv("FASTSLOW_WRITE_LOG", str(log))
    spec = sweep_spec.parse(toy())
    Store(tmp_path / "out").append(rows_of(spec))
    written = log.read_text().split()
    assert any("/results/batch-" in w for w in written) and any(w.endswith("00-schema.parquet") for w in written)


@pytest.mark.parametrize("seeds, layers", [(10**12, (1,)), (1, tuple(range(1, 300_002)))])
def test_a_grid_over_the_limit_is_refused_before_it_is_listed(seeds, layers):
    with pytest.raises(sweep_spec.SpecError, match="more than the limit of 200,000: .* --max-tasks"):
        sweep_spec.parse(toy(seeds=seeds, layers=layers))


def test_the_limit_can_be_raised(tmp_path, capsys):
    spec = sweep_spec.parse(toy(seeds=300_000, layers=(1,)), max_tasks=300_000)
    assert spec.sweeps[0].seeds == 300_000
    spec_file = write_spec(tmp_path, toy(seeds=5))
    assert main(["sweep", str(spec_file), "--max-tasks", "4", "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert "--max-tasks 10" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_bad_arch_options_are_refused_up_front(tmp_path, capsys):
    spec_file = write_spec(tmp_path, toy(arch="looped", arch_options={"loopz": 3}))
    assert main(["sweep", str(spec_file), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "sweep[0]" in err and "loopz" in err and not (tmp_path / "o").exists()
    with pytest.raises(sweep_spec.SpecError, match="arch='preln'|not options of arch='preln'"):
        sweep_spec.parse(toy(arch_options={"streams": 2}))


@pytest.mark.parametrize("name", ["a\0b", "", ".", "x/y", "tab\there"])
def test_a_spec_name_that_cannot_name_a_folder_is_refused(name):
    with pytest.raises(sweep_spec.SpecError, match=r"^name="):
        sweep_spec.parse(toy(name=name))
