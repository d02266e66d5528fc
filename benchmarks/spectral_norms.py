"""Benchmark: the scale forms' spectral norms (Claims 3.1 and 5.1) by three routes, timed in one run.

``python -m benchmarks.spectral_norms [--quick]`` times, interleaved, on a batch of Gaussian float64
matrices at the scale forms' sizes (d = 768: 3.1's G_ℓ(λ) and their products; 2d = 1536: 5.1's slow-mode
maps): ``torch.linalg.matrix_norm(ord=2)`` (an SVD), ``spectral_norm`` (every eigenvalue of MᵀM) and
``top_singular_value`` (the largest eigenvalue of MᵀM alone, LAPACK ?syevr via SciPy).  It reports each
route's median and the ratios against the SVD and against ``spectral_norm``, and the largest relative
difference of the three results, which the routes' rounding bound n·u (times a few) must cover.
"""

from __future__ import annotations

import argparse
import json

import torch

from benchmarks.timing import interleaved_median_times
from numerics.families.layer_systems import spectral_norm, top_singular_value
from numerics.precision import unit_roundoff


def run(quick: bool, device: str = "cpu") -> dict:
    """Median seconds per route and their ratios at n = 768 (4 matrices) and n = 1536 (2; quick: 768 only)."""
    cases = [(4, 768)] if quick else [(4, 768), (2, 1536)]
    out = []
    g = torch.Generator().manual_seed(0)
    for k, n in cases:
        M = torch.randn(k, n, n, generator=g, dtype=torch.float64, device="cpu").to(device)
        fns = {"svd": lambda: torch.linalg.matrix_norm(M, ord=2), "eigvalsh": lambda: spectral_norm(M),
               "top": lambda: top_singular_value(M)}
        times = interleaved_median_times(fns, device, repeats=2 if quick else 3)
        ref = fns["svd"]()
        diff = max(float(((fns[r]() - ref) / ref).abs().max()) for r in ("eigvalsh", "top"))
        bound = 4 * n * unit_roundoff(torch.float64)   # √λ of MᵀM: n·u on λ, halved by the root, ×8 margin
        out.append({"matrices": k, "n": n, **{f"{r}_s": t["median"] for r, t in times.items()},
                    "svd_over_top": times["svd"]["median"] / times["top"]["median"],
                    "eigvalsh_over_top": times["eigvalsh"]["median"] / times["top"]["median"],
                    "max_rel_diff": diff, "bound": bound, "agree": diff <= bound})
    return {"name": "spectral_norms", "cases": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 768 only, 2 repeats")
    args = ap.parse_args()
    print(json.dumps(run(args.quick), indent=1))


if __name__ == "__main__":
    main()
