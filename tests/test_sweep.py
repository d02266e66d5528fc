"""``fastslow sweep`` on a real ``LocalCluster`` of 2 worker processes, started and stopped here.

The sweeps evaluate a toy claim registered by this file (in this process and, through a worker
plugin, in every worker, also in one that is restarted): its verdict is a closed-form function of
the spec (x = layers · value_scale holds iff x < BOUND), so every row's expected content is known
without building a stack, and each task sleeps long enough for a sweep to be interrupted mid-way.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import cloudpickle
import distributed
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from proofs_check.verdicts import on_stack, registry
from proofs_check.cli import main
from proofs_check.verdicts.registry import load_checks
from proofs_check.sweep import spec as sweep_spec
from proofs_check.sweep.grid import expand, points, row_key
from proofs_check.sweep.run import run_sweep
from proofs_check.sweep.store import SCHEMA_FILE, Store
from proofs_check.sweep.summary import summarise, wilson


CLAIM = "sweep-toy"
BOUND = 10.0
SLEEP = 0.12  # seconds per task: a 2-worker sweep of n tasks takes ≈ n·SLEEP/2
REPO = Path(__file__).resolve().parent.parent


def toy_evaluate(spec, ctx):
    time.sleep(SLEEP)
    x = spec.layers * spec.knob("value_scale", 0.0)
    extra = {"late": "only where x > 0"} if x > 0 else {}
    return on_stack.Verdict(CLAIM, "holds" if x < BOUND else "fails", measured={"x": x, "pair": [x, -x], **extra},
                            predicted={"boundary_layers": BOUND / spec.knob("value_scale") if spec.knob(
                                "value_scale") else math.inf}, error=x, tolerance=BOUND)


def register_toy() -> None:
    registry.on_stack(CLAIM, specs=lambda arch, ctx: [])(toy_evaluate)


class ToyClaim(distributed.WorkerPlugin):
    def setup(self, worker):
        register_toy()


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import this file


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       env={"OMP_NUM_THREADS": "1"})
    c = distributed.Client(cluster)
    c.register_plugin(ToyClaim())
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def real_claims():
    load_checks()  # the family modules' @on_stack claims, registered once (re-importing does not re-register)


@pytest.fixture(autouse=True)
def toy_claim(real_claims):
    register_toy()
    yield
    registry.CLAIMS.pop(CLAIM, None)


def toy_spec(layers=(1, 2, 3), value_scale=(0.0, 2.0, 5.0), seeds=2, T=4, batch=None, name="toy"):
    data = {"name": name, "sweep": [{"claim": CLAIM, "seeds": seeds, "layers": list(layers),
                                     "value_scale": list(value_scale), "T": T, "d": 4,
                                     "figure": [{"x": "layers", "y": "value_scale", "value": "measured_x",
                                                 "boundary": "predicted_boundary_layers"}]}]}
    if batch:
        data["batch"] = batch
    return data


def expected_keys(data) -> list[str]:
    return [t.key for t in expand(sweep_spec.parse(data))]


def test_rows_equal_the_grid(client, tmp_path):
    data = toy_spec()
    spec = sweep_spec.parse(data)
    run = run_sweep(spec, tmp_path, client=client, progress=False, batch=4)
    assert run.ok and run.written == 18 and run.skipped == 0
    df = Store(tmp_path).read()
    grid = {(L, c, s) for L in (1, 2, 3) for c in (0.0, 2.0, 5.0) for s in (0, 1)}
    assert len(df) == 18 and set(zip(df.layers, df.value_scale, df.seed)) == grid
    assert sorted(df.row_key) == sorted(expected_keys(data))
    # each row carries the verdict of its own point: holds iff layers·c < 10
    assert (df.measured_x == df.layers * df.value_scale).all()
    assert ((df.verdict == "fails") == (df.layers * df.value_scale >= BOUND)).all()
    assert set(df.worker) <= set(client.scheduler_info()["workers"]) and df.version.notna().all()
    assert len(Store(tmp_path).batches()) == math.ceil(18 / 4)  # one file per batch of 4 rows


def test_parquet_round_trip_through_pandas(client, tmp_path):
    spec = sweep_spec.parse(toy_spec(layers=(1, 4), T=8))
    run_sweep(spec, tmp_path, client=client, progress=False, batch=3)
    store = Store(tmp_path)
    df = pd.read_parquet(tmp_path / "results")  # the folder as one table, no help from this package
    assert len(df) == 12 and df.row_key.is_unique
    # a column only in later batches (c > 0) is still read, null where it was absent
    assert ((df.measured_late == "only where x > 0") == (df.value_scale > 0)).all()
    assert df.measured_late[df.value_scale == 0].isna().all()
    assert df["T"].dtype == np.int64 and df.measured_x.dtype == np.float64
    assert pd.api.types.is_string_dtype(df.measured_pair)
    assert (df.measured_pair.map(eval).map(lambda p: p[0] + p[1]) == 0).all()  # lists come back as JSON text
    again = pq.read_table(tmp_path / "results").to_pandas()
    pd.testing.assert_frame_equal(df.sort_values("row_key").reset_index(drop=True),
                                  again.sort_values("row_key").reset_index(drop=True))
    assert pq.read_table(tmp_path / "results" / SCHEMA_FILE).num_rows == 0
    # appending rows already stored writes nothing
    assert store.append(df.to_dict("records")[:3]) is None and len(store.read()) == 12


def test_store_unifies_mixed_types_and_dedupes(tmp_path):
    store = Store(tmp_path)
    base = {"row_key": "a", "claim": CLAIM, "verdict": "holds"}
    store.append([base | {"measured_v": 1.5}])
    store.append([base | {"row_key": "b", "measured_v": "inf", "measured_w": True}, base])  # 'a' again
    df = pd.read_parquet(tmp_path / "results")
    assert sorted(df.row_key) == ["a", "b"] and set(df.columns) >= {"measured_v", "measured_w"}
    assert sorted(df.measured_v) == ["1.5", "inf"]  # a column of mixed types is read back as text


def test_resume_after_sigint_has_no_duplicates(client, tmp_path):
    data = toy_spec(layers=(1, 2, 3, 4), value_scale=(1.0, 2.0, 3.0), seeds=3, T=6, batch=3)
    path = tmp_path / "toy.toml"
    path.write_text(_toml(data))
    address = client.scheduler.address
    # the command validates the claim id here; the workers (with the plugin) evaluate it
    code = (f"import sys; from proofs_check.verdicts import registry; registry.on_stack({CLAIM!r}, specs=list)(print); "
            "from proofs_check.cli import main; sys.exit(main(sys.argv[1:]))")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", code, "sweep", str(path), "--scheduler", address,
                             "--out", str(out), "--no-progress"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as in test_io
    deadline = time.monotonic() + 40
    while not Store(out).batches() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    log = proc.communicate(timeout=30)[0]
    assert proc.returncode == 130, log
    first = Store(out).read()
    assert 0 < len(first) < 36 and first.row_key.is_unique, log  # stopped mid-sweep, what finished is kept
    run = run_sweep(sweep_spec.parse(data), out, client=client, resume=True, progress=False)
    df = Store(out).read()
    assert run.skipped == len(first) and run.written == 36 - len(first)
    assert sorted(df.row_key) == sorted(expected_keys(data))  # every row, exactly once


def test_killed_worker_still_yields_every_row_once(client, tmp_path):
    data = toy_spec(layers=(1, 2, 3, 4, 5), value_scale=(1.0, 3.0), seeds=3, T=10, batch=5)
    pids = client.run(os.getpid)
    victim_address, victim = sorted(pids.items())[0]
    killed = threading.Event()

    def kill_soon():
        time.sleep(6 * SLEEP)  # a few tasks in: the victim is running one of the 30
        os.kill(victim, signal.SIGKILL)
        killed.set()

    threading.Thread(target=kill_soon, daemon=True).start()
    run = run_sweep(sweep_spec.parse(data), tmp_path, client=client, progress=False)
    assert killed.is_set() and run.ok
    df = Store(tmp_path).read()
    assert sorted(df.row_key) == sorted(expected_keys(data))  # 30 rows, exactly once
    with pytest.raises(ProcessLookupError):
        os.kill(victim, 0)
    client.wait_for_workers(2, timeout=60)


@pytest.mark.parametrize("change, key", [
    ({"claim": "no-such-claim"}, "sweep[0].claim"),
    ({"vaule_scale": [1.0]}, "sweep[0].vaule_scale: unknown knob"),
    ({"layers": []}, "sweep[0].layers: empty axis"),
    ({"T": [4, 6], "P": [4]}, "T=6 is not divisible by P=4"),
])
def test_bad_spec_fails_before_any_task(tmp_path, monkeypatch, capsys, change, key):
    data = toy_spec()
    data["sweep"][0].update(change)
    path = tmp_path / "bad.toml"
    path.write_text(_toml(data))

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started for a bad spec")

    monkeypatch.setattr("proofs_check.sweep.run.connect", no_cluster)
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert key in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_spec_validation_names_the_key():
    with pytest.raises(sweep_spec.SpecError, match=r"sweep\[0\]\.figure\[0\]\.x='seed'"):
        sweep_spec.parse({"sweep": [{"claim": CLAIM, "layers": [1, 2], "figure": [{"x": "seed", "y": "layers"}]}]})
    with pytest.raises(sweep_spec.SpecError, match=r"sweep\[0\]\.seeds=0"):
        sweep_spec.parse({"sweep": [{"claim": CLAIM, "seeds": 0}]})
    with pytest.raises(sweep_spec.SpecError, match=r"sweep\[0\]\.seed: not an axis"):
        sweep_spec.parse({"sweep": [{"claim": CLAIM, "seed": [1, 2]}]})
    with pytest.raises(sweep_spec.SpecError, match=r"sweep\[0\] at heads=3: heads=3 does not divide d=4"):
        sweep_spec.parse({"sweep": [{"claim": CLAIM, "heads": [2, 3], "d": 4}]})
    with pytest.raises(sweep_spec.SpecError, match=r"sweep\[0\]\.scale='huge' is not a scale preset"):
        sweep_spec.parse({"sweep": [{"claim": CLAIM, "scale": "huge"}]})
    # a preset's sizes are the base, the sweep's own axes override them
    (task,) = expand(sweep_spec.parse({"sweep": [{"claim": CLAIM, "scale": "ci", "layers": 2}]}))
    assert (task.spec.T, task.spec.d, task.spec.layers, task.spec.heads) == (256, 64, 2, 4)
    # 5 and 5.0 are one point of a float knob: one row key
    a, b = (expand(sweep_spec.parse({"sweep": [{"claim": CLAIM, "value_scale": v}]}))[0] for v in (5, 5.0))
    assert a.key == b.key == row_key(CLAIM, a.spec, a.spec_hash, a.source)


def test_shipped_specs_load_and_list(capsys):
    shipped = sweep_spec.builtin_specs()
    assert {"coarse_graining", "gate_margin", "saturation", "visibility", "thorough"} <= set(shipped)
    specs = {name: sweep_spec.load(name) for name in shipped}  # claims registered, every point a valid stack
    assert all(spec.name == name for name, spec in specs.items())
    per_claim = {s.claim: len(points(s)) * s.seeds for s in specs["thorough"].sweeps}
    assert len(per_claim) == len(specs["thorough"].sweeps) and min(per_claim.values()) >= 10_000, per_claim
    assert main(["sweep", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in shipped) and "140 tasks" in listed  # coarse_graining: 2·7·5·2


def test_wilson_interval_matches_the_closed_form():
    # Wilson's score interval, written out: (p + z²/2n ± z√(p(1−p)/n + z²/4n²)) / (1 + z²/n)
    z = 1.959963984540054
    for k, n in ((0, 10), (7, 10), (10, 10), (9990, 10000)):
        p = k / n
        centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        low, high = wilson(k, n)
        assert low == pytest.approx((centre - half) / (1 + z * z / n), abs=1e-12)
        assert high == pytest.approx((centre + half) / (1 + z * z / n), abs=1e-12)


def test_summary_and_phase_diagram(client, tmp_path):
    data = toy_spec(layers=(1, 2, 3), value_scale=(2.0, 5.0), seeds=1, T=12)
    spec = sweep_spec.parse(data)
    run_sweep(spec, tmp_path, client=client, progress=False)
    df = Store(tmp_path).read()
    entry = summarise(df)[CLAIM]
    assert entry["counts"] == {"holds": 4, "fails": 2}  # x = L·c ≥ 10 only at (L, c) = (2, 5), (3, 5)
    lo, hi = entry["wilson_95"]
    assert entry["fraction_holds"] == pytest.approx(4 / 6) and lo < 4 / 6 < hi
    assert entry["worst"]["point"] == {"layers": 3, "value_scale": 5.0, "T": 12, "d": 4}
    assert entry["worst"]["reproduce"].endswith("--value-scale 5.0 --seed 0")
    from proofs_check.sweep.figures import render

    paths = render(spec, df, tmp_path / "fig")
    assert len(paths) == 1 and paths[0].stat().st_size > 10_000


def _toml(data: dict) -> str:
    """A small TOML writer for the test specs (top-level scalars, [[sweep]] with [[sweep.figure]])."""
    def value(v):
        if isinstance(v, str):
            return f'"{v}"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v)

    lines = [f"{k} = {value(v)}" for k, v in data.items() if k != "sweep"]
    for table in data["sweep"]:
        lines.append("[[sweep]]")
        lines += [f"{k} = {value(v)}" for k, v in table.items() if k != "figure"]
        for fig in table.get("figure", []):
            lines.append("[[sweep.figure]]")
            lines += [f"{k} = {value(v)}" for k, v in fig.items()]
    return "\n".join(lines) + "\n"
