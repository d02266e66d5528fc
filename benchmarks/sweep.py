"""Sweep throughput on this machine: stacks per second through ``fastslow sweep`` with 1 and 2 workers.

The workload is claim 3.2 on N small stacks (T = 8, d = 8, 3 layers, P = 4; full and causal kernels,
seeds 0…), each a real ``registry.evaluate`` through the whole path: a ``LocalCluster`` of worker
processes, ``client.map``, ``as_completed``, rows written as Parquet batches.  One cluster is
started with one worker and later scaled to two; every worker has evaluated one stack before the
clock starts, start-up is reported apart, and each sweep is timed twice, the faster run reported.
Reported:

* ``stacks_per_second`` with 1 and 2 workers, and the scaling efficiency (rate₂ / rate₁) / 2;
* ``cluster_start_seconds`` (one worker) and each count's ``warm_up_seconds`` (scaling up, every
  worker evaluating its first stack);
* ``serial_seconds_per_stack``: the same evaluations in this process, one after another, no Dask;
* ``overhead_seconds_per_task``: (1-worker sweep time − the time its tasks spent inside
  ``evaluate``, from the rows' ``seconds``) / N, what the cluster, the transfers and the Parquet
  writes add to each task (both terms from the same run, so a loaded machine slows both alike).
"""

from __future__ import annotations

import math
import os
import tempfile
import time

CLAIM = "3.2"
QUICK_STACKS, STACKS = 16, 48
REPEATS = 2  # each sweep is timed twice on its warm cluster; the faster run is reported (shared machines)


def _spec(n: int):
    from proofs_check.sweep import spec as sweep_spec

    return sweep_spec.parse({"name": "bench", "batch": max(1, n // 4), "sweep": [
        {"claim": CLAIM, "seeds": n // 2, "kernel": ["full", "causal"], "T": 8, "d": 8, "layers": 3, "P": 4}]})


def _timed_sweep(client, spec, workers: int, device: str) -> dict:
    """Scale the cluster to ``workers``, warm every worker, time the sweep REPEATS times."""
    from proofs_check.sweep.grid import expand
    from proofs_check.sweep.run import evaluate_task, run_sweep
    from proofs_check.sweep.store import Store

    start = time.perf_counter()
    client.cluster.scale(workers)
    client.wait_for_workers(workers)
    client.run(evaluate_task, expand(spec, device=device)[0].payload())  # every worker: imports, first call
    ready = time.perf_counter() - start
    times, inside = [], []
    for _ in range(REPEATS):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            run = run_sweep(spec, out, client=client, progress=False, device=device)
            times.append(time.perf_counter() - t0)
            inside.append(float(Store(out).read()["seconds"].sum()))
        if not run.ok:
            raise RuntimeError(f"the benchmark sweep had {len(run.errors)} failed tasks: {run.errors[:1]}")
    best = min(range(REPEATS), key=times.__getitem__)
    seconds = times[best]
    return {"workers": workers, "seconds": seconds, "repeats": times, "stacks": run.written,
            "stacks_per_second": run.written / seconds, "warm_up_seconds": ready,
            "evaluate_seconds": inside[best],
            # wall time × workers not spent inside evaluate, per task: scheduling, transfers, Parquet
            "overhead_seconds_per_task": (seconds * workers - inside[best]) / run.written}


def run(quick: bool, device: str) -> dict:
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.verdicts.registry import evaluate, load_checks, on_stack_claims
    from proofs_check.sweep.grid import expand
    from proofs_check.sweep.run import connect

    load_checks()
    if CLAIM not in on_stack_claims():
        raise RuntimeError(f"claim {CLAIM} has no on-stack form registered (proofs_check.verdicts.registry.on_stack)")
    load_before = os.getloadavg()[0]
    n = QUICK_STACKS if quick else STACKS
    spec = _spec(n)
    tasks = expand(spec, device=device)
    ctx = CheckContext(device=device)
    evaluate(CLAIM, tasks[0].spec, ctx)  # warm-up: imports, first-call costs
    serial = math.inf
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for task in tasks:
            evaluate(CLAIM, task.spec, ctx)
        serial = min(serial, time.perf_counter() - t0)
    t0 = time.perf_counter()
    with connect(workers=1) as client:
        cluster_start = time.perf_counter() - t0
        one = _timed_sweep(client, spec, 1, device)
        two = _timed_sweep(client, spec, 2, device)  # the same cluster, a second worker added
    return {"config": {"claim": CLAIM, "stacks": len(tasks), "T": 8, "d": 8, "layers": 3, "P": 4},
            "serial_seconds_per_stack": serial / len(tasks),
            "one_worker": one, "two_workers": two,
            "scaling_efficiency": two["stacks_per_second"] / one["stacks_per_second"] / 2,
            "overhead_seconds_per_task": one["overhead_seconds_per_task"], "cluster_start_seconds": cluster_start,
            # a 2-worker rate is only meaningful when the machine's other load leaves 2 cores free
            "load_average_1min": [load_before, os.getloadavg()[0]]}
