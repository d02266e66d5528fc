"""The ``fastslow`` command line: derive, check, figures, simulate, bench, reproduce.

Every subcommand validates its input and exits 2 with ``fastslow: error: ...`` naming
the parameter on bad input; 1 when a check or drift test fails; 0 otherwise.

Validation is declarative: each argument names its checker as its argparse ``type`` (ASCII
numbers, output files and folders, checked when the command line is parsed, before any
work), and the values go on to the Python API's own boundary checks
(``proofs_check.validation``).  ``check``, ``matrix`` and ``reproduce`` first confirm that
``numerics/generated/`` is what its derivations recorded (``proofs_check.integrity``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from numerics.io import Terminated, write_json, write_text
from proofs_check.validation import (InvalidInput, ascii_float, ascii_int, check_output_dir,
                                     check_output_file, load_ledger, memory_size, validate_claims)

DEVICES = ("auto", "cpu", "cuda")
PROFILES = ("ci", "random", "thorough")


class UsageError(ValueError):
    """Bad input from the command line; printed without a traceback."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``fastslow simulate: error: argument --T: ...``), exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _path_type(check, name: str):
    """An argparse ``type`` that runs a path check of ``proofs_check.validation``."""

    def convert(text: str) -> str:
        try:
            return check(text, name)
        except InvalidInput as err:
            raise argparse.ArgumentTypeError(str(err).removeprefix(f"{name} "))

    convert.__name__ = name.lstrip("-")
    return convert


output_file = _path_type(check_output_file, "--json")
output_dir = _path_type(check_output_dir, "--out")


def _integrity(args):
    """Refuse (exit 1) when numerics/generated/ is not what its derivations recorded, unless overridden."""
    from proofs_check.integrity import verify

    report = verify()
    report.override = bool(getattr(args, "allow_drift", False)) and not report.ok
    if report.stale or not report.ok:
        print(str(report), file=sys.stderr)
    return report


