"""benchmarks/gpu_check.py keeps its budget and survives its steps: a step past its limit is killed and
recorded as timed out, a failing step is recorded, and the next step runs; the limits sum to the budget.
(The GPU run itself needs a GPU: these run its machinery on tiny stand-in steps.)"""

from __future__ import annotations

import json
import sys
import time

from benchmarks import gpu_check as gc


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_step_past_its_limit_is_cut_and_the_run_goes_on(tmp_path):
    plan = [gc.Step("slow", py("import time; time.sleep(60)"), 1.0),
            gc.Step("broken", py("raise SystemExit(3)"), 10.0),
            gc.Step("busy", py("s = 0\nfor i in range(3_000_000): s += i"), 30.0)]
    start = time.perf_counter()
    results = gc.run_steps(plan, tmp_path, budget=60)
    assert time.perf_counter() - start < 30, "the sleeping step was not cut at its limit"
    slow, broken, busy = results
    assert slow.status == "timed_out" and 1.0 <= slow.wall_s < 15
    assert broken.status == "failed" and broken.exit == 3
    assert busy.status == "passed" and busy.cpu_s > 0 and busy.host_share > 0.05   # a host-bound step
    assert slow.host_share < 0.5                                                      # a waiting one
    assert (tmp_path / "busy.log").exists()


def test_the_budget_skips_what_does_not_fit(tmp_path):
    plan = [gc.Step("first", py("import time; time.sleep(60)"), 100.0), gc.Step("second", py("pass"), 10.0)]
    first, second = gc.run_steps(plan, tmp_path, budget=gc.MIN_STEP + 1)
    assert first.status == "timed_out" and first.limit_s <= gc.MIN_STEP + 1
    assert second.status == "skipped" and "budget" in second.extra["reason"]


def test_summary_json_and_text(tmp_path):
    results = gc.run_steps([gc.Step("ok", py("pass"), 10.0)], tmp_path, budget=20)
    data = gc.summary(results, "cpu", 20, 1.0)
    gc.write_summary(tmp_path, data)
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["passed"] and saved["steps"][0]["name"] == "ok"
    assert {"wall_s", "cpu_s", "host_share", "peak_gpu_mib", "exit", "log"} <= set(saved["steps"][0])
    assert "ok" in (tmp_path / "summary.txt").read_text()


def test_the_plan_covers_every_step_within_eight_minutes(tmp_path):
    plan = gc.steps(tmp_path, "cuda")
    names = [s.name for s in plan]
    assert {"ledger", "device-tests", "bench", "hf-save", "hf-import", "hf-check-stack"} <= set(names)
    assert {f"scale-{p}-{d}" for p in gc.PRESETS for d in gc.DTYPES} <= set(names)
    assert sum(s.limit for s in plan) <= gc.BUDGET <= 480 - 10
    ledger = next(s for s in plan if s.name == "ledger").argv
    assert "thorough" in ledger and "cuda" in ledger
    assert "1024" in next(s for s in plan if s.name == "hf-import").argv
