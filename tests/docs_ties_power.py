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
import re
import statistics

from docs_ties import ROOT, _parse, _record, run

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


# ---------------------------------------------------------------- docs/verification_power.md
EQUIVALENTS = "docs/equivalent_mutants.md"


def _sections(path: str) -> dict[str, str]:
    """A markdown file's ``## `` sections by heading."""
    parts = re.split(r"(?m)^## (.*)$", (ROOT / path).read_text())
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _mutant_tables(section: str) -> tuple[dict, list[tuple[str, str]]]:
    """The code mutants' record as ``proofs_check.mutation.equivalents.markdown`` writes it: the per-file table
    (file -> {mutants, killed, equivalent, device-only, open}) and the survivors (file, rule)."""
    files, survivors = {}, []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0].startswith("`") and cells[1].isdigit():
            files[cells[0].strip("`")] = dict(zip(("mutants", "killed", "equivalent", "device-only", "open"),
                                                  map(int, (cells[1], cells[2], cells[4], cells[5], cells[6]))))
        elif len(cells) == 4 and cells[0].startswith("numerics/"):
            survivors.append((cells[0], cells[3]))
    return files, survivors


def _section(title_start: str) -> str:
    (body,) = [b for h, b in _sections(EQUIVALENTS).items() if h.startswith(title_start)]
    return body


def mutant_catalogues() -> dict:
    """The theory and source mutants the catalogues hold (``fastslow mutate`` runs each of them)."""
    from proofs_check.mutation import hand_written_source, hand_written_theory

    return {"theory": len(hand_written_theory.catalogue()), "source": len(hand_written_source.catalogue())}


def code_mutants_full() -> dict:
    """The last code-mutant run over every mutated file: docs/equivalent_mutants.md's per-file table (what
    ``fastslow mutate --equivalents`` wrote), scores as killed/mutants, the survivors outside stack.py; its wall
    time and load from the run log (transcribed entries)."""
    files, survivors = _mutant_tables(_section("Every mutated file"))
    stack = "numerics/stacks/stack.py"
    outside = {f: r for f, r in files.items() if f != stack}
    assert all(r["device-only"] == r["open"] == 0 for r in outside.values()), outside
    assert sum(r["equivalent"] for r in outside.values()) == sum(f != stack for f, _ in survivors)
    named = ("numerics/stacks/kernels.py", "numerics/generated/factorisation.py", "numerics/generated/slow_manifold.py",
             "numerics/generated/stability.py")
    out = {"killed": sum(r["killed"] for r in files.values()), "total": sum(r["mutants"] for r in files.values()),
           "others": min(r["killed"] / r["mutants"] for f, r in outside.items() if f not in named),
           "equivalent": sum(f != stack for f, _ in survivors)}
    out["score"] = out["killed"] / out["total"]
    for key, f in zip(("k", "f", "s", "b"), named):
        out.update({f"{key}_killed": files[f]["killed"], f"{key}_total": files[f]["mutants"],
                    f"{key}_score": files[f]["killed"] / files[f]["mutants"]})
    out.update(run("mutate-2026-12-04", "all_"))
    out.update(run("mutate-2026-12-04-code-step", "code_"))
    return out


def code_mutants_stack() -> dict:
    """The current code-mutant run over numerics/stacks/stack.py: docs/equivalent_mutants.md's stack.py table and
    survivors (counted by rule); its start, wall and load from the run log (a transcribed entry)."""
    files, survivors = _mutant_tables(_section("numerics/stacks/stack.py"))
    (row,) = files.values()
    rules = [r for _, r in survivors]
    kinds = {"equivalent": [r for r in rules if r.startswith("E")], "device": [r for r in rules if r == "D"]}
    assert len(rules) == row["mutants"] - row["killed"] == len(kinds["equivalent"]) + len(kinds["device"])
    entry = run("code-mutants-stack-2026-12-07")
    return {"killed": row["killed"], "total": row["mutants"], "score": row["killed"] / row["mutants"],
            "survivors": len(rules), "equivalent": len(kinds["equivalent"]), "e1": rules.count("E1"),
            "e9": rules.count("E9"), "device": len(kinds["device"]), "killed2": row["killed"],
            "excluded": row["mutants"] - len(rules), "e1b": rules.count("E1"), "db": rules.count("D"),
            "hour": entry["hour"], "minute": entry["minute"], "lo": entry["lo"], "hi": entry["hi"],
            "wall": entry["wall"]}


def _claim(cid: str) -> dict:
    return next(c for c in _record("docs/ledger.json")["claims"] if c["id"] == cid)


