"""``fastslow --help`` and every ``fastslow COMMAND --help`` load no heavy library.

The parser is built from light modules (proofs_check/cli/ imports a command's implementation only in
its ``run``), so the help of the console script costs a Python start, not torch's import (about a second
and a half on 2 cores).  Checked by what a fresh interpreter has in ``sys.modules`` after printing the
help, not by a timing; the negative control imports a command's implementation and must see torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "sympy", "matplotlib", "pandas", "dask", "distributed", "pyarrow", "transformers", "scipy",
         "pydantic")

PROBE = """
import contextlib, io, json, sys
from proofs_check.cli import build_parser
argv = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()) as text:
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        code = exc.code
for name in json.loads(sys.argv[2]):
    __import__(name)
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(json.loads(sys.argv[3])))
print(json.dumps({"code": code, "heavy": heavy, "help": len(text.getvalue())}))
"""


def loaded_after(argv: list[str], also: tuple[str, ...] = ()) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(list(also)), json.dumps(HEAVY)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def commands() -> list[str]:
    from proofs_check.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sorted(sub.choices)


def test_top_level_help_loads_no_heavy_library():
    result = loaded_after(["--help"])
    assert result["code"] == 0 and result["help"] > 0
    assert result["heavy"] == [], f"fastslow --help imported {result['heavy']}"


#: commands whose own help needs a heavy module, and why
OWN_HELP_LOADS = {"simulate": "its knob options are declared from numerics.stacks.params.StackKnobs, and importing "
                              "the numerics package loads torch"}


@pytest.mark.parametrize("command", commands())
def test_command_help_loads_no_heavy_library(command):
    result = loaded_after([command, "--help"])
    assert result["code"] == 0 and result["help"] > 0
    if command in OWN_HELP_LOADS:
        return
    assert result["heavy"] == [], f"fastslow {command} --help imported {result['heavy']}"


def test_the_probe_sees_a_heavy_import():
    """Negative control: the same probe, after importing the stack (numerics.stacks.stack), reports torch."""
    result = loaded_after(["--help"], also=("numerics.stacks.stack",))
    assert "torch" in result["heavy"]


def test_light_copies_match_their_sources():
    """The constants the parser holds so as not to import their modules equal the modules' own."""
    from proofs_check import validation
    from proofs_check.cli import options, sweep, train
    from proofs_check.experiments import train as training
    from proofs_check.sweep import spec

    assert options.DEVICES == validation.DEVICES
    assert sweep.MAX_TASKS == spec.MAX_TASKS
    assert train.ARCHS == training.ARCHS and train.DEFAULT_OUT == training.DEFAULT_OUT
