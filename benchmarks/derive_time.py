"""Wall time of `fastslow derive` (cold and warm cache) and of `fastslow check` per claim.

``cold``: a fresh Python process derives every family into a temporary output folder
with an empty temporary cache folder (so SymPy does all the work, and nothing in the
repository is written); ``warm``: a second fresh process repeats it with the now-filled
cache, which is what a developer sees on a second `fastslow derive`.  Each is reported as
the whole process's wall time (imports included, as on the command line) and as the time
spent inside ``proofs_check.runners.derive.derive``.

``check_seconds_per_claim``: the ledger's own per-claim wall time from
``proofs_check.runners.check.run_checks`` in quick mode (the CI sizes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.timing import REPO_ROOT

_TAG = "BENCHMARK-DERIVE-RESULT "
FAMILIES: list[str] | None = None  # None: every family (as `fastslow derive`)
_CHILD = """
import json, sys, time
start = time.perf_counter()
from proofs_check.runners.derive import derive
report = derive(json.loads(sys.argv[3]), out_dir=sys.argv[1], cache_dir=sys.argv[2], check=False, progress=False)
inner = time.perf_counter() - start
print({tag!r} + json.dumps({{"ok": report.ok, "inner_seconds": inner,
    "families": sorted(report.seconds), "cached": sorted(report.cached),
    "family_seconds": report.seconds, "drifted": [str(p) + ': ' + r for p, r in report.drifted]}}))
""".format(tag=_TAG)


def _derive_process(out_dir: Path, cache_dir: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(out_dir), str(cache_dir), json.dumps(FAMILIES)],
                          capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=900)
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(_TAG)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"derive subprocess failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    result = json.loads(lines[-1][len(_TAG):])
    result["wall_seconds"] = wall
    return result


def derive_times() -> dict:
    """Cold and warm derive of every family, each in a fresh process, into temporary folders."""
    with tempfile.TemporaryDirectory(prefix="fastslow-bench-derive-") as tmp:
        out_dir, cache_dir = Path(tmp) / "generated", Path(tmp) / "cache"
        cold = _derive_process(out_dir, cache_dir)
        warm = _derive_process(out_dir, cache_dir)
    return {
        "cold_seconds": cold["wall_seconds"],
        "warm_seconds": warm["wall_seconds"],
        "cold_derive_seconds": cold["inner_seconds"],
        "warm_derive_seconds": warm["inner_seconds"],
        "families": cold["families"],
        "cold_family_seconds": cold["family_seconds"],
        "warm_cached_families": warm["cached"],
        "derivation_errors": cold["drifted"],
    }


def check_times(claim_ids: list[str] | None, device: str) -> dict:
    """Per-claim wall time (s) and status of `fastslow check` in quick mode."""
    from proofs_check.runners.check import run_checks

    start = time.perf_counter()
    ledger = run_checks(claim_ids, device=device, profile="ci", quick=True, progress=False)
    total = time.perf_counter() - start
    per_claim = {c["id"]: c.get("seconds", 0.0) for c in ledger["claims"]}
    status = {c["id"]: c["status"] for c in ledger["claims"]}
    return {"check_seconds_per_claim": per_claim, "check_status": status, "check_total_seconds": total}


def quick_claims() -> list[str]:
    """The first claim of each family, in docs/theory.md order."""
    from proofs_check.verdicts.registry import CLAIM_IDS

    first: dict[str, str] = {}
    for cid, family in CLAIM_IDS.items():
        first.setdefault(family, cid)
    return list(first.values())


def run(quick: bool, device: str) -> dict:
    """The ``derive`` section.  The checks always run at their quick CI sizes; ``quick`` times
    the first claim of each family only (to stay within the quick budget), full times all."""
    result = derive_times()
    ids = quick_claims() if quick else None
    result.update(check_times(ids, device))
    result["claims_timed"] = "first claim of each family" if quick else "all"
    return result
