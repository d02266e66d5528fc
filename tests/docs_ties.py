"""Where the numbers docs/theory.md quotes come from: the ledger's records, the committed measurement files, the
code's pre-registered constants, or a mathematical constant evaluated here.

Each function returns the values of one passage of ``tests/test_docs_numbers.py``'s ``QUOTES``, by the names the
passage's template gives them.  A value is a number (the quote must be it at the quote's precision), ("≤", v)
(the quote is the tightest bound at its precision) or ("≲", v) (a rounding-level number: the quote bounds it
within a decade, because its leading digit depends on the BLAS's summation order).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBER = r"(?P<{}>[−+]?[0-9]+(?:,[0-9]{{3}})*(?:\.[0-9]+)?(?:e[−-]?[0-9]+)?)"


def passage(template: str) -> str:
    """A regular expression for ``template``: its text literally (any run of whitespace matching any other), each
    ``{name}`` a quoted number captured as group ``name``."""
    parts = re.split(r"\{(\w+)\}", template)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(NUMBER.format(part))
        else:
            out.append(r"\s+".join(re.escape(w) for w in re.split(r"\s+", part)))
    return "".join(out)


def _record(path: str) -> dict:
    return json.loads((ROOT / path).read_text())


def _claim(cid: str) -> dict:
    return next(c for c in _record("docs/ledger.json")["claims"] if c["id"] == cid)


def _rows(cid: str, **match) -> list[dict]:
    return [r for r in _claim(cid)["numeric"]["table"] if all(r.get(k) == v for k, v in match.items())]


def _parse(text: str, pattern: str) -> list[float]:
    m = re.search(pattern, text)
    assert m, f"the record no longer says {pattern!r}: {text}"
    return [float(g) for g in m.groups()]


def euler_1_1() -> dict:
    """Claim 1.1's ledger draw: the errors by L, their log–log slope over L = 16 … 64 refitted here (least
    squares, an independent route from the ledger's fit), and the i.i.d. control's slope from its record."""
    import numpy as np

    err = {r["L"]: r["error"] for r in _claim("1.1")["numeric"]["table"] if "L" in r}
    Ls = [16, 32, 64]
    slope = -np.polyfit(np.log(Ls), np.log([err[L] for L in Ls]), 1)[0]
    (ctl,) = _parse(_claim("1.1")["control"]["detail"], r"fitted slope ([0-9.]+)")
    return {"e8": err[8], "e16": err[16], "e32": err[32], "e64": err[64], "slope": slope, "ctl": ctl}


def autograd_1_2() -> dict:
    return {"tol": _claim("1.2")["numeric"]["tolerance"]}


def blocks_2_1() -> dict:
    (row,) = _rows("2.1", kernel="causal", T=6, d=8, L=4)
    return {"off": ("≲", row["off_block"]), "block": ("≲", row["block_err"])}


def pascal_cond(T: int) -> float:
    """cond₂ of the causal kernel's eigenbasis, the Pascal matrix S_ik = C(i, k) with unit-norm columns, exactly
    (mpmath at 50 digits: a mathematical constant)."""
    import mpmath

    with mpmath.workdps(50):
        S = mpmath.matrix([[mpmath.binomial(i, k) for k in range(T)] for i in range(T)])
        for k in range(T):
            norm = mpmath.sqrt(sum(S[i, k] ** 2 for i in range(T)))
            for i in range(T):
                S[i, k] /= norm
        s = mpmath.svd_r(S, compute_uv=False)
        return float(max(s) / min(s))


def pascal_2_3() -> dict:
    """:func:`pascal_cond` at T = 4 … 32, and the ledger's float64 measurement of the basis its eigensolver
    returns at T = 32."""
    out = {f"c{T}": pascal_cond(T) for T in (4, 8, 16, 32)}
    (row,) = [r for r in _claim("2.3")["numeric"]["table"] if r.get("T") == 32 and "cond_S_float64" in r]
    out["f32"] = row["cond_S_float64"]
    return out


def modes_3() -> dict:
    """r at the last layer for λ = 1/2, 1/3, 1/6 on Claim 3.1's causal d = 16 stacks (the ledger's table)."""
    r = {int(row["c"]): row["r_last"] for row in _rows("3.1", kernel="causal", d=16, seed=0)}
    pick = {"half": 0, "third": 1, "sixth": 4}
    out = {f"c{c}_{name}": r[c][i] for c in (0, 5, 20) for name, i in pick.items()}
    out.update(c0_mean=statistics.fmean(r[0]), c20_lo=min(r[20]), c20_hi=max(r[20]))
    return out


def pooling_3_2() -> dict:
    a = {(row["kernel"], row["slow path"]): row["‖ΠJ(I−Q)‖/‖J‖"] for row in _rows("3.2", part="a")}
    causal = [v for (k, _), v in a.items() if k == "causal"]
    (b,) = _rows("3.2", part="b", kernel="causal")
    return {"exact": ("≲", max(a[("full", "off")], a[("block", "off")])), "causal": a[("causal", "off")],
            "a_lo": min(causal), "a_hi": max(causal), "b_causal": statistics.fmean(b["‖J−QJQ‖/‖J‖ at depth 1, 4, 12"])}


def two_sided_3_2() -> dict:
    """3.2 (b): ‖J − QJQ‖/‖J‖ at depth 1, 4, 12 from the ledger's table, and, rerun here (dense depth Jacobians,
    T·d = 64), the same residual without a value path (c = 0) on the three kernels."""
    import torch

    from numerics.families import coarse_graining as ncg
    from numerics.stacks.spec import StackSpec
    from numerics.stacks.stack import random_xbar
    from proofs_check.claims.coarse_graining.block_pooling import direct_residuals

    out = {}
    for kernel in ("full", "block", "causal"):
        (row,) = _rows("3.2", part="b", kernel=kernel)
        for name, v in zip(("d1", "d4", "d12"), row["‖J−QJQ‖/‖J‖ at depth 1, 4, 12"]):
            out[f"{kernel}_{name}"] = v
    flat = []
    for kernel in ("full", "block", "causal"):
        spec = StackSpec(T=8, d=8, layers=12, heads=2, kernel=kernel, seed=0, knobs={"value_scale": 0.0},
                         **({"P": 4} if kernel == "block" else {}))
        X0 = torch.ones(8, 1, dtype=torch.float64) * random_xbar(8, 0)
        Js = ncg.depth_jacobians(spec.build(), X0)
        flat += [direct_residuals(Js[i], 8, 8, 4)["two_sided"] for i in (0, 3, 11)]
    out.update(c0_lo=min(flat), c0_hi=max(flat))
    return out


def tightness_5_2() -> dict:
    (median,) = _parse(_claim("5.2")["control"]["detail"], r"g\*_norm/g\*_Jury median ([0-9.]+)")
    return {"median": median}


def onset_5_3() -> dict:
    rows = [r for r in _claim("5.3")["numeric"]["table"] if "onset/g*" in r]
    real = max(abs(r["onset (real stack)"] / r["onset (linear)"] - 1) for r in rows)
    detail = _claim("5.3")["control"]["detail"]
    a1, a2, a3 = _parse(detail, r"a = \(([0-9.]+), ([0-9.]+), ([0-9.]+)\)")
    onset, gplus, loose = _parse(detail, r"onset ([0-9.]+) .*g⁺ ([0-9.]+) .*g⁺/g_on = ([0-9.]+)")
    return {"og_lo": min(r["onset/g*"] for r in rows), "og_hi": max(r["onset/g*"] for r in rows),
            "real": ("≤", 100 * real), "go_lo": min(r["g⁺/onset"] for r in rows),
            "go_hi": max(r["g⁺/onset"] for r in rows), "a1": a1, "a2": a2, "a3": a3, "onset": onset,
            "gplus": gplus, "loose": loose}


def clock_6_4() -> dict:
    """6.4's ledger: the clock's a-priori ℓ* on Claim 3.1's stacks, ℓ*/L along a smooth path, the ALiBi control;
    and ε = 1/(1 − λ₂) of the causal and full frozen kernels, from their eigenvalues computed here."""
    import numpy as np

    T = 6
    kernels = {"causal": np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None],   # A_ij = 1/i for j ≤ i
               "full": np.ones((T, T)) / T}                                      # A = 11ᵀ/T
    table = _claim("6.4")["numeric"]["table"]
    prior = [r for r in table if r.get("part", "").startswith("a priori")]
    same = sum(r["ℓ* (mode products)"] == r["ℓ̂* (clock, no products)"] for r in prior)
    deeper = sum(r["ℓ* (mode products)"] is not None and r["ℓ̂* (clock, no products)"] == r["ℓ* (mode products)"] + 1
                 for r in prior)
    (path,) = [r for r in table if r.get("part", "").startswith("ℓ*/L")]
    out = {"stacks": len(prior), "same": same, "deeper": deeper}
    out.update({f"m{i}": v for i, v in enumerate(path["ℓ*/L (mode products)"])})
    out.update({f"k{i}": v for i, v in enumerate(path["ℓ̂*/L (clock)"])})
    out["rich_m"], out["rich_k"] = path["limit (Richardson) measured, clock"]
    (out["alibi_r"],) = _parse(_claim("6.4")["control"]["detail"], r"r_L\(λ₂\) = ([0-9.]+) measured")
    for kernel in ("causal", "full"):
        lam = sorted(np.linalg.eigvals(kernels[kernel]).real)
        out[f"eps_{kernel}"] = 1 / (1 - lam[-2])
    return out


def pilot_7_3() -> dict:
    """The 3-seed pilot's paired t (scipy, from its per-seed gaps), the seeds the power analysis asks for (smallest
    n with power ≥ 0.8 at the pilot's d_z, noncentral t), and the powered rerun's seeds and gates."""
    import numpy as np
    from scipy import stats

    gaps = np.array(_record("docs/trained/text-7.3-pilot.json")["summary"]["gap_per_seed"])
    t, p = stats.ttest_1samp(gaps, 0.0)
    dz = gaps.mean() / gaps.std(ddof=1)
    alpha, target = 0.01, 0.8

    def power(n):
        crit, nc = stats.t.ppf(1 - alpha / 2, n - 1), dz * math.sqrt(n)
        return stats.nct.sf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc)

    n = next(n for n in range(2, 50) if power(n) >= target)
    run = _record("docs/trained/text-7.3.json")
    g0 = [abs(g[0]) for g in run["summary"]["gates"]]
    return {"gap": gaps.mean(), "t": t, "dof": len(gaps) - 1, "p": p, "alpha": alpha, "power": target, "dz": dz,
            "n": n, "s_lo": min(run["seeds"]), "s_hi": max(run["seeds"]),
            "lower": sum(x > 0 for x in run["summary"]["gap_per_seed"]), "seeds": len(run["seeds"]),
            "level": 100 * (1 - run["summary"]["paired_t"]["alpha"]), "g_lo": min(g0), "g_hi": max(g0)}


def rule_8_1() -> dict:
    from proofs_check.experiments import depth_study_rule as R

    return {"euler": R.EULER_STEP, "euler_r": R.EULER_ROUGH, "step": R.NOT_EULER_STEP, "rough": R.NOT_EULER_ROUGH}


def refusals() -> dict:
    """docs/reliability.md: what Python reads for Arabic-Indic digits, the knob limits √(largest finite value)
    of float64 and float32 (mathematical constants of the formats), the memory estimates the refusals print
    (the estimators rerun here), and the code's constants (input size cap, sweep worker bytes, manifest
    version)."""
    import numpy as np

    from numerics.stacks import memory as M
    from numerics.storage.checkpoint import VERSION
    from numerics.storage.io import MAX_INPUT_BYTES
    from proofs_check.experiments.train import TextConfig, training_estimate
    from proofs_check.sweep.run import WORKER_BYTES

    train = TextConfig(arch="preln", d=32, layers=2, heads=4, T=16, batch=20000)
    return {"arabic": int("٦٤"), "big64": math.sqrt(np.finfo(np.float64).max), "big32": math.sqrt(float(np.finfo(np.float32).max)),
            "simulate": M.run_bytes(1_000_000, 64, 12, 4, 8) / 2**50, "rlimit": M.run_bytes(16384, 8, 1, 1, None) / 2**30,
            "train": training_estimate(train) / 1e9, "worker": WORKER_BYTES / 2**20, "cap": MAX_INPUT_BYTES / 2**20,
            "version": VERSION}


def hypothesis_profiles() -> dict:
    """docs/testing.md: the examples per property of the profiles tests/conftest.py registers."""
    from hypothesis import settings

    return {"ci": settings.get_profile("ci").max_examples, "thorough": settings.get_profile("thorough").max_examples}


def reach_small() -> dict:
    """docs/reach.md's measured section: docs/reach/reach-small.json (the toy stacks), reach-ci.json and
    gpt2-small.json (the matrix-free presets)."""
    rec = _record("docs/reach/reach-small.json")
    st = {s["stack"]: s for s in rec["stacks"]}
    rnd, trn = st["random (initialisation)"], st["trained"]

    def at_text(s):
        return next(c for c in s["curve"] if c["s"] == s["text_spread"])

    out = {f"slope{i}": c["fitted_slope"] for i, c in enumerate(trn["checks"])}
    out["tol"] = max(c["slope_tolerance"] for c in trn["checks"])
    out["c1"], out["c1p"] = trn["checks"][0]["coefficient"], trn["checks"][0]["predicted_coefficient"]
    ref = trn["weights_at_reference"]["checks"]
    out["ref_inv"], out["ref_vis"] = ref[0]["fitted_slope"], ref[1]["fitted_slope"]
    cg = rec["coarse_graining"]["kernels"]
    out["cg_full"], out["cg_block"] = cg["full"]["check"]["fitted_slope"], cg["block"]["check"]["fitted_slope"]
    out.update(s0=trn["text_spread"], w_lo=min(trn["text_spreads"]), w_hi=max(trn["text_spreads"]), s0_rnd=rnd["text_spread"])
    for name, s in (("r", rnd), ("t", trn)):
        c = at_text(s)
        out.update({f"{name}_whole": 100 * c["factorised_error"], f"{name}_mean": 100 * s["text_error_mean"],
                    f"{name}_max": 100 * s["text_error_max"], f"{name}_last": 100 * s["layers"][-2]["tail_error_mean"],
                    f"{name}_last_s": s["layers"][-2]["spread_mean"], f"{name}_qk": 100 * c["qk_output_share"],
                    f"{name}_qkj": 100 * c["qk_jacobian_share"], f"{name}_inv": 100 * c["invisible_weight_share"]})
    out.update({f"sp{i}": lay["spread_mean"] for i, lay in enumerate(trn["layers"])})
    rs = [lay["spread_mean"] for lay in rnd["layers"]]
    out.update(rs_lo=min(rs), rs_hi=max(rs), inv=100 * at_text(trn)["invisible_weight_share"])
    cg_text = [next(c for c in cg[k]["curve"] if c["s"] == rec["coarse_graining"]["text_spread"])["residual"]
               for k in ("full", "block")]
    out.update(cg_s=rec["coarse_graining"]["text_spread"], cg_lo=100 * min(cg_text), cg_hi=100 * max(cg_text))
    ctl = trn["control"]
    out.update(shift=100 * ctl["shift"], floor=ctl["predicted_floor"], ctl_slope=ctl["fitted_slope"])
    lv = rec["loss_visibility"]
    out.update(lv_slope=lv["check"]["fitted_slope"], lv_c=lv["check"]["coefficient"],
               lv_cp=lv["check"]["predicted_coefficient"],
               lv_text=100 * next(c for c in lv["curve"] if c["s"] == lv["text_spread"])["prediction_error"])
    ci = _record("docs/reach/reach-ci.json")
    out.update(ci_slope=ci["fitted_slope"], ci_c=ci["measured_coefficient"], ci_cp=ci["predicted_coefficient"],
               ci_05=100 * next(c for c in ci["curve"] if c["s"] == 0.5)["error"],
               ci_09=100 * next(c for c in ci["curve"] if c["s"] == 0.9)["error"], ci_sec=ci["seconds"])
    return out


def reach_gpt2_small() -> dict:
    """docs/reach.md's GPT-2-small table: docs/reach/gpt2-small.json."""
    g = _record("docs/reach/gpt2-small.json")
    at = {c["s"]: c for c in g["curve"]}
    text = at[g["text_spread"]]
    return {"c1": g["expansion"]["coefficient"], "kbar": g["expansion"]["kappa_bar"], "tps": g["expansion"]["t_per_s"],
            "w_lo": g["window"][0], "w_hi": g["window"][1], "id": ("≲", g["identity_at_reference"]),
            "id_tol": g["identity_tolerance"], "slope": g["fitted_slope"], "slope_tol": g["check"]["slope_tolerance"],
            "coef": g["measured_coefficient"], "coefp": g["predicted_coefficient"],
            "rel": abs(g["measured_coefficient"] / g["predicted_coefficient"] - 1),
            "coef_tol": g["check"]["coefficient_tolerance"], "e01": 100 * at[0.1]["error"],
            "e01p": 100 * at[0.1]["first_order"], "s_text": g["text_spread"], "e_text": 100 * text["error"],
            "e_text1": 100 * text["first_order"], "e_text2": 100 * text["next_order"]}


