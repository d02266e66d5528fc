"""``fastslow derive [--check] [--family F]``: regenerate numerics/generated/ from the SymPy derivations."""

from __future__ import annotations

from proofs_check.cli.options import add_no_progress


def add_parser(sub) -> None:
    p = sub.add_parser("derive", help="regenerate numerics/generated/ from the SymPy derivations")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming every generated file that differs from a fresh derivation")
    p.add_argument("--family", action="append", help="only this claim family (repeatable)")
    add_no_progress(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from proofs_check.runners.derive import derive

    report = derive(families=args.family or None, check=args.check, progress=not args.no_progress)
    print(report)
    return 0 if report.ok else 1
