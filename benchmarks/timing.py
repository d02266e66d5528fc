"""Timing and memory measurement for the benchmarks.

Times are the median of repeated runs after warm-up, with the device synchronised
around each run (``torch.cuda.synchronize`` on CUDA only), because the machines these
run on are shared and noisy: a ratio is only reported between two quantities timed in
the same process, in the same run.

Peak memory is measured in a fresh subprocess per case, so that neither the allocator
caches nor the peaks of earlier cases leak into the number: the child builds its inputs,
resets the kernel's RSS high-water mark (/proc/self/clear_refs), records its current RSS
(the *baseline*: interpreter, torch, the stack), runs the case once and reads the
high-water mark (VmHWM).  Off Linux it falls back to ru_maxrss, which may include an
import-time peak.  On CUDA it also records
``torch.cuda.max_memory_allocated`` for the case alone.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
_RESULT_TAG = "BENCHMARK-MEMORY-RESULT "


def synchronize(device: str | torch.device) -> None:
    """Wait for queued kernels on CUDA; a no-op on the CPU."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def time_once(fn: Callable[[], object], device: str | torch.device) -> tuple[float, object]:
    """Wall time of one synchronised call and its result."""
    synchronize(device)
    start = time.perf_counter()
    out = fn()
    synchronize(device)
    return time.perf_counter() - start, out


def median_time(fn: Callable[[], object], device: str | torch.device, *, repeats: int,
                warmup: int = 1) -> dict:
    """Median wall time of ``repeats`` synchronised calls after ``warmup`` untimed ones.

    Returns ``{"median": s, "min": s, "runs": [s, ...], "warmup": n}``.
    """
    if repeats < 1:
        raise ValueError(f"repeats={repeats} must be >= 1")
    if warmup < 0:
        raise ValueError(f"warmup={warmup} must be >= 0")
    for _ in range(warmup):
        time_once(fn, device)
    runs = [time_once(fn, device)[0] for _ in range(repeats)]
    return {"median": statistics.median(runs), "min": min(runs), "runs": runs, "warmup": warmup}


def interleaved_median_times(fns: dict[str, Callable[[], object]], device: str | torch.device, *,
                             repeats: int, warmup: int = 1) -> dict[str, dict]:
    """``median_time`` of several functions measured in alternation (a, b, a, b, ...).

    For a ratio between two functions this is the fair order: a burst of load from another
    process on a shared machine lands on both, not on whichever happened to run then.
    Returns ``{name: {"median", "min", "runs", "warmup"}}``.
    """
    if repeats < 1:
        raise ValueError(f"repeats={repeats} must be >= 1")
    if warmup < 0:
        raise ValueError(f"warmup={warmup} must be >= 0")
    for _ in range(warmup):
        for fn in fns.values():
            time_once(fn, device)
    runs: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            runs[name].append(time_once(fn, device)[0])
    return {name: {"median": statistics.median(r), "min": min(r), "runs": r, "warmup": warmup}
            for name, r in runs.items()}


def _peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _status_mb(field: str) -> float | None:
    """VmRSS / VmHWM from /proc/self/status in MiB, or None off Linux."""
    try:
        with open("/proc/self/status") as fh:
            line = next(ln for ln in fh if ln.startswith(field + ":"))
        return int(line.split()[1]) / 1024.0
    except (OSError, StopIteration):
        return None


def _reset_peak_rss() -> bool:
    """Reset the kernel's RSS high-water mark (Linux ≥ 4.0: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def measure_memory(target: str, kwargs: dict, *, device: str, timeout: float = 600.0) -> dict:
    """Peak memory of one case, run in a fresh Python subprocess.

    ``target`` is ``"module:function"``; ``function(**kwargs, device=device)`` must build
    its inputs and return a zero-argument callable that runs the case.  Returns
    ``{"peak_rss_mb", "baseline_rss_mb", "increment_mb", "cuda_peak_mb"}`` (the last is
    None off CUDA).  Raises RuntimeError with the child's stderr when it fails.
    """
    payload = json.dumps({"target": target, "kwargs": kwargs, "device": device})
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.timing", payload], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO_ROOT, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(_RESULT_TAG)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"memory measurement of {target} failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-2000:]}")
    return json.loads(lines[-1][len(_RESULT_TAG):])


def _child(payload: str) -> None:
    spec = json.loads(payload)
    module_name, func_name = spec["target"].split(":")
    device = spec["device"]
    torch.set_num_threads(int(os.environ.get("FASTSLOW_BENCH_THREADS", torch.get_num_threads())))
    case = getattr(importlib.import_module(module_name), func_name)(**spec["kwargs"], device=device)
    on_cuda = torch.device(device).type == "cuda"
    if on_cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        cuda_before = torch.cuda.memory_allocated(device)
    # The process's lifetime peak (ru_maxrss) is often set while importing, above what the case
    # needs; so reset the high-water mark and read it after the case where Linux allows.
    exact = _reset_peak_rss() and _status_mb("VmHWM") is not None
    baseline = _status_mb("VmRSS") if exact else _peak_rss_mb()
    case()
    synchronize(device)
    peak = _status_mb("VmHWM") if exact else _peak_rss_mb()
    cuda_peak = (torch.cuda.max_memory_allocated(device) - cuda_before) / 2**20 if on_cuda else None
    print(_RESULT_TAG + json.dumps({"peak_rss_mb": peak, "baseline_rss_mb": baseline,
                                    "increment_mb": peak - baseline, "cuda_peak_mb": cuda_peak,
                                    "process_peak_rss_mb": _peak_rss_mb(), "high_water_reset": exact}))


if __name__ == "__main__":
    _child(sys.argv[1])
