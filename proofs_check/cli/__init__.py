"""The ``fastslow`` command line: one module per command, this one dispatches.

Each command is a module of this package with ``add_parser(subparsers)`` and ``run(args)``; commands
from packages above the application (``bench`` from ``benchmarks``) are registered under the
``fastslow.commands`` entry points, so the CLI never imports them.  The options several commands share
(``--json``, ``--out``, ``--no-progress``, ``--device``, ``--seed``, ``--quick``/``--full``) are declared
once, in ``proofs_check.cli.options``.

Every command checks its input before any work: each option's argparse ``type`` is a checker of
``proofs_check.validation`` (ASCII numbers, devices, seeds, output files and folders), and the values
go on to the Python API's own boundary checks.  Exit status: 2 with ``fastslow COMMAND: error: ...``
naming the parameter on bad input, or the pip line when the command needs an extra that is not installed
(``proofs_check.extras``); 1 when a check or drift test fails; 0 otherwise.  ``check``,
``grid`` and ``reproduce`` first confirm that ``numerics/generated/`` is what its derivations recorded
(``proofs_check.integrity``).

OpenMP threads that wait for work sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE`` unless the
environment sets it, before torch loads): on 2 cores shared with other jobs, spinning threads that wait
for a descheduled partner made ``simulate``'s default run ten times slower (44 s against 4 s at load 12,
the same numbers), and the thread count, hence every result, is unchanged.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read once, when torch's OpenMP runtime loads

import argparse  # noqa: E402  (after the OpenMP setting)
import sys  # noqa: E402

from proofs_check.cli import (check, derive, figures, grid, import_hf, mutate, reproduce, simulate,  # noqa: E402
                               study, sweep, train)
from proofs_check.cli.options import UsageError, one_line  # noqa: E402

#: the command modules of this package, in the order ``fastslow --help`` lists them
COMMANDS = (derive, check, figures, simulate, grid, sweep, train, study, import_hf, mutate, reproduce)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``fastslow simulate: error: argument --T: ...``), exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")

    def defer(self, add) -> None:
        """Add options by ``add(self)`` only when this parser is used (parsing its arguments or printing its
        help): options declared from a model of a heavy module load it for their own command only."""
        self._deferred = [*getattr(self, "_deferred", []), add]

    def populate(self) -> "Parser":
        """Add the deferred options now (a test reading the options without parsing calls this)."""
        deferred, self._deferred = getattr(self, "_deferred", []), []
        for add in deferred:
            add(self)
        return self

    def parse_known_args(self, args=None, namespace=None):
        self.populate()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self.populate()
        return super().format_help()


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
    for command in COMMANDS:
        command.add_parser(sub)
    add_plugin_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from numerics.storage.io import Terminated  # the signal handlers' exception; loaded once a command runs
    from proofs_check.validation import preflight
    from proofs_check.verdicts.run_scope import one_run

    try:
        preflight(args)  # the environment, and two outputs on one file or two documents on stdout
        with one_run():  # one command is one run: its claims share their measurements
            return args.run(args)
    except (ValueError, UsageError) as exc:
        print(f"fastslow {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # the environment (disk full, permissions changed mid-run), not the input
        print(f"fastslow {args.command}: error: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
        return 1
    except ImportError as exc:  # an optional extra's library is missing: the pip line, exit 2
        from proofs_check.extras import missing_extra

        if (missing := missing_extra(exc)) is None:
            raise
        print(f"fastslow {args.command}: error: {one_line(missing)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fastslow: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("fastslow: terminated", file=sys.stderr)
        return 143


if __name__ == "__main__":
    sys.exit(main())
