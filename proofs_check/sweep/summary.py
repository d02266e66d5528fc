"""Per claim: how often it holds over a sweep, with a Wilson interval, and its worst case.

The fraction is holds / (holds + conditional + fails): the *n/a* rows state nothing, the *error* rows
(the evaluation raised) are no evidence either way and never a counterexample or the worst case (they
are counted apart), and a *conditional* row (the claim's extra condition is not met on that stack)
counts as not holding.
Its 95 % interval is Wilson's score interval (``scipy.stats.binomtest(...).proportion_ci(
method="wilson")``), which stays inside [0, 1] and is honest at fractions near 0 or 1.  The worst
case is the row with the largest error / tolerance (a *fails* row first, then a *conditional*
one), with the ``fastslow simulate`` command that rebuilds its stack from its seed.
"""

from __future__ import annotations

import json
import math

import numpy as np

from numerics.stacks.params import knob_flag, knob_kinds
from proofs_check.sweep.grid import knob_defaults
from proofs_check.verdicts.vocabulary import StackVerdict

CONFIDENCE = 0.95
#: the worst case: fails, then conditional, then the largest error; n/a and error rows are never it
RANK = {StackVerdict.FAILS: 2, StackVerdict.CONDITIONAL: 1, StackVerdict.HOLDS: 0}
JUDGED = tuple(RANK)


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    from scipy.stats import binomtest

    if n == 0:
        return (math.nan, math.nan)
    ci = binomtest(k, n).proportion_ci(confidence, method="wilson")
    return (float(ci.low), float(ci.high))


def simulate_command(row: dict) -> str | None:
    """The ``fastslow simulate`` line that rebuilds a row's stack, or None when simulate cannot express
    it (an architecture variant: simulate draws pre-LN stacks).  Every knob is a simulate option
    (``numerics.stacks.params.knob_flag``); those at their defaults are left out."""
    if row["arch"] != "preln":
        return None
    defaults = knob_defaults()
    parts = ["fastslow simulate", f"--T {row['T']}", f"--P {0 if _missing(row['P']) else int(row['P'])}",
             f"--d {row['d']}", f"--layers {row['layers']}", f"--heads {row['heads']}",
             f"--kernel {row['kernel']}"]
    for knob, default in defaults.items():
        value = row.get(knob)
        if _missing(value) or value == default:
            continue
        if isinstance(value, (bool, np.bool_)):
            parts.append(knob_flag(knob) if value else "--no-" + knob_flag(knob)[2:])
        else:
            parts.append(f"{knob_flag(knob)} {int(value) if _is_integral_knob(knob) else value}")
    parts.append(f"--seed {row['seed']}")
    return " ".join(parts)


def _is_integral_knob(knob: str) -> bool:
    """A Parquet column of an optional integer knob reads back as float (NaN for None): print it as an int."""
    return knob_kinds()[knob] == "integer"


def _missing(value) -> bool:
    import pandas as pd

    return value is None or (not isinstance(value, (str, list, dict)) and bool(pd.isna(value)))


def _plain(value):
    """A pandas cell as a plain Python value (None for a missing one)."""
    if _missing(value):
        return None
    return value.item() if hasattr(value, "item") else value


def summarise(df) -> dict:
    """claim -> counts, the fraction that hold with its Wilson interval, the worst case."""
    out, defaults = {}, knob_defaults()
    for claim, rows in df.groupby("claim", sort=True):
        counts = rows["verdict"].value_counts().to_dict()
        applicable = int(sum(counts.get(s, 0) for s in JUDGED))
        holds = int(counts.get(StackVerdict.HOLDS, 0))
        low, high = wilson(holds, applicable)
        entry = {"rows": int(len(rows)), "counts": {k: int(v) for k, v in counts.items()},
                 "fraction_holds": holds / applicable if applicable else None,
                 "wilson_95": [low, high] if applicable else None, "worst": None}
        ranked = rows[rows["verdict"].isin(JUDGED)].assign(
            _rank=lambda r: r["verdict"].map(RANK),
            _ratio=lambda r: r["error_ratio"].fillna(-math.inf))
        if len(ranked):
            worst = ranked.sort_values(["_rank", "_ratio"], ascending=False).iloc[0]
            row = {k: _plain(v) for k, v in worst.drop(["_rank", "_ratio"]).items()}
            entry["worst"] = {"verdict": row["verdict"], "error_ratio": row["error_ratio"],
                              "error": row["error"], "tolerance": row["tolerance"], "seed": int(row["seed"]),
                              "reason": row["reason"], "arch": row["arch"], "point": json.loads(row["point"]),
                              "row_key": row["row_key"], "reproduce": simulate_command(row),
                              "spec": {k: row[k] for k in ("arch", "kernel", "T", "P", "d", "layers", "heads",
                                                           "dtype", *defaults)}}
        out[claim] = entry
    return out


def format_summary(summary: dict) -> str:
    lines = [f"{'claim':6s} {'rows':>6s} {'holds':>6s} {'cond.':>6s} {'fails':>6s} {'n/a':>5s} {'error':>5s}  "
             "fraction holds [95% Wilson]"]
    for claim, e in summary.items():
        c = e["counts"]
        frac = ("—" if e["fraction_holds"] is None else
                f"{e['fraction_holds']:.4f} [{e['wilson_95'][0]:.4f}, {e['wilson_95'][1]:.4f}]")
        lines.append(f"{claim:6s} {e['rows']:6d} {c.get('holds', 0):6d} {c.get('conditional', 0):6d} "
                     f"{c.get('fails', 0):6d} {c.get('n/a', 0):5d} {c.get('error', 0):5d}  {frac}")
        w = e["worst"]
        if w is not None:
            ratio = "—" if w["error_ratio"] is None else f"{w['error_ratio']:.3g}"
            lines.append(f"       worst: {w['verdict']}, error/tolerance {ratio} at {w['point']} seed {w['seed']}"
                         + (f" — {w['reason']}" if w["reason"] else ""))
            if w["reproduce"]:
                lines.append(f"       reproduce: {w['reproduce']}")
    return "\n".join(lines)
