"""Where the numbers of docs/trained/text-7.3-power.md and docs/verification_power.md come from.

text-7.3-power.md: the pilot's record (docs/trained/text-7.3-pilot.json) and the powered rerun's
(docs/trained/text-7.3.json), each statistic recomputed here with scipy from the per-seed losses; the power
analysis recomputed here from the pilot's gaps by the noncentral t (``scipy.stats.nct``), an independent route from
whatever code computed the doc's table; the rerun's finish time from the run log (docs/runs.json).

Each function returns the values of one passage of ``tests/docs_quotes_power.py``'s ``QUOTES``, by the names its
template gives them (numbers, ("≤", v) or ("≲", v), as in ``tests/docs_ties.py``).
"""

from __future__ import annotations

import datetime as dt
import math
import statistics

from docs_ties import _record, run

PILOT = "docs/trained/text-7.3-pilot.json"
RERUN = "docs/trained/text-7.3.json"
#: The power the analysis asks for (the doc's heading states it); :func:`power_analysis` asserts that it selects
#: the seed count the rerun recorded.
TARGET_POWER = 0.80
#: The one-sided confidence of the pilot's sd bound in the doc's sensitivity sentence.
SD_CONFIDENCE = 0.80
#: The standardised effects of the doc's sensitivity sentence (inputs of the calculation, not results).
SENSITIVITY = (2.0, 1.5, 1.0)


def _gaps(path: str) -> list[float]:
    """Δ_s = loss(frozen) − loss(coupled) per seed, from the record's per-arm final validation losses."""
    loss = _record(path)["summary"]["loss"]
    return [f - c for f, c in zip(loss["frozen"], loss["coupled"], strict=True)]


def _paired_t(gaps: list[float], alpha: float) -> dict:
    """The two-sided one-sample t-test of ``gaps`` against 0 (scipy), its d_z and (1 − alpha) interval."""
    from scipy import stats

    n = len(gaps)
    mean, sd = statistics.fmean(gaps), statistics.stdev(gaps)
    test = stats.ttest_1samp(gaps, 0.0)
    half = stats.t.ppf(1 - alpha / 2, n - 1) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "sd": sd, "dz": mean / sd, "t": float(test.statistic), "p": float(test.pvalue),
            "lo": mean - half, "hi": mean + half}


def _alpha() -> float:
    """The pre-registered level, as the rerun's record states it (the code's ALPHA wrote it)."""
    from proofs_check.experiments.text_experiment import ALPHA

    alpha = _record(RERUN)["summary"]["paired_t"]["alpha"]
    assert alpha == ALPHA, (alpha, ALPHA)
    return alpha


def power(n: int, dz: float, alpha: float) -> tuple[float, float]:
    """(critical value t_{1−α/2, n−1}, power) of the two-sided paired t-test with n seeds at a true standardised
    effect dz: T ~ nct(n − 1, dz·√n), power = P(T > crit) + P(T < −crit)."""
    from scipy import stats

    crit = float(stats.t.ppf(1 - alpha / 2, n - 1))
    nc = dz * math.sqrt(n)
    return crit, float(stats.nct.sf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc))


def seeds_needed(dz: float, alpha: float, target: float = TARGET_POWER) -> int:
    """The smallest n ≥ 2 whose power at dz reaches ``target``."""
    return next(n for n in range(2, 1000) if power(n, dz, alpha)[1] >= target)


def pilot() -> dict:
    """The pilot's section: per-seed gaps, validation windows, its paired t, the ledger's critical value (the
    record's ``t``, checked against scipy), the level."""
    rec = _record(PILOT)
    alpha = _alpha()
    gaps = _gaps(PILOT)
    windows = {len(r["final_eval_per_seq"]) for r in rec["runs"]}
    assert windows == {rec["config"]["eval_windows"]}, windows
    pt = _paired_t(gaps, alpha)
    crit = rec["summary"]["t"]
    assert abs(crit - power(pt["n"], 1.0, alpha)[0]) < 1e-9, crit   # the ledger's rule used t_{1−α/2, n−1}
    out = {"windows": windows.pop(), "mean": pt["mean"], "sd": pt["sd"], "dof": pt["n"] - 1, "dz": pt["dz"],
           "t": pt["t"], "dof2": pt["n"] - 1, "p": pt["p"], "q": 1 - alpha / 2, "qdof": pt["n"] - 1, "crit": crit,
           "dof3": pt["n"] - 1, "level": 100 * (1 - alpha)}
    out.update({f"s{i}": s for i, s in enumerate(rec["seeds"])})
    out.update({f"t{i}": s for i, s in enumerate(rec["seeds"])})
    out.update({f"g{i}": g for i, g in enumerate(gaps)})
    return out


