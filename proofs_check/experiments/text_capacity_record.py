"""Claim 7.3 on text, the capacity control's record: its schema, summary, finding and figure.

The decision rules are those pre-registered in docs/trained/text-7.3-capacity.md:

* primary: Δ^cap_s = loss(capacity) − loss(coupled), two-sided paired t, α = 0.01;
* secondary: Δ^fc_s = loss(frozen) − loss(capacity), with the recorded frozen arm, only on seeds
  whose coupled arm reproduces the recorded one (per-window losses within :data:`REPRODUCED`);
* G1: layer ℓ's slow path opens when its output share ρ_ℓ ≥ :data:`RHO_MIN` in every seed;
* G2: it opens for cross-block information when log(ρ_ℓ(coupled)/ρ_ℓ(capacity)) > 0 by the same
  test (primary layer :data:`PRIMARY_LAYER`).

The old sign rule is :func:`sign_rule`: it is not invariant under (g, W_O) → (−g, −W_O).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from proofs_check.experiments.text_capacity import CAPACITY_RECORD, PREREGISTRATION, RUN_ARMS

RHO_MIN = 0.01
PRIMARY_LAYER = 0
#: nats/byte: the largest per-window difference under which the coupled arm counts as the recorded one
REPRODUCED = 1e-6
OPEN_FRACTION = 0.1


class Run(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int
    arm: str
    checkpoint: str
    final_eval_loss: float
    final_eval_per_seq: list[float]
    eval_step: list[int]
    eval_loss: list[float]
    lr: list[float]
    gates_final: list[float]
    gates: list[list[float]]
    tokens: int
    seconds: float
    trained_parameters: int
    slow_share: list[float]
    gate_norm_product: list[float]


class CapacityRecord(BaseModel):
    """The committed record: the runs, their provenance and the summary by the pre-registered rules."""
    model_config = ConfigDict(extra="forbid")
    config: dict
    seeds: list[int]
    arms: list[str]
    runs: list[Run]
    source_key: str
    started: str
    finished: str
    torch: str
    git: str
    cut: str | None = None
    summary: dict | None = None


def paired_test(gaps) -> dict:
    """The pre-registered paired t (text_experiment.paired_t) with this record's rule named."""
    from proofs_check.experiments.text_experiment import paired_t

    return {**paired_t(gaps), "rule": PREREGISTRATION}


def sign_rule(gates: list[list[float]], reach: float) -> list[int]:
    """The old rule: layers whose gate ends with one sign in every seed and |g| > OPEN_FRACTION·reach."""
    layers = range(len(gates[0]))
    return [l for l in layers
            if all(math.copysign(1, row[l]) == math.copysign(1, gates[0][l]) for row in gates)
            and all(abs(row[l]) > OPEN_FRACTION * reach for row in gates)]


def summarise(record: dict, recorded: dict) -> dict:
    """The pre-registered tests on ``record`` (this run) with ``recorded`` (docs/trained/text-7.3.json)."""
    runs = {(r["seed"], r["arm"]): r for r in record["runs"]}
    old = {(r["seed"], r["arm"]): r for r in recorded["runs"]}
    reproduced = {}
    for s in record["seeds"]:
        if (s, "coupled") in runs and (s, "coupled") in old:
            a, b = runs[s, "coupled"]["final_eval_per_seq"], old[s, "coupled"]["final_eval_per_seq"]
            reproduced[s] = max(abs(x - y) for x, y in zip(a, b))
    coupled = {s: runs[s, "coupled"] if (s, "coupled") in runs else
               old[s, "coupled"] if reproduced.get(record["seeds"][0], math.inf) <= REPRODUCED else None
               for s in record["seeds"]}
    cap_seeds = [s for s in record["seeds"] if (s, "capacity") in runs and coupled[s] is not None]
    d_cap = [runs[s, "capacity"]["final_eval_loss"] - coupled[s]["final_eval_loss"] for s in cap_seeds]
    fc_seeds = [s for s in cap_seeds if reproduced.get(s, math.inf) <= REPRODUCED]
    d_fc = [old[s, "frozen"]["final_eval_loss"] - runs[s, "capacity"]["final_eval_loss"] for s in fc_seeds]
    both = [s for s in record["seeds"] if (s, "capacity") in runs and (s, "coupled") in runs]
    share = {arm: [runs[s, arm]["slow_share"] for s in both] for arm in RUN_ARMS}
    layers = len(share["coupled"][0]) if both else 0
    g1 = {arm: [l for l in range(layers) if all(row[l] >= RHO_MIN for row in share[arm])] for arm in RUN_ARMS}
    g2 = [paired_test([math.log(c[l] / k[l]) for c, k in zip(share["coupled"], share["capacity"])])
          for l in range(layers)]
    reach = sum(old[record["seeds"][0], "coupled"]["lr"])
    return {"n_cap": len(cap_seeds), "seeds_cap": cap_seeds, "gap_cap_per_seed": d_cap,
            "cap_vs_coupled": paired_test(d_cap) if d_cap else None,
            "n_fc": len(fc_seeds), "seeds_fc": fc_seeds, "gap_fc_per_seed": d_fc,
            "frozen_vs_capacity": paired_test(d_fc) if d_fc else None,
            "reproduced_max_diff": {str(s): v for s, v in reproduced.items()}, "reproduced_tolerance": REPRODUCED,
            "seeds_both": both, "slow_share": share, "rho_min": RHO_MIN,
            "gate_norm_product": {arm: [runs[s, arm]["gate_norm_product"] for s in both] for arm in RUN_ARMS},
            "g1_open_layers": g1, "g2_per_layer": g2, "primary_layer": PRIMARY_LAYER,
            "g2_primary": g2[PRIMARY_LAYER]["verdict"] if g2 else None,
            "sign_rule_open_layers": {arm: sign_rule([runs[s, arm]["gates_final"] for s in both], reach)
                                      for arm in RUN_ARMS} if both else None,
            "trained_parameters": {arm: sorted({runs[s, arm]["trained_parameters"] for s in both}) for arm in RUN_ARMS},
            "reading": reading(d_cap, d_fc)}


def reading(d_cap, d_fc) -> str:
    """The pre-registration's table: what the two tests together say."""
    cap = paired_test(d_cap)["verdict"] if len(d_cap) >= 2 else "no test"
    fc = paired_test(d_fc)["verdict"] if len(d_fc) >= 2 else "no test"
    if cap == "hurts":
        return "the independent history beats the true one"
    if cap == "helps" and fc == "helps":
        return (f"both: cross-block information and capacity; share due to cross-block information "
                f"{sum(d_cap) / len(d_cap) / (sum(d_cap) / len(d_cap) + sum(d_fc) / len(d_fc)):.2f}")
    if cap == "helps":
        return "the gain is the slow path's cross-block information" + ("" if fc == "not detected" else
                                                                         f" (capacity: {fc})")
    if fc == "helps":
        return "the gain is capacity (or corpus-level statistics any window shares)"
    return "not attributed at this n"


def load(path: Path = CAPACITY_RECORD) -> dict | None:
    """The committed record, validated by :class:`CapacityRecord` (None when absent)."""
    if not path.exists():
        return None
    return CapacityRecord.model_validate(json.loads(path.read_text())).model_dump()
