"""`fastslow bench`: the benchmarks' subcommand, registered with the CLI as a plugin.

The benchmarks sit above the application (they time what `proofs_check` computes), so the
CLI does not import them: `pyproject.toml` names this module under the ``fastslow.commands``
entry points and `proofs_check.cli` adds every command found there.
"""

from __future__ import annotations

from numerics import resolve_device
from proofs_check.cli import DEVICES, output_file
from numerics.io import write_json


def run(args) -> int:
    from benchmarks.run import run_benchmarks

    results = run_benchmarks(quick=args.quick, device=str(resolve_device(args.device)))
    if args.json:
        write_json(args.json, results)
    return 0


def add_parser(sub) -> None:
    """Add ``bench`` to the CLI's subparsers."""
    p = sub.add_parser("bench", help="benchmarks, each a ratio against a baseline timed in the same run")
    p.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    p.add_argument("--json", metavar="PATH", type=output_file, help="write the results as JSON ('-': stdout)")
    p.add_argument("--device", choices=DEVICES, default="cpu")
    p.set_defaults(run=run)
