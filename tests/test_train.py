"""``fastslow train``: the smoke run learns the text, resumes exactly, refuses bad checkpoints.

The smoke size (d = 32, 2 layers, T = 64, 80k tokens) takes seconds on one core.  Its test
is that the validation loss ends below the unigram entropy of the validation text, a number
computed here from the text itself: a model that beats it has learnt to use context.
"""

import json
import math
from collections import Counter

import pytest

from proofs_check.experiments import train as T
from proofs_check.cli import main as _main


def main(argv):
    """The CLI's exit status, whether it returns it or argparse exits with it."""
    try:
        return _main(argv)
    except SystemExit as exc:
        return exc.code

SMOKE = ["--d", "32", "--layers", "2", "--heads", "2", "--T", "64", "--batch", "16", "--eval-every", "20"]


def _validation_entropy() -> float:
    from pydoc_data.topics import topics

    data = "\n\n".join(topics[k] for k in sorted(topics)).encode("utf-8")
    val = data[int(len(data) * 0.9):]
    return -sum(n / len(val) * math.log(n / len(val)) for n in Counter(val).values())


@pytest.mark.parametrize("arch", ["preln", "hierarchical"])
def test_smoke_training_beats_the_unigram_entropy(tmp_path, arch, capsys):
    out = tmp_path / "ckpt"
    assert main(["train", "--arch", arch, *SMOKE, "--tokens", "80000", "--out", str(out), "--no-progress"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    h = _validation_entropy()  # ≈ 3.14 nats/byte
    losses = m["curves"]["eval_loss"]
    assert losses[-1] < h < losses[0], (losses, h)  # starts above (random init), ends below
    assert m["corpus"]["sha256"] == m["config"]["corpus"] and m["spec"]["T"] == 64
    assert (m["spec"]["P"] == 8) == (arch == "hierarchical")
    assert len(m["curves"]["gates"]) == (2 if arch == "hierarchical" else 0)
    assert "tokens/s" in capsys.readouterr().out


def test_text_training_resumes_to_the_same_final_loss(tmp_path):
    cfg = T.TextConfig(d=16, layers=1, heads=2, T=32, tokens=4096, batch=8, eval_every=4, eval_windows=8)
    whole = T.train_text(cfg, tmp_path / "whole", progress=False)
    T.train_text(cfg, tmp_path / "cut", progress=False, stop_after=7, checkpoint_every=5)
    resumed = T.train_text(cfg, tmp_path / "cut", progress=False)
    assert resumed["curves"]["eval_loss"] == whole["curves"]["eval_loss"]  # bit-identical on the CPU
    assert resumed["curves"]["train_loss"] == whole["curves"]["train_loss"]


def test_bad_or_foreign_checkpoint_exits_2_with_one_line(tmp_path, capsys):
    args = ["train", "--d", "16", "--layers", "1", "--heads", "2", "--T", "32", "--tokens", "512", "--batch", "4",
            "--no-progress"]
    out = tmp_path / "ckpt"
    assert main([*args, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main([*args, "--seed", "1", "--out", str(out)]) == 2  # another run's checkpoint
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "belongs to another run" in err and "seed" in err
    (out / "manifest.json").write_text("{")
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is corrupt" in err
    f = tmp_path / "file"
    f.write_text("x")
    assert main([*args, "--out", str(f)]) == 2
    assert "is a file" in capsys.readouterr().err


@pytest.mark.parametrize("argv, name", [(["--heads", "3"], "--heads"), (["--arch", "hierarchical", "--T", "30"], "--P"),
                                        (["--tokens", "0"], "--tokens"), (["--d", "٣٢"], "--d")])
def test_bad_arguments_exit_2_naming_the_parameter(argv, name, capsys, tmp_path):
    assert main(["train", "--out", str(tmp_path / "x"), "--no-progress", *argv]) == 2
    assert name in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_check_stack_runs_on_stack_claims_on_the_trained_weights(tmp_path, capsys):
    """``check --stack`` evaluates the registered on-stack claims on the checkpoint's weights and
    records the trained stack in the ledger; an arch-free claim is listed n/a with its reason."""
    out = tmp_path / "ckpt"
    assert main(["train", "--d", "8", "--layers", "2", "--heads", "2", "--T", "8", "--tokens", "4096",
                 "--batch", "16", "--no-progress", "--out", str(out)]) == 0
    ledger_path = tmp_path / "ledger.json"
    rc = main(["check", "--stack", str(out), "--claim", "1.2", "7.1", "--allow-drift", "--no-progress",
               "--json", str(ledger_path)])
    ledger = json.loads(ledger_path.read_text())
    assert ledger["stack"]["trained"] is True and ledger["stack"]["checkpoint"] == str(out)
    assert ledger["stack"]["corpus"]["sha256"] == json.loads((out / "manifest.json").read_text())["corpus"]["sha256"]
    by = {c["id"]: c for c in ledger["claims"]}
    assert by["1.2"]["verdict"]["spec"]["checkpoint"] == str(out)
    assert by["1.2"]["status"] == "holds" and rc == 0  # the chain rule holds on any weights
    assert by["7.1"]["status"] == "n/a" and "data distribution" in by["7.1"]["reason"]
    capsys.readouterr()
    (out / "manifest.json").write_text("[]")
    assert main(["check", "--stack", str(out), "--claim", "1.2", "--allow-drift", "--no-progress"]) == 2
    assert "is corrupt" in capsys.readouterr().err


def test_matrix_trained_column_uses_the_cached_default_checkpoint(tmp_path, monkeypatch):
    from proofs_check.runners import grid as M
    small = T.TextConfig(d=8, layers=2, heads=2, T=8, tokens=2048, batch=16, eval_every=8, eval_windows=8)
    monkeypatch.setattr(T, "SMALL", small)
    m = M.run_matrix(only_arch=["trained"], claims=["1.2", "7.2"], cache_dir=str(tmp_path))
    assert m["options"]["archs"] == ["trained"]
    cells = {c["claim"]: c for c in m["cells"]}
    assert cells["1.2"]["status"] == "holds" and cells["1.2"]["evidence"]["trained"]["step"] == small.steps
    assert cells["7.2"]["status"] == "n/a"
    (folder,) = (tmp_path / "trained_stacks").iterdir()
    mtime = (folder / "manifest.json").stat().st_mtime_ns
    M.run_matrix(only_arch=["trained"], claims=["1.2"], cache_dir=str(tmp_path))  # reused, not retrained
    assert (folder / "manifest.json").stat().st_mtime_ns == mtime
