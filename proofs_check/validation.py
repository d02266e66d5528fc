"""One validation layer at the boundary, shared by the CLI and the Python API.

``build(spec)`` (``StackSpec.build``, through the stack's own model ``numerics.stacks.params.StackParams``), ``simulate``, ``run_checks`` and every
``fastslow`` subcommand pass their arguments through the pydantic models here before any
work starts.  A refusal is a :class:`InvalidInput` (a ``ValueError``) whose message is one
line naming the parameter, the value and what is allowed; the CLI prints it and exits 2.

What is checked, for each parameter: its type (integers are integers, not floats or bools;
numbers on the command line are ASCII digits only), its range, finiteness, and whether the
stack's dtype can hold it: a nonzero gate below the dtype's smallest normal number would be
stored as 0 (1e-50 in float32), and any float knob at or above √(largest finite value) of the
dtype overflows the forward pass, because LayerNorm squares the residual stream.  Output
paths are checked before the run (:func:`check_output_file`, :func:`check_output_dir`), and
every file that is read is checked against a schema (:func:`load_ledger`, in ``proofs_check.inputs``).

Stated meanings of signed knobs: the gate g is a signed amplitude (g < 0 subtracts the
slow path; the gate bound of Claim 5.1 constrains |g|, docs/theory.md §5); the scales
``weight_scale`` (> 0), ``value_scale``, ``ln_gain`` and ``decay`` (≥ 0) are not signed,
and a negative one is refused.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from numerics.stacks.params import SEED_MAX, InvalidInput, OptionalPositiveInt, PositiveInt, StackParams, _validate

DEVICES = ("auto", "cpu", "cuda")
PROFILES = ("ci", "thorough")
_ASCII_INT = re.compile(r"[+-]?[0-9]{1,40}")
_ASCII_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?i?b?)", re.IGNORECASE)


# -- command-line scalars (argparse ``type=``) ----------------------------------------
def ascii_int(text: str) -> int:
    """An integer written in ASCII digits (``int()`` would also take Arabic-Indic ones)."""
    import argparse

    if not isinstance(text, str) or not _ASCII_INT.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer in ASCII digits")
    return int(text)


def ascii_float(text: str) -> float:
    """A finite float written in ASCII digits (no NaN, no inf, no underscores or spaces)."""
    import argparse

    if isinstance(text, str) and text.lower() in _NON_FINITE:
        raise argparse.ArgumentTypeError(f"{text!r} is not finite")
    if not isinstance(text, str) or len(text) > 64 or not _ASCII_FLOAT.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number in ASCII digits")
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not finite (beyond the float64 range)")
    return value


def seed_value(text: str) -> int:
    """``--seed``: an integer in ASCII digits, 0 ≤ N < 2**63 − 1 (every command's seed range)."""
    import argparse

    value = ascii_int(text)
    if not 0 <= value < SEED_MAX:
        raise argparse.ArgumentTypeError(f"seed={value} is out of range: a seed is an integer with 0 ≤ N < 2**63 - 1")
    return value


def device_name(text: str) -> str:
    """``--device``: cpu, cuda, or auto (cuda when CUDA is available, else cpu), returned resolved to
    cpu or cuda; cuda on a machine without CUDA is refused here, before any work."""
    import argparse

    if text not in DEVICES:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(DEVICES)})")
    if text == "cpu":
        return text
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if text == "cuda":
        raise argparse.ArgumentTypeError("'cuda' was requested but CUDA is not available on this machine")
    return "cpu"


def memory_size(text: str) -> int:
    """Bytes from ``123``, ``512M``, ``2GB``, ``1.5GiB`` (binary units: K = 1024)."""
    import argparse

    match = _SIZE.fullmatch(text.strip()) if isinstance(text, str) and text.isascii() else None
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 512M, 2G, 1073741824)")
    unit = match.group(2).upper().rstrip("B").rstrip("I")
    value = float(match.group(1)) * 1024 ** " KMGT".index(unit or " ")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least one byte")
    return int(value)


# -- simulate ----------------------------------------------------------------------------
class SimulateParams(StackParams):
    """``simulate``'s arguments: the stack's, plus the run's."""

    device: str = "auto"
    batch: PositiveInt = 1
    strict: bool = False
    max_memory: OptionalPositiveInt = None
    certificate: bool = True

    @field_validator("seed")
    @classmethod
    def _seed_plus_one(cls, value: int) -> int:
        if value >= SEED_MAX:
            raise ValueError(f"is out of range: simulate draws its input from seed + 1, so seed ∈ [0, {SEED_MAX - 1}]")
        return value

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        if value not in DEVICES and not re.fullmatch(r"(cpu|cuda)(:[0-9]{1,3})?", value):
            raise ValueError(f"is not one of {', '.join(DEVICES)}")
        return value


