"""Benchmark: the scale path — factorised J·V against ``torch.func.jvp``, and the scale claims' cost.

``jv_vs_jvp``: at d = 768, L = 12, 12 heads (GPT-2-small width and depth), T = 256, 1024, 4096,
float64, one Gaussian probe V, both sides at the token-homogeneous reference 1x̄ᵀ:

* **factorised**: ``numerics.linearised.matrix_free.JacobianAction`` — the coefficients K_m (O(L² d³), once
  per stack, independent of T) and one application Σ_m A^m V K_mᵀ (O(L T d²));
* **jvp**: ``torch.func.jvp`` of the real stack (O(L (T² d + T d²)) with the softmax tangents).

Both are checked against each other (relative error ≤ the stated rounding tolerance) before a time
is reported.  At T = 4096 the full 12-layer jvp takes many minutes on two cores: there the jvp side
is one layer's jvp × L (every layer has the same shapes, so the time is additive; stated in the
row as ``jvp_extrapolated``), the factorised side is the whole stack.  The growth of each side
with T is the fitted log-log slope.  The dense ``jacrev`` baseline ((Td)² entries) does not fit
at any of these sizes and is recorded as such; ``benchmarks/jacobian.py`` has it where it fits.

``claims``: every scale claim (``proofs_check.runners.scale``) at a preset — gpt2-small in the full run,
ci in the quick one — in a subprocess, so that its seconds and peak RSS are its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import torch

from numerics.linearised import matrix_free as mf
from numerics.stacks.spec import StackSpec
from numerics.fitting import loglog_fit
from proofs_check.tables import text_table

WIDTH = {"d": 768, "layers": 12, "heads": 12}
FULL_T = (256, 1024, 4096)
QUICK = {"T": (32, 128), "d": 64, "layers": 2, "heads": 4}
FULL_STACK_JVP_LIMIT = 1024   # above this T the jvp side is one layer × L
DENSE_LIMIT_BYTES = 2**30     # an assembled (Td)² float64 Jacobian above this is not built


def _jv_row(T: int, d: int, layers: int, heads: int, device: str) -> dict:
    stack = StackSpec.of(T=T, d=d, layers=layers, heads=heads, kernel="causal", seed=0, dtype="float64", device=device).build()
    xbar = mf.probes(1, 1, d, seed=1, device=device)[0, 0]
    X = mf.reference_state(stack, xbar)
    V = mf.probes(1, T, d, seed=2, device=device)
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    t0 = time.perf_counter()
    act = mf.JacobianAction(stack, xbar)
    sync()
    t1 = time.perf_counter()
    pred, kappa = act.apply(V)
    sync()
    t2 = time.perf_counter()
    row = {"T": T, "d": d, "layers": layers, "heads": heads, "factorised_build_seconds": t1 - t0,
           "factorised_apply_seconds": t2 - t1, "factorised_seconds": t2 - t0}
    gamma = mf.rounding_tolerance(T, d, layers, torch.float64)
    if T <= FULL_STACK_JVP_LIMIT:
        t3 = time.perf_counter()
        ref = mf.stack_jvp(stack, X, V)
        sync()
        row["jvp_seconds"] = time.perf_counter() - t3
        row["jvp_extrapolated"] = False
        err = float(mf.relative_errors(pred, ref).max())
        row.update(relative_error=err, tolerance=float(kappa.max()) * gamma)
        if not err <= row["tolerance"]:
            raise AssertionError(f"T={T}: factorised J·V differs from the jvp by {err:.2e} > {row['tolerance']:.2e}")
    else:
        layer = stack.layers[0]
        t3 = time.perf_counter()
        mf.stack_jvp(layer, X, V)
        sync()
        row["jvp_seconds"] = (time.perf_counter() - t3) * layers
        row["jvp_extrapolated"] = True
        row["relative_error"] = None
    row["ratio_jvp_over_factorised"] = row["jvp_seconds"] / row["factorised_seconds"]
    row["ratio_jvp_over_apply"] = row["jvp_seconds"] / row["factorised_apply_seconds"]
    dense_bytes = (T * d) ** 2 * 8
    row["dense_jacrev"] = ("fits" if dense_bytes <= DENSE_LIMIT_BYTES
                           else f"not run: (Td)² float64 = {dense_bytes / 2**30:.0f} GiB")
    del stack, act
    return row


def run_jv(quick: bool, device: str) -> dict:
    cfg = QUICK if quick else {"T": FULL_T, **WIDTH}
    _jv_row(8, 8, 1, 1, device)   # warm-up: torch.func's first jvp pays its import and dispatch set-up
    rows = [_jv_row(T, cfg["d"], cfg["layers"], cfg["heads"], device) for T in cfg["T"]]
    Ts = [r["T"] for r in rows]
    return {"config": {"T": list(Ts), "d": cfg["d"], "layers": cfg["layers"], "heads": cfg["heads"],
                       "dtype": "float64", "kernel": "causal"},
            "rows": rows,
            "growth_jvp": loglog_fit(Ts, [r["jvp_seconds"] for r in rows]).slope,
            "growth_factorised_apply": loglog_fit(Ts, [r["factorised_apply_seconds"] for r in rows]).slope,
            "growth_factorised_total": loglog_fit(Ts, [r["factorised_seconds"] for r in rows]).slope}


def run_claims(quick: bool, device: str) -> dict:
    """``fastslow check --scale PRESET`` in a subprocess: per-claim seconds and peak RSS."""
    name = "ci" if quick else "gpt2-small"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scale.json")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "proofs_check.cli", "check", "--scale", name,
                               "--device", device, "--no-progress", "--json", path],
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        if not os.path.exists(path):
            raise RuntimeError(f"check --scale {name} wrote no ledger (exit {proc.returncode}): {proc.stderr[-400:]}")
        with open(path) as fh:
            ledger = json.load(fh)
    claims = {c["id"]: {"status": c["status"], "seconds": c.get("seconds"), "peak_rss_gib": c.get("peak_rss_gib"),
                        "error": (c.get("numeric") or {}).get("max_error"),
                        "tolerance": (c.get("numeric") or {}).get("tolerance")}
              for c in ledger["claims"] if c["status"] != "skipped"}
    return {"preset": name, "exit_status": proc.returncode, "wall_seconds": wall,
            "seconds": ledger.get("seconds"), "peak_rss_gib": ledger.get("peak_rss_gib"), "claims": claims,
            "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}


def run(quick: bool, device: str) -> dict:
    """Both parts; FASTSLOW_BENCH_SCALE_CLAIMS=0 leaves out the claims' run (gpu_check.sh runs its own)."""
    out = {"jv_vs_jvp": run_jv(quick, device)}
    if os.environ.get("FASTSLOW_BENCH_SCALE_CLAIMS", "1") != "0":
        out["claims"] = run_claims(quick, device)
    return out


