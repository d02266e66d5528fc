"""Same seed, same machine: ``check --profile ci`` writes the same ledger JSON, timings aside,
twice in one process and in two fresh processes (Hypothesis is derandomised in ledger runs, and every
random draw of a claim comes from a generator seeded from the seed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from proofs_check.cli import main

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ["1.2", "5.2"]  # a cheap subset (about half a second each on an idle core)
TIMING_KEYS = {"seconds", "timings", "gate_seconds"}


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def ledger_in_process(path: Path) -> dict:
    assert main(["check", "--profile", "ci", "--no-progress", "--json", str(path), "--claim", *CLAIMS]) == 0
    return without_timings(json.loads(path.read_text()))


def ledger_in_subprocess(path: Path) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "-m", "proofs_check.cli", "check", "--profile", "ci", "--no-progress",
                    "--json", str(path), "--claim", *CLAIMS], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    return without_timings(json.loads(path.read_text()))


def test_ledger_is_identical_in_one_process_and_in_two(tmp_path, capsys):
    first = ledger_in_process(tmp_path / "a.json")
    second = ledger_in_process(tmp_path / "b.json")
    assert first == second
    third = ledger_in_subprocess(tmp_path / "c.json")
    fourth = ledger_in_subprocess(tmp_path / "d.json")
    assert third == fourth
    assert [c["id"] for c in first["claims"]] == CLAIMS


def test_the_comparison_sees_a_changed_number():
    """Control: the timing filter removes timings only; a changed measured value still differs."""
    a = {"claims": [{"id": "3.1", "seconds": 1.0, "numeric": {"max_error": 1e-16}}]}
    b = {"claims": [{"id": "3.1", "seconds": 2.0, "numeric": {"max_error": 2e-16}}]}
    assert without_timings(a) != without_timings(b)
    b["claims"][0]["numeric"]["max_error"] = 1e-16
    assert without_timings(a) == without_timings(b)


def test_persistent_left_vector_is_bit_identical_whatever_the_memory_alignment():
    """The persistent vector w (4.1, 4.2) from copies of one kernel at different offsets in memory:
    every copy gives the same bits (an LU solve; the least-squares driver gelsy does not)."""
    import torch

    from numerics.stacks import kernels as K
    from numerics.stacks.spec import StackSpec

    A = StackSpec(T=24, d=8, layers=1, heads=2, kernel="full", seed=3).build().frozen_kernel()
    ws = []
    for offset in range(1, 9):
        buffer = torch.empty(offset + A.numel(), dtype=A.dtype)
        copy = buffer[offset:].view_as(A)
        copy.copy_(A)
        ws.append(K.persistent_left_vector(copy))
    assert all(torch.equal(w, ws[0]) for w in ws)
    assert torch.allclose(ws[0] @ A, ws[0], atol=1e-14) and abs(float(ws[0].sum()) - 1) < 1e-14