def reach_artefacts() -> dict:
    """docs/reach.md's reconstruction artefacts: the ledger's 1.2, 4.1 and 4.2 tables and reach-small.json's
    saturation quotient and weight subspaces."""
    (fd,) = _rows("1.2", kernel="causal")
    st = {s["stack"]: s for s in _record("docs/reach/reach-small.json")["stacks"]}
    rq, tq = st["random (initialisation)"]["saturation_quotient"], st["trained"]["saturation_quotient"]
    w = st["trained"]["weights_at_reference"]
    moved = [r for r in _claim("4.1")["numeric"]["table"] if "2γκ" in r]
    off = [abs(r["off 1x̄ᵀ: Δ(J·v) at s_c"] / r["c₁s_c (predicted)"] - 1) for r in moved]
    (loss,) = [r for r in _claim("4.2")["numeric"]["table"]   # the suite's h = 1/L row (GPT-2's h = 1 has "h")
               if "autograd vs factorised (rel.)" in r and "h" not in r]
    (c20,) = _rows("3.1", kernel="causal", d=16, c=20.0, seed=0)
    return {"fd": fd["fd_error"] / fd["fd_bound"], "fd_slope": fd["fd_slope_h"],
            "inv": ("≲", max(rq["invariance_error"], tq["invariance_error"])), "rho_t": tq["rho"], "rhob_t": tq["rho_bar"],
            "rho_r": rq["rho"], "rhob_r": rq["rho_bar"], "rho_c20": c20["stated ρ"], "radial": tq["radial_error"],
            "radial_bound": tq["radial_bound"], "visible": w["visible_dim"], "N": w["parameters"],
            "dx": ("≤", max(r["W_Q, W_K moved (ε = 1) at 1x̄ᵀ: ΔX_L (rel.)"] for r in moved)),
            "djv": ("≤", max(r["Δ(J·v) (rel.)"] for r in moved)), "gk": statistics.fmean(r["2γκ"] for r in moved),
            "off_lo": min(off), "off_hi": max(off), "smallest": loss["min over t ≥ P of max_ℓ |∂ℓ_t/∂g_ℓ|"],
            "fact": loss["autograd vs factorised (rel.)"]}


