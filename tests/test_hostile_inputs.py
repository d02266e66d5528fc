"""Hostile input: every CLI command and the public Python API refuse bad input clearly.

Each case is the argv (run in-process through ``proofs_check.cli.main``) or a call, the exit
code or exception it must give, the text the one-line message must name (the parameter),
and, for every case, a check that the working folder is left exactly as it was (nothing
written, no temporary file).  Then Hypothesis fuzzes the argv of ``simulate`` and ``check``:
random strings, numbers and Unicode in every slot must give exit 0, 1 or 2, never a
traceback.  The fuzzed runs take the cheap path: ``--max-memory 1`` makes any valid
``simulate`` stop at the memory estimate, and ``check`` runs a stub instead of the claims.
"""

from __future__ import annotations

import json
import os
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from numerics.stacks.spec import StackSpec
from proofs_check.cli import main
from proofs_check.experiments.simulate import simulate

SMALL = ["--T", "8", "--P", "4", "--d", "8", "--layers", "2", "--heads", "2", "--device", "cpu",
         "--no-certificate"]


@dataclass
class Case:
    argv: list[str]
    code: int
    names: str  # text the error line must contain (the parameter, and the value where it matters)
    setup: str | None = None  # a file or FIFO to create in the working folder first
    id: str = field(default="")


def snapshot(folder: Path) -> dict[str, tuple]:
    out = {}
    for p in sorted(folder.rglob("*")):
        st_ = p.lstat()
        out[str(p.relative_to(folder))] = (st_.st_mode, st_.st_size, st_.st_mtime_ns)
    return out


ARABIC_64 = "\u0666\u0664"  # ٦٤
FULLWIDTH_8 = "\uff18"  # ８
DEVANAGARI_2 = "\u0968"  # २

def _ledger(**entry) -> str:
    """A ledger that passes the schema, its one entry (claim 2.1) changed by ``entry``."""
    claim = {"id": "2.1", "status": "verified", "family": "factorisation", "title": "t", "seconds": 0.1,
             "symbolic": {"steps": 6, "proved": 6}, "numeric": {"cases": 4, "max_error": 1e-15, "tolerance": 1e-12},
             "control": {"status": "fails-as-predicted"}}
    claim.update(entry)
    env = {k: "x" for k in ("python", "platform", "device", "torch", "sympy", "numpy", "scipy", "mpmath")}
    return json.dumps({"claims": [claim], "environment": {**env, "cuda": None},
                       "options": {"profile": "ci", "quick": True}})


