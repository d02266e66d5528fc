"""``fastslow study depth [--stack DIR] ...``: the depth study of docs/depth_study.md (claim 8.1).

Without ``--stack``: train GPT-2's block at each depth of ``--depths`` in both arms (``gpt2``: h = 1, i.i.d.
layers; ``smooth``: h = 1/L, depth-smooth initialisation), each (L, arm) one Dask task, cached under
``--cache``; take the measures at every snapshot, apply the pre-registered rule and print the verdict;
``--json`` writes the study record (the one claim 8.1 reads is docs/depth_study/depth_study.json), ``--figure``
the figure.  ``--quick``: the CI size.  With ``--stack DIR``: the same measures on one checkpoint
(``fastslow train`` or ``import-hf``), printed as a per-layer table.
"""

from __future__ import annotations

import time
from pathlib import Path

from proofs_check.cli import options as O
from proofs_check.cli.options import add_device, add_json, ascii_int

DEFAULTS = {"d": 32, "steps": 100, "batch": 8}


def add_parser(sub) -> None:
    p = sub.add_parser("study", help="the depth study (claim 8.1): GPT-2 blocks trained at L = 4…32, "
                                     "or its measures on one checkpoint")
    p.add_argument("name", choices=("depth",), help="the study to run (depth)")
    p.add_argument("--stack", metavar="DIR", help="measure one checkpoint (fastslow train or import-hf) instead")
    p.add_argument("--depths", type=ascii_int, nargs="+", metavar="L", help="depths (default 4 8 16 32)")
    p.add_argument("--d", type=ascii_int, metavar="N", help=f"width (default {DEFAULTS['d']})")
    p.add_argument("--steps", type=ascii_int, metavar="N", help=f"optimiser steps (default {DEFAULTS['steps']})")
    p.add_argument("--batch", type=ascii_int, metavar="N", help=f"windows per step (default {DEFAULTS['batch']})")
    p.add_argument("--warmup", type=ascii_int, metavar="N", help="warm-up steps (default: a tenth of --steps)")
    p.add_argument("--snapshots", type=ascii_int, nargs="+", metavar="STEP",
                   help="snapshot steps, 0 … --steps (default: 0 and 10, 20, 40, 70, 100 %% of --steps)")
    O.add_size(p, "full")
    p.add_argument("--workers", type=ascii_int, metavar="N", default=2, help="local Dask workers (default 2)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="join a running Dask cluster instead")
    p.add_argument("--cache", metavar="DIR", help="where the trained cells live (default $FASTSLOW_CACHE or out/cache)")
    p.add_argument("--windows", type=ascii_int, metavar="N", default=8, help="held-out windows (default 8)")
    add_json(p)
    p.add_argument("--figure", metavar="PATH", help="write the figure (PNG)")
    p.add_argument("--doc", metavar="PATH", help="rewrite the results section of this page (docs/depth_study.md)")
    p.add_argument("--from-record", metavar="PATH",
                   help="skip the runs: read this study record (its --json) and write --doc / --figure from it")
    add_device(p)
    p.set_defaults(run=run)


def _check(args) -> None:
    for name in ("d", "steps", "batch", "warmup", "workers", "windows"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name}={value} must be ≥ 1")
    if args.depths is not None and (len(set(args.depths)) < 2 or min(args.depths) < 2):
        raise ValueError(f"--depths={args.depths}: at least two distinct depths, each ≥ 2 (a roughness needs two layers)")
    if args.stack is not None:
        from numerics.storage import checkpoint as ckpt
        if not ckpt.exists(args.stack):
            raise ValueError(f"--stack {args.stack}: no checkpoint there (fastslow train or fastslow import-hf writes one)")


def run(args) -> int:
    _check(args)
    if args.stack is not None:
        from numerics.storage.io import write_json
        from proofs_check.experiments.depth_study_stack import measure_checkpoint, table

        rec = measure_checkpoint(args.stack, windows=args.windows, device=args.device)
        print(table(rec))
        if args.json:
            write_json(args.json, rec)
        return 0
    import os

    from numerics.storage.io import write_json
    from numerics.text.training import default_cache_dir
    from proofs_check.experiments import depth_study as study

    if args.from_record is not None:
        record = study.recorded(Path(args.from_record))
        if record is None:
            raise ValueError(f"--from-record {args.from_record}: no such file")
        _outputs(args, record)
        return 0

    base = dict(study.TOY) if O.quick(args) else {}
    for name in ("d", "steps", "batch"):
        if getattr(args, name) is not None:
            base[name] = getattr(args, name)
    if "steps" in base and not O.quick(args):  # warm-up and snapshots at fixed fractions of the run
        n = base["steps"]
        base["warmup"] = max(1, n // 10)
        base["snapshots"] = tuple(sorted({0, n // 10, n // 5, (2 * n) // 5, (7 * n) // 10, n}))
    if args.warmup is not None:
        base["warmup"] = args.warmup
    if args.snapshots is not None:
        base["snapshots"] = tuple(args.snapshots)
    if "snapshots" in base and not O.quick(args):  # validation at every snapshot (the trainer's monitor runs there)
        n = max(base["snapshots"])
        base["eval_every"] = next(e for e in range(max(1, n // 10), 0, -1) if all(s % e == 0 for s in base["snapshots"]))
    depths = tuple(args.depths or (study.TOY_DEPTHS if O.quick(args) else study.DEPTHS))
    t0 = time.perf_counter()
    cells = study.run_grid(base, depths, cache=args.cache or default_cache_dir(), workers=args.workers,
                           scheduler=args.scheduler, device=args.device, windows=args.windows)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    record = study.assemble(cells, wall_seconds=time.perf_counter() - t0,
                            workers=None if args.scheduler else args.workers, device=args.device, load=load)
    if args.json:
        write_json(args.json, record)
    _outputs(args, record)
    return 0


def _outputs(args, record: dict) -> None:
    from proofs_check.experiments import depth_study as study

    print(record["statement"])
    if args.figure:
        from proofs_check.report.figures.depth_study import plot

        plot(record, args.figure)
    if args.doc:
        study.write_results(record, Path(args.doc))
