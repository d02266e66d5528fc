"""``fastslow grid``: every claim on every architecture variant — holds, conditional (with its condition),
fails (with a shrunk counterexample) or n/a (with the reason) — the claims × architectures grid of
``proofs_check.runners.grid``.  Its JSON keeps the name the report reads, ``matrix.json``, in ``reproduce``."""

from __future__ import annotations

from proofs_check.cli.options import (add_allow_drift, add_claims, add_device, add_json, add_no_progress, add_size,
                                      integrity, load_ledger, quick, table_stream, validate_claims)


def add_parser(sub) -> None:
    p = sub.add_parser("grid", help="the claims × architectures grid (holds / conditional / fails / n/a)",
                       description="Evaluate every claim on every architecture variant (numerics.stacks.architectures; "
                                   "--only-arch picks some) and on a trained stack, and print the grid: holds, "
                                   "conditional (with its condition), fails (with a shrunk counterexample) or n/a "
                                   "(with the reason).")
    add_json(p)
    add_size(p, "quick")
    p.add_argument("--only-arch", action="append", metavar="NAME", help="only this variant (repeatable)")
    add_claims(p)
    p.add_argument("--ledger", metavar="PATH", help="reuse a ledger JSON (fastslow check --json) for preln")
    add_allow_drift(p)
    add_device(p)
    add_no_progress(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from numerics.storage.io import write_json
    from proofs_check.runners import grid

    claims = validate_claims(args.claim)
    ledger = load_ledger(args.ledger) if args.ledger is not None else None
    drift = integrity(args)
    if not drift.ok and not drift.override:
        return 1
    result = grid.run_matrix(quick=quick(args), only_arch=args.only_arch or None, claims=claims, ledger=ledger,
                             device=args.device, progress=not args.no_progress)
    result["integrity"] = drift.as_dict()
    print(grid.format_table(result), file=table_stream(args))
    if args.json:
        write_json(args.json, result)
    return grid.exit_code(result)
