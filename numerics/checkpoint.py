"""The one checkpoint format of the trainer (Claim 7.3's runs and ``fastslow train``).

A checkpoint is a folder::

    DIR/manifest.json        what the run is: config, step, losses, corpus hash, versions,
                             and the name and sha256 of the tensor file it points at
    DIR/weights-<step>.pt    ``torch.save`` of {"model": state_dict, "optimizer": state_dict}
                             (tensors, numbers and lists only: loaded with weights_only=True)

A save writes the new tensor file first, then the manifest that points at it (each
atomically: temp file, fsync, rename), then removes the tensor file the previous manifest
named (the only file a save removes: a ``weights-*.pt`` the folder's manifest never named is
left alone).  The folder is claimed first (:func:`claim`): new, empty, a checkpoint folder
already, or refused with the file that makes it someone else's.  At every
moment the manifest names a complete tensor file whose hash it records, so a run killed
at any point resumes from its last save.  A file that does not parse, a hash that does
not match or a manifest of another kind is a :class:`CheckpointError` naming the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path

import torch

FORMAT = "fastslow-checkpoint"
VERSION = 1
MANIFEST = "manifest.json"
MANIFEST_KEYS = ("format", "version", "kind", "config", "step", "weights", "sha256", "curves")


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, corrupt, tampered or of another run."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest_path(path: str | os.PathLike) -> Path:
    """The manifest of checkpoint ``path`` (the folder, or its manifest.json itself)."""
    path = Path(path)
    return path if path.name == MANIFEST else path / MANIFEST


def exists(path: str | os.PathLike) -> bool:
    return manifest_path(path).exists()


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest of checkpoint ``path``, validated for shape; CheckpointError otherwise."""
    mpath = manifest_path(path)
    if not mpath.is_file():
        raise CheckpointError(f"checkpoint {mpath.parent}: no {MANIFEST} (not a fastslow checkpoint folder)")
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"checkpoint {mpath} is corrupt ({type(exc).__name__}: {exc})") from exc
    if not isinstance(manifest, dict):
        raise CheckpointError(f"checkpoint {mpath} is corrupt: the manifest is not a JSON object")
    missing = [k for k in MANIFEST_KEYS if k not in manifest]
    if missing:
        raise CheckpointError(f"checkpoint {mpath} is corrupt: the manifest lacks field {missing[0]!r}")
    if manifest["format"] != FORMAT or manifest["version"] != VERSION:
        raise CheckpointError(f"checkpoint {mpath}: format {manifest['format']!r} version {manifest['version']!r}, "
                              f"expected {FORMAT!r} version {VERSION}")
    if not isinstance(manifest["weights"], str) or "/" in manifest["weights"] or manifest["weights"].startswith("."):
        raise CheckpointError(f"checkpoint {mpath} is corrupt: field 'weights' must name a file in the folder")
    old = manifest.get("replaces")
    if old is not None and (not isinstance(old, str) or not re.fullmatch(r"weights-[0-9]{8}\.pt", old)):
        raise CheckpointError(f"checkpoint {mpath} is corrupt: field 'replaces'={old!r} must name a tensor file "
                              "weights-NNNNNNNN.pt in the folder")
    _check_fields(manifest, mpath)
    return manifest


#: what every ``fastslow train`` stack is (``proofs_check.experiments.train.TextConfig.spec``), whatever its config
TRAINED_KERNEL = "causal"