CLI: list[Case] = [
    # simulate: sizes and structure
    Case(["simulate", "--T", "65", "--P", "8", "--device", "cpu"], 2, "T=65 is not divisible by P=8"),
    Case(["simulate", "--T", "0", "--device", "cpu"], 2, "T=0"),
    Case(["simulate", "--T", "-4", "--device", "cpu"], 2, "T=-4"),
    Case(["simulate", "--d", "0", "--device", "cpu"], 2, "d=0"),
    Case(["simulate", "--layers", "0", "--device", "cpu"], 2, "layers=0"),
    Case(["simulate", "--heads", "0", "--device", "cpu"], 2, "heads=0"),
    Case(["simulate", "--heads", "5", "--device", "cpu"], 2, "heads=5 does not divide d=64"),
    Case(["simulate", "--P", "-8", "--device", "cpu"], 2, "P=-8"),
    Case(["simulate", "--P", "7", "--device", "cpu"], 2, "T=64 is not divisible by P=7"),
    Case(["simulate", "--kernel", "sparse", "--device", "cpu"], 2, "kernel='sparse'"),
    Case(["simulate", "--kernel", "block", "--P", "0", "--device", "cpu"], 2, "kernel='block' needs block_size"),
    Case(["simulate", "--slow-kernel", "alibi", "--device", "cpu"], 2, "slow_kernel='alibi'"),
    Case(["simulate", "--P", "0", "--gate", "0.5", "--device", "cpu"], 2, "gate=0.5 needs the slow path"),
    # simulate: sizes refused up front by the memory estimate
    Case(["simulate", "--T", "1000000", "--P", "8", "--device", "cpu"], 2, "T=1000000"),
    Case(["simulate", "--layers", "100000000", "--device", "cpu"], 2, "layers=100000000"),
    Case(["simulate", "--d", "1048576", "--heads", "4", "--device", "cpu"], 2, "d=1048576"),
    Case(["simulate", "--max-memory", "1M", "--device", "cpu"], 2, "max_memory=1048576"),
    Case(["simulate", "--max-memory", "0", "--device", "cpu"], 2, "--max-memory"),
    Case(["simulate", "--max-memory", "lots", "--device", "cpu"], 2, "--max-memory"),
    # simulate: values and the dtype
    Case(["simulate", "--gate", "1e308", "--device", "cpu"], 2, "gate=1e+308"),
    Case(["simulate", "--gate=-1e200", "--device", "cpu"], 2, "gate=-1e+200"),
    Case(["simulate", "--gate", "nan", "--device", "cpu"], 2, "--gate"),
    Case(["simulate", "--gate", "inf", "--device", "cpu"], 2, "--gate"),
    Case(["simulate", "--gate", "-Infinity", "--device", "cpu"], 2, "--gate"),
    Case(["simulate", "--gate", "1e999", "--device", "cpu"], 2, "--gate"),
    Case(["simulate", "--gate", "0x10", "--device", "cpu"], 2, "--gate"),
    Case(["simulate", "--gate", "1_0", "--device", "cpu"], 2, "--gate"),
    Case(["simulate", "--gate", " 1", "--device", "cpu"], 2, "--gate"),
    Case(["simulate", "--value-scale", "-1", "--device", "cpu"], 2, "value_scale=-1.0"),
    Case(["simulate", "--value-scale", "1e300", "--device", "cpu"], 2, "value_scale=1e+300"),
    Case(["simulate", "--decay", "-1", "--device", "cpu"], 2, "decay=-1.0"),
    Case(["simulate", "--decay", "1e160", "--device", "cpu"], 2, "decay=1e+160"),
    Case(["simulate", "--ln-gain", "-1", "--device", "cpu"], 2, "ln_gain=-1.0"),
    Case(["simulate", "--ln-gain", "-0.5", "--device", "cpu"], 2, "ln_gain=-0.5"),
    Case(["simulate", "--weight-scale", "0", "--device", "cpu"], 2, "weight_scale=0.0"),
    Case(["simulate", "--weight-scale", "-2", "--device", "cpu"], 2, "weight_scale=-2.0"),
    Case(["simulate", "--weight-scale", "1e200", "--device", "cpu"], 2, "weight_scale=1e+200"),
    Case(["simulate", "--seed", "18446744073709551616", "--device", "cpu"], 2, "seed=18446744073709551616"),
    Case(["simulate", "--seed", "9223372036854775807", "--device", "cpu"], 2, "seed=9223372036854775807"),
    Case(["simulate", "--seed", "-1", "--device", "cpu"], 2, "seed=-1"),
    Case(["simulate", "--seed", "1.5", "--device", "cpu"], 2, "--seed"),
    Case(["simulate", "--seed", "9" * 5000, "--device", "cpu"], 2, "--seed"),
    # simulate: digits from other scripts
    Case(["simulate", "--T", ARABIC_64, "--device", "cpu"], 2, "--T"),
    Case(["simulate", "--d", FULLWIDTH_8, "--device", "cpu"], 2, "--d"),
    Case(["simulate", "--layers", DEVANAGARI_2, "--device", "cpu"], 2, "--layers"),
    Case(["simulate", "--seed", "\u0661", "--device", "cpu"], 2, "--seed"),
    Case(["simulate", "--gate", "\u0660.\u0665", "--device", "cpu"], 2, "--gate"),
    Case(["simulate", "--heads", "²", "--device", "cpu"], 2, "--heads"),
    Case(["simulate", "--T", "", "--device", "cpu"], 2, "--T"),
    Case(["simulate", "--device", "tpu"], 2, "--device"),
    Case(["simulate", "--frobnicate", "1"], 2, "--frobnicate"),
    # simulate: output paths, refused before the run
    Case(["simulate", *SMALL, "--json", ""], 2, "--json"),
    Case(["simulate", *SMALL, "--json", "  "], 2, "--json"),
    Case(["simulate", *SMALL, "--json", "."], 2, "--json"),
    Case(["simulate", *SMALL, "--json", "sub"], 2, "is a directory", setup="dir:sub"),
    Case(["simulate", *SMALL, "--json", "missing/x.json"], 2, "does not exist"),
    Case(["simulate", *SMALL, "--json", "afile/x.json"], 2, "--json", setup="file:afile"),
    Case(["simulate", *SMALL, "--json", "/proc/version"], 2, "not writable"),
    Case(["simulate", *SMALL, "--json", "/proc/nope/x.json"], 2, "does not exist"),
    # check
    Case(["check", "--claim", "9.9"], 2, "--claim 9.9"),
    Case(["check", "--claim", "4.1", "9.9", "8.8"], 2, "9.9, 8.8"),
    Case(["check", "--claim", "4.1", "--claim", "x"], 2, "--claim x"),
    Case(["check", "--claim", ""], 2, "--claim"),
    Case(["check", "--claim", "\u0664.\u0661"], 2, "--claim"),
    Case(["check", "--claim"], 2, "--claim"),
    Case(["check", "--device", "tpu"], 2, "--device"),
    Case(["check", "--profile", "fast"], 2, "--profile"),
    Case(["check", "--json", ""], 2, "--json"),
    Case(["check", "--json", "sub"], 2, "is a directory", setup="dir:sub"),
    # two outputs on one target, refused before the run
    Case(["check", "--json", "x.json", "--summary", "x.json"], 2, "--summary x.json: --json x.json and --summary"),
    Case(["check", "--json", "x.json", "--summary", "x.json"], 2, "name the same file", setup="text:x.json:mine"),
    Case(["check", "--json", "-", "--summary", "-"], 2, "both write to standard output"),
    Case(["simulate", *SMALL, "--json", "ro.json"], 2, "ro.json: the file is read-only", setup="readonly:ro.json"),
    Case(["check", "--json", "x.json", "--summary", "./sub/../x.json"], 2, "name the same file", setup="dir:sub"),
    Case(["train", "--experiment", "7.3", "--json", "r.png", "--figure", "r.png", "--out", "o"], 2, "same file"),
    Case(["check", "--json", "missing/ledger.json"], 2, "does not exist"),
    Case(["check", "--json", "/proc/version"], 2, "not writable"),
    # figures
    Case(["figures", "--only", "no_such_figure"], 2, "no_such_figure"),
    Case(["figures", "--out", "afile"], 2, "is a file", setup="file:afile"),
    Case(["figures", "--out", "afile/sub"], 2, "--out", setup="file:afile"),
    Case(["figures", "--out", ""], 2, "--out"),
    Case(["figures", "--out", "/proc/fastslow-figures"], 2, "not writable"),
    Case(["figures", "--format", "svg"], 2, "--format"),
    Case(["figures", "--device", "tpu"], 2, "--device"),
    # bench: the output path is refused before the benchmark runs
    Case(["bench", "--json", "/proc/nope/bench.json"], 2, "does not exist"),
    Case(["bench", "--json", "sub"], 2, "is a directory", setup="dir:sub"),
    Case(["bench", "--json", ""], 2, "--json"),
    Case(["bench", "--json", "/proc/version"], 2, "not writable"),
    Case(["bench", "--device", "tpu"], 2, "--device"),
    # reproduce
    Case(["reproduce", "--out", "afile"], 2, "is a file", setup="file:afile"),
    Case(["reproduce", "--out", ""], 2, "--out"),
    Case(["reproduce", "--out", "/proc/fastslow-out"], 2, "not writable"),
    Case(["reproduce", "--device", "tpu"], 2, "--device"),
    # the inputs reproduce reads at the end of its run, checked before it starts
    Case(["reproduce", "--quick"], 2, "mutation.json out/mutation.json: not JSON",
         setup='text:out/mutation.json:{"theory": {"killed": 3, "tot'),
    Case(["reproduce", "--quick"], 2, "mutation.json out/mutation.json: field theory.mutants",
         setup='text:out/mutation.json:{"theory": {"killed": 3, "total": 4, "score": 0.75}}'),
    # matrix
    Case(["grid", "--ledger", "missing.json"], 2, "--ledger missing.json: no such file"),
    Case(["grid", "--ledger", "sub"], 2, "is a directory", setup="dir:sub"),
    Case(["grid", "--ledger", "bad.json"], 2, "not JSON", setup="text:bad.json:{not json"),
    Case(["grid", "--ledger", "wrong.json"], 2, "field claims", setup='text:wrong.json:{"ledger": []}'),
    Case(["grid", "--ledger", "wrong.json"], 2, "field claims[0].status",
         setup='text:wrong.json:{"claims": [{"id": "2.1"}]}'),
    Case(["grid", "--ledger", "wrong.json"], 2, "field claims[0].id",
         setup='text:wrong.json:{"claims": [{"status": "verified"}]}'),
    Case(["grid", "--ledger", "wrong.json"], 2, "field (top level)",
         setup='text:wrong.json:[1, 2, 3]'),
    # matrix: inputs that are not regular files are refused unread; a ledger its numbers contradict
    Case(["grid", "--ledger", "/dev/zero"], 2, "--ledger /dev/zero: not a regular file"),
    Case(["grid", "--ledger", "fifo"], 2, "--ledger fifo: not a regular file", setup="fifo:fifo"),
    Case(["grid", "--ledger", "forged.json"], 2, "numeric.max_error=0.001 above numeric.tolerance=1e-12",
         setup="text:forged.json:" + _ledger(numeric={"cases": 4, "max_error": 1e-3, "tolerance": 1e-12})),
    Case(["grid", "--ledger", "forged.json"], 2, "verified with 0/6 symbolic steps proved",
         setup="text:forged.json:" + _ledger(symbolic={"steps": 6, "proved": 0})),
    Case(["grid", "--ledger", "forged.json"], 2, "control.status='did-not-fail'",
         setup="text:forged.json:" + _ledger(control={"status": "did-not-fail"})),
    Case(["grid", "--ledger", "forged.json"], 2, "numeric.cases=0",
         setup="text:forged.json:" + _ledger(numeric={"cases": 0, "max_error": 0.0, "tolerance": 1.0})),
    Case(["grid", "--ledger", "forged.json"], 2, "proved=7 > steps=6",
         setup="text:forged.json:" + _ledger(status="failed", symbolic={"steps": 6, "proved": 7})),
    Case(["grid", "--claim", "9.9"], 2, "--claim 9.9"),
    Case(["grid", "--json", "sub"], 2, "is a directory", setup="dir:sub"),
    Case(["grid", "--quick", "--full"], 2, "--full"),
    # mutate
    Case(["mutate", "--theory-only", "--equivalents", "x.md"], 2, "cannot go with --theory-only"),
    Case(["mutate", "--code-only", "--only", "G-sign-flip"], 2, "--only names theory mutants"),
    Case(["mutate", "--workers", "\u0662"], 2, "--workers"),
    Case(["mutate", "--json", "sub"], 2, "is a directory", setup="dir:sub"),
    Case(["mutate", "--equivalents", "missing/eq.md"], 2, "--equivalents"),
    # output paths through symbolic link loops and dangling links, refused before any work
    Case(["simulate", *SMALL, "--json", "loop"], 2, "symbolic link loop", setup="loop:loop"),
    Case(["simulate", *SMALL, "--json", "link"], 2, "dangling symbolic link", setup="dangling:link"),
    Case(["simulate", *SMALL, "--json", "link/x.json"], 2, "dangling symbolic link", setup="dangling:link"),
    Case(["bench", "--json", "loop"], 2, "symbolic link loop", setup="loop:loop"),
    Case(["bench", "--json", "a\0b.json"], 2, "NUL"),
    Case(["reproduce", "--out", "loop/sub"], 2, "symbolic link loop", setup="loop:loop"),
    # sweep: the output folder, the spec file and the options, refused before a cluster starts
    Case(["sweep", "coarse_graining", "--out", "/proc/fastslow-sweep"], 2, "not writable"),
    Case(["sweep", "coarse_graining", "--out", "loop"], 2, "symbolic link loop", setup="loop:loop"),
    Case(["sweep", "coarse_graining", "--out", "link"], 2, "dangling symbolic link", setup="dangling:link"),
    Case(["sweep", "coarse_graining", "--out", ""], 2, "--out"),
    Case(["sweep", "coarse_graining", "--out", "a\0b"], 2, "NUL"),
    Case(["sweep", "coarse_graining", "--out", "afile"], 2, "is a file", setup="file:afile"),
    Case(["sweep", "bad.toml", "--out", "o"], 2, "not UTF-8", setup="bytes:bad.toml"),
    Case(["sweep", "a\0b.toml", "--out", "o"], 2, "SPEC"),
    Case(["sweep", "coarse_graining", "--scheduler", "not a url", "--out", "o"], 2, "--scheduler 'not a url'"),
    Case(["sweep", "coarse_graining", "--max-tasks", "0", "--out", "o"], 2, "--max-tasks"),
    Case(["sweep", "coarse_graining", "--max-tasks", "10", "--out", "o"], 2, "--max-tasks 140"),
    Case(["sweep", "coarse_graining", "--workers", "0", "--out", "o"], 2, "--workers"),
    Case(["sweep", "coarse_graining", "--workers", "100000", "--out", "o"], 2, "--workers=100000: more than"),
    # silent acceptances, now refused
    Case(["check", "--scale", "toy", "--stack", "ck"], 2, "--stack ck cannot go with --scale toy"),
    Case(["check", "--dtype", "float32", "--claim", "1.1"], 2, "--dtype float32 needs --scale"),
    Case(["train", "--tokens", str(10**12), "--no-progress", "--out", "ck"], 2, "--tokens=1000000000000"),
    Case(["train", "--batch", "100000000", "--T", "16", "--no-progress", "--out", "ck"], 2,
         "training with --batch=100000000 --T=16"),
    Case(["mutate", "--workers", "0", "--theory-only"], 2, "--workers"),
    Case(["train", "--experiment", "7.3", "--seeds", "0", "0", "0", "0", "0", "--out", "o", "--no-progress"], 2,
         "seed 0 given more than once"),
    Case(["train", "--experiment", "7.3", "--seeds", "1", "2", "1", "--out", "o", "--no-progress"], 2,
         "seed 1 given more than once"),
    Case(["check", "--claim", "7.3"], 2, "out/cache is a file, not a folder", setup="cachefile:out/cache"),
    # simulate: the gate certificate's memory is part of the estimate
    Case(["simulate", "--T", "4096", "--P", "8", "--d", "8", "--layers", "1", "--heads", "2", "--device", "cpu",
          "--max-memory", "16G"], 2, "needs an estimated"),
    # derive and the top level
    Case(["derive", "--family", "no_such_family", "--check"], 2, "no_such_family"),
    Case(["no-such-command"], 2, "no-such-command"),
    Case([], 2, "COMMAND"),
]


