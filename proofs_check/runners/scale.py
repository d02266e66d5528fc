"""``fastslow check --scale PRESET``: every claim's matrix-free form at a preset's size (pretraining size).

A claim's matrix-free form is registered on its ``Claim`` (``proofs_check.verdicts.registry.matrix_free``) beside
its dense form, and runs on a :class:`proofs_check.verdicts.scale_run.ScaleRun`: the preset's stack
(``numerics.stacks.presets``) and the stack variants derived from it at the same T, d, L and heads.  A claim
without one is *skipped* with the reason its registration gives (``registry.no_matrix_free``).  Entries are
shaped like the ledger's (``proofs_check.runners.check.format_table`` prints them) and record the stack's
size, the error there and the claim's seconds and peak memory.
"""

from __future__ import annotations

import resource
import sys
import time
from dataclasses import asdict

from proofs_check.verdicts.evidence import decide
from proofs_check.verdicts.ids import CLAIM_IDS
from proofs_check.verdicts.scale_run import ScaleRun


def peak_rss_gib() -> float:
    """Peak resident memory of this process since the last :func:`reset_peak_rss` (VmHWM on Linux;
    elsewhere ru_maxrss, the peak since the start)."""
    try:
        with open("/proc/self/status") as fh:
            kb = next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM:"))
        return kb / 2**20
    except (OSError, StopIteration):
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return rss / 2**30 if sys.platform == "darwin" else rss / 2**20


def reset_peak_rss() -> None:
    """Reset the peak-RSS counter (Linux: ``5`` to /proc/self/clear_refs), so each claim reports its own peak."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def run_scale_claim(claim_id: str, run: ScaleRun) -> dict:
    """One claim's scale entry (ledger-shaped): status, numeric, control, size, seconds, peak memory."""
    from proofs_check.verdicts.registry import get, load_checks

    load_checks()
    entry = get(claim_id)
    record = {"id": claim_id, "family": entry.family, "title": entry.title or "(not implemented)",
              "reconstruction": False, "symbolic": {"steps": 0, "proved": 0}, "numeric": None, "control": None,
              "size": run.size()}
    if entry.matrix_free is None:
        record.update(status="skipped", detail=f"no scale form: {entry.why_no_matrix_free()}", seconds=0.0,
                      peak_rss_gib=peak_rss_gib())
        return record
    reset_peak_rss()
    start, cpu = time.perf_counter(), time.process_time()
    try:
        result = entry.matrix_free(run)
    except Exception as exc:  # a crashing scale form is no evidence either way: an error, with its reason
        import traceback

        from proofs_check.verdicts.vocabulary import Decision, one_line

        record.update(status=Decision.ERROR, detail=f"scale form raised {one_line(exc)}",
                      traceback=traceback.format_exc(limit=6), seconds=time.perf_counter() - start,
                      peak_rss_gib=peak_rss_gib())
        return record
    tol = result.numeric.tolerance
    if tol != 1.0 and not any(d.value == tol for d in result.numeric.derivations):
        record.update(status="failed", detail=f"refused: the tolerance {tol:.3e} carries no derivation",
                      seconds=time.perf_counter() - start, peak_rss_gib=peak_rss_gib())
        return record
    problems = result.numeric.derivation_problems()
    record.update(status=decide(result), derivations=[d.as_dict() for d in result.numeric.derivations],
                  **({"detail": "refused: " + "; ".join(problems)} if problems else {}),
                  numeric={"cases": result.numeric.cases, "max_error": result.numeric.max_error,
                           "tolerance": result.numeric.tolerance, "detail": result.numeric.detail,
                           "table": result.numeric.table},
                  control=asdict(result.control), notes=result.notes,
                  seconds=time.perf_counter() - start, cpu_seconds=time.process_time() - cpu,
                  peak_rss_gib=peak_rss_gib())
    return record


def run_scale(name: str, claim_ids: list[str] | None = None, *, device: str = "cpu", dtype: str = "float64",
              seed: int = 0, progress: bool = True) -> dict:
    """Every claim's scale entry at preset ``name`` (all claims of docs/theory.md by default)."""
    from proofs_check.verdicts.registry import CLAIMS, load_checks
    from proofs_check.environment import environment

    run = ScaleRun(name, dtype=dtype, device=device, seed=seed)
    ids = claim_ids or list(CLAIM_IDS)
    unknown = [i for i in ids if i not in CLAIM_IDS]
    if unknown:
        raise ValueError(f"--claim {', '.join(unknown)}: not a claim (known: {', '.join(CLAIM_IDS)})")
    load_checks()
    claims = []
    start, cpu = time.perf_counter(), time.process_time()
    reset_peak_rss()
    for i, cid in enumerate(ids):
        if progress:
            print(f"[scale {name}] claim {cid} ...", file=sys.stderr, flush=True)
        claims.append(run_scale_claim(cid, run))
        run.release(set().union(*(CLAIMS[c].variants for c in ids[i + 1:] if c in CLAIMS)))
        if progress:
            c = claims[-1]
            print(f"[scale {name}] claim {cid}: {c['status']} in {c['seconds']:.1f} s "
                  f"({c.get('cpu_seconds', 0.0):.1f} CPU-s), peak RSS "
                  f"{c['peak_rss_gib']:.2f} GiB", file=sys.stderr, flush=True)
    return {"claims": claims, "environment": environment(device),
            "options": {"profile": f"--scale {name}", "quick": False, "scale": name, "dtype": dtype, "seed": seed,
                        "reproduce": f"fastslow check --scale {name} --dtype {dtype} --device {device}",
                        **run.size()},
            "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu,
            "peak_rss_gib": max([c.get("peak_rss_gib", 0.0) for c in claims] + [peak_rss_gib()])}


def format_sizes(ledger: dict) -> str:
    """Per claim: the size it was verified at and the error there (the scale table's last column)."""
    lines = []
    for c in ledger["claims"]:
        size = c.get("size") or {}
        num = c.get("numeric")
        where = f"T={size.get('T')} d={size.get('d')} L={size.get('layers')} {size.get('dtype')}"
        if c["status"] == "skipped":
            lines.append(f"  {c['id']:4s} skipped   {c.get('detail', '')}")
            continue
        err = f"{num['max_error']:.2e} ≤ {num['tolerance']:.1e}" if num else "-"
        lines.append(f"  {c['id']:4s} {c['status']:9s} at {where}: error {err}, {c.get('seconds', 0):.1f} s "
                     f"({c.get('cpu_seconds', 0):.0f} CPU-s), "
                     f"peak RSS {c.get('peak_rss_gib', 0):.2f} GiB")
    lines.append(f"  total {ledger.get('seconds', 0):.1f} s ({ledger.get('cpu_seconds', 0):.0f} CPU-s), peak RSS {ledger.get('peak_rss_gib', 0):.2f} GiB "
                 "(the scale forms are numeric; the symbolic steps are the ledger's, fastslow check)")
    return "\n".join(lines)
