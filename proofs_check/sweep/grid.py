"""Grid points × seeds → one task per (claim, point, seed), each naming its ``StackSpec``.

A task's ``key`` identifies its row in the store: a hash of the claim, the stack it runs
on (every ``StackSpec`` field except the device, with each stack knob at its
effective value, so that ``value_scale = 0`` and an unset ``value_scale`` are one point), the
spec's fingerprint (:func:`spec_hash`) and the hash of the code that computes the row
(:func:`source_hash`).  The same key is the Dask task's key, so a grid point is computed at
most once per run, ``--resume`` recognises the rows it already has, and rows of another spec
or of other code never pass for this sweep's.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from dataclasses import dataclass, fields
from pathlib import Path

from numerics.stacks.params import KNOBS
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import StackConfig, validate_config


@dataclass(frozen=True)
class Task:
    sweep: str          # the spec's name
    index: int          # the [[sweep]] table it came from
    claim: str
    point: tuple        # ((axis, value), ...) in the spec's axis order
    spec: StackSpec
    profile: str = "ci"
    spec_hash: str = ""  # the sweep spec's fingerprint
    source: str = ""     # the code's hash
    key: str = ""  # row_key(claim, spec, spec_hash, source), filled in here

    def __post_init__(self):
        if not self.key:
            object.__setattr__(self, "key", row_key(self.claim, self.spec, self.spec_hash, self.source))

    def payload(self) -> dict:
        """What a worker receives: plain data, no classes of this package."""
        return {"sweep": self.sweep, "index": self.index, "claim": self.claim, "point": dict(self.point),
                "spec": self.spec.as_dict(), "profile": self.profile, "key": self.key,
                "spec_hash": self.spec_hash, "source": self.source}


_DEFAULTS = {f.name: f.default for f in fields(StackConfig)}
_KNOB_DEFAULTS = {k: _DEFAULTS[k] for k in KNOBS}
#: the StackSpec fields that identify a stack (the device does not)
_IDENT_FIELDS = tuple(f.name for f in fields(StackSpec) if f.name not in ("device", "knobs", "arch_options"))


def knob_defaults() -> dict:
    """Each stack knob's default (``StackConfig``'s field default)."""
    return dict(_KNOB_DEFAULTS)


def effective_knobs(spec: StackSpec) -> dict:
    return {**_KNOB_DEFAULTS, **dict(spec.knobs)}


def row_key(claim: str, spec: StackSpec, spec_hash: str = "", source: str = "") -> str:
    """sha1 of the claim, the stack (device excluded, knobs at their effective values), the sweep
    spec's fingerprint and the code's hash."""
    ident = {name: getattr(spec, name) for name in _IDENT_FIELDS}
    ident["knobs"] = effective_knobs(spec)
    ident["arch_options"] = dict(spec.arch_options)
    text = json.dumps({"claim": claim, "spec": ident, "sweep": spec_hash, "source": source}, sort_keys=True,
                      default=str)
    return hashlib.sha1(text.encode()).hexdigest()


def spec_hash(spec) -> str:
    """sha256 (16 hex digits) of what a sweep spec's rows depend on: its name, profile and each
    table's claim, axes, seeds and arch_options (not its figures or description)."""
    body = {"name": spec.name, "profile": spec.profile,
            "sweeps": [{"claim": s.claim, "axes": {k: list(v) for k, v in s.axes.items()}, "seeds": s.seeds,
                        "first_seed": s.first_seed, "arch_options": s.arch_options} for s in spec.sweeps]}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def source_hash() -> str:
    """sha256 (16 hex digits) of every Python source file of theory/, numerics/ and proofs_check/:
    the code a row's verdict comes from."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for package in ("theory", "numerics", "proofs_check"):
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def points(sweep) -> list[tuple]:
    """The product of the sweep's axes, in the order they were written."""
    names = list(sweep.axes)
    return [tuple(zip(names, values)) for values in itertools.product(*(sweep.axes[n] for n in names))]


def spec_at(sweep, point: tuple, seed: int, device: str = "cpu") -> StackSpec:
    values = dict(point)
    sizes = {k: values.pop(k) for k in list(values) if k not in KNOBS}
    if sizes.get("P") == 0:
        sizes["P"] = None
    return StackSpec(seed=seed, device=device, knobs=values, arch_options=dict(sweep.arch_options), **sizes)


def expand(spec, device: str = "cpu") -> list[Task]:
    """Every (claim, point, seed) of the spec, as tasks; a key that repeats (the same stack
    listed twice) is kept once."""
    tasks, seen = [], set()
    for sweep in spec.sweeps:
        for task in sweep_tasks(spec, sweep, device):
            if task.key not in seen:
                seen.add(task.key)
                tasks.append(task)
    return tasks


def sweep_tasks(spec, sweep, device: str = "cpu") -> list[Task]:
    """The tasks of one ``[[sweep]]`` table: its points × its seeds."""
    fingerprint, source = spec_hash(spec), source_hash()
    return [Task(spec.name, sweep.index, sweep.claim, point, spec_at(sweep, point, seed, device), spec.profile,
                 fingerprint, source)
            for point in points(sweep) for seed in range(sweep.first_seed, sweep.first_seed + sweep.seeds)]


def grid_size(sweep) -> int:
    """Points × seeds of one ``[[sweep]]`` table, computed without listing them."""
    n = sweep.seeds
    for values in sweep.axes.values():
        n *= len(values)
    return n


def check_grid(spec) -> None:
    """Every grid point's stack configuration must be valid (checked without building a stack);
    ValueError naming the sweep, the point and the parameter.  The architecture's options are
    checked too (``numerics.stacks.architectures.resolve_options``)."""
    from numerics.stacks.architectures import resolve_options

    for sweep in spec.sweeps:
        checked = set()
        for point in points(sweep):
            where = ", ".join(f"{k}={v!r}" for k, v in point if len(sweep.axes[k]) > 1) or "every point"
            try:
                s = spec_at(sweep, point, sweep.first_seed)
                config = (s.T, s.d, s.layers, s.heads, s.kernel, s.P, s.arch, s.knobs)
                if config in checked:
                    continue
                checked.add(config)
                validate_config(StackConfig(**s.flat()))
                resolve_options(s.arch, dict(s.arch_options))
            except ValueError as exc:
                raise ValueError(f"{sweep.where} at {where}: {exc}") from None


def scale_presets() -> dict:
    """The scale presets (``numerics.stacks.presets``) by name, as ``StackSpec``s."""
    from numerics.stacks.presets import PRESET_NAMES, preset

    return {name: preset(name) for name in PRESET_NAMES}