def _setup(folder: Path, spec: str | None) -> None:
    if spec is None:
        return
    kind, _, rest = spec.partition(":")
    if kind == "dir":
        (folder / rest).mkdir()
    elif kind == "file":
        (folder / rest).write_text("x")
    elif kind == "text":
        name, _, text = rest.partition(":")
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    elif kind == "bytes":  # not UTF-8
        (folder / rest).write_bytes(b'name = "x"\n# \xff\xfe\n')
    elif kind == "loop":
        (folder / rest).symlink_to(rest)
    elif kind == "cachefile":  # a user's file where the trained runs' cache would go
        (folder / rest).parent.mkdir(parents=True)
        (folder / rest).write_text("mine")
    elif kind == "readonly":
        (folder / rest).write_text("the user's, protected")
        (folder / rest).chmod(0o444)
    elif kind == "fifo":
        os.mkfifo(folder / rest)
    elif kind == "dangling":
        (folder / rest).symlink_to(folder / "nowhere" / "deeper")


def run_cli(argv) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    return code, ""


@pytest.mark.parametrize("case", CLI, ids=[f"{i:02d}-{' '.join(c.argv)[:40]}".encode("ascii", "replace").decode()
                                          for i, c in enumerate(CLI)])
def test_cli_refuses_clearly_and_writes_nothing(case, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _setup(tmp_path, case.setup)
    before = snapshot(tmp_path)
    code, _ = run_cli(case.argv)
    out, err = capsys.readouterr()
    assert code == case.code, (code, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and case.names in lines[-1], err
    assert snapshot(tmp_path) == before  # nothing written, no temporary file left


# -- the Python API ------------------------------------------------------------------------
BASE = dict(T=8, d=8, layers=2, heads=2, kernel="causal")

API = [
    (lambda: StackSpec.of(P=4, dtype="float32", gate=1e-50, **BASE).build(), "gate=1e-50"),
    (lambda: StackSpec.of(P=4, dtype="float32", gate=1e-39, **BASE).build(), "gate=1e-39"),
    (lambda: StackSpec.of(P=4, dtype="float32", gate=1e20, **BASE).build(), "gate=1e+20"),
    (lambda: StackSpec.of(P=4, gate=1e308, **BASE).build(), "gate=1e+308"),
    (lambda: StackSpec.of(ln_gain=-1.0, **BASE).build(), "ln_gain=-1.0"),
    (lambda: StackSpec.of(seed=2**64, **BASE).build(), "seed=18446744073709551616"),
    (lambda: StackSpec.of(seed=-3, **BASE).build(), "seed=-3"),
    (lambda: StackSpec.of(seed="0", **BASE).build(), "seed='0'"),
    (lambda: StackSpec.of(**dict(BASE, T=10**6)).build(), "T=1000000"),
    (lambda: StackSpec.of(**dict(BASE, layers=10**9)).build(), "layers=1000000000"),
    (lambda: StackSpec.of(value_scale=float("inf"), **BASE).build(), "value_scale=inf"),
    (lambda: StackSpec.of(decay="0.1", **BASE).build(), "decay='0.1'"),
    (lambda: StackSpec(T=8, d=8, layers=2, heads=2, knobs={"ln_gain": -2.0}).build(), "ln_gain=-2.0"),
    (lambda: StackSpec(T=8, d=8, layers=2, heads=2, seed=2**70).build(), "seed="),
    (lambda: StackSpec(T=8, d=8, layers=2, heads=2, dtype="float16"), "dtype='float16'"),
    (lambda: simulate(StackSpec(T=10**6, P=8, d=64, layers=12, heads=4, kernel="causal", seed=0, device="cpu")), "T=1000000"),
    (lambda: simulate(StackSpec(T=16, P=4, d=8, layers=2, heads=2, kernel="causal", seed=0, device="cpu"), max_memory=10), "max_memory=10"),
    (lambda: simulate(StackSpec(T=16, P=4, d=8, layers=2, heads=2, kernel="causal", seed=0, device="tpu")),
     "device='tpu'"),
    (lambda: simulate(StackSpec(T=16, P=4, d=8, layers=2, heads=2, kernel="causal", seed=0, device="cpu"), batch=0), "batch=0"),
    (lambda: _run_checks(["4.1", "nope"]), "nope"),
    (lambda: _run_checks(["4.1"], profile="fast"), "profile"),
    (lambda: _run_checks([4.1]), "4.1"),
    (lambda: StackSpec.of(**BASE).build()(torch.full((8, 8), float("nan"), dtype=torch.float64)), "input X"),
    (lambda: StackSpec.of(**BASE).build()(_with_inf()), "index (3, 5)"),
    (lambda: _check_context(profile="bogus"), "profile='bogus'"),
    (lambda: _check_context(seed=-1), "seed=-1"),
    (lambda: _evaluate("2.1", StackSpec(T=7, P=4, d=8, layers=1, heads=2)), "T=7"),
    (lambda: _evaluate("2.1", StackSpec(T=8, d=8, layers=1, heads=3)), "heads=3"),
    (lambda: _evaluate("2.1", StackSpec(T=8, d=8, layers=1, heads=2, arch="looped", arch_options={"loopz": 1})),
     "loopz"),
    (lambda: _evaluate("9.9", StackSpec()), "claim_id='9.9'"),
    (lambda: _evaluate("2.1", {"T": 8}), "StackSpec"),
    (lambda: _jacobian_apply(torch.full((8, 8), float("nan"), dtype=torch.float64)), "V is not finite"),
    (lambda: _jacobian_apply(torch.ones(8, 8, dtype=torch.complex128)), "V has dtype torch.complex128"),
    (lambda: _jacobian_apply(torch.ones(8, 8, dtype=torch.float64, requires_grad=True)), "V requires grad"),
    (lambda: _jacobian_apply(arch="looped"), "arch='looped'"),
    (lambda: _jacobian_apply(arch="postln"), "arch='postln'"),
    (lambda: _jacobian_apply(arch="mhc"), "arch='mhc'"),
    (lambda: _train_config(tokens=10**12), "--tokens=1000000000000"),
]


def _check_context(**kw):
    from proofs_check.verdicts.evidence import CheckContext

    return CheckContext(**kw)


def _train_config(**kw):
    from proofs_check.experiments.train import TextConfig

    return TextConfig(**kw)


def _evaluate(claim, spec):
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.verdicts.registry import evaluate, load_checks

    load_checks()
    return evaluate(claim, spec, CheckContext())


def _jacobian_apply(V=None, arch="preln"):
    from numerics.linearised.matrix_free import jacobian_apply

    stack = StackSpec.of(arch=arch, **BASE).build()
    return jacobian_apply(stack, torch.ones(8, dtype=torch.float64),
                          torch.ones(8, 8, dtype=torch.float64) if V is None else V)


def _run_checks(ids, **kw):
    from proofs_check.runners.check import run_checks

    return run_checks(ids, progress=False, **kw)


def _with_inf():
    x = torch.zeros(8, 8, dtype=torch.float64)
    x[3, 5] = float("inf")
    return x


@pytest.mark.parametrize("call,names", API, ids=[f"api-{i:02d}" for i in range(len(API))])
def test_api_refuses_with_a_value_error_naming_the_parameter(call, names, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert names in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from proofs_check.experiments.train import TextConfig, train_text

    out = tmp_path_factory.mktemp("ckpt") / "run"
    train_text(TextConfig(d=8, layers=1, heads=2, T=8, tokens=256, batch=8, eval_every=4, eval_windows=4), out,
               progress=False, threads=1)
    return out


@pytest.mark.parametrize("edit, field", [
    (lambda m: m["spec"].update(kernel="full"), "spec.kernel"),
    (lambda m: m["spec"].update(dtype="float64"), "spec.dtype"),
    (lambda m: m["spec"].update(d=16), "spec.d"),
    (lambda m: m.update(step=-3), "'step'=-3"),
    (lambda m: m.update(step=2.5), "'step'=2.5"),
    (lambda m: m["spec"].update(T="eight"), "spec.T"),
    (lambda m: m["spec"].update(dtype="float16"), "field 'spec.dtype'"),
    (lambda m: m.update(config=[]), "field 'config'"),
])
def test_an_edited_manifest_is_refused_naming_the_file_and_field(trained, edit, field, tmp_path, capsys):
    """A manifest edited to another kernel, dtype or size, or a negative step, would rebuild another
    stack around the weights: refused (exit 2) with the manifest's path and the field."""
    import shutil

    ck = tmp_path / "ck"
    shutil.copytree(trained, ck)
    manifest = json.loads((ck / "manifest.json").read_text())
    edit(manifest)
    (ck / "manifest.json").write_text(json.dumps(manifest))
    code, _ = run_cli(["check", "--stack", str(ck), "--claim", "1.2", "--allow-drift", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and str(ck / "manifest.json") in err and field in err, err


def test_the_suite_is_large_enough():
    assert len(CLI) + len(API) >= 80


def test_claims_several_ids_and_duplicates_dropped():
    """--claim 4.1 4.2 and repeated --claim both parse; duplicates run once (old argparse: append only)."""
    from proofs_check.cli import build_parser
    from proofs_check.validation import validate_claims

    args = build_parser().parse_args(["check", "--claim", "4.1", "4.2", "--claim", "4.1"])
    assert validate_claims(args.claim) == ["4.1", "4.2"]


def test_float32_gate_is_held_exactly_enough():
    """A gate the dtype can hold survives the cast: 1e-30 in float32 stays 1e-30 to float32 rounding."""
    stack = StackSpec.of(P=4, dtype="float32", gate=1e-30, **BASE).build()
    # float32 rounding: relative error ≤ 2^-24.
    assert abs(float(stack.layers[0].gate.detach()) - 1e-30) <= 1e-30 * 2**-24


def test_negative_gate_is_a_signed_amplitude():
    """g < 0 is allowed (Claim 5.1 bounds |g|): the slow path enters with the opposite sign."""
    plus = StackSpec.of(P=4, seed=1, gate=0.5, **BASE).build()
    minus = StackSpec.of(P=4, seed=1, gate=-0.5, **BASE).build()
    assert float(minus.layers[0].gate.detach()) == -0.5 and float(plus.layers[0].gate.detach()) == 0.5


def test_inputs_check_can_be_switched_off_for_inner_loops():
    from numerics.stacks.stack import unchecked_inputs

    stack = StackSpec.of(**BASE).build()
    x = _with_inf()
    with unchecked_inputs(stack), torch.no_grad():
        y = stack(x)
    assert not torch.isfinite(y).all()  # the check was the only thing refusing it
    with pytest.raises(ValueError, match="input X"):
        stack(x)


@settings(max_examples=25, deadline=None)
@given(t=st.integers(1, 15), delta=st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False).filter(bool),
       j=st.integers(0, 7), seed=st.integers(0, 2**16))
def test_causal_change_at_token_t_leaves_earlier_tokens_bit_identical(t, delta, j, seed):
    """Causal kernel: any finite change of token t leaves the outputs of tokens 0..t-1 bit-identical
    (they never read token t: its scores are masked by -inf and exp(-inf) = 0 exactly)."""
    stack = StackSpec(T=16, d=8, layers=3, heads=2, kernel="causal", P=4, seed=seed, knobs={"gate": 0.0}).build()
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(16, 8, generator=g, dtype=torch.float64)
    x2 = x.clone()
    x2[t, j] += delta
    with torch.no_grad():
        y, y2 = stack(x), stack(x2)
    assert torch.equal(y[:t], y2[:t])


def test_causal_control_full_kernel_leaks():
    """Control: with the full kernel a change at the last token moves token 0."""
    stack = StackSpec(T=16, d=8, layers=3, heads=2, kernel="full", seed=0).build()
    x = torch.randn(16, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x2 = x.clone()
    x2[15, 0] += 1.0
    with torch.no_grad():
        assert not torch.equal(stack(x)[:1], stack(x2)[:1])


# -- fuzzing ---------------------------------------------------------------------------------
SIM_OPTIONS = ["--T", "--P", "--d", "--layers", "--heads", "--kernel", "--slow-kernel", "--gate",
               "--value-scale", "--decay", "--ln-gain", "--weight-scale", "--seed", "--device", "--json"]
CHECK_OPTIONS = ["--claim", "--device", "--profile", "--json"]
DIGITS = "0123456789\u0660\u0661\u0666\u0966\u0968\uff10\uff18\u00b2\u2155"
values = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=DIGITS + ".-+eE_", max_size=8),
    st.integers(-2**70, 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["4.1", "2.1", "causal", "full", "cpu", "ci", "-", "", "1e308", "1e-50", "nan", "٦٤"]),
)


def _slot(option, value):
    """Keep fuzzed output paths inside the test's folder ('-' is stdout)."""
    return [option, value if option != "--json" or value == "-" else "out/" + value]


def _argv(options):
    slots = st.lists(st.tuples(st.sampled_from(options), values), max_size=5)
    return slots.map(lambda pairs: [x for pair in pairs for x in _slot(*pair)])


def _fuzz(argv, capsys):
    code, _ = run_cli(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err + out, argv


FUZZ_DRAWS = 500  # per command: 1,000 in all


@settings(max_examples=FUZZ_DRAWS, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(argv=_argv(SIM_OPTIONS))
def test_fuzzed_simulate_argv_never_tracebacks(argv, tmp_path_factory, capsys):
    folder = tmp_path_factory.mktemp("fuzz")
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        # the cheap path: a valid run stops at the memory estimate, before the stack is built
        _fuzz(["simulate", *argv, "--max-memory", "1"], capsys)
    finally:
        os.chdir(cwd)


STUB_LEDGER = {"claims": [], "environment": {}, "options": {"profile": "ci", "quick": True}}


@settings(max_examples=FUZZ_DRAWS, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(argv=_argv(CHECK_OPTIONS))
def test_fuzzed_check_argv_never_tracebacks(argv, tmp_path_factory, capsys):
    folder = tmp_path_factory.mktemp("fuzz")
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with mock.patch("proofs_check.runners.check.run_checks", return_value=json.loads(json.dumps(STUB_LEDGER))):
            _fuzz(["check", "--no-progress", *argv], capsys)
    finally:
        os.chdir(cwd)


def test_a_consistent_ledger_is_read_and_an_oversized_input_is_refused_unread(tmp_path):
    """The control for the forged-ledger cases: the same ledger with its numbers agreeing loads; and
    an input above the size cap is refused from its size alone."""
    from numerics.storage.io import read_input
    from proofs_check.validation import load_ledger

    good = tmp_path / "ledger.json"
    good.write_text(_ledger())
    assert load_ledger(good)["claims"][0]["status"] == "verified"
    (tmp_path / "failed.json").write_text(_ledger(status="failed", symbolic={"steps": 6, "proved": 0}))
    assert load_ledger(tmp_path / "failed.json")["claims"][0]["status"] == "failed"
    with pytest.raises(ValueError, match="more than the 10 an input may have"):
        read_input(good, "--ledger", max_bytes=10)


def test_a_whole_mutation_record_passes_the_check_reproduce_makes_first(tmp_path):
    """The control for the mutation.json cases: the record the report reads (the shape of
    tests/test_mutation_sample.py's) is accepted."""
    from proofs_check.validation import load_mutation_record

    assert load_mutation_record(tmp_path / "mutation.json") is None
    (tmp_path / "mutation.json").write_text(json.dumps({
        "theory": {"total": 2, "killed": 1, "score": 0.5,
                   "mutants": [{"name": "a", "claim": "2.1", "killed_by": "numeric check"},
                               {"name": "b", "claim": "5.1", "killed_by": None}]},
        "source": {"total": 1, "killed_by_ledger": 1, "killed_by_test_only": 0, "ledger_score": 1.0,
                   "mutants": [{"name": "s", "where": "numerics/stacks/stack.py", "claims": ["2.1"],
                                "killed_by_ledger": "2.1", "killed_by_test_only": None}]},
        "code": {"tool": "mutmut", "total": 10, "killed": 9, "score": 0.9, "survivors": [{}],
                 "justified": {"equivalent": 1, "device-only": 0, "open": 0},
                 "by_file": {"numerics/stacks/stack.py": [10, 9]}}}))
    assert load_mutation_record(tmp_path / "mutation.json")["theory"]["killed"] == 1


def test_an_environment_the_run_would_fail_in_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    """A malformed FASTSLOW_CRASH_AT_WRITE was read at the first write, after the work; an ASCII standard
    output failed at the first table.  Both are refused first, exit 2, naming the variable."""
    import subprocess

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FASTSLOW_CRASH_AT_WRITE", "soon")
    code, _ = run_cli(["simulate", *SMALL, "--json", "r.json"])
    assert code == 2 and "FASTSLOW_CRASH_AT_WRITE='soon'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    monkeypatch.delenv("FASTSLOW_CRASH_AT_WRITE")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "MPLBACKEND": "Agg"}
    out = subprocess.run([sys.executable, "-m", "proofs_check.cli", "simulate", *SMALL, "--json", "r.json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "PYTHONIOENCODING=ascii" in out.stderr and "Traceback" not in out.stderr
    assert list(tmp_path.iterdir()) == []
