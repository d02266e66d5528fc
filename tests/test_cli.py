"""The ``fastslow`` command line: simulate works, bad input fails clearly (exit 2, parameter named)."""

import json

import pytest
import torch

from proofs_check.cli import main


def test_simulate_defaults_and_json(tmp_path, capsys):
    path = tmp_path / "sim.json"
    assert main(["simulate", "--T", "16", "--P", "4", "--d", "16", "--layers", "3", "--heads", "2",
                 "--device", "cpu", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "homogeneity error" in out
    summary = json.loads(path.read_text())
    assert summary["config"]["T"] == 16 and summary["device"] == "cpu"
    # float64 rounding times depth: the reference equals the homogeneous run to ~1e-15.
    assert summary["homogeneity_error"] < 1e-12


BAD = [
    (["simulate", "--T", "65", "--P", "8"], "T=65 is not divisible by P=8"),
    (["simulate", "--layers", "0"], "layers=0"),
    (["simulate", "--heads", "5"], "heads=5 does not divide d=64"),
    (["simulate", "--kernel", "sparse"], "kernel='sparse'"),
    (["simulate", "--decay", "-1"], "decay=-1.0"),
    (["simulate", "--P", "0", "--gate", "0.5"], "gate=0.5 needs the slow path"),
    (["check", "--claim", "9.9"], "--claim 9.9"),
    (["figures", "--only", "no_such_figure"], "no_such_figure"),
    (["mutate", "--theory-only", "--equivalents", "x.md"], "cannot go with --theory-only"),
    (["mutate", "--code-only", "--only", "G-sign-flip"], "--only names theory mutants"),
]


@pytest.mark.parametrize("argv,message", BAD, ids=[m for _, m in BAD])
def test_bad_input_exits_2_naming_the_parameter(argv, message, capsys):
    assert main(argv + (["--device", "cpu"] if argv[0] == "simulate" else [])) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["simulate", "--gate", "nan"], ["simulate", "--gate", "inf"],
                                  ["check", "--device", "tpu"]])
def test_argparse_rejects_non_finite_and_unknown(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert argv[-1] in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_without_cuda_is_an_error(capsys):
    assert main(["simulate", "--device", "cuda"]) == 2
    assert "CUDA is not available" in capsys.readouterr().err


def test_version_names_the_installed_distribution(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"fastslow {version('fastslow')}"
