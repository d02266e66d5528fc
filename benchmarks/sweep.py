"""Sweep throughput on this machine: stacks per second through ``fastslow sweep`` with 1 and 2 workers.

The workload is claim 3.2 on N small stacks (T = 8, d = 8, 3 layers, P = 4; full and causal kernels,
seeds 0…), each a real ``on_stack.evaluate`` through the whole path: a ``LocalCluster`` of worker
processes, ``client.map``, ``as_completed``, rows written as Parquet batches.  The clusters are
started and warmed (every worker has imported the claims) before the clock starts; their start-up
time is reported apart.  Reported:

* ``stacks_per_second`` with 1 and 2 workers, and the scaling efficiency (rate₂ / rate₁) / 2;
* ``serial_seconds_per_stack``: the same evaluations in this process, one after another, no Dask;
* ``overhead_seconds_per_task``: (1-worker sweep time − serial time) / N, what the cluster, the
  transfers and the Parquet writes add to each task.
"""

from __future__ import annotations

import tempfile
import time

CLAIM = "3.2"


def _spec(n: int):
    from proofs_check.sweep import spec as sweep_spec

    return sweep_spec.parse({"name": "bench", "batch": max(1, n // 4), "sweep": [
        {"claim": CLAIM, "seeds": n // 2, "kernel": ["full", "causal"], "T": 8, "d": 8, "layers": 3, "P": 4}]})


def _timed_sweep(spec, workers: int, device: str) -> dict:
    from proofs_check.sweep.run import _prepare_worker, connect, run_sweep

    start = time.perf_counter()
    with connect(workers=workers) as client:
        client.wait_for_workers(workers)
        client.run(_prepare_worker, CLAIM)
        ready = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            run = run_sweep(spec, out, client=client, progress=False, device=device)
            seconds = time.perf_counter() - t0
    if not run.ok:
        raise RuntimeError(f"the benchmark sweep had {len(run.errors)} failed tasks: {run.errors[:1]}")
    return {"workers": workers, "seconds": seconds, "stacks": run.written, "stacks_per_second": run.written / seconds,
            "cluster_start_seconds": ready}


def run(quick: bool, device: str) -> dict:
    from proofs_check import on_stack
    from proofs_check.ledger import CheckContext, load_checks
    from proofs_check.sweep.grid import expand

    load_checks()
    if CLAIM not in on_stack.ON_STACK:
        raise RuntimeError(f"claim {CLAIM} is not registered with proofs_check.on_stack")
    n = 16 if quick else 48
    spec = _spec(n)
    tasks = expand(spec, device=device)
    ctx = CheckContext(device=device)
    on_stack.evaluate(CLAIM, tasks[0].spec, ctx)  # warm-up: imports, first-call costs
    t0 = time.perf_counter()
    for task in tasks:
        on_stack.evaluate(CLAIM, task.spec, ctx)
    serial = time.perf_counter() - t0
    one, two = _timed_sweep(spec, 1, device), _timed_sweep(spec, 2, device)
    return {"config": {"claim": CLAIM, "stacks": len(tasks), "T": 8, "d": 8, "layers": 3, "P": 4},
            "serial_seconds_per_stack": serial / len(tasks),
            "one_worker": one, "two_workers": two,
            "scaling_efficiency": two["stacks_per_second"] / one["stacks_per_second"] / 2,
            "overhead_seconds_per_task": (one["seconds"] - serial) / len(tasks)}
