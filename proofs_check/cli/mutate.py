"""``fastslow mutate``: theory, source and code mutants — is each deliberate mistake caught?
(``proofs_check.mutation``).  Exit 1 when a mutation score is below its target."""

from __future__ import annotations

import sys

from proofs_check.cli.options import (UsageError, add_json, add_no_progress, ascii_int, check_output_file, one_line,
                                      path_type, table_stream)


def add_parser(sub) -> None:
    p = sub.add_parser("mutate", help="theory, source and code mutants: is each deliberate mistake caught? "
                                      "(mutation scores)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="this theory or source mutant only (repeatable)")
    add_json(p)
    p.add_argument("--workers", type=ascii_int, default=2, help="parallel processes (default 2)")
    p.add_argument("--no-tests", action="store_true",
                   help="ledger checks only; skip running the family's tests on survivors")
    code = p.add_mutually_exclusive_group()
    code.add_argument("--theory-only", action="store_true",
                      help="the theory mutants only, not mutmut's code mutants (which run by default over "
                           "numerics/stacks/stack.py, kernels.py, generated/; --only skips them), nor the source mutants")
    code.add_argument("--code-only", action="store_true", help="the code mutants only, no theory mutants")
    code.add_argument("--source-only", action="store_true",
                      help="the source mutants only (proofs_check/mutation/hand_written_source.py: mistakes in the "
                           "stack, kernels, pooling, certificate and training mask; scored as killed by the ledger "
                           "or by a test only)")
    p.add_argument("--equivalents", metavar="PATH", type=path_type(check_output_file, "--equivalents"),
                   help="write the code mutants' survivors and the rule justifying each "
                        "(docs/equivalent_mutants.md) as markdown")
    add_no_progress(p)
    p.set_defaults(run=run)


def run(args) -> int:
    if args.equivalents and (args.theory_only or args.source_only or args.only):
        raise UsageError("--equivalents lists the code mutants' survivors: it cannot go with "
                         + ("--theory-only" if args.theory_only else
                            "--source-only" if args.source_only else "--only"))
    if args.only and args.code_only:
        raise UsageError("--only names theory mutants (or source mutants): it cannot go with --code-only")
    from proofs_check.mutation import hand_written_source as source_mutants

    source_names = [n for n in args.only or [] if n in source_mutants.catalogue()]
    theory_names = [n for n in args.only or [] if n not in source_names]
    if args.source_only and theory_names:
        raise UsageError(f"--only {', '.join(theory_names)}: no such source mutant (known: "
                         f"{', '.join(source_mutants.catalogue())})")
    from proofs_check.mutation.hand_written_theory import catalogue
    from proofs_check.mutation.mutmut_code import MutationRunError, mutation_step

    unknown = [n for n in theory_names if n not in catalogue()]
    if unknown:
        raise UsageError(f"--only {', '.join(unknown)}: no such theory or source mutant (known: "
                         f"{', '.join([*catalogue(), *source_mutants.catalogue()])})")
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    try:
        result, ok = _run_mutants(args, theory_names, source_names, mutation_step)
    except MutationRunError as exc:  # a step of the runner failed: one line, nothing half-written
        print(f"fastslow mutate: error: {one_line(exc)}", file=sys.stderr)
        return 1
    if args.json:
        from numerics.storage.io import write_json

        write_json(args.json, result)
    return 0 if ok else 1


def _run_mutants(args, theory_names, source_names, step) -> tuple[dict, bool]:
    """The theory, source and code mutants ``args`` select: (the JSON result, every score at its target)."""
    from proofs_check.mutation import hand_written_source as source_mutants
    from proofs_check.mutation.hand_written_theory import format_table, run_mutants

    out = table_stream(args)
    result, ok = {}, True
    if not args.code_only and not args.source_only and (theory_names or not args.only):
        theory = step("theory mutants", run_mutants, theory_names or None, workers=args.workers,
                      run_tests=not args.no_tests, progress=not args.no_progress)
        print(format_table(theory), file=out, flush=True)  # shown even if a later step is killed
        result["theory"] = theory
        ok = theory["killed"] == theory["total"]
    if not args.code_only and not args.theory_only and (source_names or not args.only):
        source = step("source mutants", source_mutants.run_source_mutants, source_names or None,
                      workers=args.workers, run_tests=not args.no_tests, progress=not args.no_progress)
        print(source_mutants.format_table(source), file=out, flush=True)
        result["source"] = source
        ok = ok and source["killed_by_ledger"] == source["total"]
    if not args.theory_only and not args.source_only and not args.only:
        from proofs_check.mutation.equivalents import annotate, markdown
        from proofs_check.mutation.mutmut_code import CODE_TARGET, DEFAULT_PATHS, format_summary, run_code_mutants

        if not args.no_progress:
            print(f"code mutants: mutmut over {', '.join(DEFAULT_PATHS)} (minutes; its summary prints when it "
                  "ends)", file=sys.stderr, flush=True)
        code = step("code mutants (matching survivors to proofs_check/mutation/equivalents.py)", annotate,
                    step("code mutants", run_code_mutants, workers=args.workers))
        print(format_summary(code), file=out, flush=True)
        result["code"] = code
        ok = ok and code["score"] >= CODE_TARGET
        if args.equivalents:
            from numerics.storage.io import write_text

            write_text(args.equivalents, markdown(code, "fastslow mutate"))
    return result, ok
