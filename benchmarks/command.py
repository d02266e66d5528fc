"""`fastslow bench`: the benchmarks' subcommand, registered with the CLI as a plugin.

The benchmarks sit above the application (they time what `proofs_check` computes), so the
CLI does not import them: `pyproject.toml` names this module under the ``fastslow.commands``
entry points and `proofs_check.cli` adds every command found there.
"""

from __future__ import annotations

from proofs_check.cli.options import add_device, add_json, add_size, quick


def run(args) -> int:
    from benchmarks.run import run_benchmarks
    from numerics.storage.io import write_json

    results = run_benchmarks(quick=quick(args), device=args.device)
    if args.json:
        write_json(args.json, results)
    return 0


def add_parser(sub) -> None:
    """Add ``bench`` to the CLI's subparsers."""
    p = sub.add_parser("bench", help="benchmarks, each a ratio against a baseline timed in the same run")
    add_size(p, "full")
    add_json(p)
    add_device(p)
    p.set_defaults(run=run)
