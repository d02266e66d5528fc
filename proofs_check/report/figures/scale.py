"""Figure of the scale path: each scale claim's normalised error against the stack's size."""

from __future__ import annotations

import glob
import json
import os

from proofs_check.report.figures import figure, save

#: (T, d, layers, heads) computed live; the larger sizes (up to gpt2-small, T = 1024, d = 768) come from
#: recorded scale ledgers (docs/scale/*.json, out/scale*.json), which take tens of minutes to rerun
FLOOR = 1e-8  # where an error of exactly 0 (an excess clipped at 0) is drawn
LIVE_SIZES = [(8, 8, 2, 2), (32, 32, 3, 4)]
RECORDED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        "docs", "scale")


def recorded_ledgers(cache_dir: str | None) -> list[dict]:
    """Scale ledgers written by ``fastslow check --scale P --json`` (docs/scale/*.json, out/scale*.json, the cache folder,
    and the paths in FASTSLOW_SCALE_LEDGERS, colon-separated): the large presets are too slow to rerun here."""
    paths = set(glob.glob("out/scale*.json")) | set(glob.glob(os.path.join(RECORDED, "*.json")))
    if cache_dir:
        paths |= set(glob.glob(os.path.join(cache_dir, "scale*.json")))
    paths |= {p for p in os.environ.get("FASTSLOW_SCALE_LEDGERS", "").split(":") if p}
    out = []
    for p in sorted(paths):
        try:
            with open(p) as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        if "scale" in data.get("options", {}):
            out.append(data)
    return out


def points(ctx) -> dict[str, list[tuple[int, int, float]]]:
    """claim -> [(T, d, error / tolerance)] over the live sizes and the recorded ledgers."""
    from proofs_check.verdicts.registry import load_checks, scale_claims
    from proofs_check.verdicts.scale_run import ScaleRun
    from proofs_check.runners.scale import run_scale_claim

    load_checks()
    series: dict[str, list] = {c: [] for c in scale_claims()}
    ledgers = []
    for sizes in LIVE_SIZES:
        run = ScaleRun("custom", sizes=sizes, device=ctx.device)
        ledgers.append({"claims": [run_scale_claim(c, run) for c in scale_claims()]})
    ledgers += recorded_ledgers(ctx.cache_dir)
    for ledger in ledgers:
        for c in ledger["claims"]:
            num = c.get("numeric")
            if c["id"] in series and num and num.get("tolerance"):
                size = c["size"]
                series[c["id"]].append((size["T"], size["d"], num["max_error"] / num["tolerance"]))
    return series


@figure("scale_error_vs_size", claim="2.3", title="Scale claims: normalised error (error / tolerance) vs T·d")
def scale_error_vs_size(ctx, out_dir):
    import matplotlib.pyplot as plt

    series = points(ctx)
    fig, ax = plt.subplots(figsize=(7.5, 5))
    markers = "os^vD<>pXh*"
    for i, (cid, pts) in enumerate(series.items()):
        pts = sorted(set(pts))
        if not pts:
            continue
        x = [T * d for T, d, _ in pts]
        y = [max(v, FLOOR) for _, _, v in pts]
        ax.loglog(x, y, marker=markers[i % len(markers)], ls="-", label=cid)
    ax.axhline(1.0, color="k", ls="--", label="tolerance (error = tolerance)")
    ax.set_xlabel("T·d (tokens × width); T = 8 … 1024, d = 8 … 768")
    ax.set_ylabel(f"error / tolerance (≤ 1 passes; exact zeros at {FLOOR:g})")
    ax.set_title("Claims at scale, matrix-free (float64)")
    ax.legend(ncol=3, fontsize=8)
    return save(fig, out_dir, "scale_error_vs_size")
