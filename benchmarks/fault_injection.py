"""Fault injection: SIGKILL ``fastslow reproduce --quick`` at random moments and rerun after each.

    python benchmarks/fault_injection.py [--kills 10] [--seed 0] [--work DIR] [--parallel 1]

First one uninterrupted run gives the reference ledger and its wall time W.  Then, for each
of ``--kills`` rounds (each in its own output folder, which the earlier rounds' kills have
left in whatever state they left it): start ``reproduce --quick``, SIGKILL its whole process
group at a moment drawn uniformly from [0.02 W, 0.98 W] (seeded), and check that every file
it left in ``out/`` other than a named temporary file (``*.tmp``) is complete: JSON parses,
PNG ends with its IEND chunk, PDF with ``%%EOF``, Markdown and HTML are non-empty.  Then rerun
``reproduce --quick`` to the end and check that no ``*.tmp`` is left, that every file is
complete, and that its ledger equals the reference, timings aside.  Exit 0 when every
round passes.  It takes about (1 + 1.5 × kills) reproduce runs: about 25 minutes on an idle
2-core machine, so it is not part of CI.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMING_KEYS = {"seconds", "timings", "gate_seconds"}


def without_timings(value):
    """The ledger without wall times (including the derive summary line, which states its seconds)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items()
                if k not in TIMING_KEYS and not (k == "summary" and "derive" in str(v)[:20])}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def _reproduce(out: Path) -> list[str]:
    return [sys.executable, "-m", "proofs_check.cli", "reproduce", "--quick", "--device", "cpu", "--out", str(out)]


def run_to_end(out: Path, log: Path) -> tuple[int, float]:
    start = time.perf_counter()
    with open(log, "ab") as fh:
        code = subprocess.run(_reproduce(out), cwd=ROOT, stdout=fh, stderr=fh).returncode
    return code, time.perf_counter() - start


def run_and_kill(out: Path, after: float, log: Path) -> bool:
    """Start reproduce and SIGKILL its process group after ``after`` s; True if it was still running."""
    with open(log, "ab") as fh:
        proc = subprocess.Popen(_reproduce(out), cwd=ROOT, stdout=fh, stderr=fh, start_new_session=True)
        try:
            proc.wait(after)
            return False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return True


def incomplete(out: Path) -> list[str]:
    """Files under ``out`` that are partial (temporary files are reported separately)."""
    bad = []
    for path in sorted(p for p in out.rglob("*") if p.is_file() and not p.name.endswith(".tmp")):
        data = path.read_bytes()
        ok = bool(data)
        if path.suffix == ".json":
            try:
                json.loads(data)
            except ValueError:
                ok = False
        elif path.suffix == ".png":
            ok = data.endswith(b"IEND\xaeB`\x82")
        elif path.suffix == ".pdf":
            ok = data.rstrip().endswith(b"%%EOF")
        if not ok:
            bad.append(str(path.relative_to(out)))
    return bad


def one_round(k: int, moment: float, work: Path, reference: dict) -> dict:
    out, log = work / f"round{k:02d}", work / f"round{k:02d}.log"
    killed = run_and_kill(out, moment, log)
    after_kill = {"temps": sorted(str(p.relative_to(out)) for p in out.rglob("*.tmp")) if out.exists() else [],
                  "incomplete": incomplete(out) if out.exists() else []}
    code, seconds = run_to_end(out, log)
    temps = sorted(str(p.relative_to(out)) for p in out.rglob("*.tmp"))
    ledger = json.loads((out / "ledger.json").read_text()) if (out / "ledger.json").exists() else None
    same = ledger is not None and without_timings(ledger) == reference
    ok = killed and not after_kill["incomplete"] and code in (0, 1) and not temps and not incomplete(out) and same
    return {"round": k, "kill_at_s": round(moment, 1), "killed": killed, "after_kill": after_kill,
            "rerun_exit": code, "rerun_s": round(seconds, 1), "temps_after_rerun": temps,
            "incomplete_after_rerun": incomplete(out), "ledger_equal": same, "ok": ok}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=None, help="working folder (default: a temporary one)")
    parser.add_argument("--parallel", type=int, default=1, help="rounds run at once (each in its own folder)")
    parser.add_argument("--json", type=Path, default=None, help="write the results as JSON")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="fastslow-faults-"))
    work.mkdir(parents=True, exist_ok=True)
    code, wall = run_to_end(work / "reference", work / "reference.log")
    reference = without_timings(json.loads((work / "reference" / "ledger.json").read_text()))
    print(f"reference run: exit {code}, {wall:.1f} s ({work / 'reference'})", flush=True)
    rng = random.Random(args.seed)
    moments = [rng.uniform(0.02 * wall, 0.98 * wall) for _ in range(args.kills)]
    def run_round(km):
        r = one_round(km[0], km[1], work, reference)
        print(f"round {r['round']:2d}: killed at {r['kill_at_s']:6.1f} s (was running: {r['killed']}); "
              f"temps left by the kill {len(r['after_kill']['temps'])}, partial files {r['after_kill']['incomplete']}; "
              f"rerun exit {r['rerun_exit']} in {r['rerun_s']} s, temps after {r['temps_after_rerun']}, "
              f"ledger equal: {r['ledger_equal']} -> {'ok' if r['ok'] else 'FAIL'}", flush=True)
        return r

    with ThreadPoolExecutor(max(1, args.parallel)) as pool:
        rounds = list(pool.map(run_round, enumerate(moments)))
    passed = sum(r["ok"] for r in rounds)
    print(f"{passed}/{len(rounds)} rounds passed")
    if args.json:
        from numerics.storage.io import write_json

        write_json(args.json, {"reference_s": wall, "rounds": rounds, "passed": passed})
    return 0 if passed == len(rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
