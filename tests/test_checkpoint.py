"""The checkpoint format: atomic saves, hash-checked and weights_only loads, load_weights."""

import json
import pickle

import pytest
import torch

from numerics.storage import checkpoint as ck
from numerics.stacks.spec import StackSpec
from proofs_check.experiments import train as T
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("ck") / "run"
    cfg = T.TextConfig(arch="hierarchical", d=16, layers=2, heads=2, T=32, P=8, tokens=2048, batch=8,
                       eval_every=4, eval_windows=8)
    T.train_text(cfg, out, progress=False)
    return out


def test_spec_with_checkpoint_builds_the_trained_stack(trained):
    m = ck.read_manifest(trained)
    spec = StackSpec.from_dict({**m["spec"], "checkpoint": str(trained)})
    stack = spec.build()
    tensors, _ = ck.load(trained)
    for name, value in stack.state_dict().items():
        assert torch.equal(value, tensors["model"][f"stack.{name}"])  # exact copy
    drawn = StackSpec.from_dict(m["spec"]).build()  # control: the random draw differs
    assert not torch.equal(drawn.layers[0].attn.W_Q, stack.layers[0].attn.W_Q)
    assert any(float(layer.gate.detach()) != 0.0 for layer in stack.layers)  # trained gates moved off 0


def test_load_weights_refuses_another_shape(trained):
    m = ck.read_manifest(trained)
    other = StackSpec.from_dict({**m["spec"], "d": 8}).build()
    with pytest.raises(ck.CheckpointError, match="does not fit this stack.*shape"):
        ck.load_weights(other, trained)
    with pytest.raises(ck.CheckpointError, match="does not fit this stack: no tensor stack.layers.2"):
        ck.load_weights(StackSpec.from_dict({**m["spec"], "layers": 3}).build(), trained)


class _Evil:
    def __reduce__(self):
        return (print, ("code ran",))


def test_pickled_objects_are_refused_even_with_a_matching_hash(tmp_path, trained):
    import shutil

    folder = tmp_path / "evil"
    shutil.copytree(trained, folder)
    m = json.loads((folder / "manifest.json").read_text())
    weights = folder / m["weights"]
    torch.save({"model": {"x": _Evil()}}, weights)
    m["sha256"] = ck.sha256_file(weights)
    m["binding"] = ck.binding(m)
    (folder / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ck.CheckpointError, match="is corrupt"):
        ck.load(folder)  # weights_only=True refuses the object instead of running it


def test_missing_field_and_wrong_format_are_named(tmp_path, trained):
    import shutil

    folder = tmp_path / "c"
    shutil.copytree(trained, folder)
    m = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({k: v for k, v in m.items() if k != "sha256"}))
    with pytest.raises(ck.CheckpointError, match="lacks field 'sha256'"):
        ck.load(folder)
    (folder / "manifest.json").write_text(json.dumps({**m, "format": "other"}))
    with pytest.raises(ck.CheckpointError, match="format 'other'"):
        ck.load(folder)
    (folder / "manifest.json").write_text(json.dumps({**m, "weights": "../x.pt"}))
    with pytest.raises(ck.CheckpointError, match="'weights' must name a file in the folder"):
        ck.load(folder)
    with pytest.raises(ck.CheckpointError, match="no manifest.json"):
        ck.load(tmp_path / "nowhere")