def power_analysis() -> dict:
    """The power analysis recomputed from the pilot's gaps: the table at n = 3 … 6, the seeds needed at the
    pilot's d_z (asserted to be the rerun's recorded seed count), the sensitivity rows, the sd bound, and the
    per-seed cost (the pilot's slowest seed, both arms, wall minutes of its one-process runs)."""
    from scipy import stats

    alpha = _alpha()
    gaps = _gaps(PILOT)
    n0 = len(gaps)
    mean, sd = statistics.fmean(gaps), statistics.stdev(gaps)
    dz = mean / sd
    needed = seeds_needed(dz, alpha)
    assert needed == len(_record(RERUN)["seeds"]), needed
    assert power(needed - 1, dz, alpha)[1] < TARGET_POWER <= power(needed, dz, alpha)[1]
    out = {"target": TARGET_POWER, "target2": TARGET_POWER, "target3": TARGET_POWER, "dz": dz, "gap": mean, "sd": sd,
           "q": 1 - alpha / 2, "n_best": needed, "n_best2": needed, "dof": n0 - 1}
    for n in (3, 4, 5, 6):
        crit, pw = power(n, dz, alpha)
        out.update({f"n{n}": n, f"c{n}": crit, f"p{n}": pw})
    for i, d in enumerate(SENSITIVITY):
        out.update({f"d{i}": d, f"m{i}": seeds_needed(d, alpha)})
    sd_up = sd * math.sqrt((n0 - 1) / stats.chi2.ppf(1 - SD_CONFIDENCE, n0 - 1))
    out.update(conf=100 * SD_CONFIDENCE, sd_up=sd_up, dz_up=mean / sd_up, n_up=seeds_needed(mean / sd_up, alpha))
    per_seed: dict[int, float] = {}
    for r in _record(PILOT)["runs"]:
        per_seed[r["seed"]] = per_seed.get(r["seed"], 0.0) + r["seconds"]
    out["minutes"] = max(per_seed.values()) / 60
    return out


def outcome() -> dict:
    """The rerun's outcome: its start (the record) and finish (the run log), the paired t recomputed with scipy
    from the per-arm losses, the ledger's earlier rule's interval (the record's), the pooled 8 seeds' mean."""
    rec = _record(RERUN)
    alpha = _alpha()
    gaps = _gaps(RERUN)
    pt = _paired_t(gaps, alpha)
    started = dt.datetime.fromisoformat(rec["started"].replace("Z", "+00:00")).replace(tzinfo=None)
    entry = run("text-7-3-powered-rerun")
    assert (entry["hour"], entry["minute"]) == (started.hour, started.minute), (entry, started)
    end = started.replace(second=0) + dt.timedelta(seconds=entry["wall"])
    pooled = _gaps(PILOT) + gaps
    out = {"h0": started.hour, "m0": started.minute, "h1": end.hour, "m1": end.minute, "mean": pt["mean"],
           "sd": pt["sd"], "dz": pt["dz"], "level": 100 * (1 - alpha), "lo": pt["lo"], "hi": pt["hi"], "t": pt["t"],
           "dof": pt["n"] - 1, "p": pt["p"], "alpha": alpha, "old_lo": rec["summary"]["interval"][0],
           "old_hi": rec["summary"]["interval"][1], "pooled": statistics.fmean(pooled)}
    out.update({f"g{i}": g for i, g in enumerate(gaps)})
    return out
