"""``fastslow mutate --code-only`` end to end on one small file: mutmut (through its command line) in a
scratch copy whose tests import their shared helpers (``tests/test_stack.py`` imports ``strategies``).

The run is the CLI's, with the mutated file, the tests and the number of mutants cut down to one file
(``numerics/stacks/kernels.py``), two tests and five mutants: about 15 CPU-s.  Its control: the same run
without the helpers copied fails in the collection of the tests before mutmut starts, with one line
naming the step and the missing module, exit 1 and no JSON.  A runner that raises is one line and exit 1, never a traceback.
"""

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proofs_check.mutation import mutmut_code as cm
from proofs_check.cli import main as _main

TESTS = ("tests/test_stack.py::test_frozen_kernel_causal_and_alibi",
         "tests/test_stack.py::test_stack_matches_plain_reimplementation")
SAMPLE = 5


def main(argv):
    """The CLI's exit status, whether it returns it or argparse exits with it."""
    try:
        return _main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.fixture
def one_file(monkeypatch):
    """``fastslow mutate --code-only`` over numerics/stacks/kernels.py with two tests of test_stack.py, 5 mutants."""
    monkeypatch.setattr(cm, "run_code_mutants", functools.partial(
        cm.run_code_mutants, ["numerics/stacks/kernels.py"], TESTS, limit=SAMPLE))


def test_code_mutants_run_end_to_end_through_the_cli(one_file, tmp_path, capsys):
    out, equivalents = tmp_path / "m.json", tmp_path / "equivalent.md"
    status = main(["mutate", "--code-only", "--json", str(out), "--equivalents", str(equivalents)])
    printed = capsys.readouterr()
    assert printed.err.startswith("code mutants: mutmut over") and printed.err.count("\n") == 1, printed.err
    code = json.loads(out.read_text())["code"]
    assert status == (0 if code["score"] >= cm.CODE_TARGET else 1)  # the score decides, not a crash
    assert code["total"] == SAMPLE == len(code["sampled"]) and sum(code["statuses"].values()) == SAMPLE
    assert "not checked" not in code["statuses"]
    # the selected tests reach kernels.py (every stack draws its score bias there), so some mutant is killed
    assert code["killed"] >= 1 and code["killed"] + len(code["survivors"]) == SAMPLE
    for s in code["survivors"]:  # each survivor located by mutmut show's diff, and listed with its rule
        assert s["file"] == "numerics/stacks/kernels.py" and s["line"] and s["diff"].startswith("---")
        assert f"| {s['file']} | {s['line']} |" in equivalents.read_text()
    assert "code mutation score (mutmut" in printed.out


def test_without_the_shared_helpers_the_run_fails_in_one_line(one_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cm, "shared_test_modules", lambda: ["tests/conftest.py"])
    out = tmp_path / "m.json"
    assert main(["mutate", "--code-only", "--json", str(out)]) == 1
    notice, err = capsys.readouterr().err.splitlines()  # the step's start, then one error line
    assert notice.startswith("code mutants: mutmut over") and "Traceback" not in err
    assert err.startswith("fastslow mutate: error: code mutants, collecting the tests in the scratch copy")
    assert "No module named 'strategies'" in err
    assert not out.exists()


def test_a_runner_that_raises_is_one_line_and_exit_1(tmp_path, capsys, monkeypatch):
    def broken(**_):
        raise KeyError("exit_code_by_key")

    monkeypatch.setattr(cm, "run_code_mutants", broken)
    out = tmp_path / "m.json"
    assert main(["mutate", "--code-only", "--json", str(out)]) == 1
    assert capsys.readouterr().err.splitlines()[1:] == ["fastslow mutate: error: code mutants: KeyError: "
                                                        "'exit_code_by_key'"]
    assert not out.exists()


def test_the_helpers_import_from_a_scratch_copy_under_importlib_mode(tmp_path):
    """A copy of conftest, the helper and a test that imports it, collected with --import-mode=importlib
    (which puts no test folder on sys.path): conftest's path makes ``from strategies import`` work."""
    repo = Path(__file__).resolve().parent
    (tmp_path / "tests").mkdir()
    for name in ("conftest.py", "strategies.py", "test_strategies.py"):
        shutil.copy2(repo / name, tmp_path / "tests" / name)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--import-mode=importlib",
                           "-p", "no:cacheprovider", "tests"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "test_strategies.py::" in proc.stdout
