"""Reach of 2.1/2.3 at pretraining size: the factorised J·V against jvp off the reference, matrix-free.

The stack is a scale preset (``numerics.presets``: random causal pre-LN weights, e.g. GPT-2 small,
T = 1024, d = 768, 12 layers).  J_fact = Σ_m A^m ⊗ K_m is applied matrix-free
(``numerics.matrix_free.JacobianAction``, O(L T d²) per probe); the true action is
``torch.func.jvp`` of the stack at X = 1x̄ᵀ + tÊ with spread s (``numerics.reach``).  The
prediction from the reference alone is the first-order coefficient c₁ = ‖D²f(X₀)[Ê, V]‖ √T ‖x̄‖ / ‖J₀V‖
(one nested jvp); the exponent is fitted on s ∈ {1e-4, 1e-3, 1e-2}.  At this size the third
derivative (κ̄, the slope's first-order departure) is not computed, so the recorded slope is
compared with 1 at the departure the toy stacks measured, and it is a recorded run, not a ledger verdict.

Run: ``python -m proofs_check.runners.reach_scale --scale ci --json docs/reach/reach-ci.json`` (GPT-2 small: about 10³ s
of float64 CPU per jvp on one core, 15 jvps; a GPU run).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch
from torch.func import jvp

from numerics import matrix_free as mf
from numerics import reach as R

WINDOW = (1e-4, 1e-3, 1e-2)
SWEEP = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9)


def scale_reach(preset_name: str, *, probes: int = 1, seed: int = 0, sweep=SWEEP, progress: bool = True) -> dict:
    """The window fit, the predicted c₁ and the sweep of e(s) on the preset's stack (float64, CPU)."""
    from numerics.presets import preset

    spec = preset(preset_name, seed=seed)
    t0 = time.perf_counter()
    stack = spec.build()
    T, d = spec.T, spec.d
    g = torch.Generator().manual_seed(seed + 1)
    xbar = torch.randn(d, generator=g, dtype=torch.float64)
    direction = torch.randn(T, d, generator=g, dtype=torch.float64)
    V = mf.probes(probes, T, d, seed=seed + 2)
    action = mf.JacobianAction(stack, xbar)
    X0 = xbar.expand(T, d).clone()
    Ehat = R.centred_direction(direction)
    f = R._forward(stack)

    def log(msg):
        if progress:
            print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)

    with R.mf_unchecked(stack), torch.no_grad():
        J0V = torch.stack([jvp(f, (X0,), (v,))[1] for v in V])
        a = torch.stack([jvp(lambda y: jvp(f, (y,), (v,))[1], (X0,), (Ehat,))[1] for v in V])
    log("J₀V and D²f[Ê, V] at the reference")
    identity = R.pooled_ratio(action(V) - J0V, J0V)
    c1 = float(a.norm()) * math.sqrt(T) * float(xbar.norm()) / float(J0V.norm())
    rows = []
    for s in (*WINDOW, *sweep):
        e = R.factorised_error(stack, R.at_spread(xbar, direction, s), V, action)
        rows.append({"s": s, "error": e, "first_order": c1 * s})
        log(f"s = {s:g}: e = {e:.4g} (c₁ s = {c1 * s:.4g})")
    window = rows[:len(WINDOW)]
    return {"preset": preset_name, "spec": spec.as_dict(), "probes": probes,
            "identity_at_reference": identity,
            "rounding_tolerance": mf.rounding_tolerance(T, d, spec.layers, torch.float64),
            "predicted_coefficient": c1, "window": [r["s"] for r in window],
            "fitted_slope": R.loglog_fit([r["s"] for r in window], [r["error"] for r in window]),
            "measured_coefficient": window[0]["error"] / window[0]["s"], "curve": rows,
            "seconds": time.perf_counter() - t0}


def main(argv=None) -> int:
    from numerics.presets import PRESET_NAMES
    from numerics.io import write_json
    from proofs_check.experiments.train import git_hash

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=PRESET_NAMES, required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--probes", type=int, default=1)
    args = p.parse_args(argv)
    result = scale_reach(args.scale, probes=args.probes)
    result["recorded"] = {"git": git_hash(), "torch": torch.__version__, "threads": torch.get_num_threads()}
    write_json(Path(args.json), result)
    print(f"{args.scale}: slope {result['fitted_slope']:.4f} on {result['window']}, c₁ measured "
          f"{result['measured_coefficient']:.4g} vs predicted {result['predicted_coefficient']:.4g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
