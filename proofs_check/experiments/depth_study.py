"""The depth study on a grid (docs/depth_study.md, claim 8.1): every (L, arm) cell is one Dask task that
trains the cell (``numerics.depth_study.training``, cached) and takes the measures at every snapshot
(``numerics.depth_study.measures``); the cells' records are assembled into one study record with the
depth fits and the pre-registered verdict (``proofs_check.experiments.depth_study_rule``).

The study record is written to ``docs/depth_study/depth_study.json``; claim 8.1 and the figure read it,
so ``fastslow check`` never trains.
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import torch

DEPTHS = (4, 8, 16, 32)
REPO = Path(__file__).resolve().parents[2]
RECORD = REPO / "docs" / "depth_study" / "depth_study.json"
#: the CI size: the whole grid in seconds (d = 16, L = 2, 4, 8, 40 steps)
TOY = {"d": 16, "heads": 2, "T": 16, "steps": 40, "batch": 8, "warmup": 4, "eval_every": 10,
       "eval_windows": 8, "snapshots": (0, 10, 20, 40)}
TOY_DEPTHS = (2, 4, 8)


def cell_task(cfg_dict: dict, cache: str, device: str = "cpu", windows: int = 8, probes: int = 8,
              spectrum_tokens: int = 8, spectrum_windows: int = 4, train_only: bool = False) -> dict:
    """One (L, arm) cell: train (or reuse) it, then measure every snapshot; returns the cell's record."""
    from numerics.depth_study.training import StudyConfig, train_cell

    cfg = StudyConfig(**cfg_dict)
    t0, c0 = time.perf_counter(), time.process_time()
    folder = train_cell(cfg, cache, device=device)
    trained, trained_cpu = time.perf_counter() - t0, time.process_time() - c0
    if train_only:
        return {"config": cfg.as_dict(), "folder": str(folder), "train_seconds": trained}
    from numerics.depth_study.cell import measure_cell

    t1, c1 = time.perf_counter(), time.process_time()
    record = measure_cell(cfg, folder, device=device, windows=windows, probes=probes,
                          spectrum_tokens=spectrum_tokens, spectrum_windows=spectrum_windows)
    record["seconds"] = {"train_call": trained, "measure": time.perf_counter() - t1,
                         "train_call_cpu": trained_cpu, "measure_cpu": time.process_time() - c1}
    record["worker"] = worker_usage()
    return record


def worker_usage() -> dict:
    """The calling process (a Dask worker): its id, host and peak resident memory so far (MB)."""
    import os
    import platform
    import resource
    import sys

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return {"pid": os.getpid(), "host": platform.node(),
            "peak_rss_mb": rss / 2**20 if sys.platform == "darwin" else rss / 1024}


def run_grid(base: dict, depths=DEPTHS, arms=("gpt2", "smooth"), *, cache: str | Path, workers: int | None = 2,
             scheduler: str | None = None, device: str = "cpu", train_only: bool = False, log=print,
             **measure_options) -> list[dict]:
    """Every (L, arm) cell as one Dask task, the deepest first (the longest tasks start first)."""
    from distributed import as_completed

    from numerics.depth_study.training import StudyConfig
    from proofs_check.sweep.run import connect

    cells = [StudyConfig(**{**base, "layers": L, "arm": arm}).as_dict()
             for L in sorted(depths, reverse=True) for arm in arms]
    out = []
    with connect(scheduler, None if scheduler else workers) as client:
        futures = [client.submit(cell_task, c, str(cache), device, train_only=train_only, pure=False,
                                 key=f"depth-study-{c['arm']}-L{c['layers']}", **measure_options) for c in cells]
        for fut in as_completed(futures):
            rec = fut.result()
            log(f"{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S} done {rec['config']['arm']} "
                f"L = {rec['config']['layers']}")
            out.append(rec)
    return sorted(out, key=lambda r: (r["config"]["arm"], r["config"]["layers"]))


