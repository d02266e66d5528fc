"""``fastslow reproduce [--out DIR] [--quick]``: derive --check, every claim, the claims × architectures
grid, the claims at scale, every figure and the report, in one run (``proofs_check.report.reproduce``)."""

from __future__ import annotations

from pathlib import Path

from proofs_check.cli.options import add_allow_drift, add_device, add_no_progress, add_out, add_size, quick


def add_parser(sub) -> None:
    p = sub.add_parser("reproduce", help="derive --check, check every claim, the grid, all figures, the report")
    add_out(p, "out")
    add_size(p, "full")
    add_device(p)
    add_allow_drift(p)
    add_no_progress(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from proofs_check.extras import require
    from proofs_check.progress import silenced
    from proofs_check.validation import load_mutation_record

    load_mutation_record(Path(args.out) / "mutation.json")  # read into the report at the end: checked first

    require("report", "fastslow reproduce (the report)")
    from proofs_check.report.reproduce import reproduce

    with silenced(args.no_progress):
        return reproduce(out=Path(args.out), quick=quick(args), device=args.device, allow_drift=args.allow_drift)