def depth_smoothness() -> dict:
    """docs/reach.md's depth smoothness: docs/trained/depth_smoothness.json; √2 of i.i.d. layers evaluated here."""
    ds = _record("docs/trained/depth_smoothness.json")
    groups = ("W_QK", "W_VO", "W1", "W2")
    smooth = [v for g, v in ds["calibration"]["smooth"]["slope"].items() if not g.startswith("ln")]
    upd = [ds["runs"][str(L)]["update"][g] for L in ds["depths"] for g in groups]
    out = {"sm_lo": max(smooth), "sm_hi": min(smooth), "sqrt2": math.sqrt(2), "u_lo": min(upd), "u_hi": max(upd),
           "us_lo": min(ds["slopes"]["update"][g] for g in groups), "us_hi": max(ds["slopes"]["update"][g] for g in groups)}
    out.update({f"r_{g}": ds["runs"]["16"]["trained"][g] for g in groups})
    out.update({f"s_{g}": ds["slopes"]["trained"][g] for g in groups})
    out.update({f"v{L}": ds["runs"][str(L)]["validation_loss"] for L in ds["depths"]})
    return out


def trained_stacks() -> dict:
    """docs/trained.md: the eigenbasis's conditioning (exact), the grid's small trained stack (the checkpoint
    reach-small.json records), the validation text's unigram entropy (counted here from its bytes), and
    docs/trained/depth_smoothness.json."""
    import numpy as np

    from numerics.text.corpus import ByteCorpus

    counts = np.bincount(ByteCorpus.load().validation.numpy().astype(np.int64), minlength=256)
    p = counts[counts > 0] / counts.sum()
    trained = next(s for s in _record("docs/reach/reach-small.json")["stacks"] if s["stack"] == "trained")
    ds = _record("docs/trained/depth_smoothness.json")
    groups = ("W_QK", "W_VO", "W1", "W2")
    out = {"c6": pascal_cond(6), "c16": pascal_cond(16), "small_loss": trained["provenance"]["validation_loss"],
           "entropy": float(-(p * np.log(p)).sum()),
           "s_lo": min(ds["slopes"]["trained"][g] for g in groups), "s_hi": max(ds["slopes"]["trained"][g] for g in groups)}
    out.update({f"r_{g}": ds["runs"]["16"]["trained"][g] for g in groups})
    out["entropy2"] = out["entropy"]
    return out


