"""`fastslow bench`: every benchmark section, a readable table, and the JSON dict.

Sections (JSON keys): ``factorised_vs_dense_jacobian``, ``generated_vs_handwritten``,
``derive``, ``memory``, ``slow_path_cost`` (when ``benchmarks/slow_path_cost.py`` exists), ``sweep``,
``scale`` (benchmarks/scale.py), ``training`` (benchmarks/training.py) and ``machine``.  A section that
raises is recorded as ``{"error": ...}`` and printed, so one broken piece does not hide the others'
numbers; ``machine["section_errors"]`` lists them.  A section whose optional library is not installed
(an extra's module, ``proofs_check.extras``, or the reference tool sympytorch) is recorded as
``{"skipped": "<module> not installed"}``, printed as such, and is no error; a section that can run
without it (``generated_vs_handwritten`` without sympytorch) runs and lists what it skipped.

The headline ``ratios`` (factorised Jacobian against ``torch.func.jacrev``, factorised J·V against
``torch.func.jvp``) are both timed in the same run, on whatever device ``--device`` names.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
import time
import traceback

import torch
from tqdm import tqdm

from proofs_check.extras import extra_of
from proofs_check.tables import text_table

#: optional libraries outside the extras whose absence skips a section instead of failing it
OPTIONAL_TOOLS = ("sympytorch",)


def skipped_for(err: BaseException) -> str | None:
    """``"<module> not installed"`` when ``err`` is the import failure of an optional library, else None."""
    name = getattr(err, "name", None) if isinstance(err, ImportError) else None
    if name and (extra_of(name) or name.split(".")[0] in OPTIONAL_TOOLS):
        return f"{name.split('.')[0]} not installed"
    return None


def machine(device: str) -> dict:
    """What the numbers were measured on."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    info = {"device": device, "cpu": cpu, "cpu_count": os.cpu_count(),
            "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "torch_threads": torch.get_num_threads(), "platform": platform.platform(),
            "python": sys.version.split()[0], "torch": torch.__version__,
            "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    try:
        with open("/proc/meminfo") as fh:
            kb = int(next(ln for ln in fh if ln.startswith("MemTotal")).split()[1])
        info["memory_gb"] = round(kb / 2**20, 1)
    except (OSError, StopIteration):
        pass
    return info


def _sections(quick: bool, device: str, note):
    from benchmarks import codegen_speed, derive_time, jacobian

    yield "factorised_vs_dense_jacobian", lambda: jacobian.run(quick, device, progress=note)
    yield "generated_vs_handwritten", lambda: codegen_speed.run(quick, device)
    yield "memory", lambda: jacobian.run_memory(quick, device)
    yield "derive", lambda: derive_time.run(quick, device)
    if importlib.util.find_spec("benchmarks.slow_path_cost") is not None:
        from benchmarks import slow_path_cost

        yield "slow_path_cost", lambda: slow_path_cost.run(quick, device)
    from benchmarks import sweep

    yield "sweep", lambda: sweep.run(quick, device)
    from benchmarks import scale

    yield "scale", lambda: scale.run(quick, device)
    from benchmarks import training

    yield "training", lambda: training.run(quick, device)


def run_benchmarks(quick: bool, device: str) -> dict:
    """Run every section (``quick``: ≤ 3 min on 2 CPU cores; full: ≤ 10 min) and print a table."""
    if device not in ("cpu", "cuda") and not str(device).startswith("cuda:"):
        raise ValueError(f"device={device!r} must be 'cpu' or 'cuda'")
    results: dict = {"machine": {**machine(device), "quick": quick}}
    errors = []
    bar = tqdm(desc="bench", unit="section", file=sys.stderr)
    sections = list(_sections(quick, device, lambda msg: bar.set_postfix_str(msg)))
    bar.reset(total=len(sections))
    for name, fn in sections:
        bar.set_postfix_str(name)
        start = time.perf_counter()
        try:
            results[name] = fn()
        except Exception as err:  # recorded and printed, never swallowed
            if (why := skipped_for(err)) is not None:
                results[name] = {"skipped": why}
            else:
                results[name] = {"error": f"{type(err).__name__}: {err}"}
                errors.append(name)
                traceback.print_exc()
        results[name]["section_seconds"] = time.perf_counter() - start
        bar.update()
    bar.close()
    results["machine"]["total_seconds"] = sum(r.get("section_seconds", 0) for r in results.values()
                                              if isinstance(r, dict))
    results["machine"]["section_errors"] = errors
    results["ratios"] = ratios(results)
    print(format_table(results))
    return results


def ratios(results: dict) -> dict:
    """The two headline ratios of this run (None where their section did not run): the dense
    ``torch.func.jacrev`` Jacobian's time over the factorised one's at the largest size both ran, and
    ``torch.func.jvp``'s time over the factorised J·V's (build and apply) at the largest T with a full jvp."""
    j = results.get("factorised_vs_dense_jacobian", {})
    both = [p for p in j.get("curve", []) if p.get("speedup") is not None]
    rows = [r for r in results.get("scale", {}).get("jv_vs_jvp", {}).get("rows", []) if not r["jvp_extrapolated"]]
    return {"device": results["machine"]["device"],
            "jacrev_over_factorised": both[-1]["speedup"] if both else None,
            "jacrev_over_factorised_T": both[-1]["T"] if both else None,
            "jvp_over_factorised_jv": rows[-1]["ratio_jvp_over_factorised"] if rows else None,
            "jvp_over_factorised_jv_T": rows[-1]["T"] if rows else None}


