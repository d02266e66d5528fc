"""A finished sweep's digest: the counts, ranges and medians docs/sweeps.md states about a shipped spec, read
from the sweep's Parquet rows and written as a small JSON next to the doc (under docs/sweeps/, one JSON per spec).

Every digest has ``sweep`` (the spec's name), ``rows`` (unique rows, ``Store.read``), ``counts`` (rows by verdict)
and ``version`` (the package version the workers ran).  A spec with a description below adds what the doc says of
its phase diagram:

* ``coarse_graining`` (3.2): ``two_sided_max`` (kernel → value scale c → the largest ‖J − QJQ‖/‖J‖ at depth L
  over depths and seeds), ``two_sided_range`` (kernel → [min, max] over every row) and ``saturation_depth``
  (kernel → c → [min, max] of the predicted ℓ*(τ = 0.5), where predicted);
* ``gate_margin`` (5.1): ``certified`` (rows with a certified g*), ``with_onset`` (those whose real stack expands
  below the search cap), ``onset_over_g_star`` ([min, median, max] of measured onset / g* on them) and
  ``uncertified_ln_gain`` (the smallest LN gain of a row with no certified gate);
* ``gate_bounds`` (5.3): ``onset_over_g_star`` and ``g_plus_over_onset`` ([min, median, max] over the *holds*
  rows: the tightness of each a priori end) and ``na_ln_gain`` (the smallest LN gain of an *n/a* row);
* ``depth_clock`` (6.4): ``compared`` (rows where both the measured ℓ* and the clock's ℓ̂* exist), ``equal``,
  ``deeper`` (ℓ̂* > ℓ*) with ``deeper_by`` ([min, max] layers), ``shallower`` (ℓ̂* < ℓ*) and ``mean_difference``
  (kernel → the mean of ℓ* − ℓ̂* in layers).

``python -m proofs_check.sweep.digest DIR --out FILE`` writes the digest of the sweep in ``DIR`` (its ``results/``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np


def _range(values) -> list[float]:
    v = np.asarray(list(values), dtype=np.float64)
    return [float(v.min()), float(v.max())]


def _spread(values) -> list[float]:
    """[min, median, max]."""
    v = np.asarray(list(values), dtype=np.float64)
    return [float(v.min()), float(np.median(v)), float(v.max())]


def _coarse_graining(df) -> dict:
    df = df.assign(last=df["measured_two_sided"].map(lambda s: json.loads(s)[-1]))
    out = {"two_sided_max": {}, "two_sided_range": {}, "saturation_depth": {}}
    for kernel, part in df.groupby("kernel"):
        out["two_sided_range"][kernel] = _range(part["last"])
        out["two_sided_max"][kernel] = {f"{c:g}": float(p["last"].max()) for c, p in part.groupby("value_scale")}
        out["saturation_depth"][kernel] = {f"{c:g}": _range(p["predicted_saturation_depth"].dropna())
                                           for c, p in part.groupby("value_scale")
                                           if p["predicted_saturation_depth"].notna().any()}
    return out


def _gate_margin(df) -> dict:
    certified = df[df["predicted_g_star"].notna()]
    onset = certified[certified["measured_onset"].notna()]
    return {"certified": len(certified), "with_onset": len(onset),
            "onset_over_g_star": _spread(onset["measured_onset"] / onset["predicted_g_star"]),
            "uncertified_ln_gain": float(df[df["predicted_g_star"].isna()]["ln_gain"].min())}


def _gate_bounds(df) -> dict:
    held = df[df["verdict"] == "holds"]
    return {"onset_over_g_star": _spread(held["measured_onset_min"] / held["predicted_g_star"]),
            "g_plus_over_onset": _spread(held["predicted_g_plus_min"] / held["measured_onset_min"]),
            "na_ln_gain": float(df[df["verdict"] == "n/a"]["ln_gain"].min())}


def _depth_clock(df) -> dict:
    both = df[df["measured_saturation_depth"].notna() & df["predicted_clock_saturation_depth"].notna()]
    gap = both["predicted_clock_saturation_depth"] - both["measured_saturation_depth"]   # ℓ̂* − ℓ*, layers
    deeper = gap[gap > 0]
    return {"compared": len(both), "equal": int((gap == 0).sum()), "deeper": len(deeper),
            "deeper_by": _range(deeper) if len(deeper) else None, "shallower": int((gap < 0).sum()),
            "mean_difference": {k: float(-g.mean()) for k, g in gap.groupby(both["kernel"])}}


#: the shipped specs whose phase diagrams docs/sweeps.md describes
DIGESTS = {"coarse_graining": _coarse_graining, "gate_margin": _gate_margin, "gate_bounds": _gate_bounds,
           "depth_clock": _depth_clock}


def digest(df) -> dict:
    """The digest of one sweep's rows (``Store.read()``; one spec, by its ``sweep`` column)."""
    (name,) = df["sweep"].unique()
    (version,) = df["version"].unique()
    out = {"sweep": name, "rows": len(df), "version": version,
           "counts": {str(k): int(v) for k, v in df["verdict"].value_counts().sort_index().items()}}
    if name in DIGESTS:
        out.update(DIGESTS[name](df))
    return out


def write(sweep_dir, path) -> dict:
    """Read the sweep in ``sweep_dir``, write its digest to ``path`` (atomically), return it."""
    from numerics.storage.io import write_json
    from proofs_check.sweep.store import Store

    out = digest(Store(sweep_dir).read())
    bad = [k for k, v in _leaves(out) if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        raise ValueError(f"the digest of {sweep_dir} has non-finite values at {bad}")
    write_json(path, out)
    return out


def _leaves(tree, prefix=""):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _leaves(v, f"{prefix}/{k}")
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _leaves(v, f"{prefix}/{i}")
    else:
        yield prefix, tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proofs_check.sweep.digest", description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep_dir", help="the --out folder of a finished `fastslow sweep`")
    parser.add_argument("--out", required=True, help="the digest's JSON file")
    args = parser.parse_args(argv)
    out = write(args.sweep_dir, args.out)
    print(f"digest of {out['sweep']} ({out['rows']} rows) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