def _along(path: str) -> dict:
    """A `check --stack` record along held-out text: claim id -> its verdict's measured values."""
    return {c["id"]: c["verdict"] for c in _record(path)["claims"]}


def along_text_bytes() -> dict:
    """docs/real_models.md: the trained byte GPT-2 along held-out text (docs/trained/gpt2-bytes-along-text.json)."""
    v = _along("docs/trained/gpt2-bytes-along-text.json")
    m = {k: x["measured"] for k, x in v.items()}
    spread = m["2.1"]["text"]["spread_by_layer"][:-1]          # the states each of the L layers takes in
    rough = m["1.1"]["roughness"]
    out = {"sp_lo": min(spread), "sp_hi": max(spread), "sp_mean": m["2.1"]["text"]["spread_mean"],
           "qk": rough["W_QK"], "vo": rough["W_VO"], "w1": rough["W1"], "w2": rough["W2"], "iid": m["1.1"]["iid_roughness"],
           "tol21": v["2.1"]["tolerance"], "sp22": m["2.2"]["text"]["spread_mean"], "comm": m["2.2"]["kernel_commutator_max"],
           "tol22": v["2.2"]["tolerance"], "s23_lo": 100 * min(m["2.3"]["stack_errors"]),
           "s23_hi": 100 * max(m["2.3"]["stack_errors"]), "tol23": v["2.3"]["tolerance"],
           "qk_lo": 100 * min(m["2.4"]["qk_shares"]), "qk_hi": 100 * max(m["2.4"]["qk_shares"]), "tol24": v["2.4"]["tolerance"],
           "rho": v["3.1"]["predicted"]["rho_tilde"], "r32_lo": 100 * min(m["3.2"]["residuals"]),
           "r32_hi": 100 * max(m["3.2"]["residuals"]), "P": m["3.2"]["P"], "tol32": v["3.2"]["tolerance"],
           "l41": 100 * m["4.1"]["qk_loss_share"], "l41fd": 100 * m["4.1"]["qk_loss_share_finite_difference"],
           "fd": m["4.1"]["finite_difference_vs_jvp"], "tol41": v["4.1"]["tolerance"]}
    out.update({f"e{i}": 100 * e for i, e in enumerate(m["2.1"]["layer_errors"])})
    out.update({f"q{i}": q for i, q in enumerate(m["3.1"]["decaying_ratio"][1:])})
    return out