def _f(value, spec: str) -> str:
    return "missing" if value is None else format(value, spec)


def format_table(results: dict) -> str:
    """The headline numbers as plain text."""
    lines = []
    m = results["machine"]
    lines.append(f"machine: {m['cpu']} ({m['cores_available']} cores, {m['torch_threads']} torch threads), "
                 f"device {m['device']}, torch {m['torch']}, load {m['load_average_1min']:.1f}")
    r = results.get("ratios")
    if r:
        lines.append(f"ratios (same run, {r['device']}): jacrev / factorised Jacobian "
                     f"{_f(r['jacrev_over_factorised'], '.0f')} (T={r['jacrev_over_factorised_T']}), "
                     f"jvp / factorised J·V {_f(r['jvp_over_factorised_jv'], '.1f')} (T={r['jvp_over_factorised_jv_T']})")
    j = results.get("factorised_vs_dense_jacobian", {})
    if "speedup" in j:
        c = j["config"]
        lines.append(f"\nfactorised vs dense Jacobian (T={c['T']}, d={c['d']}, L={c['layers']}, "
                     f"{c['heads']} heads, float64): speedup {j['speedup']:.0f}x  "
                     f"(dense {j['dense_seconds']:.2f} s, factorised {j['factorised_seconds']*1e3:.1f} ms, "
                     f"rel. error {j['relative_error']:.1e})")
        rows = [("T", "dense s", "factorised s", "speedup", "compared")]
        rows += [(p["T"], _f(p.get("dense_seconds"), ".3f"), _f(p.get("factorised_seconds"), ".4f"),
                  _f(p.get("speedup"), ".0f"), p.get("missing") or "assembled J") for p in j["curve"]]
        lines += ["  " + line for line in text_table(rows, align=">>>><")]
    g = results.get("generated_vs_handwritten", {})
    if "ratio" in g:
        lines.append(f"\ngenerated vs hand-written G_layer (batch {g['config']['batch']}, d={g['config']['d']}): "
                     f"ratio {g['ratio']:.2f}  (generated {g['generated_seconds']:.3f} s, "
                     f"hand-written {g['handwritten_seconds']:.3f} s)")
        lines.append(f"  ln_jacobian d=4: generated/sympytorch "
                     f"{_f(g['sympytorch_ratio'], '.3f') if g['sympytorch_ratio'] is not None else 'skipped'}, "
                     f"generated/lambdify {g['lambdify_ratio']:.3f}")
        lines += [f"  {why}" for why in g.get("skipped", [])]
    mem = results.get("memory", {})
    if "ratio" in mem:
        lines.append(f"\nmemory (peak RSS): dense {mem['dense_peak_rss_mb']:.0f} MB, factorised "
                     f"{mem['factorised_peak_rss_mb']:.0f} MB, ratio {mem['ratio']:.2f}; increments "
                     f"{mem['dense_increment_mb']:.0f} MB vs {mem['factorised_increment_mb']:.0f} MB")
    dv = results.get("derive", {})
    if "cold_seconds" in dv:
        lines.append(f"\nderive: cold {dv['cold_seconds']:.1f} s, warm {dv['warm_seconds']:.1f} s; "
                     f"check (quick) total {dv['check_total_seconds']:.1f} s")
        per = dv["check_seconds_per_claim"]
        lines.append("  " + "  ".join(f"{k}: {v:.1f}s" for k, v in per.items()))
    sp = results.get("slow_path_cost")
    if sp and "error" not in sp:
        lines.append("\nslow path cost: " + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                                      for k, v in sp.items() if not isinstance(v, (dict, list))))
    sw = results.get("sweep", {})
    if "scaling_efficiency" in sw:
        lines.append(f"\nsweep ({sw['config']['stacks']} stacks of claim {sw['config']['claim']}): "
                     f"{sw['one_worker']['stacks_per_second']:.2f} stacks/s with 1 worker, "
                     f"{sw['two_workers']['stacks_per_second']:.2f} with 2; scaling efficiency "
                     f"{sw['scaling_efficiency']:.2f}; cluster overhead {sw['overhead_seconds_per_task'] * 1e3:.0f} ms "
                     f"per task (serial {sw['serial_seconds_per_stack'] * 1e3:.0f} ms per stack; load "
                     f"{sw['load_average_1min'][0]:.1f})")
    sc = results.get("scale")
    if sc and "error" not in sc:
        from benchmarks.scale import format_lines

        lines += format_lines(sc)
    tr = results.get("training")
    if tr and "error" not in tr:
        from benchmarks.training import format_lines as training_lines

        lines += training_lines(tr)
    for name, r in results.items():
        if isinstance(r, dict) and "skipped" in r and isinstance(r["skipped"], str):
            lines.append(f"\n{name}: skipped: {r['skipped']}")
    for name in m.get("section_errors", []):
        lines.append(f"\nERROR in {name}: {results[name]['error']}")
    return "\n".join(lines)