def _scale_preset(name: str) -> str:
    from numerics.presets import check_preset

    try:
        return check_preset(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _table_stream(args):
    """Where the human-readable table goes: stderr when the JSON goes to stdout (``--json -``)."""
    return sys.stderr if "-" in (getattr(args, "json", None), getattr(args, "summary", None)) else sys.stdout


def _device(name: str) -> str:
    from numerics import resolve_device

    return str(resolve_device(name))


def cmd_derive(args) -> int:
    from proofs_check.runners.derive import derive

    report = derive(families=args.family or None, check=args.check, progress=not args.no_progress)
    print(report)
    return 0 if report.ok else 1


def cmd_check(args) -> int:
    from proofs_check.runners.check import run_checks, format_table

    claims = validate_claims(args.claim)
    if args.scale and args.stack:
        raise UsageError(f"--stack {args.stack} cannot go with --scale {args.scale}: --scale checks random stacks "
                         "at a preset's size, --stack a trained checkpoint (run them separately)")
    if args.dtype is not None and not args.scale:
        raise UsageError(f"--dtype {args.dtype} needs --scale PRESET (the ledger's own checks run in float64)")
    device = _device(args.device)
    if args.scale:
        return _check_scale(args, claims, device)
    integrity = _integrity(args)
    if not integrity.ok and not integrity.override:
        return 1
    if args.stack:
        return _check_stack(args, claims, device, integrity)
    ledger = run_checks(claims, device=device, profile=args.profile, seed=args.seed,
                        quick=not args.full, progress=not args.no_progress)
    ledger["integrity"] = integrity.as_dict()
    print(format_table(ledger), file=_table_stream(args))
    if integrity.override:
        print(str(integrity), file=_table_stream(args))
    if args.json:
        write_json(args.json, ledger)
    if args.summary:
        from proofs_check.claims.standing import summary_markdown

        write_text(args.summary, summary_markdown(ledger))
    return 0 if all(c["status"] != "failed" for c in ledger["claims"]) else 1


def _check_stack(args, claims, device, integrity) -> int:
    """``check --stack CKPT``: the on-stack claims on a trained checkpoint (proofs_check.runners.check)."""
    from proofs_check.runners.check import format_stack_table, run_stack_checks

    ledger = run_stack_checks(args.stack, claims, device=device, profile=args.profile, quick=not args.full,
                              progress=not args.no_progress)
    ledger["integrity"] = integrity.as_dict()
    print(format_stack_table(ledger), file=_table_stream(args))
    if args.json:
        write_json(args.json, ledger)
    return 0 if all(c["status"] != "fails" for c in ledger["claims"]) else 1


def _check_scale(args, claims, device) -> int:
    """``check --scale PRESET``: every claim's scale form at the preset's size (proofs_check.runners.scale)."""
    from proofs_check.runners.check import format_table
    from proofs_check.runners.scale import format_sizes, run_scale

    ledger = run_scale(args.scale, claims, device=device, dtype=args.dtype or "float64", progress=not args.no_progress)
    print(format_table(ledger) + "\n" + format_sizes(ledger), file=_table_stream(args))
    if args.json:
        write_json(args.json, ledger)
    return 0 if all(c["status"] != "failed" for c in ledger["claims"]) else 1


def cmd_figures(args) -> int:
    from proofs_check.report.figures import load_figures, render
    from proofs_check.claims.evidence import CheckContext

    figures = load_figures()
    if args.list:
        for name, fig in sorted(figures.items()):
            print(f"{name:32s} claim {fig.claim:4s} {fig.title}")
        return 0
    ctx = CheckContext(device=_device(args.device), quick=not args.full)
    written = render(args.only or None, ctx, Path(args.out), formats=args.format or ("png", "pdf"))
    for name, paths in written.items():
        print(f"{name:32s} " + "  ".join(str(p) for p in paths))
    return 0


def cmd_simulate(args) -> int:
    from proofs_check.experiments.simulate import simulate, format_summary

    if args.scale:  # the preset's sizes replace --T, --d, --layers, --heads
        from numerics.presets import SIZES

        args.T, args.d, args.layers, args.heads = SIZES[args.scale]
    summary = simulate(T=args.T, P=args.P or None, d=args.d, layers=args.layers, heads=args.heads,
                       kernel=args.kernel, gate=args.gate, seed=args.seed, device=_device(args.device),
                       slow_kernel=args.slow_kernel, value_scale=args.value_scale, decay=args.decay,
                       strict=args.strict, ln_gain=args.ln_gain, weight_scale=args.weight_scale,
                       certificate=args.certificate, max_memory=args.max_memory)
    print(format_summary(summary), file=_table_stream(args))
    if args.json:
        write_json(args.json, summary)
    return 0


def cmd_reproduce(args) -> int:
    from proofs_check.report.reproduce import reproduce

    return reproduce(out=Path(args.out), quick=args.quick, device=_device(args.device),
                     allow_drift=args.allow_drift)


def cmd_mutate(args) -> int:
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
    from proofs_check.mutation.mutmut_code import MutationRunError, mutation_step
    from proofs_check.mutation.hand_written_theory import catalogue

    unknown = [n for n in theory_names if n not in catalogue()]
    if unknown:
        raise UsageError(f"--only {', '.join(unknown)}: no such theory or source mutant (known: "
                         f"{', '.join([*catalogue(), *source_mutants.catalogue()])})")
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    try:
        result, ok = _run_mutants(args, theory_names, source_names, mutation_step)
    except MutationRunError as exc:  # a step of the runner failed: one line, nothing half-written
        print(f"fastslow mutate: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    if args.json:
        write_json(args.json, result)
    return 0 if ok else 1


def _run_mutants(args, theory_names, source_names, step) -> tuple[dict, bool]:
    """The theory, source and code mutants ``args`` select: (the JSON result, every score at its target)."""
    from proofs_check.mutation import hand_written_source as source_mutants
    from proofs_check.mutation.hand_written_theory import format_table, run_mutants

    result, ok = {}, True
    if not args.code_only and not args.source_only and (theory_names or not args.only):
        theory = step("theory mutants", run_mutants, theory_names or None, workers=args.workers,
                      run_tests=not args.no_tests)
        print(format_table(theory), flush=True)  # shown even if a later step is killed
        result["theory"] = theory
        ok = theory["killed"] == theory["total"]
    if not args.code_only and not args.theory_only and (source_names or not args.only):
        source = step("source mutants", source_mutants.run_source_mutants, source_names or None,
                      workers=args.workers, run_tests=not args.no_tests)
        print(source_mutants.format_table(source), flush=True)
        result["source"] = source
        ok = ok and source["killed_by_ledger"] == source["total"]
    if not args.theory_only and not args.source_only and not args.only:
        from proofs_check.mutation.mutmut_code import CODE_TARGET, DEFAULT_PATHS, format_summary, run_code_mutants

        from proofs_check.mutation.equivalents import annotate, markdown

        print(f"code mutants: mutmut over {', '.join(DEFAULT_PATHS)} (minutes; its summary prints when it ends)",
              file=sys.stderr, flush=True)
        code = step("code mutants (matching survivors to proofs_check/mutation/equivalents.py)", annotate,
                    step("code mutants", run_code_mutants, workers=args.workers))
        print(format_summary(code), flush=True)
        result["code"] = code
        ok = ok and code["score"] >= CODE_TARGET
        if args.equivalents:
            write_text(args.equivalents, markdown(code, "fastslow mutate"))
    return result, ok


def cmd_matrix(args) -> int:
    from proofs_check.runners.grid import format_table, run_matrix

    claims = validate_claims(args.claim)
    ledger = load_ledger(args.ledger) if args.ledger is not None else None
    integrity = _integrity(args)
    if not integrity.ok and not integrity.override:
        return 1
    matrix = run_matrix(quick=not args.full, only_arch=args.only_arch or None, claims=claims,
                        ledger=ledger, device=_device(args.device), progress=not args.no_progress)
    matrix["integrity"] = integrity.as_dict()
    print(format_table(matrix), file=_table_stream(args))
    if args.json:
        write_json(args.json, matrix)
    return 0


def package_version() -> str:
    """The installed fastslow distribution's version (pyproject.toml's `version`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastslow")
    except PackageNotFoundError:
        return "unknown (not installed)"


def add_plugin_commands(sub) -> None:
    """Add the commands that packages above the application register (``bench`` from
    `benchmarks`) under the ``fastslow.commands`` entry points: the CLI never imports them."""
    from importlib.metadata import entry_points

    for entry in sorted(entry_points(group="fastslow.commands"), key=lambda e: e.name):
        entry.load()(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="fastslow",
        description="Verify the claims of 'Attention is Just Another Name for Coupling?' "
                    "(arXiv 2606.16730) symbolically, by generated code, and by simulation.")
    parser.add_argument("--version", action="version", version=f"fastslow {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("derive", help="regenerate numerics/generated/ from the SymPy derivations")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming every generated file that differs from a fresh derivation")
    p.add_argument("--family", action="append", help="only this claim family (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=cmd_derive)

    p = sub.add_parser("check", help="verify claims (symbolic, mpmath, numeric, control); print the ledger")
    p.add_argument("--claim", action="extend", nargs="+", metavar="ID",
                   help="claim ids as in docs/theory.md, e.g. --claim 2.1 4.1 (repeatable, duplicates dropped; "
                        "default: all)")
    p.add_argument("--device", choices=DEVICES, default="cpu", help="where simulations run (default cpu)")
    p.add_argument("--profile", choices=PROFILES, default=os.environ.get("HYPOTHESIS_PROFILE", "ci"),
                   help="ci: bounded sizes, the same stacks every run (default); random: stacks from a "
                        "fresh seed, printed with the ledger (reproduce with --seed N); thorough: many more "
                        "cases, meant for a GPU")
    p.add_argument("--seed", type=ascii_int, default=None,
                   help="seed the checks draw their stacks from (default 0; with --profile random a fresh "
                        "one); 0 ≤ seed < 2**63 - 1")
    p.add_argument("--full", action="store_true", help="full-size checks instead of the quick CI sizes")
    p.add_argument("--json", metavar="PATH", type=output_file, help="write the ledger as JSON ('-': stdout)")
    p.add_argument("--summary", metavar="PATH", type=_path_type(check_output_file, "--summary"),
                   help="write the claims' summary (kind, setting, status, finding) as a markdown table "
                        "('-': stdout), the table README.md shows")
    p.add_argument("--allow-drift", action="store_true",
                   help="development only: run even when numerics/generated/ does not match the hashes its "
                        "derivations recorded (the override is written into the ledger)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--scale", metavar="PRESET", type=_scale_preset,
                   help="the claims' matrix-free scale forms at a preset size: toy, ci, gpt2-small, "
                        "gpt2-medium, gpt2-large (numerics/presets.py)")
    p.add_argument("--dtype", choices=("float64", "float32"), default=None,
                   help="with --scale: the stacks' dtype (default float64; float32 has its own tolerances)")
    p.add_argument("--stack", metavar="CKPT",
                   help="run every claim that is a statement about a stack on this trained checkpoint "
                        "(a `fastslow train` folder); the ledger records that the stack was trained")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("figures", help="list or render the figures")
    p.add_argument("--only", action="append", metavar="NAME", help="render this figure (repeatable)")
    p.add_argument("--out", default="out/figures", type=output_dir, help="output folder (default out/figures)")
    p.add_argument("--list", action="store_true", help="list figure names and exit")
    p.add_argument("--format", action="append", choices=("png", "pdf"),
                   help="file format (repeatable; default png and pdf)")
    p.add_argument("--device", choices=DEVICES, default="cpu")
    p.add_argument("--full", action="store_true", help="full-size figures (default: quick sizes)")
    p.set_defaults(run=cmd_figures)

    p = sub.add_parser("simulate", help="build a random stack, run it and its reference trajectory")
    p.add_argument("--T", type=ascii_int, default=64, help="tokens (default 64)")
    p.add_argument("--P", type=ascii_int, default=8, help="block length of the slow path; 0 turns it off (default 8)")
    p.add_argument("--d", type=ascii_int, default=64, help="model width (default 64)")
    p.add_argument("--layers", type=ascii_int, default=12, help="depth L, h = 1/L (default 12)")
    p.add_argument("--heads", type=ascii_int, default=4, help="attention heads, must divide d (default 4)")
    p.add_argument("--kernel", default="causal", help="causal | full | alibi | block (default causal)")
    p.add_argument("--scale", metavar="PRESET", type=_scale_preset,
                   help="take T, d, layers and heads from a preset (toy, ci, gpt2-small, gpt2-medium, gpt2-large)")
    p.add_argument("--slow-kernel", default="causal", help="causal (default) | full (v1's unmasked variant)")
    p.add_argument("--gate", type=ascii_float, default=0.0, help="gate amplitude g of every layer (default 0)")
    p.add_argument("--value-scale", type=ascii_float, default=0.0, help="c in W_VO ≈ c·I + noise (default 0)")
    p.add_argument("--decay", type=ascii_float, default=0.0, help="residual damping α ≥ 0 (default 0)")
    p.add_argument("--ln-gain", type=ascii_float, default=1.0, help="LN gains γ ≈ this (default 1)")
    p.add_argument("--weight-scale", type=ascii_float, default=1.0, help="scale of the random weights (default 1)")
    p.add_argument("--strict", action="store_true",
                   help="error (exit 2) when --gate exceeds the certified gate bound g* (default: a warning)")
    p.add_argument("--no-certificate", dest="certificate", action="store_false",
                   help="skip the gate certificate (μ and g*, Claim 5.1), about 2 s of the run at the "
                        "default sizes (timed as 'certificate' in the summary)")
    p.add_argument("--seed", type=ascii_int, default=0, help="seed of the weights (and, + 1, of the input); "
                                                            "0 ≤ seed < 2**63 - 1")
    p.add_argument("--max-memory", type=memory_size, metavar="SIZE",
                   help="refuse a run whose estimated memory exceeds SIZE (e.g. 2G; default: the available memory)")
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument("--json", metavar="PATH", type=output_file, help="write the summary as JSON ('-': stdout)")
    p.set_defaults(run=cmd_simulate)

    add_plugin_commands(sub)

    p = sub.add_parser("mutate", help="theory, source and code mutants: is each deliberate mistake caught? "
                                       "(mutation scores)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="this theory or source mutant only (repeatable)")
    p.add_argument("--json", metavar="PATH", type=output_file, help="write the scores as JSON ('-': stdout)")
    p.add_argument("--workers", type=ascii_int, default=2, help="parallel processes (default 2)")
    p.add_argument("--no-tests", action="store_true",
                   help="ledger checks only; skip running the family's tests on survivors")
    code = p.add_mutually_exclusive_group()
    code.add_argument("--theory-only", action="store_true",
                      help="the theory mutants only, not mutmut's code mutants (which run by default over "
                           "numerics/stack.py, kernels.py, generated/; --only skips them), nor the source mutants")
    code.add_argument("--code-only", action="store_true", help="the code mutants only, no theory mutants")
    code.add_argument("--source-only", action="store_true",
                      help="the source mutants only (proofs_check/mutation/hand_written_source.py: mistakes in the stack, "
                           "kernels, pooling, certificate and training mask; scored as killed by the ledger or "
                           "by a test only)")
    p.add_argument("--equivalents", metavar="PATH", type=_path_type(check_output_file, "--equivalents"),
                   help="write the code mutants' survivors and the rule justifying each "
                        "(docs/equivalent_mutants.md) as markdown")
    p.set_defaults(run=cmd_mutate)

    p = sub.add_parser("matrix", help="the claims × architectures matrix (holds / conditional / fails / n/a)",
                       description="Evaluate every claim on every architecture variant (numerics.architectures; "
                                   "--only-arch picks some) and print the grid: holds, conditional (with "
                                   "its condition), fails (with a shrunk counterexample) or n/a (with the reason).")
    p.add_argument("--json", metavar="PATH", type=output_file, help="write the matrix as JSON ('-': stdout)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="CI sizes (default)")
    mode.add_argument("--full", action="store_true", help="full sizes")
    p.add_argument("--only-arch", action="append", metavar="NAME", help="only this variant (repeatable)")
    p.add_argument("--claim", action="extend", nargs="+", metavar="ID",
                   help="only these claims (several ids or repeated; duplicates dropped)")
    p.add_argument("--ledger", metavar="PATH", help="reuse a ledger JSON (fastslow check --json) for preln")
    p.add_argument("--allow-drift", action="store_true",
                   help="development only: run even when numerics/generated/ does not match its recorded hashes")
    p.add_argument("--device", choices=DEVICES, default="cpu",
                   help="where the cells' stacks run: auto (cuda when available), cpu (default) or cuda")
    p.add_argument("--no-progress", action="store_true", help="no per-cell progress lines")
    p.set_defaults(run=cmd_matrix)

    p = sub.add_parser("reproduce", help="derive --check, check every claim, all figures, the report")
    p.add_argument("--out", default="out", type=output_dir, help="output folder (default out/)")
    p.add_argument("--quick", action="store_true", help="the CI-sized run (about 3 minutes)")
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument("--allow-drift", action="store_true",
                   help="development only: run even when numerics/generated/ does not match its recorded "
                        "hashes (the override is printed in the ledger and the report)")
    p.set_defaults(run=cmd_reproduce)

    from proofs_check.sweep.command import add_parser as add_sweep_parser

    add_sweep_parser(sub)
    from proofs_check.experiments.text_experiment import add_parser as add_train_parser

    add_train_parser(sub)
    from proofs_check.runners.import_hf import add_parser as add_import_hf_parser

    add_import_hf_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, UsageError) as exc:
        print(f"fastslow {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # the environment (disk full, permissions changed mid-run), not the input
        print(f"fastslow {args.command}: error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fastslow: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("fastslow: terminated", file=sys.stderr)
        return 143


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split("\n")).strip() or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