def monte_carlo_size() -> dict:
    """7.2's Monte Carlo size recomputed from the formula the doc states, n = ⌈((z + z_β)·sd/δ)²⌉ with
    z_β = Φ⁻¹(power) (scipy), δ = σ²/(P(P−1)) and sd = √2·c, c = s² + σ²/P, at the s², σ², P, z and power the
    committed ledger's 7.2 entry states; asserted equal to the n that entry ran."""
    from scipy import stats

    detail = _claim("7.2")["numeric"]["detail"]
    s2, sigma2, P = _parse(detail, r"s² = ([0-9.]+), σ² = ([0-9.]+), P = ([0-9]+)")
    z, power = _parse(detail, r"refused at \|z\| > ([0-9.]+) with probability ([0-9.]+)")
    (ran,) = _parse(detail, r"= ([0-9]+) sequences")
    delta = sigma2 / (P * (P - 1))
    sd = math.sqrt(2) * (s2 + sigma2 / P)
    n = math.ceil(((z + stats.norm.ppf(power)) * sd / delta) ** 2)
    assert n == ran, (n, ran)
    return {"delta": delta, "P": P, "z": z, "power": power, "n": n}


def adjoint_bound() -> dict:
    """The constant c of the adjoint check's dependence bound c/√n (read off the code at large n)."""
    from numerics.linearised.matrix_free import dependence_bound

    n = 10 ** 8
    return {"c": dependence_bound(n) * math.sqrt(n)}


def cross_checks() -> dict:
    """The committed ledger's cross-checks: the matrix-free forms' wall seconds at the toy preset, and the scale
    forms against the dense forms (claims compared and skipped, worst error, smallest nonzero tolerance, worst
    ratio, wall seconds)."""
    forms, dense, skipped = [], [], []
    for c in _record("docs/ledger.json")["claims"]:
        for x in c.get("cross_checks") or []:
            if x["name"].startswith("matrix-free form"):
                forms.append(x["seconds"])
            elif x["name"].startswith("scale form vs dense"):
                (skipped if x["status"] == "skipped" else dense).append((c["id"], x))
    rows = [r for _, x in dense for r in x["rows"]]
    out = {"mf_lo": min(forms), "mf_hi": max(forms), "claims": len(dense), "err": max(r["error"] for r in rows),
           "tol": min(r["tolerance"] for r in rows if r["tolerance"] > 0), "ratio": max(x["max_error"] for _, x in dense),
           "sec_lo": min(x["seconds"] for _, x in dense), "sec_hi": max(x["seconds"] for _, x in dense)}
    out.update({f"skip{i}": float(cid) for i, (cid, _) in enumerate(skipped)})
    return out


def gpt2_mapping() -> dict:
    """2.1's GPT-2 mapping cross-check in the committed ledger: its tiny checkpoints' settings, the gap
    (max gap/(2n·u) times 2n·u, n = L(2T + 11d) recomputed here), the smallest control miss."""
    (x,) = [x for x in _claim("2.1")["cross_checks"] if x["name"].startswith("GPT-2 mapping")]
    d, heads, L, T, eps = _parse(x["detail"], r"d = ([0-9]+), ([0-9]+) heads, L = ([0-9]+), T = ([0-9]+), "
                                              r"layer_norm_epsilon = ([0-9.]+)")
    (miss,) = _parse(x["detail"], r"miss by ([0-9.e+-]+)")
    tol = 2 * L * (2 * T + 11 * d) * 2.0 ** -53
    return {"d": d, "heads": heads, "L": L, "eps": eps, "gap": ("≤", x["max_error"] * tol), "tol": tol, "miss": miss}


def _offsets(path: str, pattern: str) -> list[int]:
    """The integer offsets ``pattern`` (one group) finds in a source file; at least one."""
    found = [int(m) for m in re.findall(pattern, (ROOT / path).read_text())]
    assert found, f"{path} no longer has {pattern!r}"
    return found


def _offset(path: str, pattern: str) -> int:
    """The one offset ``pattern`` finds in a source file (every match the same)."""
    (value,) = set(_offsets(path, pattern))
    return value


