"""GPT-2-small size through both commands, against the scale budget: a benchmark, not a CI test.

Builds a randomly initialised ``GPT2LMHeadModel(GPT2Config())`` locally (T = 1024, d = 768, L = 12,
12 heads, vocabulary 50257; transformers' own initialisation, seeded; nothing is downloaded), saves it
with ``save_pretrained``, then runs ``fastslow import-hf`` and ``fastslow check --stack`` on it, each as
its own process, and records per command the wall time, the CPU time (user + system) and the peak
resident set (``os.wait4``'s rusage of that child), the load average before and after, and the
claims' statuses.  Passes (exit 0) when both commands exit 0, no claim fails, and each command stays
within the budget: ≤ ``--budget-seconds`` wall (600) and ≤ ``--budget-gib`` peak RSS (8).  The wall
budget is an idle-machine number: the JSON records the load, so a run on a loaded machine reads as one.

    nice -n 10 python -m benchmarks.hf_gpt2_small --json out/hf-gpt2-small.json

``--tiny`` runs the same script on a small config in seconds (``tests/test_hf_gpt2_small.py``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: GPT-2 small: transformers' GPT2Config() defaults, written out so the record states them.
SMALL = {"n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257}
#: A config small enough for CI; T·d = 512 > 256, so ``check --stack`` takes the scale forms as at full size.
TINY = {"n_positions": 32, "n_embd": 16, "n_layer": 2, "n_head": 2, "vocab_size": 256, "bos_token_id": 255,
        "eos_token_id": 255}


def save_model(config: dict, folder: Path, seed: int = 0) -> None:
    """A randomly initialised GPT-2 (transformers' initialisation, seeded) saved with ``save_pretrained``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    GPT2LMHeadModel(GPT2Config(**config)).save_pretrained(folder)


def timed(argv: list[str], log: Path) -> dict:
    """Run ``argv`` as a child process (output to ``log``): exit status, wall seconds, CPU seconds
    (user + system of that child) and its peak RSS (GiB), with the 1-minute load average before and after."""
    load0 = os.getloadavg()[0]
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"argv": argv[1:], "exit": proc.returncode, "wall_s": time.perf_counter() - start,
            "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_gib": usage.ru_maxrss * 1024 / 2**30,
            "load_before": load0, "load_after": os.getloadavg()[0]}


def fastslow(*args: str) -> list[str]:
    """The console script's command line with this interpreter (the venv need not be on PATH)."""
    return [sys.executable, "-c", "import sys; from proofs_check.cli import main; sys.exit(main())", *args]


def run(config: dict, work: Path, *, claims: list[str] | None = None, budget_seconds: float = 600.0,
        budget_gib: float = 8.0) -> dict:
    """Save, import and check the model of ``config`` under ``work``; the record (see the module docstring)."""
    import json

    hf, ckpt, ledger = work / "hf", work / "ckpt", work / "check.json"
    start = time.perf_counter()
    save_model(config, hf)
    record = {"config": config, "save_seconds": time.perf_counter() - start, "cores": os.cpu_count(),
              "budget": {"wall_s": budget_seconds, "peak_rss_gib": budget_gib}, "steps": {}}
    record["steps"]["import"] = timed(fastslow("import-hf", str(hf), "--out", str(ckpt)), work / "import.log")
    if record["steps"]["import"]["exit"] == 0:
        check = ["check", "--stack", str(ckpt), "--json", str(ledger)]
        record["steps"]["check"] = timed(fastslow(*check, *(["--claim", *claims] if claims else [])),
                                         work / "check.log")
    if ledger.exists():
        data = json.loads(ledger.read_text())
        record["claims"] = {c["id"]: {"status": c["status"], "seconds": c.get("seconds"),
                                      "form": ((c.get("verdict") or {}).get("measured") or {}).get("form"),
                                      "reason": c.get("reason")} for c in data["claims"]}
        record["environment"] = data.get("environment")
        manifest = json.loads((ckpt / "manifest.json").read_text()) if (ckpt / "manifest.json").exists() else {}
        record["hf_agreement"] = manifest.get("hf_agreement")
    record["failures"] = judge(record, budget_seconds, budget_gib, work)
    record["passed"] = not record["failures"]
    return record


def judge(record: dict, budget_seconds: float, budget_gib: float, work: Path | str = ".") -> list[str]:
    """What keeps ``record`` from passing: a command that exited non-zero or did not run, a failing claim,
    a command over the wall or memory budget (empty when it passes)."""
    steps = record["steps"]
    return ([f"{name} exited {s['exit']} (log {Path(work) / (name + '.log')})" for name, s in steps.items()
             if s["exit"] != 0]
            + (["check did not run"] if "check" not in steps else [])
            + [f"claim {cid} fails" for cid, c in record.get("claims", {}).items() if c["status"] == "fails"]
            + [f"{name}: {s['wall_s']:.0f} s wall > {budget_seconds:g} s" for name, s in steps.items()
               if s["wall_s"] > budget_seconds]
            + [f"{name}: peak RSS {s['peak_rss_gib']:.2f} GiB > {budget_gib:g} GiB" for name, s in steps.items()
               if s["peak_rss_gib"] > budget_gib])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", required=True, help="where to write the record")
    parser.add_argument("--tiny", action="store_true", help=f"the small config {TINY} instead of GPT-2 small")
    parser.add_argument("--claim", nargs="+", metavar="ID", help="only these claims (default: all)")
    parser.add_argument("--workdir", help="keep the model, checkpoint and logs here (default: a temporary folder)")
    parser.add_argument("--budget-seconds", type=float, default=600.0)
    parser.add_argument("--budget-gib", type=float, default=8.0)
    args = parser.parse_args(argv)
    for name in ("budget_seconds", "budget_gib"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0")
    if args.workdir and Path(args.workdir).exists() and any(Path(args.workdir).iterdir()):
        parser.error(f"--workdir {args.workdir} is not empty")
    from numerics.storage.io import write_json

    config = TINY if args.tiny else SMALL
    kw = dict(claims=args.claim, budget_seconds=args.budget_seconds, budget_gib=args.budget_gib)
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        record = run(config, Path(args.workdir), **kw)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            record = run(config, Path(tmp), **kw)
    write_json(args.json, record)
    print(("passed" if record["passed"] else "FAILED: " + "; ".join(record["failures"])) +
          "".join(f"\n  {n}: {s['wall_s']:.1f} s wall, {s['cpu_s']:.1f} CPU-s, {s['peak_rss_gib']:.2f} GiB, "
                  f"load {s['load_before']:.1f} -> {s['load_after']:.1f}" for n, s in record["steps"].items()))
    return 0 if record["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
