"""Benchmark for Claim 6.3: fast attention over T tokens vs the slow path over T/P block tokens.

``run(quick, device)`` measures, in one run, for P = 2 … 64 (quick: … 32): the exact
matmul FLOPs of both real modules (FlopCounterMode, checked against the generated
model), the model's parts (scores + mixing: ratio P²; projections: ratio P), and the
median wall time of ``numerics.stacks.stack.Attention`` vs ``numerics.stacks.stack.SlowPath``.
Timings include each module's fixed per-call overhead, which dominates the slow
path at large P, so the measured ratio saturates below the FLOP ratio.
"""

from __future__ import annotations

from numerics.families import cost
def run(quick: bool, device: str) -> dict:
    """Fast/slow cost ratios vs P, FLOPs exact and timings measured (float32 timings)."""
    return {"name": "slow_path_cost", **cost.cost_sweep(quick=quick, device=device)}
