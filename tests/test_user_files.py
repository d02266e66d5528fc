"""No command removes or overwrites a file it did not write.

``reproduce``, ``train`` and ``sweep`` claim their output folder (``numerics.storage.outdir``): a
non-empty folder without their marker is refused with exit 2 before any work, and inside their
own folder they remove only what they can prove they wrote (the atomic writer's temporaries of
dead writers; a checkpoint's previous tensor file, named by the manifest it wrote).  Each test
plants a user's file where the old code destroyed it and checks that it survives byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from numerics.storage import outdir
from proofs_check.cli import main as _main

TINY_TRAIN = ["train", "--d", "8", "--layers", "1", "--heads", "2", "--T", "8", "--tokens", "512", "--batch", "8",
              "--eval-every", "4", "--no-progress"]


def main(argv):
    try:
        return _main(argv)
    except SystemExit as exc:
        return exc.code


def _old(path):
    """Make ``path`` an hour old (the old cleanup removed any *.tmp older than ten minutes)."""
    os.utime(path, (time.time() - 3600, time.time() - 3600))


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)


def test_reproduce_refuses_a_folder_of_user_files_and_leaves_them(tmp_path, capsys):
    out = tmp_path / "thesis"
    out.mkdir()
    draft = out / "chapter.tmp"
    draft.write_text("my draft")
    _old(draft)
    before = sorted(p.name for p in out.iterdir())
    assert main(["reproduce", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--out" in err and "chapter.tmp" in err and "did not write" in err
    assert sorted(p.name for p in out.iterdir()) == before and draft.read_text() == "my draft"


def test_own_folder_cleanup_removes_only_dead_writers_temporaries(tmp_path):
    """In reproduce's own folder: a user's old *.tmp stays; the atomic writer's temporary of a dead
    process goes; a live process's stays."""
    with outdir.claim(tmp_path / "out", "reproduce"):
        pass
    out = tmp_path / "out"
    user = out / "figures" / "notes.tmp"
    user.parent.mkdir()
    user.write_text("mine")
    _old(user)
    lookalike = out / ".a.png.123.x1y2.tmp"  # the old temporary naming, which a user's file can match
    lookalike.write_text("mine too")
    _old(lookalike)
    token = outdir.token(out)
    dead = out / "figures" / f".a.png.fastslow-{_dead_pid()}-{token}-x1y2abcd.tmp"
    dead.write_bytes(b"half")
    live = out / f".b.json.fastslow-{os.getppid()}-{token}-abcd1234.tmp"
    live.write_bytes(b"")
    untokened = out / "figures" / f".c.png.fastslow-{_dead_pid()}-x1y2abcd.tmp"  # no record of ours names it
    untokened.write_bytes(b"a user's file that looks like a temporary")
    with outdir.claim(out, "reproduce"):
        pass
    assert user.read_text() == "mine" and lookalike.read_text() == "mine too" and live.exists()
    assert untokened.exists() and not dead.exists()


def test_output_folder_of_another_command_is_refused(tmp_path, capsys):
    with outdir.claim(tmp_path / "run", "sweep"):
        pass
    assert main(["reproduce", "--out", str(tmp_path / "run")]) == 2
    assert "belongs to fastslow sweep" in capsys.readouterr().err


def test_fastslow_subfolders_and_reproduce_inputs_are_not_foreign(tmp_path):
    """``out/`` holding train's and sweep's default folders and mutate's mutation.json is accepted."""
    with outdir.claim(tmp_path / "out" / "checkpoints" / "run1", "train"):
        pass
    with outdir.claim(tmp_path / "out" / "sweeps" / "s", "sweep"):
        pass
    (tmp_path / "out" / "mutation.json").write_text("{}")
    with outdir.claim(tmp_path / "out", "reproduce", inputs=("mutation.json",)) as folder:
        assert outdir.owner(folder) == "reproduce"


