"""The one checkpoint format of the trainer (Claim 7.3's runs and ``fastslow train``).

A checkpoint is a folder::

    DIR/manifest.json        what the run is: config, step, losses, corpus hash, versions,
                             the name and sha256 of the tensor file it points at, and the
                             binding: one sha256 over that hash and everything the stack is
                             rebuilt from (kind, config, spec with its knobs, arch, step)
    DIR/weights-<step>.pt    ``torch.save`` of {"model": state_dict, "optimizer": state_dict}
                             (tensors, numbers and lists only: loaded with weights_only=True)

A save writes the new tensor file first, then the manifest that points at it (each
atomically: temp file, fsync, rename), then removes the tensor file the previous manifest
named (the only file a save removes: a ``weights-*.pt`` the folder's manifest never named is
left alone).  The folder is claimed first (:func:`claim`): new, empty, a checkpoint folder
already, or refused with the file that makes it someone else's.  At every
moment the manifest names a complete tensor file whose hash it records, so a run killed
at any point resumes from its last save.  A file that does not parse, a hash that does
not match or a manifest of another kind is a :class:`CheckpointError` naming the file; the
manifest's schema is :class:`CheckpointManifest`.  A manifest whose spec, knobs or config were
edited after the save (another decay, ln_eps or kernel around the same weights) no longer matches
its binding and is refused: a verdict is never computed on a stack that was not trained.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from numerics.stacks.params import StackSpecModel

FORMAT = "fastslow-checkpoint"
VERSION = 2  # 2: the manifest binds its spec and config to the weights (``binding``)
MANIFEST = "manifest.json"


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


WEIGHTS_NAME = r"^weights-[0-9]{8}\.pt$"
#: what every ``fastslow train`` stack is (``proofs_check.experiments.train.TextConfig.spec``), whatever its config
TRAINED_KERNEL = "causal"


class CheckpointManifest(BaseModel):
    """A checkpoint's ``manifest.json``: what the run is and the tensor file it points at.

    ``kind`` says who wrote it: ``byte-corpus`` (``fastslow train``), ``topic-blocks`` (Claim 7.3's
    runs), ``hf-gpt2`` (``fastslow import-hf``).  A ``byte-corpus`` manifest's ``spec`` must be the
    stack its config trained (its sizes, the causal kernel, the config's dtype), so that an edited
    manifest cannot rebuild another stack around the weights.
    """

    model_config = ConfigDict(extra="forbid")

    format: Literal[FORMAT]
    version: Literal[VERSION]
    kind: Literal["byte-corpus", "topic-blocks", "hf-gpt2"]
    config: dict[str, Any] = Field(description="the run's configuration (a training config, or GPT-2's config.json)")
    step: Annotated[int, Field(strict=True, ge=0)] = Field(description="optimiser steps taken")
    weights: str = Field(pattern=WEIGHTS_NAME, description="the tensor file in the folder")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="the tensor file's sha256")
    binding: str = Field(pattern=r"^[0-9a-f]{64}$",
                         description="sha256 over the tensor file's sha256, kind, config, spec, arch and step")
    replaces: str | None = Field(None, pattern=WEIGHTS_NAME,
                                 description="the tensor file this save replaced, removed after the manifest is written")
    curves: dict[str, Any] = Field(description="loss curves, gates, learning rates, seconds")
    spec: StackSpecModel | None = Field(None, description="the stack the weights belong to")
    arch: str | None = None
    corpus: dict[str, Any] | None = Field(None, description="the training corpus: name, sha256, token counts")
    source: dict[str, Any] | None = Field(None, description="hf-gpt2: the imported folder, its files' sha256")
    hf_agreement: dict[str, Any] | None = Field(None, description="hf-gpt2: agreement with transformers' forward")
    package_version: str | None = None
    git: str | None = None
    torch: str | None = None

    @model_validator(mode="after")
    def _trained_spec(self) -> "CheckpointManifest":
        if self.kind != "byte-corpus" or self.spec is None:
            return self
        expected = {"kernel": TRAINED_KERNEL, "dtype": self.config.get("dtype"),
                    **{k: self.config.get(k) for k in ("T", "d", "layers", "heads")}}
        for key, value in expected.items():
            if getattr(self.spec, key) != value:
                raise ValueError(f"field 'spec.{key}'={getattr(self.spec, key)!r} is not the trained stack's "
                                 f"({value!r}, from its config): the manifest was edited")
        return self


#: the manifest fields the stack is rebuilt from, bound to the tensor file's hash by ``binding``
BOUND = ("sha256", "kind", "config", "spec", "arch", "step")


def binding(manifest: dict) -> str:
    """sha256 of the canonical JSON of the manifest's :data:`BOUND` fields."""
    from numerics.storage.io import json_safe

    bound = json_safe({k: manifest.get(k) for k in BOUND})[0]  # as written: non-finite floats are null
    return hashlib.sha256(json.dumps(bound, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _refusal(mpath: Path, manifest: dict, err: dict) -> str:
    """One line naming the manifest file and the field of pydantic error ``err``."""
    loc = err["loc"]
    where = ".".join(str(part) for part in loc)
    value = err.get("input")
    if err["type"] == "missing":
        return f"checkpoint {mpath} is corrupt: the manifest lacks field {where!r}"
    if loc and loc[0] in ("format", "version"):
        return (f"checkpoint {mpath}: format {manifest.get('format')!r} version {manifest.get('version')!r}, "
                f"expected {FORMAT!r} version {VERSION}")
    if loc and loc[0] in ("weights", "replaces"):
        return (f"checkpoint {mpath} is corrupt: field {where!r} must name a file in the folder "
                f"(weights-NNNNNNNN.pt), not {value!r}")
    if err["type"] == "value_error":
        text = str(err["ctx"]["error"])
        return f"checkpoint {mpath}: " + (f"field {where!r}={value!r} {text}" if loc else text)
    return f"checkpoint {mpath}: field {where!r}={value!r}: {err['msg'][0].lower()}{err['msg'][1:]}"


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest of checkpoint ``path``, checked against :class:`CheckpointManifest`; CheckpointError
    naming the file and the field otherwise."""
    mpath = manifest_path(path)
    if not mpath.is_file():
        raise CheckpointError(f"checkpoint {mpath.parent}: no {MANIFEST} (not a fastslow checkpoint folder)")
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"checkpoint {mpath} is corrupt ({type(exc).__name__}: {exc})") from exc
    if not isinstance(manifest, dict):
        raise CheckpointError(f"checkpoint {mpath} is corrupt: the manifest is not a JSON object")
    try:
        CheckpointManifest.model_validate(manifest)
    except ValidationError as exc:
        raise CheckpointError(_refusal(mpath, manifest, exc.errors()[0])) from None
    if binding(manifest) != manifest["binding"]:
        raise CheckpointError(f"checkpoint {mpath}: its {', '.join(BOUND[1:])} are not what was saved with the "
                              "weights (field 'binding' differs): the manifest was edited; retrain or re-import")
    return manifest


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
    """Claim checkpoint folder ``path`` for writing (``numerics.storage.outdir.claim``, as ``train``'s):
    a context manager yielding the folder; InvalidInput naming ``name`` for a folder that holds
    files of another.  A tensor file the manifest records as replaced (a run stopped between
    writing the manifest and removing it) is removed here."""
    from numerics.storage import outdir
    with outdir.claim(path, "train", name=name, adopt=_is_checkpoint, lock=lock) as folder:
        if _is_checkpoint(folder):
            manifest = read_manifest(folder)
            old = manifest.get("replaces")
            if old and old != manifest["weights"]:
                (folder / old).unlink(missing_ok=True)
        yield folder


def save(path: str | os.PathLike, tensors: dict, manifest: dict) -> None:
    """Write ``tensors`` and ``manifest`` (without its format/weights/sha256/replaces/binding fields, which
    this fills).  The manifest records the tensor file it replaces (``replaces``), so that a run stopped
    before removing that file removes it when it resumes."""
    from numerics.storage.io import atomic_path, write_json

    with claim(path, lock=False) as folder:
        name = f"weights-{int(manifest['step']):08d}.pt"
        previous = read_manifest(folder)["weights"] if _is_checkpoint(folder) else None
        with atomic_path(folder / name) as tmp:
            torch.save(tensors, tmp)
        full = {"format": FORMAT, "version": VERSION, **manifest, "weights": name,
                "sha256": sha256_file(folder / name), "replaces": previous if previous != name else None}
        full["binding"] = binding(full)
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
