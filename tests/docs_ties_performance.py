"""Where the numbers docs/performance.md quotes come from: the bench records the package wrote (docs/bench/*.json,
``fastslow bench`` and its sections), the recorded gpt2-small scale run (docs/scale/gpt2-small.json), the CI and
reproduce timings (docs/timings.json), the run log (docs/runs.json: timed reruns and the runs transcribed from
this doc), and constants of the code the doc describes (read from the modules, not copied).

Each function returns the values of one passage of ``tests/docs_quotes_performance.py``'s ``QUOTES``, by the names
its template gives them (numbers, or ("≤", v), as in ``tests/docs_ties.py``).  A ratio or share the doc derives
from two quoted times is recomputed here from the same two records, not read from the doc.
"""

from __future__ import annotations

import ast
import re

from docs_ties import ROOT, _parse, _record, run

QUICK = "docs/bench/quick.json"
SCALE = "docs/scale/gpt2-small.json"
MIB, GIB = 2.0 ** 20, 2.0 ** 30
FLOAT64_BYTES = 8
FLOAT64_U = 2.0 ** -53            # unit roundoff of float64


# ---- helpers --------------------------------------------------------------------------------------------------
def _noted(run_id: str, key: str) -> float:
    """A number a transcribed entry of the run log states in its note as ``key N``: what no field of the entry holds
    (a profile's figures, the CPU seconds spent inside the claims of a whole command)."""
    from proofs_check.runlog import load

    note = (load()[run_id].note or "").replace(",", "")
    (value,) = _parse(note, r"(?<!\w)" + re.escape(key) + r" ([0-9]+(?:\.[0-9]+)?)")
    return value


def _module_constant(path: str, name: str):
    """The literal value of the module-level assignment ``name = ...`` in ``path`` (read from the source, so the
    doc is held to the code without importing it)."""
    tree = ast.parse((ROOT / path).read_text())
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path} no longer assigns {name}")


def _scale_claims() -> dict:
    return {c["id"]: c for c in _record(SCALE)["claims"]}


def _timing(name: str, date: str, commit: str) -> dict:
    (r,) = [r for r in _record("docs/timings.json")["runs"]
            if r["name"] == name and r["date"] == date and r["commit"] == commit]
    return r


def _min_sec(seconds: float, prefix: str) -> dict:
    minutes, sec = divmod(round(seconds), 60)
    return {prefix + "min": minutes, prefix + "sec": sec}


# ---- Scale ----------------------------------------------------------------------------------------------------
def presets() -> dict:
    """The presets' (T, d, L, heads), from numerics/stacks/presets.py."""
    from numerics.stacks.presets import SIZES

    return {f"{name.replace('gpt2-', '')}_{k}": v for name, size in SIZES.items()
            for k, v in zip(("T", "d", "L", "h"), size)}


def rounding_bounds() -> dict:
    """γ at gpt2-small in float64, the float32 worst case it would be, and the probabilistic bound's constant (the
    factor of √n·u, read back from the code at n = 1)."""
    import torch

    from numerics.linearised import matrix_free as mf
    from numerics.stacks.presets import SIZES

    T, d, L, _ = SIZES["gpt2-small"]
    n = mf.dot_product_length(T, d, L)
    four = mf.rounding_tolerance(T, d, L, torch.float32, model="probabilistic") / (n ** 0.5 * 2.0 ** -24)
    return {"gamma": mf.rounding_tolerance(T, d, L, torch.float64),
            "worst32": mf.rounding_tolerance(T, d, L, torch.float32, model="worst"), "four": four}