def format_lines(result: dict) -> list[str]:
    """Plain-text lines for ``benchmarks.run.format_table``."""
    lines = []
    jv = result.get("jv_vs_jvp", {})
    if "rows" in jv:
        c = jv["config"]
        lines.append(f"\nfactorised J·V vs torch.func.jvp (d={c['d']}, L={c['layers']}, {c['heads']} heads, float64, "
                     f"one probe at 1x̄ᵀ):")
        rows = [("T", "jvp s", "build s", "apply s", "jvp/total", "jvp/apply", "rel. err")]
        rows += [(r["T"], f"{r['jvp_seconds']:.2f}", f"{r['factorised_build_seconds']:.2f}",
                  f"{r['factorised_apply_seconds']:.3f}", f"{r['ratio_jvp_over_factorised']:.1f}",
                  f"{r['ratio_jvp_over_apply']:.0f}",
                  "n/a (jvp = 1 layer × L)" if r["jvp_extrapolated"] else f"{r['relative_error']:.1e}")
                 for r in jv["rows"]]
        lines += ["  " + line for line in text_table(rows, align=">>>>>><")]
        lines.append(f"  growth with T (log-log slope): jvp {jv['growth_jvp']:.2f}, factorised apply "
                     f"{jv['growth_factorised_apply']:.2f}, factorised total {jv['growth_factorised_total']:.2f}; "
                     f"dense jacrev: {jv['rows'][0]['dense_jacrev']} at the smallest T")
    cl = result.get("claims", {})
    if "claims" in cl:
        lines.append(f"\nscale claims at {cl['preset']}: {cl['seconds']:.0f} s in all, peak RSS {cl['peak_rss_gib']:.2f} GiB "
                     f"(exit {cl['exit_status']}, load {cl['load_average_1min']:.1f})")
        lines.append("  " + "  ".join(f"{k}: {v['seconds']:.0f}s/{v['peak_rss_gib']:.1f}GiB {v['status']}"
                                      for k, v in cl["claims"].items()))
    return lines