def assemble(cells: list[dict], *, wall_seconds: float | None = None, workers: int | None = None,
             device: str = "cpu", load: str | None = None, notes: str | None = None) -> dict:
    """The study record: the cells, the rule's fits and verdict, the secondary outcomes, one sentence, provenance."""
    import platform

    import torch

    from proofs_check.experiments.depth_study_rule import decide, secondary
    from proofs_check.experiments.train import git_hash

    decision = decide(cells)
    record = {"depths": sorted({c["config"]["layers"] for c in cells}), "arms": sorted({c["config"]["arm"] for c in cells}),
              "config": {k: v for k, v in cells[0]["config"].items() if k not in ("layers", "arm")},
              "cells": cells, "decision": decision, "secondary": secondary(cells, decision)}
    record["statement"] = statement(record)
    record["recorded"] = {"git": git_hash(), "torch": torch.__version__, "python": platform.python_version(),
                          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                          "wall_seconds": wall_seconds, "workers": workers, "device": device, "load": load,
                          "notes": notes}
    return record


def statement(record: dict) -> str:
    """One sentence of the finding, from the record's numbers."""
    d = record["decision"]
    parts = []
    for arm in record["arms"]:
        tr, init = d["fits"][arm]["trained"], d["fits"][arm]["init"]
        parts.append(f"{arm} (h = {'1' if arm == 'gpt2' else '1/L'}): step slope {tr['p_step']:+.2f}, median "
                     f"roughness slope {tr['p_rough']:+.2f} after training (at init {init['p_step']:+.2f}, "
                     f"{init['p_rough']:+.2f}): {tr['reading']}")
    cal = "calibrated" if d["calibrated"] else "calibration failed"
    return (f"Depth study at L = {', '.join(map(str, record['depths']))} (d = {record['config']['d']}, "
            f"{record['config']['steps']} steps; Euler −1, i.i.d. 0 for roughness and ≈ −0.5 for the step): "
            + "; ".join(parts) + f"; estimator {cal}; claim 8.1 {d['verdict']}.")


def recorded(path: Path = RECORD) -> dict | None:
    """The committed study record, or None."""
    import json

    return json.loads(path.read_text()) if path.exists() else None


RESULTS_HEADER = "## Results"


def results_markdown(record: dict) -> str:
    """docs/depth_study.md's results section, every number read from the study record."""
    import statistics

    from proofs_check.tables import markdown_table

    d, rec, cfg = record["decision"], record["recorded"], record["config"]
    lines = [RESULTS_HEADER, "",
             "Generated from `docs/depth_study/depth_study.json` by `fastslow study depth --doc docs/depth_study.md`; "
             "nothing here is typed by hand.", "",
             f"**Verdict: claim 8.1 is {d['verdict']}** by the pre-registered rule. Readings after training: "
             + "; ".join(f"`{arm}` {r}" for arm, r in d["readings"].items()) + ". Calibration at step 0: "
             + ", ".join(f"`{arm}` p_rough = {c['p_rough']:+.3f} in [{c['window'][0]}, {c['window'][1]}] "
                         f"({'ok' if c['ok'] else 'missed'})" for arm, c in d["calibration"].items()) + ".", "",
             record["statement"], ""]
    rows = [["arm", "when", "p_step", "p_rough (median)", *(f"p {g}" for g in
                                                          d["fits"][record["arms"][0]]["trained"]["roughness"]), "reading"]]
    for arm, f in d["fits"].items():
        for when in ("init", "trained"):
            x = f[when]
            rows.append([arm, f"step {d['first'] if when == 'init' else d['last']}", f"{x['p_step']:+.3f}",
                         f"{x['p_rough']:+.3f}", *(f"{r['slope']:+.2f}" + ("*" if r["poor_fit"] else "")
                                                    for r in x["roughness"].values()), x["reading"]])
    lines += ["Slopes in L (loglog fits over L = " + ", ".join(map(str, record["depths"])) + "; * a fit with max "
              "|ln residual| > 0.35):", "", *markdown_table(rows[0], rows[1:]), ""]
    moved = all("weight_motion" in c for c in record["cells"])
    rows = [["arm", "L", "validation loss (nats/byte)", "mean step", "median r", "fixed-pattern ē (0 → end)",
             "gap g (0 → end)", "ε = L·h/g (end)", *(["stack ‖θ_end − θ_0‖/‖θ_0‖"] if moved else [])]]
    for cell in sorted(record["cells"], key=lambda c: (c["config"]["arm"], c["config"]["layers"])):
        a, b = cell["snapshots"][str(d["first"])], cell["snapshots"][str(d["last"])]
        med = statistics.median(g["mean"] for g in b["roughness"].values())
        rows.append([cell["config"]["arm"], cell["config"]["layers"], f"{cell['run']['curves']['eval_loss'][-1]:.3f}",
                     f"{b['step']['mean']:.3f}", f"{med:.3f}",
                     f"{a['fixed_pattern']['mean']:.3f} → {b['fixed_pattern']['mean']:.3f}",
                     f"{a['spectrum']['g']:.2f} → {b['spectrum']['g']:.2f}", f"{b['spectrum']['eps']:.3g}",
                     *([f"{cell['weight_motion']['stack']:.3f}"] if moved else [])])
    lines += ["Per cell at the end of training (step " + str(d["last"]) + "):", "", *markdown_table(rows[0], rows[1:]), "",
              f"The validation text's unigram entropy is {_unigram_entropy():.3f} nats/byte: a cell whose loss sits "
              "near it has learnt little beyond byte frequencies"
              + (" (the last column: how far training moved the stack's weights, all layers together)." if moved else
                 " (how far its weights moved from their initialisation was not measured)."), ""]
    for arm, s in record["secondary"].items():
        slope = "n/a" if s["gap_slope_in_L"] is None else f"{s['gap_slope_in_L']:+.2f}"
        lines.append(f"- `{arm}`: factorisation adequate along text (ē ≤ 0.1 at every L): "
                     f"{'yes' if s['factorisation_adequate'] else 'no'}; persistent gap (g ≥ ln 10 at the largest L): "
                     f"{'yes' if s['persistent_gap'] else 'no'}; gap's slope in L {slope}; gap widens with training "
                     f"at the largest L: {'yes' if s['gap_widens_with_training'] else 'no'}.")
    wall = rec.get("wall_seconds")
    lines += ["", f"Recorded {rec['date']} at git {str(rec['git'])[:7]}, torch {rec['torch']}, "
              f"{rec.get('workers')} Dask workers on {rec.get('device')}; d = {cfg['d']}, {cfg['steps']} steps of "
              f"{cfg['batch']} × {cfg['T']} bytes per cell"
              + (f"; wall {wall / 60:.1f} min for the grid call that finished the record" if wall is not None else "")
              + (f"; load average at the end {rec['load']}" if rec.get("load") else "") + ".", "",
              *_resources(record),
              *([rec["notes"], ""] if rec.get("notes") else []),
              "![depth study](depth_study/depth_study.png)", ""]
    return "\n".join(lines)