def _check_fields(manifest: dict, mpath: Path) -> None:
    """The step, the config and the stack's spec: of the right type, and the spec the one the
    config trained (its sizes, the causal kernel, the config's dtype), so that an edited manifest
    cannot rebuild another stack around the weights.  CheckpointError naming the file and field."""
    step = manifest["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise CheckpointError(f"checkpoint {mpath}: field 'step'={step!r} must be an integer ≥ 0")
    config = manifest["config"]
    if not isinstance(config, dict):
        raise CheckpointError(f"checkpoint {mpath}: field 'config' must be a JSON object")
    if "spec" not in manifest:
        return
    from numerics.params import check_spec_entries

    spec = manifest["spec"]
    try:
        if not isinstance(spec, dict):
            raise ValueError("must be a JSON object")
        check_spec_entries(spec)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {mpath}: field 'spec' is invalid ({exc})") from None
    if manifest["kind"] != "byte-corpus":
        return
    expected = {"kernel": TRAINED_KERNEL, "dtype": config.get("dtype"),
                **{k: config.get(k) for k in ("T", "d", "layers", "heads")}}
    for key, value in expected.items():
        if spec.get(key) != value:
            raise CheckpointError(f"checkpoint {mpath}: field 'spec.{key}'={spec.get(key)!r} is not the trained "
                                  f"stack's ({value!r}, from its config): the manifest was edited")


def load(path: str | os.PathLike) -> tuple[dict, dict]:
    """(tensors, manifest) of checkpoint ``path``: the tensor file is hash-checked, then loaded
    with ``weights_only=True`` on the CPU."""
    manifest = read_manifest(path)
    folder = manifest_path(path).parent
    wpath = folder / manifest["weights"]
    if not wpath.is_file():
        raise CheckpointError(f"checkpoint {folder}: tensor file {manifest['weights']} is missing")
    if sha256_file(wpath) != manifest["sha256"]:
        raise CheckpointError(f"checkpoint {wpath} is corrupt: its sha256 differs from the manifest's")
    try:
        tensors = torch.load(wpath, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a foreign or truncated file
        raise CheckpointError(f"checkpoint {wpath} is corrupt ({type(exc).__name__}: {exc})") from exc
    if not isinstance(tensors, dict) or not isinstance(tensors.get("model"), dict):
        raise CheckpointError(f"checkpoint {wpath} is corrupt: no 'model' state dict")
    return tensors, manifest


def _is_checkpoint(folder: Path) -> bool:
    try:
        read_manifest(folder)
    except CheckpointError:
        return False
    return True


@contextlib.contextmanager
def claim(path: str | os.PathLike, *, name: str = "checkpoint", lock: bool = True):
    """Claim checkpoint folder ``path`` for writing (``numerics.outdir.claim``, as ``train``'s):
    a context manager yielding the folder; InvalidInput naming ``name`` for a folder that holds
    files of another.  A tensor file the manifest records as replaced (a run stopped between
    writing the manifest and removing it) is removed here."""
    from numerics import outdir

    with outdir.claim(path, "train", name=name, adopt=_is_checkpoint, lock=lock) as folder:
        if _is_checkpoint(folder):
            manifest = read_manifest(folder)
            old = manifest.get("replaces")
            if old and old != manifest["weights"]:
                (folder / old).unlink(missing_ok=True)
        yield folder


def save(path: str | os.PathLike, tensors: dict, manifest: dict) -> None:
    """Write ``tensors`` and ``manifest`` (without its format/weights/sha256/replaces fields, which this
    fills).  The manifest records the tensor file it replaces (``replaces``), so that a run stopped
    before removing that file removes it when it resumes."""
    from numerics.io import atomic_path, write_json

    with claim(path, lock=False) as folder:
        name = f"weights-{int(manifest['step']):08d}.pt"
        previous = read_manifest(folder)["weights"] if _is_checkpoint(folder) else None
        with atomic_path(folder / name) as tmp:
            torch.save(tensors, tmp)
        full = {"format": FORMAT, "version": VERSION, **manifest, "weights": name,
                "sha256": sha256_file(folder / name), "replaces": previous if previous != name else None}
        write_json(folder / MANIFEST, full)
        if previous is not None and previous != name:
            (folder / previous).unlink(missing_ok=True)


def load_weights(stack: torch.nn.Module, path: str | os.PathLike) -> torch.nn.Module:
    """Load a trained checkpoint's stack weights into ``stack`` (built from the manifest's spec).

    The trained model's state dict holds the stack under the prefix ``stack.``; every one of
    the stack's parameters and buffers must be there with the same shape (else CheckpointError).
    """
    tensors, _ = load(path)
    prefix = "stack."
    state = {k[len(prefix):]: v for k, v in tensors["model"].items() if k.startswith(prefix)}
    own = stack.state_dict()
    missing = sorted(set(own) - set(state))
    if missing:
        raise CheckpointError(f"checkpoint {path} does not fit this stack: no tensor {prefix}{missing[0]}")
    bad = [k for k in own if tuple(own[k].shape) != tuple(state[k].shape)]
    if bad:
        raise CheckpointError(f"checkpoint {path} does not fit this stack: {prefix}{bad[0]} has shape "
                              f"{tuple(state[bad[0]].shape)}, the stack {tuple(own[bad[0]].shape)}")
    with torch.no_grad():
        for k, v in own.items():
            v.copy_(state[k].to(dtype=v.dtype, device=v.device))
    if hasattr(stack, "check_finite"):
        stack.check_finite()
    return stack