def validate_simulate(**kwargs) -> SimulateParams:
    """Check ``simulate``'s arguments and that every stage it runs (building, the forward pass, the
    gate certificate) fits in memory, before any work."""
    params = _validate(SimulateParams, kwargs)
    from numerics.stacks.memory import check_fits, run_bytes, simulate_bytes

    certificate = bool(params.P) and params.certificate
    estimate = run_bytes(params.T, params.d, params.layers, params.heads, params.P, batch=params.batch,
                         mlp_ratio=params.mlp_ratio, dtype=params.dtype, certificate=certificate)
    what = (f"simulate with T={params.T} P={params.P} d={params.d} layers={params.layers} heads={params.heads} "
            f"batch={params.batch}")
    if certificate and estimate > simulate_bytes(params.T, params.d, params.layers, params.heads, params.P,
                                                 batch=params.batch, mlp_ratio=params.mlp_ratio, dtype=params.dtype):
        what += " (its gate certificate on n·d = (T/P)·d slow modes dominates; --no-certificate skips it)"
    check_fits(estimate, limit=params.max_memory, what=what, device=params.device)
    return params


# -- check -------------------------------------------------------------------------------
def validate_claims(ids) -> list[str] | None:
    """Claim ids, duplicates dropped in order; unknown ids listed in one error; None = all."""
    from proofs_check.verdicts.ids import CLAIM_IDS

    if ids is None:
        return None
    if isinstance(ids, str):
        ids = [ids]
    ids = list(dict.fromkeys(ids))
    bad_type = [i for i in ids if not isinstance(i, str)]
    if bad_type:
        raise InvalidInput(f"--claim {bad_type[0]!r}: a claim id is a string such as '2.1'")
    unknown = [i for i in ids if i not in CLAIM_IDS]
    if unknown:
        raise InvalidInput(f"--claim {', '.join(repr(i) if not i.isprintable() else i for i in unknown)}: "
                           f"not a claim of docs/theory.md (known: {', '.join(CLAIM_IDS)})")
    return ids or None


class CheckParams(BaseModel):
    """``run_checks``' arguments."""

    model_config = ConfigDict(strict=True, extra="forbid")

    claim_ids: list[str] | None = None
    device: str = "cpu"
    profile: Literal["ci", "random", "thorough"] = "ci"
    quick: bool = True
    seed: int | None = None
    cache_dir: Any = None

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _cache_dir(cls, value):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ValueError(f"cache_dir={value!r} must be a path")
        return check_cache_dir(value)

    @field_validator("seed")
    @classmethod
    def _seed(cls, value):
        if value is not None and not 0 <= value < 2**63 - 1:
            raise ValueError(f"seed={value} must satisfy 0 ≤ seed < 2**63 - 1")
        return value

    @field_validator("claim_ids", mode="before")
    @classmethod
    def _claims(cls, value):
        return validate_claims(value)


def check_cache_dir(path: str | None, name: str = "cache folder") -> str | None:
    """Refuse a cache folder (``path``, or ``$FASTSLOW_CACHE``, or ``out/cache``) that exists as a
    file or lies under one: the trained runs could be neither read nor written there."""
    from numerics.text.training import default_cache_dir

    folder = Path(os.fspath(path)) if path is not None else default_cache_dir()
    for part in [folder, *folder.parents]:
        if part.exists() and not part.is_dir():
            raise InvalidInput(f"{name} {folder}: {part} is a file, not a folder (set FASTSLOW_CACHE to "
                               "another folder, or move the file)")
        if part.is_dir():
            break
    return path


def validate_check(**kwargs) -> CheckParams:
    return _validate(CheckParams, kwargs)


# -- paths -------------------------------------------------------------------------------
def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_links(text: str, name: str) -> None:
    """Refuse a path through a symbolic link loop or a dangling link (a write through a dangling link
    would create its target's folders wherever the link points)."""
    import errno

    path = Path(os.path.abspath(text))
    for part in [path, *path.parents]:
        if os.path.islink(part):
            try:
                os.stat(part)
            except OSError as err:
                if err.errno == errno.ELOOP:
                    raise InvalidInput(f"{name} {text}: {part} is a symbolic link loop") from None
                raise InvalidInput(f"{name} {text}: {part} is a dangling symbolic link "
                                   f"(to {os.readlink(part)})") from None