def seed_offsets() -> dict:
    """The seed offsets the audit names, read off the code they are drawn in, and the fixed batch sizes of 5.1's
    and 5.2's default-size checks."""
    scale = "proofs_check/verdicts/scale_run.py"
    method = r"def {}\b[^\n]*\n(?:[^\n]*\n){{0,6}}?[^\n]*self\.seed \+ ([0-9]+)"
    adjoint = _offsets(scale, r"adjoint_errors\([^\n]*?run\.probe\(1, seed=([0-9]+)\)")
    adjoint += _offsets(scale, r"adjoint_errors\([^\n]*run\.probe\(1, seed=[0-9]+\), run\.probe\(1, seed=([0-9]+)\)")
    probes = _offset(scale, r"def probe\b[^\n]*\n(?:[^\n]*\n){0,2}?[^\n]*self\.seed \+ ([0-9]+) \+ seed")
    visibility = "proofs_check/claims/visibility.py"
    return {"xbar": _offset(scale, method.format("xbar")),
            "op": _offset("proofs_check/claims/coarse_graining/matrix_free.py", r"operator_norm\(M, Mt[^\n]*seed=run\.seed \+ ([0-9]+)"),
            "mode": _offset(scale, method.format("mode_probe")), "qk": _offset(scale, method.format("qk_tangent")),
            "gate": _offset(scale, method.format("gate_direction")), "probes": probes,
            "adj0": probes + adjoint[0], "adj1": probes + adjoint[1],
            "aligned": _offset("proofs_check/claims/stability/matrix_free.py", r"aligned_systems\([^\n]*seed=run\.seed \+ ([0-9]+)"),
            "fd": _offset("proofs_check/claims/depth_flow/chain_rule.py",       # the dense check's X and the FD route's
                          r"X = torch\.randn\([^\n]*manual_seed\(spec\.seed \+ ([0-9]+)\)"),
            "tangent": _offset("numerics/text/reach.py", r"relative_tangents\(stack, VALUE, seed \+ ([0-9]+)\)"),
            "dec": _offset(visibility, r"p_dec = nv\.decaying_offset\(st, spec\.seed \+ ([0-9]+)\)"),
            "dec_mean": _offset(visibility, r"p_mean = nv\.mean_carrying_offset\(st, spec\.seed \+ ([0-9]+)\)"),
            "sdec": _offset("proofs_check/claims/visibility_matrix_free.py", r"decaying_offset\(st, run\.seed \+ ([0-9]+)\)"),
            "smean": _offset("proofs_check/claims/visibility_matrix_free.py", r"mean_carrying_offset\(st, run\.seed \+ ([0-9]+)\)"),
            "b51": _offset("proofs_check/claims/stability/gate_bound.py", r"batch, layers, dim = \(\d+, \d+, \d+\) if ctx\.quick else \(([0-9]+),"),
            "b52": _offset("proofs_check/claims/stability/tightness.py", r"batch, layers, dim = \(\d+, \d+, \d+\) if ctx\.quick else \(([0-9]+),")}


def theory_source_mutants() -> dict:
    """The theory and source mutants' rerun: docs/mutation/theory-mutants.json and source-mutants.json (what
    ``fastslow mutate --json`` wrote), counted here; the kills by a timeout and their limit read from each
    mutant's reason; wall, CPU seconds and load from the run log (timed entries)."""
    theory = _record("docs/mutation/theory-mutants.json")["theory"]
    source = _record("docs/mutation/source-mutants.json")["source"]
    killed = [m for m in theory["mutants"] if m["killed_by"] is not None]
    timeouts = [m for m in killed if "did not finish within" in m["killed_by"]]
    assert {m["name"] for m in timeouts} == {"LN-no-mean-removal", "C-without-h"}, timeouts
    (limit,) = {_parse(m["killed_by"], r"did not finish within ([0-9.]+) s")[0] for m in timeouts}
    by_ledger = [m for m in source["mutants"] if m["killed_by_ledger"] is not None]
    by_test = [m for m in source["mutants"] if m["killed_by_ledger"] is None and m["killed_by_test_only"] is not None]
    out = {"t_killed": len(killed), "t_total": len(theory["mutants"]), "t_score": len(killed) / len(theory["mutants"]),
           "timeouts": len(timeouts), "limit": limit, "others": len(killed) - len(timeouts),
           "s_ledger": len(by_ledger), "s_total": len(source["mutants"]), "s_test": len(by_test),
           "s_survived": len(source["mutants"]) - len(by_ledger) - len(by_test)}
    out.update(run("mutate-theory-2026-12-07", "t_"))
    out.update(run("mutate-source-2026-12-07", "s_"))
    return out


def mutant_details() -> dict:
    """Two kills the doc quotes, read from the rerun's records: the 7.2 power mutant's numeric error and
    tolerance, and the operator-norm-squared source mutant's ‖J‖₂ against the dense form's."""
    theory = {m["name"]: m for m in _record("docs/mutation/theory-mutants.json")["theory"]["mutants"]}
    source = {m["name"]: m for m in _record("docs/mutation/source-mutants.json")["source"]["mutants"]}
    err, tol = _parse(theory["gated-risk-block-count-off-by-one"]["killed_by"],
                      r"numeric check: error ([0-9.e+]+) > tolerance ([0-9.e+]+)")
    scale, dense = _parse(source["scale-operator-norm-squared"]["killed_by_ledger"],
                          r"‖J‖₂ \(power iteration, a lower bound\): scale ([0-9.]+), dense ([0-9.]+)")
    return {"err": err, "tol": tol, "scale": scale, "dense": dense}