def along_text_small() -> dict:
    """docs/real_models.md: a random GPT-2-small along held-out text (docs/scale/hf-gpt2-small-along-text.json);
    T·L·d³ of its size evaluated here."""
    v = _along("docs/scale/hf-gpt2-small-along-text.json")
    m = {k: x["measured"] for k, x in v.items()}
    sp, le, q = m["2.1"]["text"]["spread_by_layer"], m["2.1"]["layer_errors"], m["3.1"]["decaying_ratio"]
    return {"sp0": sp[0], "spL": sp[-1], "rough": statistics.fmean(m["1.1"]["roughness"].values()),
            "e0": 100 * le[0], "e1": 100 * le[1], "e2": 100 * le[2], "eL": 100 * le[-1],
            "sp22": m["2.2"]["text"]["spread_mean"], "comm": m["2.2"]["kernel_commutator_max"],
            "s23": 100 * m["2.3"]["stack_errors"][0], "qk": 100 * m["2.4"]["qk_shares"][0], "q1": q[1], "qL": q[-1],
            "cost": 1024 * 12 * 768 ** 3, "r32": 100 * m["3.2"]["residuals"][0], "l41": 100 * m["4.1"]["qk_loss_share"],
            "fd": m["4.1"]["finite_difference_vs_jvp"]}