def _writable(folder: Path) -> bool:
    """Can a file be created in ``folder``?  Tried, not inferred from mode bits (root, read-only mounts)."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".fastslow-probe."):
            return True
    except OSError:
        return False


def check_output_file(path, name: str = "--json") -> str | None:
    """Refuse, before the run, an output file that cannot be written; ``-`` is standard output.

    The path must not be empty or a folder; an existing FIFO or device must be writable (it is
    written in place); otherwise its folder must exist and accept a new file (the temporary file).
    """
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInput(f"{name}={path!r} must be a path")
    text = os.fspath(path)
    if text == "-":
        return text
    if text.strip() == "":
        raise InvalidInput(f"{name} {text!r}: the path is empty")
    if "\0" in text:
        raise InvalidInput(f"{name} {text!r}: a path cannot contain a NUL byte")
    _check_links(text, name)
    target = Path(text)
    if target.is_dir():
        raise InvalidInput(f"{name} {text}: is a directory, not a file")
    if target.exists() and not target.is_file():  # FIFO or device: written in place
        if not os.access(target, os.W_OK):
            raise InvalidInput(f"{name} {text}: not writable")
        return text
    if target.is_file() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222):
        # replacing a read-only file (by rename, which its mode does not stop) would defeat its protection
        raise InvalidInput(f"{name} {text}: the file is read-only (not writable by this user); not replaced")
    folder = target.absolute().parent
    if not folder.exists():
        raise InvalidInput(f"{name} {text}: folder {folder} does not exist")
    if not folder.is_dir():
        raise InvalidInput(f"{name} {text}: {folder} is not a folder")
    if not _writable(folder):
        raise InvalidInput(f"{name} {text}: folder {folder} is not writable")
    return text


def check_output_dir(path, name: str = "--out") -> str:
    """Refuse, before the run, an output folder that is a file or cannot be written (it may be new)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInput(f"{name}={path!r} must be a path")
    text = os.fspath(path)
    if text.strip() == "" or "\0" in text:
        raise InvalidInput(f"{name} {text!r}: the path is empty or contains a NUL byte")
    _check_links(text, name)
    folder = Path(text)
    if folder.exists() and not folder.is_dir():
        raise InvalidInput(f"{name} {text}: is a file, not a folder")
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise InvalidInput(f"{name} {text}: {existing} is a file, not a folder")
    if not _writable(existing):
        raise InvalidInput(f"{name} {text}: {existing} is not writable")
    return text


#: the options through which a command writes (files or folders); ``-`` is standard output
OUTPUT_OPTIONS = ("json", "summary", "figure", "equivalents", "out", "figures")


def _identity(text: str):
    """What an output path writes to: ('stdout',) for ``-`` or a name of this process's standard output,
    ('file', dev, inode) for an existing file, ('path', realpath) for a new one; None for a sink that
    takes any number of writers (``/dev/null``)."""
    import stat

    if text == "-":
        return ("stdout",)
    try:
        info = os.stat(text)
    except OSError:
        return ("path", os.path.realpath(text))
    try:
        out = os.fstat(1)
        if (info.st_dev, info.st_ino) == (out.st_dev, out.st_ino):
            return ("stdout",)
    except OSError:
        pass
    if stat.S_ISCHR(info.st_mode):
        return None
    return ("file", info.st_dev, info.st_ino)


def distinct_outputs(paths: dict) -> None:
    """Refuse two outputs on one target: the same file or folder under two options (the second write would
    replace the first: ``check --json X --summary X`` left the summary where the ledger was), or two
    documents on standard output (``--json - --summary -`` wrote two in one stream)."""
    seen = {}
    for option, path in paths.items():
        if path is None or not isinstance(path, (str, os.PathLike)):
            continue
        ident = _identity(os.fspath(path))
        if ident is None:
            continue
        if ident in seen:
            what = ("both write to standard output: one stream holds one document" if ident == ("stdout",)
                    else "name the same file: the second write would replace the first")
            raise InvalidInput(f"{option} {os.fspath(path)}: {seen[ident][0]} {os.fspath(seen[ident][1])} and "
                               f"{option} {what}; give each output its own path")
        seen[ident] = (option, path)


#: characters every command prints (tables, bounds, the ledger's prose)
_PRINTED = "≤≥−√…·εαλ²⁶"


def check_environment() -> None:
    """Refuse, before any work, an environment the run would fail in at its end: a standard output or
    error whose encoding cannot print the tables (``PYTHONIOENCODING=ascii``), and a malformed
    ``FASTSLOW_CRASH_AT_WRITE`` (read at the first write)."""
    import sys

    from numerics.storage.io import _crash_plan

    for stream_name in ("stdout", "stderr"):
        stream = getattr(sys, stream_name)
        encoding = getattr(stream, "encoding", None)
        if not encoding or getattr(stream, "errors", "strict") != "strict":
            continue
        try:
            _PRINTED.encode(encoding)
        except (UnicodeEncodeError, LookupError):
            given = os.environ.get("PYTHONIOENCODING")
            source = f"PYTHONIOENCODING={given}" if given else f"the locale's encoding {encoding!r}"
            raise InvalidInput(f"{source}: standard {'output' if stream_name == 'stdout' else 'error'} cannot print the tables (≤, −, √, …) in "
                               f"{encoding!r}; use UTF-8 (PYTHONIOENCODING=utf-8)") from None
    _crash_plan()


def preflight(args) -> None:
    """What every command checks after its options are parsed and before any work: the environment
    (:func:`check_environment`) and that no two outputs share a target (:func:`distinct_outputs` over
    :data:`OUTPUT_OPTIONS`)."""
    check_environment()
    distinct_outputs({f"--{name}": getattr(args, name, None) for name in OUTPUT_OPTIONS})


# -- files that are read: proofs_check/inputs.py -----------------------------------------------
from proofs_check.inputs import ledger_inconsistencies, load_json, load_ledger, load_mutation_record  # noqa: E402,F401
