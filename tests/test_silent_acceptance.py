"""What used to be accepted silently and gave a verdict on something else: an edited checkpoint
manifest, and JSON that no strict parser reads.

* A checkpoint's manifest binds the stack it is rebuilt from (kind, config, spec with its knobs,
  arch, step) to the tensor file's hash (``numerics.storage.checkpoint.binding``): an edit of
  ``spec.knobs.decay`` rebuilt another stack around the trained weights, and a 3.1 bound went from
  45 to 676 on a stack never trained.  Now the manifest is refused, naming the file and the field.
* ``write_json`` writes strict JSON: ``simulate --json`` wrote bare ``NaN`` whenever μ < 0.
"""

from __future__ import annotations

import json

import pytest

from numerics.storage import checkpoint as ck
from numerics.storage.io import write_json


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from proofs_check.experiments.train import TextConfig, train_text

    out = tmp_path_factory.mktemp("ck") / "run"
    train_text(TextConfig(d=8, layers=1, heads=2, T=8, tokens=512, batch=8, eval_every=4, eval_windows=4), out,
               progress=False, stop_after=4, threads=1)
    return out


EDITS = {"spec.knobs.decay": ("spec", "knobs", "decay", 0.5), "spec.knobs.ln_eps": ("spec", "knobs", "ln_eps", 1e-2),
         "spec.knobs.step": ("spec", "knobs", "step", 0.25), "spec.seed": ("spec", "seed", 7),
         "config.lr": ("config", "lr", 1.0), "step": ("step", 3)}


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edited_manifest_is_refused_naming_the_binding(trained, tmp_path, edit):
    import shutil

    folder = tmp_path / "c"
    shutil.copytree(trained, folder)
    ck.load(folder)  # the control: the manifest as saved loads
    m = json.loads((folder / "manifest.json").read_text())
    *keys, last, value = EDITS[edit]
    target = m
    for key in keys:
        target = target[key]
    assert target.get(last) != value
    target[last] = value
    (folder / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ck.CheckpointError, match=r"manifest\.json: .*field 'binding' differs.*edited"):
        ck.read_manifest(folder)


def test_json_is_strict_non_finite_values_are_null_and_named(tmp_path, capsys):
    path = tmp_path / "r.json"
    write_json(path, {"mu": float("-nan"), "rows": [1.0, float("inf")], "ok": 2.5})

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    data = json.loads(path.read_text(), parse_constant=refuse)  # a strict reader: no NaN, Infinity
    assert data == {"mu": None, "rows": [1.0, None], "ok": 2.5}
    note = capsys.readouterr().err
    assert "2 non-finite value(s) written as null" in note and "mu=nan" in note and "rows[1]=inf" in note


def test_a_full_disk_during_a_checkpoint_save_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    """torch.save on a full disk raised a RuntimeError (no errno) and the CLI showed a traceback; now
    exit 1, one line naming the tensor file, and no temporary left.  The disk is made full by
    reporting no free blocks (os.statvfs) while torch.save fails as it does on ENOSPC."""
    import os as _os

    import torch

    from proofs_check.cli import main

    real_statvfs = _os.statvfs

    class Full:
        f_bavail, f_frsize = 0, 4096

    def failing_save(obj, f, *a, **kw):
        raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64 vs 0")

    monkeypatch.setattr(torch, "save", failing_save)
    monkeypatch.setattr(_os, "statvfs", lambda p: Full() if str(p).startswith(str(tmp_path)) else real_statvfs(p))
    out = tmp_path / "ck"
    code = main(["train", "--d", "8", "--layers", "1", "--heads", "2", "--T", "8", "--tokens", "512", "--batch", "8",
                 "--eval-every", "4", "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "No space left on device" in err[0] and "weights-" in err[0], err
    assert [p.name for p in out.rglob("*.tmp")] == []
