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
@pytest.mark.parametrize("command", ["simulate", "check", "figures", "grid", "reproduce", "sweep", "train", "bench"])
def test_cuda_without_cuda_is_refused_when_parsed(command, capsys):
    """The same check and message on every command with --device, before any work."""
    with pytest.raises(SystemExit) as exit_:
        main([command, "--device", "cuda"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err == (f"fastslow {command}: error: argument --device: 'cuda' was requested but CUDA is not "
                   "available on this machine\n")


def _commands():
    """Every subcommand's parser, by name (the plugin ``bench`` included)."""
    import argparse

    from proofs_check.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _option(parser, flag):
    return next((a for a in parser._actions if flag in a.option_strings), None)


def test_every_command_is_a_module_with_add_parser_and_run():
    import importlib

    from proofs_check.cli import COMMANDS

    names = {m.__name__.rsplit(".", 1)[1].replace("_", "-") for m in COMMANDS}
    assert set(_commands()) == names | {"bench"}
    for module in COMMANDS:
        assert module.__name__.startswith("proofs_check.cli.") and callable(module.run)
        assert importlib.import_module(module.__name__).add_parser is module.add_parser


def test_shared_flags_have_one_name_default_and_help_on_every_command():
    """--json, --out, --no-progress, --device, --seed, --quick/--full, --allow-drift: declared once
    (proofs_check.cli.options), so the same name, default, help, metavar and check wherever present."""
    from proofs_check.cli import options as O

    same = {"--json": (None, O.JSON_HELP, "PATH"), "--no-progress": (False, O.NO_PROGRESS_HELP, None),
            "--device": ("cpu", O.DEVICE_HELP, "auto|cpu|cuda"), "--seed": (None, O.SEED_HELP, "N")}
    seen = {flag: [] for flag in [*same, "--out", "--quick", "--full", "--allow-drift"]}
    for name, p in _commands().items():
        for flag, (default, help_, metavar) in same.items():
            a = _option(p, flag)
            if a is not None:
                seen[flag].append(name)
                assert (a.default, a.help, a.metavar) == (default, help_, metavar), (name, flag)
        out = _option(p, "--out")
        if out is not None:
            seen["--out"].append(name)
            assert out.metavar == "DIR" and out.type is O.output_dir, name
            assert out.help == O.OUT_REQUIRED_HELP if out.required else (
                out.help.startswith("output folder (default ") and out.help.endswith(")")), (name, out.help)
        quick, full = _option(p, "--quick"), _option(p, "--full")
        assert (quick is None) == (full is None), name
        if quick is not None:
            seen["--quick"].append(name)
            default = p.get_default("size_default")
            assert (quick.dest, quick.default, full.dest, full.default) == ("quick", None, "quick", None), name
            assert quick.help == O.QUICK_HELP + (O.DEFAULT_MARK if default == "quick" else ""), name
            assert full.help == O.FULL_HELP + (O.DEFAULT_MARK if default == "full" else ""), name
        drift = _option(p, "--allow-drift")
        if drift is not None:
            seen["--allow-drift"].append(name)
            assert drift.help == _option(_commands()["check"], "--allow-drift").help, name
    # each flag where it means something, absent elsewhere
    assert sorted(seen["--device"]) == ["bench", "check", "figures", "grid", "reproduce", "simulate", "study", "sweep", "train"]
    assert sorted(seen["--seed"]) == ["check", "figures", "simulate", "train"]
    assert sorted(seen["--quick"]) == ["bench", "check", "figures", "grid", "reproduce", "study"]
    assert sorted(seen["--json"]) == ["bench", "check", "grid", "mutate", "simulate", "study", "train"]
    assert sorted(seen["--out"]) == ["figures", "import-hf", "reproduce", "sweep", "train"]
    assert "derive" in seen["--no-progress"] and "simulate" in seen["--no-progress"]


def test_the_walk_sees_a_flag_declared_by_hand():
    """Negative control: a command declaring --device itself, with another default, is caught."""
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--device", choices=("cpu", "cuda"), default="auto")
    from proofs_check.cli import options as O

    a = _option(p, "--device")
    assert (a.default, a.help, a.metavar) != ("cpu", O.DEVICE_HELP, "auto|cpu|cuda")


@pytest.mark.parametrize("argv,message", [
    (["check", "--seed", "-1"], "argument --seed: seed=-1 is out of range"),
    (["train", "--seed", "1.5"], "argument --seed: '1.5' is not an integer"),
    (["grid", "--device", "tpu"], "argument --device: invalid choice: 'tpu' (choose from auto, cpu, cuda)"),
    (["sweep", "x", "--device", "gpu"], "argument --device: invalid choice: 'gpu'"),
    (["check", "--scale", "toy", "--full"], "--full cannot go with --scale toy"),
    (["check", "--stack", "ck", "--seed", "3"], "--seed cannot go with --stack"),
    (["figures", "--quick", "--full"], "argument --full: not allowed with argument --quick"),
])
def test_shared_flags_are_checked_before_any_work(argv, message, capsys):
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1, err


def test_quick_and_full_resolve_to_each_command_s_default():
    from proofs_check.cli import build_parser, options

    parser = build_parser()
    assert options.quick(parser.parse_args(["check"])) is True
    assert options.quick(parser.parse_args(["check", "--full"])) is False
    assert options.quick(parser.parse_args(["reproduce"])) is False
    assert options.quick(parser.parse_args(["reproduce", "--quick"])) is True


def test_simulate_no_progress_is_silent(tmp_path, capsys):
    assert main(["simulate", "--T", "8", "--P", "4", "--d", "4", "--layers", "2", "--heads", "2",
                 "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_version_names_the_installed_distribution(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"fastslow {version('fastslow')}"


@pytest.mark.parametrize("preset,expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_sleep_while_waiting_unless_the_user_says_otherwise(preset, expected):
    """``fastslow`` sets OMP_WAIT_POLICY=PASSIVE before torch loads (spinning waits cost 10× at load), and
    leaves a value the user set alone."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if preset is not None:
        env["OMP_WAIT_POLICY"] = preset
    # the policy as torch's import begins: libgomp reads it once, when torch loads it
    code = ("import os, sys\nseen = []\n"
            "class Hook:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'torch' and not seen:\n"
            "            seen.append(os.environ.get('OMP_WAIT_POLICY'))\n"
            "sys.meta_path.insert(0, Hook())\n"
            "import proofs_check.cli\n"
            "import torch  # the CLI module itself no longer loads torch; a command does, after it\n"
            "print(seen)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == repr([expected])
