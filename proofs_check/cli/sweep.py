"""``fastslow sweep SPEC.toml|NAME [--scheduler ADDRESS] [--workers N] [--out DIR] [--resume] [--list]
[--figures DIR]``: run a sweep, store its rows, print its summary, draw its phase diagrams.

Exit status: 0 when every task wrote its row; 1 when some task raised after its retries (its row is
missing, ``--resume`` runs it again); 2 on a bad spec or option (nothing ran); 130 on Ctrl-C (the
finished rows are kept).  Before anything runs: the spec is validated (its grid at most --max-tasks
tasks), the options are checked, and --out is claimed and locked (``numerics.storage.outdir``): a folder
of another command's or of foreign files, or one another sweep is writing, is refused (2).
"""

from __future__ import annotations

import sys
from pathlib import Path

from proofs_check.cli.options import add_device, add_no_progress, add_out, ascii_int

MAX_TASKS = 200_000  # proofs_check.sweep.spec.MAX_TASKS (tests/test_cli_light.py holds them equal)


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="run a claim over a grid of stacks on Dask; Parquet rows, phase diagrams")
    p.add_argument("spec", nargs="?", metavar="SPEC",
                   help="a spec file (TOML) or the name of a shipped spec (see --list)")
    p.add_argument("--list", action="store_true", help="list the shipped specs and exit")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="join a running Dask cluster, e.g. tcp://host:8786 (default: start a local one)")
    p.add_argument("--workers", type=ascii_int, metavar="N",
                   help="worker processes of the local cluster (default: one per core)")
    p.add_argument("--max-tasks", type=ascii_int, metavar="N", default=MAX_TASKS,
                   help=f"refuse a grid of more than N tasks (points × seeds; default {MAX_TASKS})")
    add_out(p, None, shown="out/sweeps/<spec name>")
    p.add_argument("--resume", action="store_true", help="keep the rows already in --out, run only the others")
    p.add_argument("--figures", metavar="DIR", help="draw the spec's phase diagrams from the results into DIR")
    add_device(p)
    add_no_progress(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from proofs_check.sweep import spec as sweep_spec

    if args.list:
        for name, path in sorted(sweep_spec.builtin_specs().items()):
            info = sweep_spec.describe(path)
            print(f"{name:16s} {info['tasks']:6d} tasks  claims {', '.join(info['claims']):20s} "
                  f"{info['description']}")
        return 0
    from proofs_check.extras import require

    require("sweep", "fastslow sweep")
    if args.spec is None:
        raise ValueError("SPEC: give a spec file or a shipped spec's name (fastslow sweep --list)")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers={args.workers} must be ≥ 1")
    if args.max_tasks < 1:
        raise ValueError(f"--max-tasks={args.max_tasks} must be ≥ 1")
    if args.scheduler is not None:
        check_scheduler(args.scheduler)
    if args.figures is not None:
        from numerics.storage import outdir
        from proofs_check.validation import check_output_dir

        outdir.check(check_output_dir(args.figures, "--figures"), "sweep", name="--figures")
    spec = sweep_spec.load(args.spec, max_tasks=args.max_tasks)
    from numerics.storage import outdir
    from proofs_check.validation import check_output_dir

    out = Path(check_output_dir(args.out if args.out is not None else str(Path("out") / "sweeps" / spec.name),
                                "--out"))
    if args.scheduler is None:  # a local cluster: its workers must fit this machine, checked before the folder
        from proofs_check.sweep.grid import expand
        from proofs_check.sweep.run import check_resources

        check_resources(expand(spec, device=args.device), args.workers)
    with outdir.claim(out, "sweep"):
        return _sweep(args, spec, out)


def check_scheduler(address: str) -> str:
    """A Dask scheduler address: ``PROTOCOL://HOST[:PORT]`` or ``HOST:PORT``; ValueError naming --scheduler."""
    import re

    if not (re.fullmatch(r"(?:tcp|tls|inproc|ucx|ws|wss)://[^\s/]+(?::[0-9]{1,5})?/?", address or "")
            or re.fullmatch(r"[A-Za-z0-9_.\-]+:[0-9]{1,5}", address or "")):
        raise ValueError(f"--scheduler {address!r}: not a scheduler address (e.g. tcp://host:8786 or host:8786)")
    return address


def _sweep(args, spec, out: Path) -> int:
    from numerics.storage.io import write_json
    from proofs_check.sweep.run import run_sweep
    from proofs_check.sweep.store import Store
    from proofs_check.sweep.summary import format_summary, summarise

    run = run_sweep(spec, out, scheduler=args.scheduler, workers=args.workers, resume=args.resume,
                    device=args.device, progress=not args.no_progress)
    if run.interrupted:
        print(f"sweep {spec.name} interrupted: {run.written} rows written, {run.skipped} already stored; "
              f"continue with --resume --out {out}", file=sys.stderr)
        return 130
    from proofs_check.sweep.grid import source_hash, spec_hash

    df = Store(out).read()  # each row key once
    summary = summarise(df) if len(df) else {}
    write_json(out / "summary.json", {"spec": spec.name, "rows": int(len(df)), "claims": summary,
                                      "spec_hash": spec_hash(spec), "source": source_hash(),
                                      "run": {"tasks": run.total, "skipped": run.skipped, "written": run.written,
                                              "errors": run.errors,
                                              "seconds": run.seconds}})
    print(f"sweep {spec.name}: {run.written} rows written, {run.skipped} already stored, "
          f"{len(run.errors)} tasks failed, {run.seconds:.1f} s -> {out / 'results'}")
    for key, message in run.errors[:5]:
        print(f"  task {key[:12]} raised: {message}")
    if summary:
        print(format_summary(summary))
    if args.figures and len(df):
        from numerics.storage import outdir
        from proofs_check.sweep.figures import render

        with outdir.claim(args.figures, "sweep", name="--figures", lock=False) as folder:
            for path in render(spec, df, folder):
                print(f"figure {path}")
    return 0 if run.ok else 1
