"""Reach of 2.1/2.3 at pretraining size: the factorised J·V against jvp off the reference, matrix-free.

The stack is a scale preset (``numerics.stacks.presets``: random causal pre-LN weights, e.g. GPT-2 small,
T = 1024, d = 768, 12 layers).  J_fact = Σ_m A^m ⊗ K_m is applied matrix-free
(``numerics.linearised.matrix_free.JacobianAction``, O(L T d²) per probe); the true action is
``torch.func.jvp`` of the stack at X = 1x̄ᵀ + tÊ with spread s (``numerics.text.reach``).

The prediction is made at the reference alone, before any off-reference measurement: one
triple-nested jvp (``numerics.text.reach.factorised_taylor``) gives J₀V, D²f[Ê, V] and D³f[Ê, Ê, V], hence
the exponent 1, the coefficient c₁ and the bound κ̄ on the slope's first-order departure.  The check is
the toy ledger's (``proofs_check.runners.reach.exponent_check``) on a window of ``WINDOW_POINTS`` spreads
whose top keeps κ̄ t ≤ 0.01: |fitted slope − 1| and |measured/predicted c₁ − 1| within their derived
tolerances.  Then e(s) is swept up to the spread text reaches.  A recorded run, not a ledger verdict.

Run: ``python -m proofs_check.runners.reach_scale --scale gpt2-small --json docs/reach/gpt2-small.json
--figure docs/reach/gpt2-small.png`` (float64 on the CPU, one thread, measured on a 2-core machine at
load 8–15: ≈ 70 s wall per jvp of GPT-2 small, 16 min for the triple-nested prediction, 21.5 min in all).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from numerics.linearised import matrix_free as mf
from numerics.text import reach as R
#: spreads on the fit window (each one jvp of the whole stack)
WINDOW_POINTS = 2
#: the spread of the shipped text embedded by the imported GPT-2 (wte + wpe, T = 64; text_spread of
#: docs/trained/gpt2-bytes-reach.json, 0.856), the top of the sweep
TEXT_SPREAD = 0.86
SWEEP = (0.1, TEXT_SPREAD)


def scale_reach(preset_name: str, *, probes: int = 1, seed: int = 0, sweep=SWEEP, progress: bool = True) -> dict:
    """Prediction at 1x̄ᵀ, the window check of exponent and coefficient, and e(s) on ``sweep`` (float64, CPU)."""
    from numerics.stacks.presets import preset
    from proofs_check.progress import track
    from proofs_check.runners.reach import exponent_check

    spec = preset(preset_name, seed=seed)
    t0 = time.perf_counter()
    seconds = {}

    def log(phase, msg):
        seconds[phase] = time.perf_counter() - t0 - sum(seconds.values())
        if progress:
            print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)

    stack = spec.build()
    T, d = spec.T, spec.d
    g = torch.Generator().manual_seed(seed + 1)
    xbar = torch.randn(d, generator=g, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator), as the spec's CPU stack
    direction = torch.randn(T, d, generator=g, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator), as the spec's CPU stack
    V = mf.probes(probes, T, d, seed=seed + 2)
    action = mf.JacobianAction(stack, xbar)
    gamma = mf.rounding_tolerance(T, d, spec.layers, torch.float64)
    log("build", "stack and J_fact built")
    ex = R.factorised_taylor(stack, xbar, direction, V)
    JV_fact, kappa = action.apply(V)
    identity = R.pooled_ratio(JV_fact - ex.d0, ex.d0)
    log("prediction", f"prediction at 1x̄ᵀ: c₁ = {ex.coefficient:.6g}, κ̄ = {ex.kappa_bar:.3g}, "
        f"J_fact V vs jvp {identity:.2e}")

    def measure(s):
        return R.factorised_error(stack, R.at_spread(xbar, direction, s), V, action)

    check = exponent_check("2.1/2.3 factorised J·V error", ex, measure, gamma, points=WINDOW_POINTS)
    log("window", f"window {[f'{s:.3g}' for s in check['window']]}: slope {check['fitted_slope']:.6f} "
        f"(1 ± {check['slope_tolerance']:.2e}), c₁ {check['coefficient']:.6g} / {ex.coefficient:.6g}")
    rows = [{"s": s, "error": e, "first_order": ex.coefficient * s, "next_order": ex.predicted(s)}
            for s, e in zip(check["window"], check["values"])]
    for s in track(sweep, "reach sweep", unit="spread", label=lambda s: f"s = {s:g}", enabled=progress):
        rows.append({"s": s, "error": measure(s), "first_order": ex.coefficient * s, "next_order": ex.predicted(s)})
    log("sweep", "; ".join(f"s = {r['s']:g}: e = {r['error']:.4g}" for r in rows[WINDOW_POINTS:]))
    return {"preset": preset_name, "spec": spec.as_dict(), "probes": probes,
            "identity_at_reference": identity, "identity_tolerance": gamma * float(kappa.max()),
            "rounding_tolerance": gamma, "expansion": ex.as_dict(), "check": check,
            "predicted_coefficient": ex.coefficient, "window": check["window"],
            "fitted_slope": check["fitted_slope"], "measured_coefficient": check["coefficient"],
            "text_spread": TEXT_SPREAD if TEXT_SPREAD in sweep else None,
            "curve": rows, "phase_seconds": seconds, "seconds": time.perf_counter() - t0}


def render(result: dict, path: Path) -> None:
    """log–log e(s): measured, first order c₁s and next order (both predicted at 1x̄ᵀ), window and text spread."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from numerics.storage.io import write_bytes

    rows = result["curve"]
    xs = [r["s"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.loglog(xs, [r["error"] for r in rows], "o", color="C0", label="measured ‖J(X)V − J_fact V‖/‖J(X)V‖")
    grid = sorted(set(xs) | {x * f for x in xs for f in (0.5, 0.75, 1.25, 1.5) if x * f < 0.99})
    c = result["predicted_coefficient"]
    ax.loglog(grid, [c * s for s in grid], ":", color="C1", label=f"first order c₁s, c₁ = {c:.4g} (predicted)")
    ax.loglog(xs, [r["next_order"] for r in rows], "x", color="C2", label="to second order (predicted)")
    ax.axvspan(result["window"][0], result["window"][-1], color="C7", alpha=0.15,
               label=f"fit window: slope {result['fitted_slope']:.5f}")
    if result.get("text_spread"):
        ax.axvline(result["text_spread"], color="C3", ls="--", lw=0.9, label=f"text spread {result['text_spread']}")
    sp = result["spec"]
    ax.set_title(f"2.1/2.3 at {result['preset']} (T = {sp['T']}, d = {sp['d']}, L = {sp['layers']}, random causal "
                 "pre-LN)", fontsize=9)
    ax.set_xlabel("token spread s = ‖X − 1x̄ᵀ‖/‖X‖")
    ax.set_ylabel("relative error of the factorised J·V")
    ax.legend(fontsize=7)
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    write_bytes(path, buf.getvalue())


def main(argv=None) -> int:
    from numerics.stacks.presets import PRESET_NAMES
    from numerics.storage.io import write_json
    from proofs_check.experiments.train import git_hash

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=PRESET_NAMES, required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--figure", help="PNG of e(s) against the prediction")
    p.add_argument("--probes", type=int, default=1)
    args = p.parse_args(argv)
    if args.probes < 1:
        p.error(f"--probes must be ≥ 1, got {args.probes}")
    result = scale_reach(args.scale, probes=args.probes)
    result["recorded"] = {"git": git_hash(), "torch": torch.__version__, "threads": torch.get_num_threads()}
    write_json(Path(args.json), result)
    if args.figure:
        render(result, Path(args.figure))
    c = result["check"]
    print(f"{args.scale}: slope {c['fitted_slope']:.6f} (predicted 1 ± {c['slope_tolerance']:.2e}) on "
          f"{[round(s, 6) for s in c['window']]}, c₁ measured {c['coefficient']:.6g} vs predicted "
          f"{c['predicted_coefficient']:.6g} (± {c['coefficient_tolerance']:.2e}): {'ok' if c['ok'] else 'NOT as predicted'}")
    return 0 if c["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
