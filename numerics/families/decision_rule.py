"""Claim 7.3's decision rule (coupled vs frozen gate), fixed before any run: the paired loss gap,
its noise, and the verdicts ``summarise`` reads off a finished experiment."""

from __future__ import annotations

import math

import torch

ARMS = ("coupled", "frozen")


# The decision rule of Claim 7.3, fixed before any run.  Per setting, with n seeds, each seed
# training both arms from the same initialisation on the same batches (a paired design):
#   d_s      = final eval loss(frozen, s) − final eval loss(coupled, s);  gap = mean_s d_s
#   se_seed  = sd(d_s)/√n, the training noise (seed to seed);
#   se_eval  = SE over the eval sequences of the seed-mean per-sequence difference (the eval set
#              is fixed, so the seed spread does not contain its sampling noise);
#   crit     = sqrt((t·se_seed)² + (Z·se_eval)²), t the two-sided Student t quantile at level
#              ALPHA with n − 1 degrees of freedom, Z for the eval-set SE (≥ 64 sequences);
#   excess   = final eval loss − the Bayes loss of the data model on the same eval sequences
#              (frozen: the current block only; coupled: the whole history), with its SE.
# Statements:
#   i.i.d.:    |gap| ≤ crit (the Bayes gap is 0: the gate can only add noise), and
#              gate_iid ≤ GATE_RATIO·gate_ar1 (it stays near zero);
#   every arm: excess ≥ −Z·SE (no model beats the Bayes risk of the information it sees);
#   AR(1):     gap > crit (control: the gate helps beyond noise), and its size.  On the same
#              sequences gap − G = excess(frozen) − excess(coupled) exactly (G the Bayes gap).
#              Model of finite training: the coupled arm learns the frozen arm's fast path plus
#              the slow channel, with the same steps, so excess(coupled) ≥ excess(frozen) and
#              gap ≤ G + crit + Z·se_G; and training resolves the effect: the coupled arm's
#              extra excess is below (1 − MIN_CAPTURE)·G, so gap ≥ MIN_CAPTURE·G.  Window
#              [0.5, 1 + (crit + Z·se_G)/G]·G, about [0.5, 1.3]·G here: a factor ≈ 2.6.
ALPHA = 0.01
Z = 3.0
GATE_RATIO = 0.25
MIN_CAPTURE = 0.5


def t_quantile(n: int) -> float:
    """Two-sided Student t critical value at level ALPHA with n − 1 degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(1 - ALPHA / 2, max(1, n - 1)))


def paired_gap(frozen: torch.Tensor, coupled: torch.Tensor) -> dict:
    """The paired loss gap of the decision rule above from per-sequence final eval losses
    (seeds, sequences) of each arm: gap = mean_s d_s, se_seed, se_eval, t and crit."""
    n = coupled.shape[0]
    d_s = (frozen - coupled).mean(-1)
    d_seq = (frozen - coupled).mean(0)
    se_seed = float(d_s.std() / math.sqrt(n)) if n > 1 else math.inf
    se_eval = float(d_seq.std() / math.sqrt(d_seq.numel()))
    t = t_quantile(n)
    return {"gap": float(d_s.mean()), "gap_per_seed": d_s.tolist(), "se_seed": se_seed, "se_eval": se_eval,
            "t": t, "crit": math.hypot(t * se_seed, Z * se_eval)}


def summarise(result: dict) -> dict:
    """Per setting: mean ± std of final losses per arm, the paired gap and its noise, the
    excess over the Bayes losses, the gates, and the decision rule's verdicts."""
    out = {}
    for name, s in result["settings"].items():
        row = {}
        per_seq = {}
        for arm, bayes_key in (("coupled", "hist"), ("frozen", "local")):
            finals = torch.tensor([r["curves"]["eval_loss"][-1] for r in s["runs"][arm]], dtype=torch.float64, device="cpu")  # host: Python floats from the summary
            per_seq[arm] = torch.tensor([r["curves"]["final_eval_per_seq"] for r in s["runs"][arm]],
                                        dtype=torch.float64, device="cpu")  # (seeds, sequences)
            bayes_seq = torch.tensor(s["bayes"]["eval_per_seq"][bayes_key], dtype=torch.float64, device="cpu")  # host: Python floats from the summary
            excess_seq = per_seq[arm].mean(0) - bayes_seq
            row[arm] = {"mean": float(finals.mean()), "std": float(finals.std()) if finals.numel() > 1 else 0.0,
                        "bayes": float(bayes_seq.mean()), "excess": float(excess_seq.mean()),
                        "excess_se": float(excess_seq.std() / math.sqrt(excess_seq.numel()))}
        row.update(paired_gap(per_seq["frozen"], per_seq["coupled"]))
        row["pooled_std"] = math.sqrt((row["coupled"]["std"] ** 2 + row["frozen"]["std"] ** 2) / 2)
        gates = [max(abs(g[-1]) for g in r["curves"]["gates"]) for r in s["runs"]["coupled"]]
        row["gate"] = sum(gates) / len(gates)
        row["bayes_gap"] = s["bayes"]["gap"]
        row["bayes_se"] = s["bayes"]["se_gap"]
        out[name] = row
    iid, ar = out["iid"], out["ar1"]
    G = ar["bayes_gap"]
    upper = G + ar["crit"] + Z * ar["bayes_se"]
    lower = MIN_CAPTURE * G
    beats = {f"{name}/{arm}": out[name][arm]["excess"] / (Z * out[name][arm]["excess_se"])
             for name in ("iid", "ar1") for arm in ARMS}
    out["verdict"] = {
        "iid_within_noise": abs(iid["gap"]) <= iid["crit"],
        "iid_gate_near_zero": iid["gate"] <= GATE_RATIO * ar["gate"],
        "no_arm_beats_bayes": all(v >= -1.0 for v in beats.values()),
        "excess_over_z_se": beats,
        "ar1_gap_beyond_noise": ar["gap"] > ar["crit"],
        "ar1_gap_ratio": ar["gap"] / G if G > 0 else float("nan"),
        "ar1_window": [lower / G if G > 0 else float("nan"), upper / G if G > 0 else float("nan")],
        "ar1_gap_size_ok": lower <= ar["gap"] <= upper,
    }
    return out
