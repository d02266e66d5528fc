"""The depth study's pre-registered decision rule (docs/depth_study.md), applied to the cells' records.

Per arm, at a snapshot step: p_step = the loglog slope of the depth-mean step s̄ against L, p_rough = the
median over the six invariants of the slopes of their depth-mean roughness r̄ against L
(``numerics.fitting.loglog_fit``).
- Euler-consistent: p_step ≤ −0.75 and p_rough ≤ −0.75;
- not Euler: p_step ≥ −0.6 or p_rough ≥ −0.25 (i.i.d. residual layers give about −0.5 and 0);
- otherwise undecided.
Claim 8.1's verdict is the ``gpt2`` arm's at the last step (Euler → supported, not Euler → refuted,
undecided → inconclusive). It is inconclusive whatever the trained arms show if the calibration at step 0
fails: the ``gpt2`` arm's p_rough must lie in [−0.25, 0.25] and the ``smooth`` arm's in [−1.25, −0.75].
"""

from __future__ import annotations

import statistics

from numerics.fitting import loglog_fit

EULER_STEP, EULER_ROUGH = -0.75, -0.75
NOT_EULER_STEP, NOT_EULER_ROUGH = -0.6, -0.25
CALIBRATION = {"gpt2": (-0.25, 0.25), "smooth": (-1.25, -0.75)}
RESIDUAL_NOTE = 0.35  # a fit whose max |ln residual| exceeds this is reported beside its slope
EULER, NOT_EULER, UNDECIDED = "Euler-consistent", "not Euler", "undecided"
VERDICTS = {EULER: "supported", NOT_EULER: "refuted", UNDECIDED: "inconclusive"}


def _fit(depths, values) -> dict:
    f = loglog_fit(depths, values)
    return {"slope": f.slope, "intercept": f.intercept, "max_residual": f.max_residual,
            "poor_fit": f.max_residual > RESIDUAL_NOTE}


def arm_fits(cells: list[dict], arm: str, step: int) -> dict:
    """The depth fits of one arm at one snapshot step: the step, each invariant, and the medians."""
    rows = sorted((c for c in cells if c["config"]["arm"] == arm), key=lambda c: c["config"]["layers"])
    depths = [c["config"]["layers"] for c in rows]
    snaps = [c["snapshots"][str(step)] for c in rows]
    step_fit = _fit(depths, [s["step"]["mean"] for s in snaps])
    groups = list(snaps[0]["roughness"])
    rough = {g: _fit(depths, [s["roughness"][g]["mean"] for s in snaps]) for g in groups}
    p_rough = statistics.median(r["slope"] for r in rough.values())
    return {"depths": depths, "step": step_fit, "roughness": rough, "p_step": step_fit["slope"],
            "p_rough": p_rough, "reading": reading(step_fit["slope"], p_rough)}


def reading(p_step: float, p_rough: float) -> str:
    if p_step <= EULER_STEP and p_rough <= EULER_ROUGH:
        return EULER
    if p_step >= NOT_EULER_STEP or p_rough >= NOT_EULER_ROUGH:
        return NOT_EULER
    return UNDECIDED


def decide(cells: list[dict]) -> dict:
    """The rule on the cells: each arm's fits at the first and last snapshot, the calibration and the verdict."""
    first, last = cells[0]["config"]["snapshots"][0], cells[0]["config"]["snapshots"][-1]
    arms = sorted({c["config"]["arm"] for c in cells})
    fits = {arm: {"init": arm_fits(cells, arm, first), "trained": arm_fits(cells, arm, last)} for arm in arms}
    calibration = {arm: {"p_rough": fits[arm]["init"]["p_rough"], "window": list(CALIBRATION[arm]),
                         "ok": CALIBRATION[arm][0] <= fits[arm]["init"]["p_rough"] <= CALIBRATION[arm][1]}
                   for arm in arms if arm in CALIBRATION}
    calibrated = len(calibration) == len(CALIBRATION) and all(c["ok"] for c in calibration.values())
    gpt2 = fits.get("gpt2", {}).get("trained")
    verdict = VERDICTS[gpt2["reading"]] if gpt2 and calibrated else "inconclusive"
    return {"fits": fits, "calibration": calibration, "calibrated": calibrated, "verdict": verdict,
            "readings": {arm: fits[arm]["trained"]["reading"] for arm in arms}, "first": first, "last": last}


def secondary(cells: list[dict], decision: dict) -> dict:
    """The descriptive outcomes (b), (c) at the first and last snapshot, per arm and depth."""
    out = {}
    for arm in decision["fits"]:
        rows = sorted((c for c in cells if c["config"]["arm"] == arm), key=lambda c: c["config"]["layers"])
        per = {}
        for c in rows:
            L = c["config"]["layers"]
            per[str(L)] = {when: {"fixed_pattern": c["snapshots"][str(s)]["fixed_pattern"]["mean"],
                                  "g": c["snapshots"][str(s)]["spectrum"]["g"],
                                  "eps": c["snapshots"][str(s)]["spectrum"]["eps"]}
                           for when, s in (("init", decision["first"]), ("trained", decision["last"]))}
        depths = [c["config"]["layers"] for c in rows]
        gs = [per[str(L)]["trained"]["g"] for L in depths]
        deep = per[str(depths[-1])]
        out[arm] = {"by_depth": per,
                    "factorisation_adequate": all(per[str(L)]["trained"]["fixed_pattern"] <= 0.1 for L in depths),
                    "persistent_gap": deep["trained"]["g"] >= 2.302585092994046,
                    "gap_slope_in_L": loglog_fit(depths, gs).slope if all(g > 0 for g in gs) else None,
                    "gap_widens_with_training": deep["trained"]["g"] > deep["init"]["g"]}
    return out