def scale_table_forms() -> dict:
    """What the scale forms sample, from the recorded run's details: 2.1's representable modes (k ≤ 8 and
    k ≥ T − 7), 3.1's sampled eigenvalues and value scale, 2.4's control slope, 5.1's control gate."""
    c = _scale_claims()
    ks = [int(k) for k in re.search(r"k ∈ \[([0-9, ]+)\]", c["2.1"]["numeric"]["detail"]).group(1).split(",")]
    T = c["2.1"]["size"]["T"]
    low = [k for k in ks if k <= T // 2]
    (n31,) = _parse(c["3.1"]["numeric"]["detail"], r"over ([0-9]+) of the T")
    (scale31,) = _parse(c["3.1"]["numeric"]["detail"], r"value_scale c = ([0-9.]+)")
    (slope24,) = _parse(c["2.4"]["control"]["detail"], r"slope ([0-9.]+) \(predicted")
    (gate51,) = _parse(c["5.1"]["control"]["detail"], r"at g = ([0-9.]+) g\*")
    return {"modes21": len(ks), "k_low": max(low), "k_high": T - min(k for k in ks if k > T // 2),
            "modes31": n31, "c31": scale31, "slope24": slope24, "gate51": gate51}


def _per_claim_2026_12_07() -> dict:
    """cpu_seconds (wall s) per claim of the 2026-12-07 gpt2-small run, as its transcribed entry's note states."""
    from proofs_check.runlog import load

    note = load()["scale-gpt2-small-2026-12-07"].note
    return {cid: (float(cpu), float(wall))
            for cid, cpu, wall in re.findall(r"([1-5]\.[1-4]) ([0-9.]+) \(([0-9.]+)\)", note)}


ROWS = ("1.1", "1.2", "2.1", "2.2", "2.3", "2.4", "3.1", "3.2", "4.1", "4.2", "5.1")


def scale_gpt2_small() -> dict:
    """The idle gpt2-small run: its run-log entry (wall, CPU, RSS, load), its record (seconds in the claims, peak
    RSS and the claim that reached it, per claim errors, tolerances, slopes and wall seconds), the budget it is held
    to (benchmarks/hf_gpt2_small.py's defaults), and the 2026-12-07 run's per-claim CPU and wall seconds."""
    import inspect

    from benchmarks import hf_gpt2_small

    rec, c = _record(SCALE), _scale_claims()
    out = run("scale-gpt2-small-idle-2026-12-03")
    out.update(claims_s=rec["seconds"], rss_rec=rec["peak_rss_gib"],
               peak_claim=float(max(ROWS, key=lambda k: c[k]["peak_rss_gib"])))
    budget = inspect.signature(hf_gpt2_small.run).parameters
    out.update(budget_min=budget["budget_seconds"].default / 60, budget_gib=budget["budget_gib"].default)
    (out["slope11"],) = _parse(c["1.1"]["numeric"]["detail"], r"fitted slope ([0-9.]+)")
    (out["ctl11"],) = _parse(c["1.1"]["control"]["detail"], r"slope ([0-9.]+) \(predicted")
    (out["slope22"],) = _parse(c["2.2"]["numeric"]["detail"],
                               r"\(a\) inhomogeneous reference: residual slope ([0-9.]+)")
    (out["slope41"],) = _parse(c["4.1"]["numeric"]["detail"], r"slope ([0-9.]+) \(error")
    (out["ctl41"],) = _parse(c["4.1"]["control"]["detail"], r"slope ([0-9.]+) \(predicted")
    for cid in ("1.2", "2.1", "2.3", "2.4", "3.1", "3.2", "4.2"):
        out[f"err{cid.replace('.', '')}"] = c[cid]["numeric"]["max_error"]
        out[f"tol{cid.replace('.', '')}"] = c[cid]["numeric"]["tolerance"]
    later = _per_claim_2026_12_07()
    for cid in ROWS:
        k = cid.replace(".", "")
        out[f"w{k}"] = c[cid]["seconds"]
        out[f"cpu{k}"], out[f"wall{k}"] = later[cid]
    return out


def scale_gpt2_small_earlier() -> dict:
    """The loaded runs before the idle one (transcribed entries), the stack's size in float64 (its parameters,
    counted at depths 1 and 2 and extended linearly to the preset's depth), and the interpolation checks of 2.1 and
    3.1 with their tolerance 10(d + 4d)u."""
    from numerics.stacks.presets import SIZES
    from numerics.stacks.spec import StackSpec

    T, d, L, h = SIZES["gpt2-small"]

    def count(layers):          # parameters of the preset's stack at this depth (T = 8: no parameter depends on T)
        stack = StackSpec.of(T=8, d=d, layers=layers, heads=h, kernel="causal", seed=0, dtype="float32").build()
        return sum(p.numel() for p in stack.parameters())

    one, two = count(1), count(2)
    out = {**run("scale-gpt2-small-loaded-early-2026-12-03", "early_"),
           **run("scale-gpt2-small-loaded-2026-12-03", "loaded_")}
    out["stack_gib"] = (one + (L - 1) * (two - one)) * FLOAT64_BYTES / GIB    # affine in the depth
    c = _scale_claims()
    (out["interp21"],) = _parse(c["2.1"]["numeric"]["detail"], r"λ = [0-9.]+: ([0-9.e+-]+)\)")
    (out["interp31"],) = _parse(c["3.1"]["numeric"]["detail"], r"λ = [0-9.]+ to ([0-9.e+-]+) \(tolerance")
    out["ten"] = 10
    out["interp_tol"] = 10 * (d + 4 * d) * FLOAT64_U
    return out


def jv_table() -> dict:
    """Factorised J·V against torch.func.jvp at GPT-2-small width (transcribed entries, one per timed side and T):
    the times, their loads, the ratios recomputed from them, and the growth slopes (least squares in log-log, by
    numerics.fitting.loglog_fit as benchmarks/scale.py fits them); the T = 4096 jvp's peak RSS; the dense
    Jacobian's size at T = 256."""
    from numerics.fitting import loglog_fit
    from numerics.stacks.presets import SIZES
    from proofs_check.runlog import load

    Ts, out = (256, 1024, 4096), {}
    for T in Ts:
        jvp, once, apply_ = (run(f"{side}-gpt2-width-t{T}")["wall"] for side in ("jvp", "jv-coefficients", "jv-apply"))
        (out[f"T{T}"],) = _parse(load()[f"jvp-gpt2-width-t{T}"].command, r"T = ([0-9]+):")
        out.update({f"jvp{T}": jvp, f"once{T}": once, f"apply{T}": apply_, f"total{T}": jvp / (once + apply_),
                    f"ratio{T}": jvp / apply_, f"load{T}": run(f"jvp-gpt2-width-t{T}")["lo"]})
    out["layers"] = SIZES["gpt2-small"][2]
    out["slope_jvp"] = loglog_fit(Ts, [out[f"jvp{T}"] for T in Ts]).slope
    out["slope_apply"] = loglog_fit(Ts, [out[f"apply{T}"] for T in Ts]).slope
    out["rss4096"] = run("jvp-gpt2-width-t4096")["rss"]
    d = SIZES["gpt2-small"][1]
    out["dense_gib"] = (256 * d) ** 2 * FLOAT64_BYTES / GIB
    return out


def jacobian_apply() -> dict:
    """The recorded run's J·V against jvp (2.3's scale form) and its tolerance κ·γ."""
    c = _scale_claims()["2.3"]["numeric"]
    return {"err": c["max_error"], "tol": c["tolerance"]}


def gpu_limits() -> dict:
    """benchmarks/gpu_check.py's budget and step limits, and the H200 run they start from (transcribed entry)."""
    limits = _module_constant("benchmarks/gpu_check.py", "LIMITS")
    scale = [v for k, v in limits.items() if k.startswith("scale-")]
    doc = ast.get_docstring(ast.parse((ROOT / "benchmarks/gpu_check.py").read_text()))
    (target,) = _parse(doc, r"the target is ≤ ([0-9.]+) s")
    return {"budget_min": _module_constant("benchmarks/gpu_check.py", "BUDGET") / 60, "ledger": limits["ledger"],
            "tests": limits["device-tests"], "bench": limits["bench"], "scale_lo": min(scale), "scale_hi": max(scale),
            "hf": limits["hf-save"] + limits["hf-import"] + limits["hf-check-stack"],
            "h200": run("scale-gpt2-small-h200")["wall"], "target": target,
            "budget_s": _module_constant("benchmarks/gpu_check.py", "BUDGET")}


# ---- Device path and host time --------------------------------------------------------------------------------
OPS = (("bmm", "aten::bmm"), ("softmax", "aten::_softmax"), ("mm", "aten::mm"), ("svd", "aten::_linalg_svd"),
       ("elementwise", "aten::mul/add/div"), ("copy", "aten::copy_"), ("eigh", "aten::_linalg_eigh"))


def profile_ci() -> dict:
    """The torch.profiler run of `check --scale ci` (transcribed entry): its wall, load and self CPU, each op's self
    CPU seconds and calls from the entry's note, each op's share recomputed from them, and the SVDs' seconds
    apiece."""
    from proofs_check.runlog import load

    rid = "profile-scale-ci-2026-12-04"
    note = load()[rid].note.replace(",", "")
    out = {**run(rid), "self": _noted(rid, "self_cpu_seconds")}
    for name, op in OPS:
        secs, calls = _parse(note, re.escape(op) + r" ([0-9.]+) \(([0-9]+)\)")
        out.update({f"{name}_s": secs, f"{name}_calls": calls, f"{name}_share": 100 * secs / out["self"]})
    out["item_s"], out["item_calls"] = _parse(note, r"aten::item ([0-9.]+) \(([0-9]+)\)")
    out["svd_each"], out["svd_calls2"] = out["svd_s"] / out["svd_calls"], out["svd_calls"]
    return out


def device_factories() -> dict:
    """tests/test_device_factories.py's pending factory calls (count and files), the on-stack claims its fake-device
    run covers (every on-stack claim of the registry but the costly ones) and the cost it gives for 1.1."""
    from proofs_check.verdicts import registry

    pending = _module_constant("tests/test_device_factories.py", "PENDING")
    costly = _module_constant("tests/test_device_factories.py", "COSTLY")
    registry.load_checks()
    (minutes,) = _parse(costly["1.1"], r"([0-9]+) min under load")
    return {"calls": sum(pending.values()), "files": len(pending),
            "claims": len([c for c in registry.on_stack_claims() if c not in costly]), "minutes": minutes}


def dop853() -> dict:
    """The scale form of 1.1's reference tolerances (proofs_check/claims/depth_flow/matrix_free.py's call) and
    DOP853's right-hand-side evaluations per step (its stages, SciPy's)."""
    from scipy.integrate import DOP853

    src = (ROOT / "proofs_check/claims/depth_flow/matrix_free.py").read_text()
    rtol, atol = _parse(src, r"flow_reference\(path_stack, x0, rtol=([0-9e.-]+), atol=([0-9e.-]+)\)")
    return {"rtol": rtol, "atol": atol, "stages": DOP853.n_stages}


# ---- CPU-seconds per claim ------------------------------------------------------------------------------------
def cpu_2026_12_04() -> dict:
    """The loaded 2026-12-04 gpt2-small run (transcribed entry; its CPU-s in the claims from the entry's note) and
    the idle run it is set against."""
    rid = "scale-gpt2-small-loaded-2026-12-04"
    return {**run(rid), "claims_cpu": _noted(rid, "claims_cpu_seconds"),
            **run("scale-gpt2-small-idle-2026-12-03", "idle_")}


def spectral_profiles() -> dict:
    """The cProfile of the scale forms and the torch.profiler table of the jvp passes (transcribed entries)."""
    cp, tp = "cprofile-scale-forms-t256-2026-12-07", "torch-profiler-jvp-t512-2026-12-07"
    out = {"cp_wall": run(cp)["wall"], "calls": _noted(cp, "matrix_norm_calls"),
           "svd_s": _noted(cp, "matrix_norm_seconds"), "eig_s": _noted(cp, "eigvalsh_seconds"),
           "randn_s": _noted(cp, "randn_seconds"), "tp_wall": run(tp)["wall"]}
    out.update({f"share_{op}": _noted(tp, op) for op in ("copy_", "bmm", "mul", "mm", "add", "sub", "div")})
    out["share_copy"] = out.pop("share_copy_")
    return out


def before_after_2026_12_07() -> dict:
    """`--claim 3.1 5.1` before and after the change (transcribed entries, CPU-s from their notes), the whole
    command after it (its end from the start plus the wall), its CPU-s in the claims, and the jvp passes' share."""
    out = {}
    for cid in ("3-1", "5-1"):
        for side in ("before", "after"):
            rid = f"scale-gpt2-small-claim-{cid}-{side}-2026-12-07"
            key = f"{cid.replace('-', '')}_{side}"
            out.update({f"w{key}": run(rid)["wall"], f"c{key}": run(rid)["cpu"]})
    first = run("scale-gpt2-small-claim-3-1-before-2026-12-07")
    out.update(hour=first["hour"], minute=first["minute"], lo=first["lo"], hi=first["hi"])
    rid = "scale-gpt2-small-2026-12-07"
    out.update(run(rid, "all_"))
    end = divmod(out["all_hour"] * 60 + out["all_minute"] + out["all_wall"] / 60, 60)
    out.update(end_hour=end[0], end_minute=int(end[1]), claims_s=_noted(rid, "claims_seconds"),
               claims_cpu=_noted(rid, "claims_cpu_seconds"))
    later = _per_claim_2026_12_07()
    out["jvp_cpu"] = later["1.2"][0] + later["2.1"][0]
    return out


# ---- Summary log and Method: the bench records ----------------------------------------------------------------
def _ids(prefix: str, seconds: dict) -> dict:
    """A per-claim list quoted as "id seconds, id seconds, …": each claim's id (as the record orders them) and its
    seconds, named ``{prefix}id{i}`` and ``{prefix}s{i}``."""
    out = {}
    for i, (cid, s) in enumerate(seconds.items()):
        out.update({f"{prefix}id{i}": float(cid), f"{prefix}s{i}": s})
    return out


def quick_bench() -> dict:
    """`fastslow bench --quick` of 2026-12-07 (docs/bench/quick.json) and its run-log entry: the Jacobian curve at
    T ≤ 32 (speedups recomputed from the two medians), the generated-vs-hand-written ratios, memory, derive and the
    quick check's per-claim seconds, the ci scale claims, the machine; with the settings of the code that ran it."""
    q = _record(QUICK)
    j, g, mem, dv, ci = (q[k] for k in ("factorised_vs_dense_jacobian", "generated_vs_handwritten", "memory", "derive",
                                         "scale"))
    out = run("bench-quick-2026-12-07")
    out.update(err=j["relative_error"], tol=j["tolerance"], speedup=j["dense_seconds"] / j["factorised_seconds"],
               dense=j["dense_seconds"], fact_ms=1e3 * j["factorised_seconds"],
               ff_ms=1e3 * j["config"]["factored_form_seconds"],
               out_mb=(j["config"]["T"] * j["config"]["d"]) ** 2 * FLOAT64_BYTES / MIB)
    for p in j["curve"]:
        if p.get("dense_seconds") is not None:
            T = p["T"]
            out.update({f"T{T}": T, f"dense{T}": p["dense_seconds"], f"fact{T}": p["factorised_seconds"],
                        f"speedup{T}": p["dense_seconds"] / p["factorised_seconds"]})
    out.update(gen_ratio=g["generated_seconds"] / g["handwritten_seconds"], gen_ms=1e3 * g["generated_seconds"],
               hand_ms=1e3 * g["handwritten_seconds"], agree=("≤", g["relative_max_difference"]),
               sympy=g["sympytorch_ratio"], lambdify=g["lambdify_ratio"], rq=g["config"]["repeats"])
    (out["s300"],) = _parse(g["cannot_express"]["entrywise_G_layer"], r"did not finish in ([0-9]+) s")
    out.update(peak_d=mem["dense_peak_rss_mb"], peak_f=mem["factorised_peak_rss_mb"],
               peak_ratio=mem["dense_peak_rss_mb"] / mem["factorised_peak_rss_mb"], inc_d=mem["dense_increment_mb"],
               inc_f=mem["factorised_increment_mb"],
               inc_ratio=mem["dense_increment_mb"] / mem["factorised_increment_mb"])
    out.update(cold=dv["cold_seconds"], warm=dv["warm_seconds"], **_ids("q", dv["check_seconds_per_claim"]))
    cl = ci["claims"]
    out.update(ci_s=cl["seconds"], ci_rss=cl["peak_rss_gib"], ci_load=cl["load_average_1min"])
    m = q["machine"]
    out.update(mem_gb=m["memory_gb"], threads=m["torch_threads"])
    src = (ROOT / "benchmarks/jacobian.py").read_text()
    out["fr"], out["fw"] = _parse(src, r"fact_repeats, fact_warmup = max\(repeats, ([0-9]+)\), ([0-9]+)")
    (out["rw"],) = _parse((ROOT / "benchmarks/codegen_speed.py").read_text(), r"repeats=repeats, warmup=([0-9]+)\)")
    from benchmarks.jacobian import ASSEMBLED_LIMIT_BYTES as limit

    out["t_max"] = max(T for T in (2 ** k for k in range(3, 12)) if (T * 64) ** 2 * FLOAT64_BYTES <= limit)
    return out


def full_sections() -> dict:
    """The full-size sections rerun alone on 2026-12-07 (benchmarks.jacobian.run, codegen_speed.run and
    derive_time.run at full size, records docs/bench/*-full.json, their run-log entries)."""
    j, g, dv = (_record(f"docs/bench/{k}-full.json") for k in ("jacobian", "codegen", "derive"))
    curve = {p["T"]: p for p in j["curve"]}
    out = {**run("bench-jacobian-full-2026-12-07", "jf_"), **run("bench-codegen-full-2026-12-07", "cf_"),
           **run("bench-derive-full-2026-12-07", "df_")}
    out.update(T64=64, dense64=curve[64]["dense_seconds"], fact64=curve[64]["factorised_seconds"],
               speedup64=curve[64]["dense_seconds"] / curve[64]["factorised_seconds"], T128=128,
               fact128=curve[128]["factorised_seconds"], f512_ms=1e3 * curve[512]["factored_form_seconds"])
    out.update(gen64=g["generated_seconds"] / g["handwritten_seconds"], gen64_ms=1e3 * g["generated_seconds"],
               hand64_ms=1e3 * g["handwritten_seconds"], rf=g["config"]["repeats"])
    per = dv["check_seconds_per_claim"]
    slow = max(per, key=per.get)
    out.update(all_s=dv["check_total_seconds"], slow_id=float(slow), slow_s=per[slow])
    return out


def timings() -> dict:
    """The fresh-clone runs of 2026-12-04 (docs/timings.json) and `fastslow --help`'s timed run (run log)."""
    ci, rep = _timing("the tests", "2026-12-04", "436a04b"), _timing("reproduce", "2026-12-04", "a8901e7")
    parts = {p["name"]: p for p in ci["parts"]}
    suite, linalg = parts["the suite"], parts["the linalg pass under MKL_CBWR=AVX512"]
    out = {**_min_sec(ci["wall_s"], "ci_"), **_min_sec(suite["wall_s"], "suite_"), **_min_sec(linalg["wall_s"], "lin_")}
    (out["tests"],) = _parse(suite["outcome"].replace(",", ""), r"([0-9]+) passed")
    (out["linalg"],) = _parse(linalg["outcome"], r"([0-9]+) passed")
    rparts = {p["name"]: p for p in rep["parts"]}
    out.update(**_min_sec(rparts["install"]["wall_s"], "inst_"),
               **_min_sec(rparts["`fastslow reproduce`"]["wall_s"], "rep_"))
    out.update({p["name"]: p["wall_s"] for p in rparts["`fastslow reproduce`"]["parts"]})
    h = run("cli-help")
    out.update(help=h["wall"], help_lo=h["lo"], help_hi=h["hi"])
    return out


def scale_summary() -> dict:
    """The Summary log's scale bullet: the idle run (entry and record), its budget, the claims' range of seconds
    (those that compute: 2.4 reuses the passes), the loaded run, and the quick bench's ci claims."""
    c = _scale_claims()
    secs = [c[k]["seconds"] for k in ROWS if c[k]["seconds"] > 1]
    big = scale_gpt2_small()
    q = quick_bench()
    out = {k: big[k] for k in ("wall_min", "wall_sec", "rss", "budget_min", "budget_gib", "cpu")}
    held = [k for k in ROWS if c[k]["status"] == "verified" and c[k]["control"]["status"] == "fails-as-predicted"]
    out.update(n=len(held),
               c_lo=min(secs), c_hi=max(secs), **jacobian_apply(), ci_s=q["ci_s"], ci_load=q["ci_load"])
    out.update(run("scale-gpt2-small-loaded-2026-12-03", "loaded_"))
    return out


def ci_runs() -> dict:
    """`--scale ci` in the quick bench (its claims' seconds, peak RSS, the load at its end), and the float32 rerun
    (docs/bench/scale-ci-float32.json): its verdicts, its largest J·V error (the claims compared with jvp: 1.2, 2.3)
    and the probabilistic tolerance 4√n·u at ci, computed here."""
    import torch

    from numerics.linearised import matrix_free as mf
    from numerics.stacks.presets import SIZES

    q = quick_bench()
    f32 = {c["id"]: c for c in _record("docs/bench/scale-ci-float32.json")["claims"]}
    computed = [c for c in f32.values() if c["status"] != "skipped"]
    T, d, L, _ = SIZES["ci"]
    out = {"ci_s": q["ci_s"], "ci_rss": q["ci_rss"], "ci_load": q["ci_load"],
           "f32_err": max(f32[k]["numeric"]["max_error"] for k in ("1.2", "2.3")),
           "f32_tol": mf.rounding_tolerance(T, d, L, torch.float32, model="probabilistic"),
           "f32_verified": len([c for c in computed if c["status"] == "verified"]), "f32_n": len(computed)}
    out.update(run("scale-ci-float32-2026-12-07", "f32_"))
    return out


def spectral_norms_rerun() -> dict:
    """`python -m benchmarks.spectral_norms --quick` rerun (docs/bench/spectral-norms-quick.json) and its entry."""
    (case,) = _record("docs/bench/spectral-norms-quick.json")["cases"]
    return {"n": case["n"], "svd": case["svd_over_top"], "eig": case["eigvalsh_over_top"], "diff": case["max_rel_diff"],
            "bound": case["bound"], **run("spectral-norms-quick-2026-12-07")}


SMOKE = "docs/bench/gpu-check-smoke.json"


def smoke() -> dict:
    """`python -m benchmarks.gpu_check OUT --device cpu --smoke` rerun (its summary.json, docs/bench/
    gpu-check-smoke.json) and its run-log entry: the budget, each step's wall seconds, how many passed."""
    s = _record(SMOKE)
    out = {"budget": s["budget_s"], "n": len(s["steps"]), "passed": sum(r["status"] == "passed" for r in s["steps"]),
           "wall_all": s["wall_s"]}
    out.update({f"w{i}": r["wall_s"] for i, r in enumerate(s["steps"]) if r.get("wall_s") is not None})
    try:
        out.update(run("gpu-check-smoke-cpu-2026-12-07"))
    except KeyError:        # a run with a failed step exits 1 and leaves no run-log entry
        pass
    return out
