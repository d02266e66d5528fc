"""The lean core: a command whose optional extra is missing exits 2 with the pip line that installs it.

Each case hides one module of an extra in a fresh interpreter (``sys.modules[name] = None`` makes its
import fail as if it were not installed) and runs the console script's ``main``.  The extras' module
lists in proofs_check/extras.py match pyproject.toml's optional dependencies.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from proofs_check.extras import EXTRAS, MissingExtra, extra_of, missing_extra, require

ROOT = Path(__file__).resolve().parents[1]
RUN = """
import sys
for name in sys.argv[1].split(","):
    if name:
        sys.modules[name] = None
from proofs_check.cli import main
sys.exit(main(sys.argv[2:]))
"""
#: the distribution -> module names of the extras' requirements
DISTRIBUTIONS = {"dask[distributed]": ("dask", "distributed"), "pandas": ("pandas",), "pyarrow": ("pyarrow",),
                 "transformers": ("transformers",), "safetensors": ("safetensors",),
                 "markdown-it-py": ("markdown_it",), "mdit-py-plugins": ("mdit_py_plugins",),
                 "latex2mathml": ("latex2mathml",)}


def fastslow(hidden: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN, hidden, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("hidden", ["dask", "pandas", "pyarrow", "distributed"])
def test_sweep_without_its_extra_exits_2_with_the_pip_line(hidden, tmp_path):
    out = fastslow(hidden, "sweep", "visibility", "--out", str(tmp_path / "s"), "--no-progress")
    assert out.returncode == 2, out.stderr
    assert f"needs {hidden}" in out.stderr and "pip install 'fastslow[sweep]'" in out.stderr
    assert not (tmp_path / "s").exists(), "nothing is written before the check"


def test_sweep_list_needs_no_extra():
    """Listing the shipped specs reads TOML only: it runs without the sweep extra."""
    out = fastslow("dask,distributed,pandas,pyarrow", "sweep", "--list")
    assert out.returncode == 0, out.stderr
    assert "visibility" in out.stdout


def test_reproduce_without_the_report_extra_exits_2(tmp_path):
    out = fastslow("markdown_it", "reproduce", "--quick", "--out", str(tmp_path / "r"), "--no-progress")
    assert out.returncode == 2, out.stderr
    assert "pip install 'fastslow[report]'" in out.stderr


def test_an_extra_missing_deep_inside_a_command_exits_2():
    """The safety net: an extra's module failing to import anywhere in a command is the pip line, exit 2."""
    err = ModuleNotFoundError("No module named 'safetensors'", name="safetensors.torch")
    missing = missing_extra(err)
    assert isinstance(missing, MissingExtra) and "pip install 'fastslow[hf]'" in str(missing)


def test_an_unrelated_import_error_is_not_an_extra():
    """Negative control: a missing core module is a bug, not a missing extra (it is re-raised)."""
    assert missing_extra(ModuleNotFoundError("No module named 'torch'", name="torch")) is None
    assert missing_extra(ValueError("x")) is None
    assert extra_of("numerics.stacks.stack") is None


def test_require_names_the_module_and_the_pip_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MissingExtra, match=r"fastslow sweep needs pyarrow.*pip install 'fastslow\[sweep\]'"):
        require("sweep", "fastslow sweep")


def test_extras_match_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        names = [r.split(">")[0].split("=")[0].split("<")[0].strip() for r in extras[extra]]
        assert sorted(m for n in names for m in DISTRIBUTIONS[n]) == sorted(modules), extra
    assert "fastslow[sweep,hf,report]" in extras["dev"], "[dev] pulls every extra (the README's install line)"
    core = " ".join(project["dependencies"])
    assert not any(n in core for n in DISTRIBUTIONS), "an extra's library is in the core"
