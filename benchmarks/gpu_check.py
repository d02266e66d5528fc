"""The GPU run in one bounded pass: each step a child process under its own time limit, the whole within a
budget (8 minutes by default), a failure or time-out recorded and the next step run.

    python -m benchmarks.gpu_check OUT_DIR [--device cuda|cpu|auto] [--budget 470] [--only NAME ...] [--list]
    python -m benchmarks.gpu_check OUT_DIR --device cpu --smoke       (the same steps at toy sizes: minutes)

Steps (``steps``), on ``--device``:

* ``ledger``: ``fastslow check --profile thorough`` (every claim's ledger check);
* ``device-tests``: ``pytest -m cuda tests/test_device_factories.py`` (every claim's on-stack form at toy size
  on the device: a tensor left on the host fails there);
* ``bench``: ``fastslow bench`` (its ``ratios``: the dense ``jacrev`` Jacobian and ``torch.func.jvp`` against
  the factorised forms, timed in the same run);
* ``scale-<preset>-<dtype>``: ``fastslow check --scale`` at gpt2-small, gpt2-medium and gpt2-large, float32
  and float64;
* ``hf-save``, ``hf-import``, ``hf-check-stack``: a 124M GPT-2 (``GPT2Config()``, random weights, saved with
  transformers; nothing is downloaded), ``fastslow import-hf --T 1024`` and ``check --stack`` on it.

The limits (:data:`LIMITS`, seconds) come from the one H200 measurement on record — ``check --scale
gpt2-small`` took 106.5 s, the target is ≤ 15 s — scaled by the presets' sizes, so that their sum plus
start-up fits the budget; a step that needs longer is cut at its limit and recorded as ``timed_out``.
Each step gets ``min(limit, budget left)``; one that cannot get :data:`MIN_STEP` seconds is recorded as
``skipped``.

``--smoke`` runs every step at its smallest size (one quick claim, ``--scale toy``, a 2-layer GPT-2 at T = 32;
``bench`` only parses its arguments: its quick sizes take minutes), so that the script itself is exercised
end to end on a CPU (tests/test_gpu_check.py); its numbers are no measurement.

Writes OUT_DIR/summary.json and summary.txt: per step the command, exit status, wall seconds, CPU seconds
(user + system of the step's processes, from ``os.wait4``), peak resident memory of the step's largest
process (``ru_maxrss``), the share of host time (CPU seconds per wall
second: near 1 or above for a host-bound step, near 0 for one that waits on the device), peak GPU memory
(``nvidia-smi``'s memory.used, sampled every :data:`SAMPLE_SECONDS`, above the value before the step), and
its log file; and machine.txt (nvidia-smi, lscpu, torch).  Exit status 0 when every step passed, else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: the whole run's budget (8 minutes less margin for start-up and the summary)
BUDGET = 470.0
#: step limits, seconds (see the module docstring for where they come from)
LIMITS = {"ledger": 70, "device-tests": 35, "bench": 70,
          "scale-gpt2-small-float32": 15, "scale-gpt2-small-float64": 20,
          "scale-gpt2-medium-float32": 25, "scale-gpt2-medium-float64": 35,
          "scale-gpt2-large-float32": 35, "scale-gpt2-large-float64": 50,
          "hf-save": 25, "hf-import": 30, "hf-check-stack": 60}
MIN_STEP = 5.0
SAMPLE_SECONDS = 0.25
PRESETS = ("gpt2-small", "gpt2-medium", "gpt2-large")
DTYPES = ("float32", "float64")
HF_T = 1024


@dataclass
class Step:
    name: str
    argv: list[str]
    limit: float


@dataclass
class StepResult:
    name: str
    argv: list[str]
    status: str                   # passed | failed | timed_out | skipped
    exit: int | None = None
    limit_s: float | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    host_share: float | None = None
    peak_gpu_mib: float | None = None
    peak_rss_mib: float | None = None
    log: str | None = None
    extra: dict = field(default_factory=dict)


def fastslow(*args: str) -> list[str]:
    """The console script with this interpreter (the venv need not be on PATH)."""
    return [sys.executable, "-m", "proofs_check.cli", *args]


#: ``--smoke``: the step's arguments at the smallest size, and its limit
SMOKE_LIMIT = 120


def steps(out: Path, device: str, smoke: bool = False) -> list[Step]:
    """Every step of the run, in order, with its limit (``smoke``: at toy sizes, see the module docstring)."""
    quick = ["--quick"] if device == "cpu" else []
    ledger = ["--claim", "2.3", "--quick"] if smoke else ["--profile", "thorough"]
    run = [Step("ledger", fastslow("check", *ledger, "--device", device, "--no-progress",
                                   "--json", str(out / "ledger.json")), LIMITS["ledger"]),
           Step("device-tests", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda",
                                 "tests/test_device_factories.py"], LIMITS["device-tests"]),
           Step("bench", fastslow("bench", "--device", device, *quick, "--json", str(out / "bench.json"),
                                  *(["--help"] if smoke else [])), LIMITS["bench"])]
    for preset in PRESETS:
        for dtype in DTYPES:
            name = f"scale-{preset}-{dtype}"
            run.append(Step(name, fastslow("check", "--scale", "toy" if smoke else preset, "--dtype", dtype, "--device", device,
                                           "--no-progress", "--json", str(out / f"{name}.json")), LIMITS[name]))
    hf, ckpt = out / "gpt2-124m-hf", out / "gpt2-124m"
    run += [Step("hf-save", [sys.executable, "-c", "import sys; from pathlib import Path; "
                             f"from benchmarks.hf_gpt2_small import {'TINY' if smoke else 'SMALL'}, save_model; "
                             f"save_model({'TINY' if smoke else 'SMALL'}, Path(sys.argv[1]))", str(hf)], LIMITS["hf-save"]),
            Step("hf-import", fastslow("import-hf", str(hf), "--out", str(ckpt), "--T", str(32 if smoke else HF_T)),
                 LIMITS["hf-import"]),
            Step("hf-check-stack", fastslow("check", "--stack", str(ckpt), "--device", device, "--no-progress",
                                            "--json", str(out / "hf-check-stack.json")), LIMITS["hf-check-stack"])]
    return [Step(s.name, s.argv, SMOKE_LIMIT) for s in run] if smoke else run


def gpu_memory_mib() -> float | None:
    """Memory in use on the GPUs (MiB, summed), or None without nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=5).stdout
        return sum(float(v) for v in text.split())
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def run_step(step: Step, limit: float, log: Path) -> StepResult:
    """``step`` as a child process in its own session, killed (its whole group) at ``limit`` seconds."""
    base = gpu_memory_mib()
    peak = base
    start = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen(step.argv, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        timed_out, status, usage, last, kill_at = False, 0, None, 0.0, float("inf")
        while usage is None:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                usage = ru
                break
            now = time.perf_counter()
            if now - start > limit and not timed_out:
                timed_out = True
                os.killpg(proc.pid, signal.SIGTERM)
                kill_at = now + 10
            if timed_out and now > kill_at:
                os.killpg(proc.pid, signal.SIGKILL)
            if base is not None and now - last >= SAMPLE_SECONDS:
                last = now
                used = gpu_memory_mib()
                peak = max(peak, used) if used is not None else peak
            time.sleep(0.05)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return StepResult(step.name, step.argv, "timed_out" if timed_out else "passed" if code == 0 else "failed",
                      exit=code, limit_s=limit, wall_s=wall, cpu_s=cpu, host_share=cpu / wall if wall > 0 else None,
                      peak_gpu_mib=None if base is None else peak - base, peak_rss_mib=usage.ru_maxrss / 1024,
                      log=log.name)


def run_steps(plan: list[Step], out: Path, budget: float = BUDGET) -> list[StepResult]:
    """Run ``plan`` in order within ``budget`` seconds: no step is fatal to the next."""
    start, results = time.perf_counter(), []
    for step in plan:
        left = budget - (time.perf_counter() - start)
        if left < MIN_STEP:
            results.append(StepResult(step.name, step.argv, "skipped",
                                      extra={"reason": f"budget spent ({budget:.0f} s)"}))
            continue
        results.append(run_step(step, min(step.limit, left), out / f"{step.name}.log"))
        print(summary_line(results[-1]), flush=True)
    return results


def summary_line(r: StepResult) -> str:
    if r.status == "skipped":
        return f"{r.name:28s} skipped: {r.extra.get('reason', '')}"
    gpu = "n/a" if r.peak_gpu_mib is None else f"{r.peak_gpu_mib:.0f} MiB"
    return (f"{r.name:28s} {r.status:9s} exit {r.exit!s:>4}  wall {r.wall_s:6.1f} s (limit {r.limit_s:.0f})  "
            f"CPU {r.cpu_s:6.1f} s  host share {r.host_share or 0:.2f}  peak RSS {r.peak_rss_mib or 0:.0f} MiB  "
            f"peak GPU {gpu}  log {r.log}")


def summary(results: list[StepResult], device: str, budget: float, wall: float, smoke: bool = False) -> dict:
    return {"device": device, "budget_s": budget, "wall_s": wall, "smoke": smoke,
            "passed": all(r.status == "passed" for r in results),
            "host_share_definition": "CPU seconds (user + system of the step's processes) per wall second",
            "steps": [asdict(r) for r in results]}


def write_summary(out: Path, data: dict) -> None:
    from numerics.storage.io import write_json, write_text

    write_json(out / "summary.json", data)
    lines = [f"gpu_check on {data['device']}: {data['wall_s']:.0f} s of a {data['budget_s']:.0f} s budget; "
             f"{'all steps passed' if data['passed'] else 'some steps did not pass'}"]
    lines += [summary_line(StepResult(**s)) for s in data["steps"]]
    write_text(out / "summary.txt", "\n".join(lines) + "\n")


def machine(out: Path) -> None:
    parts = []
    for argv in (["nvidia-smi"], ["lscpu"]):
        if shutil.which(argv[0]):
            parts.append(subprocess.run(argv, capture_output=True, text=True).stdout)
    parts.append(subprocess.run([sys.executable, "-c", "import torch; print('torch', torch.__version__, 'cuda', "
                                 "torch.cuda.is_available(), torch.cuda.get_device_name(0) if "
                                 "torch.cuda.is_available() else '')"], capture_output=True, text=True).stdout)
    (out / "machine.txt").write_text("\n".join(parts))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    p.add_argument("out", metavar="OUT_DIR")
    p.add_argument("--device", choices=("cuda", "cpu", "auto"), default="cuda")
    p.add_argument("--budget", type=float, default=BUDGET, help=f"seconds for all steps (default {BUDGET:.0f})")
    p.add_argument("--only", action="append", metavar="NAME", help="only this step (repeatable)")
    p.add_argument("--list", action="store_true", help="list the steps and their limits, run nothing")
    p.add_argument("--smoke", action="store_true", help="every step at toy size (a dry run of the script)")
    args = p.parse_args(argv)
    out = Path(args.out)
    plan = steps(out, args.device, smoke=args.smoke)
    unknown = sorted(set(args.only or ()) - {s.name for s in plan})
    if unknown:
        p.error(f"--only {', '.join(unknown)}: no such step (steps: {', '.join(s.name for s in plan)})")
    if args.budget <= 0:
        p.error(f"--budget {args.budget}: must be positive")
    plan = [s for s in plan if not args.only or s.name in args.only]
    if args.list:
        for s in plan:
            print(f"{s.name:28s} {s.limit:4.0f} s  {' '.join(s.argv[1:])}")
        print(f"{'total':28s} {sum(s.limit for s in plan):4.0f} s  (budget {args.budget:.0f} s)")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    machine(out)
    start = time.perf_counter()
    results = run_steps(plan, out, args.budget)
    data = summary(results, args.device, args.budget, time.perf_counter() - start, smoke=args.smoke)
    write_summary(out, data)
    print(f"summary: {out / 'summary.txt'}")
    return 0 if data["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
