"""Benchmark for Claim 6.3: fast attention over T tokens vs the slow path over T/P block tokens.

``run(quick, device)`` measures, in one run, for P = 2 … 64 (quick: … 32): the exact
matmul FLOPs of both real modules (FlopCounterMode, checked against the generated
model), the model's parts (scores + mixing: ratio P²; projections: ratio P), and the
median wall time of ``numerics.stack.Attention`` vs ``numerics.stack.SlowPath``.
Timings include each module's fixed per-call overhead, which dominates the slow
path at large P, so the measured ratio saturates below the FLOP ratio.
"""

from __future__ import annotations

import torch

from numerics import cost


def run(quick: bool, device: str) -> dict:
    """Fast/slow cost ratios vs P, FLOPs exact and timings measured (float32 timings)."""
    T, d, heads = (512, 32, 4) if quick else (2048, 64, 4)
    Ps = (2, 4, 8, 16, 32) if quick else (2, 4, 8, 16, 32, 64)
    repeats = 5 if quick else 20
    rows = []
    for P in Ps:
        flops = cost.flop_comparison(T, P, d, heads)
        model = cost.model_flops(T, P, d)
        timing = cost.timing_ratio(T, P, d, heads, repeats=repeats, device=device)
        rows.append({"P": P, "flop_ratio_counted": flops["ratio"], "flop_ratio_model": flops["model_ratio"],
                     "flop_model_error": flops["error"],
                     "flop_ratio_scores_mixing": model["fast_scores_mixing"] / model["slow_scores_mixing"],
                     "flop_ratio_projections": model["fast_projections"] / model["slow_projections"],
                     "t_fast_s": timing["t_fast"], "t_slow_s": timing["t_slow"], "time_ratio": timing["ratio"]})
    return {"name": "slow_path_cost", "T": T, "d": d, "heads": heads, "device": str(device),
            "threads": torch.get_num_threads(), "repeats": repeats, "rows": rows}