def test_a_second_writer_on_one_folder_is_refused(tmp_path):
    code = ("import sys, time; from numerics.storage import outdir\n"
            "with outdir.claim(sys.argv[1], 'sweep'):\n    print('held', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "s")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(ValueError, match="another fastslow process is writing"):
            with outdir.claim(tmp_path / "s", "sweep"):
                pass
    finally:
        proc.kill()
        proc.wait()
    with outdir.claim(tmp_path / "s", "sweep"):  # the lock dies with its process
        pass


def test_train_keeps_tensor_files_it_did_not_write(tmp_path):
    from proofs_check.experiments.train import TextConfig, train_text

    cfg = TextConfig(d=8, layers=1, heads=2, T=8, tokens=512, batch=8, eval_every=4, eval_windows=4)
    out = tmp_path / "ckpt"
    train_text(cfg, out, progress=False, stop_after=4, threads=1)  # an interrupted run
    mine = out / "weights-99999999.pt"
    mine.write_bytes(b"the user's tensors")
    other = out / "weights-00000001.pt"
    other.write_bytes(b"more of the user's tensors")
    manifest = json.loads((out / "manifest.json").read_text())
    train_text(cfg, out, progress=False, threads=1)  # resumes, saves, drops its own previous tensor file
    new = json.loads((out / "manifest.json").read_text())
    assert new["step"] > manifest["step"] and not (out / manifest["weights"]).exists()
    assert mine.read_bytes() == b"the user's tensors" and other.read_bytes() == b"more of the user's tensors"


def test_train_refuses_a_folder_of_user_files(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "weights-00000004.pt").write_bytes(b"not fastslow's")
    assert main([*TINY_TRAIN, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "weights-00000004.pt" in err
    assert sorted(p.name for p in out.iterdir()) == ["weights-00000004.pt"]


def test_sweep_figures_refuses_a_folder_of_user_files_before_any_work(tmp_path, capsys):
    """``sweep --figures DIR`` would replace same-named PNGs: a folder of files sweep did not write is
    refused (exit 2, naming --figures and the file) before the spec is even read; nothing changes."""
    figures = tmp_path / "paper_figures"
    figures.mkdir()
    mine = figures / "coarse_graining_0_0_3.2_layers_value_scale.png"
    mine.write_bytes(b"my own plot")
    assert main(["sweep", "coarse_graining", "--out", str(tmp_path / "s"), "--figures", str(figures)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--figures" in err and mine.name in err and "did not write" in err
    assert mine.read_bytes() == b"my own plot" and not (tmp_path / "s").exists()


def test_the_shipped_sweep_gallery_is_sweeps_own():
    """docs/figures/sweeps is where `fastslow sweep NAME --figures docs/figures/sweeps` regenerates the
    gallery: it carries sweep's marker, so that command is accepted there."""
    from pathlib import Path

    gallery = Path(__file__).resolve().parents[1] / "docs" / "figures" / "sweeps"
    assert outdir.owner(gallery) == "sweep" and outdir.check(gallery, "sweep", name="--figures") == gallery


def test_train_out_keeps_a_lookalike_temporary_with_a_dead_pid(tmp_path):
    """An ordinary ``train --out`` into its own folder: a user's file named like the atomic writer's
    temporary, with a dead pid, in a subfolder, survives (the old cleanup removed any such name)."""
    out = tmp_path / "ck"
    with outdir.claim(out, "train"):
        pass
    notes = out / "notes"
    notes.mkdir()
    lookalike = notes / f".draft.md.fastslow-{_dead_pid()}-q9w8e7r6.tmp"
    lookalike.write_text("the user's draft")
    assert main([*TINY_TRAIN, "--out", str(out)]) == 0
    assert lookalike.read_text() == "the user's draft"


def test_a_killed_writer_in_an_owned_folder_leaves_a_temporary_the_next_claim_removes(tmp_path):
    """The other half: a temporary this tool wrote (SIGKILL after its temp was written) carries the
    folder's token, and the next claim of the folder removes it."""
    out = tmp_path / "s"
    code = ("import os, sys; from numerics.storage import outdir, io\n"
            "with outdir.claim(sys.argv[1], 'sweep'):\n"
            "    with io.atomic_path(os.path.join(sys.argv[1], 'sub', 'rows.json')) as tmp:\n"
            "        tmp.write_text('half'); os.kill(os.getpid(), 9)\n")
    subprocess.run([sys.executable, "-c", code, str(out)], check=False)
    left = list(out.rglob("*.tmp"))
    assert len(left) == 1 and outdir.token(out) in left[0].name
    with outdir.claim(out, "sweep"):
        pass
    assert list(out.rglob("*.tmp")) == []


def test_figures_out_refuses_a_folder_of_user_files_and_leaves_them(tmp_path, capsys):
    """docs/cli.md promises it: figures --out claims its folder; a user's stability_region.png there was
    overwritten before.  Refused with exit 2 naming the file, before any figure is drawn."""
    out = tmp_path / "paper"
    out.mkdir()
    mine = out / "stability_region.png"
    mine.write_bytes(b"my own plot")
    assert main(["figures", "--only", "stability_region", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--out" in err and "stability_region.png" in err and "did not write" in err
    assert mine.read_bytes() == b"my own plot" and sorted(p.name for p in out.iterdir()) == ["stability_region.png"]


def test_figures_accepts_the_figures_folder_of_a_reproduce_run(tmp_path):
    from proofs_check.cli.figures import _reproduce_figures

    with outdir.claim(tmp_path / "out", "reproduce"):
        (tmp_path / "out" / "figures").mkdir()
        (tmp_path / "out" / "figures" / "a.png").write_bytes(b"\x89PNG")
    assert _reproduce_figures(tmp_path / "out" / "figures")
    with outdir.claim(tmp_path / "out" / "figures", "figures", adopt=_reproduce_figures) as folder:
        assert outdir.owner(folder) == "figures"
    assert not _reproduce_figures(tmp_path / "elsewhere" / "figures")
