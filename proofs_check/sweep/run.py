"""Run a sweep on ``dask.distributed``: one task per (claim, grid point, seed).

By default a ``LocalCluster`` is started with one worker process per core (processes, not
threads: ``threads_per_worker=1``, ``OMP_NUM_THREADS=1`` in each); ``scheduler="tcp://host:8786"``
joins a running cluster instead (its workers need this package installed).  Each task calls
``proofs_check.verdicts.registry.evaluate(claim, spec, ctx)`` on a worker and returns one row
(``store.make_row``).  Tasks are submitted with ``retries=2``; a task whose worker dies is
rescheduled by the scheduler.  Rows are written by this process only, in batches, as they
arrive (``as_completed``), so a lost worker loses no written row and no row is written twice.
Ctrl-C cancels what is left, writes what finished and returns with ``interrupted=True``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from dataclasses import dataclass, field

from proofs_check.sweep.grid import expand
from proofs_check.sweep.store import Store, make_row

RETRIES = 2
FLUSH_SECONDS = 30.0  # a batch is also written when this long has passed since the last one


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastslow")
    except PackageNotFoundError:
        return "unknown"


_READY: dict = {}


def _prepare_worker(claim: str) -> None:
    """Once per worker process: the package version, and every claim registered (the check modules'
    ``@on_stack`` functions are imported when ``claim`` is not registered yet; importing ``numerics``
    registers the architecture variants)."""
    from proofs_check.verdicts.registry import load_checks, on_stack_claims

    if "version" not in _READY:
        _READY["version"] = _version()
    if claim not in on_stack_claims():
        load_checks()


def evaluate_task(task: dict) -> dict:
    """Run one task on a worker: the claim's verdict on the task's stack, as a row."""
    from numerics.stacks.spec import StackSpec
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.verdicts.registry import evaluate

    _prepare_worker(task["claim"])
    spec = StackSpec.from_dict(task["spec"])
    ctx = CheckContext(device=spec.device, profile=task["profile"], quick=True, seed=spec.seed)
    start = time.perf_counter()
    verdict = evaluate(task["claim"], spec, ctx)
    seconds = time.perf_counter() - start
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = f"pid {os.getpid()}"
    return make_row(task, verdict, seconds, worker, _READY["version"])


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


#: resident set of one idle local worker process (dask's worker, torch and the package imported):
#: 4 workers measured 2.3 GB together on the 2-core CI VM, so 600 MiB each
WORKER_BYTES = 600 * 2**20
#: local workers per core at most: the tasks are CPU-bound on one thread each, so more only share cores
WORKERS_PER_CORE = 4


def task_bytes(task) -> int:
    """Estimated peak of one task: building its stack and one forward pass (``numerics.stacks.memory``)."""
    from numerics.stacks.memory import simulate_bytes
    from numerics.stacks.spec import DTYPES

    s = task.spec
    return simulate_bytes(s.T, s.d, s.layers, s.heads, s.P, dtype=DTYPES.get(s.dtype))


def check_resources(tasks, workers: int | None) -> None:
    """Refuse, before a cluster starts, a local cluster the machine cannot hold: more than
    :data:`WORKERS_PER_CORE` workers per core, or workers × (:data:`WORKER_BYTES` + the largest task's
    estimate) above the memory this process can get (``numerics.stacks.memory.check_fits``: host, cgroup,
    rlimits).  The grid point the estimate comes from is named."""
    from numerics.stacks.memory import check_fits, human

    n = default_workers() if workers is None else workers
    cap = WORKERS_PER_CORE * default_workers()
    if n > cap:
        raise ValueError(f"--workers={n}: more than {cap} ({WORKERS_PER_CORE} per core on {default_workers()} "
                         "cores); the tasks run one thread each, so extra workers only share the cores")
    if not tasks:
        return
    largest = max(tasks, key=task_bytes)
    per_task = task_bytes(largest)
    point = ", ".join(f"{k}={v}" for k, v in largest.point) or "its default stack"
    where = f"the largest grid point, {largest.claim} at {point}"
    check_fits(WORKER_BYTES + per_task, what=f"one worker ({human(WORKER_BYTES)}) on {where}",
               advice="shrink the spec's sizes")  # each worker, under the per-process limits
    check_fits(min(n, len(tasks)) * (WORKER_BYTES + per_task) + WORKER_BYTES, per_process=False,
               what=f"--workers={n} local workers ({human(WORKER_BYTES)} each, plus up to {human(per_task)} for {where})",
               advice="give fewer --workers")


@contextlib.contextmanager
def connect(scheduler: str | None = None, workers: int | None = None):
    """A ``distributed.Client``: to ``scheduler`` if given, else to a fresh ``LocalCluster``."""
    from distributed import Client, LocalCluster

    if scheduler is not None:
        if workers is not None:
            raise ValueError("--workers sizes a local cluster; it cannot go with --scheduler")
        client = Client(scheduler)
        try:
            yield client
        finally:
            client.close()
        return
    n = default_workers() if workers is None else workers
    if n < 1:
        raise ValueError(f"--workers={n} must be ≥ 1")
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR,
                           env={"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    client = Client(cluster)
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close()
        with contextlib.suppress(Exception):
            cluster.close()


@dataclass
class SweepRun:
    """What a run did: tasks in the grid, skipped (already stored), written, failed; the verdicts."""

    total: int
    skipped: int
    written: int = 0
    errors: list = field(default_factory=list)  # (row_key, message) of tasks that raised after retries
    verdicts: dict = field(default_factory=dict)
    interrupted: bool = False
    seconds: float = 0.0
    files: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.interrupted


def run_sweep(spec, out, *, client=None, scheduler: str | None = None, workers: int | None = None,
              resume: bool = False, device: str = "cpu", progress: bool = True,
              batch: int | None = None) -> SweepRun:
    """Run every task of ``spec`` not yet in ``out``'s store and write the rows there.

    ``out`` is claimed first (``numerics.storage.outdir``: new, empty or a sweep's own folder, else
    InvalidInput; locked, so a second sweep on it is refused).  ``client``: an existing
    ``distributed.Client`` (else one is made by :func:`connect`).  Without ``resume``, a store
    that already holds rows is an error (nothing is overwritten); with it, rows of another spec
    or of other code (their ``spec_hash``/``source``) are refused, not mixed in.  The spec's
    TOML text is kept as ``out/spec.toml`` when that file does not exist yet.
    """
    from numerics.storage import outdir
    if client is None and scheduler is None:
        check_resources(expand(spec, device=device), workers)
    with outdir.claim(out, "sweep") as folder:
        return _run_sweep(spec, folder, client, scheduler, workers, resume, device, progress, batch)


def _run_sweep(spec, out, client, scheduler, workers, resume, device, progress, batch) -> SweepRun:
    from numerics.storage.io import write_text
    from proofs_check.sweep.grid import source_hash, spec_hash
    from proofs_check.validation import InvalidInput

    start = time.perf_counter()
    store = Store(out)
    tasks = expand(spec, device=device)
    done = store.keys()
    if done and not resume:
        raise InvalidInput(f"--out {store.out} already holds {len(done)} rows: pass --resume to continue "
                           "that sweep, or choose another --out")
    ours = (spec_hash(spec), source_hash())
    for fingerprint, source in sorted(store.identities(), key=str):
        if fingerprint != ours[0]:
            raise InvalidInput(f"--resume: --out {store.out} holds rows of another spec (fingerprint {fingerprint}, "
                               f"this spec's {ours[0]}; see its spec.toml): choose another --out")
        if source != ours[1]:
            raise InvalidInput(f"--resume: --out {store.out} holds rows computed by other code (source hash "
                               f"{source}, this checkout's {ours[1]}): choose another --out")
    store.repair()
    if spec.source and not (out / "spec.toml").exists():
        write_text(out / "spec.toml", spec.source)
    pending = [t for t in tasks if t.key not in done]
    run = SweepRun(total=len(tasks), skipped=len(tasks) - len(pending))
    if not pending:
        run.seconds = time.perf_counter() - start
        return run
    size = batch or spec.batch or max(10, min(500, len(tasks) // 20))
    with contextlib.ExitStack() as stack:
        if client is None:
            client = stack.enter_context(connect(scheduler, workers))
        _execute(client, pending, store, run, size, progress, spec.name)
    run.seconds = time.perf_counter() - start
    return run


def _execute(client, pending, store: Store, run: SweepRun, size: int, progress: bool, name: str) -> None:
    from distributed import as_completed
    from tqdm import tqdm

    payloads = [t.payload() for t in pending]
    futures = client.map(evaluate_task, payloads, key=[f"sweep-{p['key']}" for p in payloads],
                         retries=RETRIES, pure=False)
    live = {f.key: f for f in futures}
    rows: list[dict] = []
    last_flush = time.monotonic()
    bar = tqdm(total=len(pending), desc=f"sweep {name}", unit="task", file=sys.stderr, disable=not progress,
               dynamic_ncols=True)
    if run.skipped:
        bar.write(f"resuming: {run.skipped} of {run.total} rows already stored")

    def flush():
        nonlocal rows, last_flush
        before = len(store.keys())
        path = store.append(rows)
        if path is not None:
            run.files.append(path)
            run.written += len(store.keys()) - before
        rows, last_flush = [], time.monotonic()

    try:
        for future, result in as_completed(futures, with_results=True, raise_errors=False):
            live.pop(future.key, None)
            if future.status == "error":
                run.errors.append((future.key.removeprefix("sweep-"), f"{type(result).__name__}: {result}"))
            else:
                rows.append(result)
                run.verdicts[result["verdict"]] = run.verdicts.get(result["verdict"], 0) + 1
            future.release()
            bar.update()
            bar.set_postfix(left=len(live), fails=run.verdicts.get("fails", 0), errors=len(run.errors),
                            refresh=False)
            if len(rows) >= size or time.monotonic() - last_flush >= FLUSH_SECONDS:
                flush()
    except KeyboardInterrupt:
        run.interrupted = True
        client.cancel(list(live.values()))
    finally:
        flush()
        bar.close()
