"""``fastslow check``: the ledger — every claim's symbolic steps, independent numeric routes and
negative control (``proofs_check.runners.check``); ``--stack`` on a trained checkpoint, ``--scale``
matrix-free at a preset's size (``proofs_check.runners.scale``).  Exit 1 when a claim fails or its check raised (error)."""

from __future__ import annotations

import os

from proofs_check.cli.options import (UsageError, add_allow_drift, add_claims, add_device, add_json,
                                      add_no_progress, add_seed, add_size, check_output_file, integrity, path_type,
                                      quick, scale_preset, seed, table_stream, validate_claims)

PROFILES = ("ci", "random", "thorough")


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="verify claims (symbolic, mpmath, numeric, control); print the ledger")
    add_claims(p)
    add_device(p)
    p.add_argument("--profile", choices=PROFILES, default=os.environ.get("HYPOTHESIS_PROFILE", "ci"),
                   help="ci: bounded sizes, the same stacks every run (default); random: stacks from a "
                        "fresh seed, printed with the ledger (reproduce with --seed N); thorough: many more "
                        "cases, meant for a GPU")
    add_seed(p)
    add_size(p, "quick")
    add_json(p)
    p.add_argument("--summary", metavar="PATH", type=path_type(check_output_file, "--summary"),
                   help="write the claims' summary (kind, setting, status, finding) as a markdown table "
                        "('-': standard output), the table README.md shows")
    add_allow_drift(p)
    add_no_progress(p)
    p.add_argument("--scale", metavar="PRESET", type=scale_preset,
                   help="the claims' matrix-free scale forms at a preset size: toy, ci, gpt2-small, "
                        "gpt2-medium, gpt2-large (numerics/stacks/presets.py); the preset sets the sizes")
    p.add_argument("--dtype", choices=("float64", "float32"), default=None,
                   help="with --scale: the stacks' dtype (default float64; float32 has its own tolerances)")
    p.add_argument("--stack", metavar="CKPT",
                   help="run every claim that is a statement about a stack on this trained checkpoint "
                        "(a `fastslow train` folder); the ledger records that the stack was trained")
    p.set_defaults(run=run)


def run(args) -> int:
    from numerics.storage.io import write_json, write_text
    from proofs_check.runners.check import exit_code, format_table, run_checks
    from proofs_check.verdicts.ledger_schema import checked_ledger

    claims = validate_claims(args.claim)
    if args.scale and args.stack:
        raise UsageError(f"--stack {args.stack} cannot go with --scale {args.scale}: --scale checks random stacks "
                         "at a preset's size, --stack a trained checkpoint (run them separately)")
    if args.dtype is not None and not args.scale:
        raise UsageError(f"--dtype {args.dtype} needs --scale PRESET (the ledger's own checks run in float64)")
    if args.scale and args.quick is not None:
        raise UsageError(f"{'--quick' if args.quick else '--full'} cannot go with --scale {args.scale}: "
                         "the preset sets the sizes")
    if args.scale and args.summary:
        raise UsageError("--summary is the ledger's claims table: it cannot go with --scale")
    if args.stack and args.seed is not None:
        raise UsageError("--seed cannot go with --stack: the checkpoint's weights are the stack")
    if args.stack and args.summary:
        raise UsageError("--summary is the ledger's claims table: it cannot go with --stack")
    if args.scale:
        return _check_scale(args, claims)
    drift = integrity(args)
    if not drift.ok and not drift.override:
        return 1
    if args.stack:
        return _check_stack(args, claims, drift)
    ledger = run_checks(claims, device=args.device, profile=args.profile, seed=args.seed, quick=quick(args),
                        progress=not args.no_progress)
    ledger["integrity"] = drift.as_dict()
    print(format_table(ledger), file=table_stream(args))
    if drift.override:
        print(str(drift), file=table_stream(args))
    if args.json:
        write_json(args.json, checked_ledger(ledger))
    if args.summary:
        from proofs_check.experiments.recorded_findings import recorded_findings
        from proofs_check.verdicts.standing import summary_markdown

        write_text(args.summary, summary_markdown(ledger, recorded_findings()))
    return exit_code(ledger)


def _check_stack(args, claims, drift) -> int:
    """``check --stack CKPT``: the on-stack claims on a trained checkpoint (proofs_check.runners.check)."""
    from numerics.storage.io import write_json
    from proofs_check.runners.check import exit_code, format_stack_table, run_stack_checks

    ledger = run_stack_checks(args.stack, claims, device=args.device, profile=args.profile, quick=quick(args),
                              progress=not args.no_progress)
    ledger["integrity"] = drift.as_dict()
    print(format_stack_table(ledger), file=table_stream(args))
    if args.json:
        write_json(args.json, ledger)
    return exit_code(ledger)


def _check_scale(args, claims) -> int:
    """``check --scale PRESET``: every claim's scale form at the preset's size (proofs_check.runners.scale)."""
    from numerics.storage.io import write_json
    from proofs_check.runners.check import exit_code, format_table
    from proofs_check.verdicts.ledger_schema import checked_ledger
    from proofs_check.runners.scale import format_sizes, run_scale

    ledger = run_scale(args.scale, claims, device=args.device, dtype=args.dtype or "float64", seed=seed(args),
                       progress=not args.no_progress)
    print(format_table(ledger) + "\n" + format_sizes(ledger), file=table_stream(args))
    if args.json:
        write_json(args.json, checked_ledger(ledger))
    return exit_code(ledger)
