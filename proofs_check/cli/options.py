"""The options every ``fastslow`` command shares, declared once: the same name, default, help and check.

``--json PATH``, ``--out DIR``, ``--no-progress``, ``--device``, ``--seed`` and ``--quick``/``--full`` are
added by the functions here and nowhere else, so they mean the same on every command that has them
(a command without a use for one does not have it).  Each value is checked when the command line is
parsed, before any work (the argparse ``type`` is a checker of ``proofs_check.validation``); a bad value
exits 2 with one line naming the option.
"""

from __future__ import annotations

import argparse
import sys

DEVICES = ("auto", "cpu", "cuda")  # proofs_check.validation.DEVICES (tests/test_cli_light.py holds them equal)


def checker(name: str):
    """``proofs_check.validation.<name>``, imported when a value is checked: the parser is built from light
    modules only (``fastslow --help`` loads neither torch nor pydantic), and a value given on the command
    line is checked by the same function as before any work."""

    def check(*args, **kwargs):
        from proofs_check import validation

        return getattr(validation, name)(*args, **kwargs)

    check.__name__ = check.__qualname__ = name
    return check


check_output_dir = checker("check_output_dir")
check_output_file = checker("check_output_file")
device_name = checker("device_name")
seed_value = checker("seed_value")
ascii_int = checker("ascii_int")
ascii_float = checker("ascii_float")
memory_size = checker("memory_size")
validate_claims = checker("validate_claims")
load_ledger = checker("load_ledger")

JSON_HELP = "write the result as JSON to PATH ('-': standard output, the table then goes to standard error)"
OUT_HELP = "output folder (default {default})"
OUT_REQUIRED_HELP = "output folder (required)"
NO_PROGRESS_HELP = "no progress bars and no progress lines"
DEVICE_HELP = ("where the stacks run: cpu (default), cuda, or auto (cuda when available); cuda on a machine "
               "without CUDA exits 2")
SEED_HELP = "seed of the random draws (default 0); 0 ≤ N < 2**63 - 1"
QUICK_HELP = "the CI sizes: seconds to minutes on 2 cores"
FULL_HELP = "the full sizes: minutes to tens of minutes on 2 cores"
DEFAULT_MARK = " (this command's default)"


class UsageError(ValueError):
    """Bad input from the command line; printed without a traceback, exit 2."""


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type's name when it has none)."""
    return " ".join(str(exc).split("\n")).strip() or type(exc).__name__


def path_type(check, name: str):
    """An argparse ``type`` running a path check of ``proofs_check.validation`` for option ``name``."""

    def convert(text: str) -> str:
        try:
            return check(text, name)
        except ValueError as err:  # numerics.stacks.params.InvalidInput, one line naming the option
            raise argparse.ArgumentTypeError(str(err).removeprefix(f"{name} "))

    convert.__name__ = name.lstrip("-")
    return convert


output_file = path_type(check_output_file, "--json")
output_dir = path_type(check_output_dir, "--out")


def add_json(p) -> None:
    p.add_argument("--json", metavar="PATH", type=output_file, default=None, help=JSON_HELP)


def add_out(p, default: str | None, *, shown: str | None = None) -> None:
    """``--out DIR``, ``default`` when not given; ``shown`` describes a default the command works out
    later (e.g. from a spec's name); neither makes it required."""
    described = shown or default
    p.add_argument("--out", metavar="DIR", type=output_dir, default=default, required=described is None,
                   help=OUT_HELP.format(default=described) if described is not None else OUT_REQUIRED_HELP)


def add_no_progress(p) -> None:
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)


def add_device(p) -> None:
    p.add_argument("--device", type=device_name, choices=("cpu", "cuda"), default="cpu", metavar="|".join(DEVICES),
                   help=DEVICE_HELP)


def add_seed(p) -> None:
    p.add_argument("--seed", type=seed_value, metavar="N", default=None, help=SEED_HELP)


def add_size(p, default: str) -> None:
    """``--quick`` (the CI sizes) or ``--full`` (the full sizes); ``args.quick`` is None when neither is
    given, and ``quick(args, ...)`` resolves it to the command's ``default``."""
    if default not in ("quick", "full"):
        raise ValueError(f"default={default!r} is not quick or full")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="quick", action="store_const", const=True, default=None,
                      help=QUICK_HELP + (DEFAULT_MARK if default == "quick" else ""))
    size.add_argument("--full", dest="quick", action="store_const", const=False, default=None,
                      help=FULL_HELP + (DEFAULT_MARK if default == "full" else ""))
    p.set_defaults(size_default=default)


def quick(args) -> bool:
    """True for the CI sizes: ``--quick``, or neither flag on a command whose default is quick."""
    return args.quick if args.quick is not None else args.size_default == "quick"


def seed(args) -> int:
    """The seed: ``--seed``, else 0."""
    return 0 if args.seed is None else args.seed


def add_allow_drift(p) -> None:
    p.add_argument("--allow-drift", action="store_true",
                   help="development only: run even when numerics/generated/ does not match the hashes its "
                        "derivations recorded (the override is written into the result)")


def add_claims(p) -> None:
    p.add_argument("--claim", action="extend", nargs="+", metavar="ID",
                   help="only these claims, ids as in docs/theory.md, e.g. --claim 2.1 4.1 (repeatable, "
                        "duplicates dropped; default: all)")


def table_stream(args):
    """Where the human-readable table goes: standard error when a result goes to standard output (``-``)."""
    return sys.stderr if "-" in (getattr(args, "json", None), getattr(args, "summary", None)) else sys.stdout


def integrity(args):
    """numerics/generated/ against the hashes its derivations recorded; drift is printed, and
    ``report.override`` is set when ``--allow-drift`` lets the run go on."""
    from proofs_check.integrity import verify

    report = verify()
    report.override = bool(getattr(args, "allow_drift", False)) and not report.ok
    if report.stale or not report.ok:
        print(str(report), file=sys.stderr)
    return report


def scale_preset(name: str) -> str:
    """``--scale PRESET``: a preset name of numerics/stacks/presets.py."""
    from numerics.stacks.presets import check_preset

    try:
        return check_preset(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))