def _resources(record: dict) -> list[str]:
    """Per cell: wall and CPU seconds of training and measuring; per Dask worker: its peak resident memory.
    Empty for a record written before cells carried them."""
    cells = [c for c in record["cells"] if "measure_cpu" in c.get("seconds", {})]
    if not cells:
        return []
    from proofs_check.tables import markdown_table

    rows = [[c["config"]["arm"], c["config"]["layers"], f"{c['seconds']['train_call']:.0f}",
             f"{c['seconds']['train_call_cpu']:.0f}", f"{c['seconds']['measure']:.0f}",
             f"{c['seconds']['measure_cpu']:.0f}", c["worker"]["pid"]]
            for c in sorted(cells, key=lambda c: (c["config"]["arm"], c["config"]["layers"]))]
    peak: dict = {}
    for c in cells:
        w = c["worker"]
        peak[w["pid"]] = max(peak.get(w["pid"], 0.0), w["peak_rss_mb"])
    cpu = sum(c["seconds"]["train_call_cpu"] + c["seconds"]["measure_cpu"] for c in cells)
    return ["Cost per cell (seconds; wall on the shared machine, CPU of the worker process):", "",
            *markdown_table(["arm", "L", "train wall", "train CPU", "measure wall", "measure CPU", "worker"], rows), "",
            f"CPU time of all cells: {cpu / 60:.1f} min. Peak resident memory per Dask worker: "
            + ", ".join(f"{pid}: {mb / 1024:.2f} GB" for pid, mb in sorted(peak.items())) + ".", ""]


def _unigram_entropy() -> float:
    from numerics.text.corpus import ByteCorpus, unigram_entropy

    return unigram_entropy(ByteCorpus.load().validation.to(torch.uint8).numpy().tobytes())


def write_results(record: dict, doc: Path) -> None:
    """Replace everything from the results header on in ``doc`` with :func:`results_markdown`."""
    from numerics.storage.io import write_text

    text = Path(doc).read_text()
    head = text.split("\n" + RESULTS_HEADER + "\n", 1)[0]
    write_text(doc, head + "\n" + results_markdown(record))