def gpt2_bytes() -> dict:
    """docs/real_models.md's trained byte GPT-2: its training, check, reach and depth-smoothness records."""
    train = _record("docs/trained/gpt2-bytes-train.json")
    check = _record("docs/trained/gpt2-bytes-check.json")
    reach = _record("docs/trained/gpt2-bytes-reach.json")
    smooth = _record("docs/trained/gpt2-bytes-depth-smoothness.json")["mean"]
    free, dense = check["imports"]["matrix-free"], check["imports"]["dense"]
    out = {"params": train["parameters"], "tokens": train["tokens"] / 1e6, "secs": train["seconds"],
           "tps": train["tokens_per_second"] / 1e3, "loss": train["final_validation_loss"],
           "entropy": train["unigram_entropy_train"], "hf_free": free["hf_agreement"]["max_relative_error"],
           "hf_dense": dense["hf_agreement"]["max_relative_error"], "tol_free": free["hf_agreement"]["tolerance"],
           "tol_dense": dense["hf_agreement"]["tolerance"], "imp": check["validation_loss"]["imported"],
           "hf": check["validation_loss"]["transformers"], "logit": check["validation_loss"]["max_logit_difference"],
           "sec_free": free["check_seconds"], "sec_dense": dense["check_seconds"]}
    for form, imp in (("f", free), ("d", dense)):
        for c in imp["claims"]:
            if c["error"] is not None:
                key = c["id"].replace(".", "")
                out[f"{form}{key}"], out[f"{form}{key}t"] = c["error"], c["tolerance"]
    six = {form: _parse(next(c for c in imp["claims"] if c["id"] == "6.4")["condition"],
                        r"misses log r by up to ([0-9.]+).*missed by up to ([0-9.]+) in log")
           for form, imp in (("f", free), ("d", dense))}
    out.update(r64=six["f"][0], r4=six["d"][0], d64=six["f"][1], d4=six["d"][1])
    checks = reach["checks"]
    at = {c["s"]: c for c in reach["curve"]}
    text = at[reach["text_spread"]]
    out.update(reach_sec=reach["seconds"], sl0=checks[0]["fitted_slope"], c0=checks[0]["coefficient"],
               c0p=checks[0]["predicted_coefficient"], sl1=checks[1]["fitted_slope"], sl2=checks[2]["fitted_slope"],
               sl3=checks[3]["fitted_slope"], e001=100 * at[0.01]["factorised_error"], e_text=100 * text["factorised_error"],
               s_text=reach["text_spread"], qk=100 * text["qk_output_share"])
    mats = ("W_QK", "W_VO", "W_Q", "W_K", "W_V", "W_O", "W1", "W2")
    out.update({f"m_{g}": smooth["trained"][g] for g in mats})
    out.update(init_lo=min(smooth["init"][g] for g in mats), init_hi=max(smooth["init"][g] for g in mats),
               upd_lo=min(smooth["update"][g] for g in mats), upd_hi=max(smooth["update"][g] for g in mats),
               ln=statistics.fmean([smooth["trained"]["ln1.gamma"], smooth["trained"]["ln2.gamma"]]),
               sqrt2=math.sqrt(2))
    return out


def run(run_id: str, prefix: str = "") -> dict:
    """The numbers of one entry of the run log (docs/runs.json) as a doc quotes them, each name prefixed by
    ``prefix``: ``wall`` (seconds), ``wall_min`` and ``wall_sec`` ("36 min 49 s"), ``cpu`` (user + system),
    ``user``, ``sys``, ``rss`` (GiB), ``lo``/``hi``/``mean`` (the load average), ``hour``/``minute`` (UTC start)."""
    from proofs_check.runlog import load

    r = load()[run_id]
    minutes, seconds = divmod(round(r.wall_s), 60)
    values = {"wall": r.wall_s, "wall_min": minutes, "wall_sec": seconds, "hour": r.start.hour,
              "minute": r.start.minute}
    optional = {"cpu": r.cpu_s, "user": r.user_s, "sys": r.system_s, "rss": r.peak_rss_gib, "mean": r.load_mean,
                "lo": r.load[0] if r.load else None, "hi": r.load[1] if r.load else None}
    values.update({k: v for k, v in optional.items() if v is not None})
    return {prefix + k: v for k, v in values.items()}
