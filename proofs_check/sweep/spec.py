"""A sweep's TOML spec, parsed and validated before any task runs.

A spec file holds one ``[[sweep]]`` table per claim::

    name = "coarse_graining"          # optional (default: the file's stem)
    description = "..."               # optional
    profile = "ci"                    # optional: the CheckContext profile (ci | thorough)
    batch = 50                        # optional: rows per Parquet file

    [[sweep]]
    claim = "3.2"                     # a claim registered with proofs_check.verdicts.on_stack
    seeds = 3                         # seeds first_seed … first_seed + seeds - 1 (default 1)
    first_seed = 0                    # optional
    scale = "toy"                     # optional: a scale preset's sizes as the base
    kernel = ["causal", "full"]       # an axis: a non-empty list
    layers = [1, 2, 4, 8]
    value_scale = [0, 5, 20]          # any knob of numerics.stacks.params.StackKnobs
    T = 8                             # a scalar is a fixed value
    P = 4                             # P = 0: no slow path
    [sweep.arch_options]              # optional, fixed
    [[sweep.figure]]                  # optional phase diagrams (proofs_check.sweep.figures)
    x = "layers"
    y = "value_scale"
    value = "measured_two_sided"

Everything is checked here, before a cluster starts: an unknown claim, an unknown key or
knob, an empty axis, a value of the wrong type, the grid's size (points × seeds, computed
without listing the points, at most ``max_tasks``, default :data:`MAX_TASKS`), and every grid
point's stack configuration (``numerics.stacks.stack.validate_config``: T divisible by P, heads
dividing d, ...) and architecture options.  A bad spec raises :class:`SpecError` naming the
key; the command line turns it into exit status 2.  The file's schema is :class:`SweepFile`
(a ``[[sweep]]`` table: :class:`SweepTable`; a figure: :class:`Figure`); the checks that need
the registry, a preset or the whole grid are :func:`parse`'s.
"""

from __future__ import annotations

import tomllib
import typing
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, ValidationError, WithJsonSchema, create_model

from numerics.stacks.params import SEED_MAX, StackKnobs
from numerics.stacks.params import StackSpecModel, knob_kinds
from numerics.stacks.spec import StackSpec

#: the spec fields a sweep may put on an axis (besides the knobs): every scalar field of the declaration
#: but the seed (a table's seeds are its own key), the device (where a stack runs, not which) and the
#: checkpoint (a trained stack is not a grid point)
SIZE_AXES = tuple(name for name in knob_kinds(StackSpecModel) if name not in ("seed", "device", "checkpoint"))
KNOBS = tuple(StackKnobs.model_fields)
AXES = SIZE_AXES + KNOBS
PROFILES = ("ci", "thorough")

#: the largest grid (tasks = points × seeds, summed over the tables) run without ``--max-tasks``:
#: the shipped ``thorough`` spec (70 016 tasks) fits; each task is a few kB in the scheduler.
MAX_TASKS = 200_000


class SpecError(ValueError):
    """A bad sweep spec; the message names the offending key."""


def _value_type(name: str) -> type:
    """The scalar type of axis ``name``: from StackSpecModel's or StackKnobs' declaration."""
    model = StackKnobs if name in KNOBS else StackSpecModel
    kinds = [model.model_fields[name].annotation]
    while kinds:
        kind = kinds.pop()
        if kind in (bool, int, float, str):
            return kind
        kinds.extend(typing.get_args(kind)[:1] if typing.get_origin(kind) is Annotated else typing.get_args(kind))
    raise TypeError(f"no scalar type for axis {name}")  # pragma: no cover  (every axis is typed)


def _coerce(kind: type, value):
    """One axis value, checked for its type; float knobs become floats (5 and 5.0 are one point)."""
    if isinstance(value, (list, dict)):
        raise ValueError(f"values must be scalars, got {value!r}")
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("must be a number")
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"must be {'an integer' if kind is int else 'a ' + {str: 'string', bool: 'boolean'}[kind]}")
    return value


def _axis(name: str):
    """An axis: a scalar (one point) or a non-empty list of distinct values of the axis' type."""
    kind = _value_type(name)

    def check(value):
        values = value if isinstance(value, list) else [value]
        if not values:
            raise ValueError("empty axis (give at least one value)")
        out = tuple(_coerce(kind, v) for v in values)
        if len(set(out)) != len(out):
            raise ValueError(f"repeated values {list(values)}")
        return out

    scalar = {"type": {bool: "boolean", int: "integer", float: "number", str: "string"}[kind]}
    return Annotated[tuple | None, PlainValidator(check),
                     WithJsonSchema({"anyOf": [scalar, {"type": "array", "items": scalar, "minItems": 1}]})]


class Figure(BaseModel):
    """One phase diagram (``[[sweep.figure]]``): ``value`` over (``x``, ``y``) per slice of the sweep's other axes.

    The theory's boundary is either ``boundary`` (a column giving, for each y, the predicted x
    at which the verdict flips, plus ``boundary_shift``; ``boundary_axis = "y"`` swaps the roles)
    or ``contour`` (a column whose level set at ``level`` is the predicted boundary).  ``value``,
    ``boundary`` and ``contour`` name a column, an entry of a JSON-list column (``name[-1]``) or a
    quotient ``a / b`` (``proofs_check.sweep.figures.column``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    x: str = Field(description="a varied axis of the sweep")
    y: str = Field(description="another varied axis")
    value: str = "error_ratio"
    boundary: str | None = None
    boundary_axis: Literal["x", "y"] = "x"
    boundary_shift: Annotated[float, Field(strict=False)] = 0.0
    contour: str | None = None
    level: Annotated[float, Field(strict=False)] = 1.0
    label: str | None = None
    boundary_label: str | None = None
    aggregate: Literal["median", "mean", "max", "min"] = "median"


class _SweepKeys(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    claim: str = Field(description="a claim with an on-stack form (proofs_check.claims)")
    seeds: int = Field(1, ge=1, description="seeds first_seed … first_seed + seeds - 1")
    first_seed: int = Field(0, ge=0, lt=SEED_MAX)
    scale: str | None = Field(None, description="a scale preset whose sizes are the base (numerics.stacks.presets)")
    arch_options: dict[str, Any] = Field(default_factory=dict, description="the architecture's options, fixed")
    figure: Annotated[list[Figure], BeforeValidator(lambda v: [v] if isinstance(v, dict) else v)] = Field(
        default_factory=list, description="phase diagrams (one table is a list of one)")


#: one ``[[sweep]]`` table: its keys, and each axis (a StackSpec field or a knob).
SweepTable = create_model("SweepTable", __base__=_SweepKeys, __doc__=(
    "One ``[[sweep]]`` table: a claim over the product of its axes (a scalar is a fixed value), times its seeds."),
    **{name: (_axis(name), None) for name in AXES})


class SweepFile(BaseModel):
    """A sweep spec file: its name, profile, batch size and one or more ``[[sweep]]`` tables."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str | None = Field(None, description="default: the file's stem; names the default output folder")
    description: str = ""
    profile: Literal[PROFILES] = Field("ci", description="the CheckContext profile")
    batch: int | None = Field(None, ge=1, description="rows per Parquet file")
    sweep: list[SweepTable] = Field(min_length=1)


def _where(loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _refusal(err: dict, data: dict) -> str:
    """The first schema error as one line naming the key (``sweep[0].layers``)."""
    loc = list(err["loc"])
    where, key, value = _where(loc), loc[-1] if loc else "", err.get("input")
    kind = err["type"]
    if kind == "extra_forbidden":
        if len(loc) == 1:
            return f"{key}: unknown top-level key (known: {', '.join(SweepFile.model_fields)})"
        if key == "seed":
            return f"{where}: not an axis; use seeds = N (and first_seed)"
        if "figure" in loc:
            return f"{where}: unknown figure key (known: {', '.join(Figure.model_fields)})"
        return f"{where}: unknown knob (axes: {', '.join(AXES)})"
    if kind == "missing":
        return f"{where}: missing" + (" (which claim does this sweep evaluate?)" if key == "claim" else "")
    if loc == ["sweep"]:
        return "sweep: the spec needs at least one [[sweep]] table"
    if kind == "value_error":
        text = str(err["ctx"]["error"])
        return f"{where}={value!r} {text}" if text.startswith("must") else f"{where}: {text}"
    return f"{where}={value!r}: {err['msg'][0].lower()}{err['msg'][1:]}"


@dataclass(frozen=True)
class Sweep:
    """One ``[[sweep]]`` table: a claim over the product of its axes, times its seeds."""

    index: int
    claim: str
    axes: dict  # axis name -> tuple of values (a fixed value is a one-point axis)
    seeds: int = 1
    first_seed: int = 0
    scale: str | None = None
    arch_options: dict = field(default_factory=dict)
    figures: tuple = ()

    @property
    def where(self) -> str:
        return f"sweep[{self.index}]"

    @property
    def varied(self) -> list[str]:
        """The axes with more than one value."""
        return [name for name, values in self.axes.items() if len(values) > 1]


@dataclass(frozen=True)
class SweepSpec:
    name: str
    sweeps: tuple
    description: str = ""
    profile: str = "ci"
    batch: int | None = None
    source: str = ""  # the TOML text, kept with the results


def builtin_specs() -> dict[str, Path]:
    """The specs shipped in ``proofs_check/sweep/specs/``: name -> path."""
    folder = resources.files("proofs_check.sweep") / "specs"
    return {Path(p.name).stem: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".toml")}


def resolve(name_or_path: str) -> Path:
    """A spec file path: a shipped spec by name, else a path that must exist."""
    if not isinstance(name_or_path, str) or not name_or_path.strip() or "\0" in name_or_path:
        raise SpecError(f"SPEC={name_or_path!r}: give a spec file or a shipped spec's name (no NUL byte)")
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise SpecError(f"SPEC={name_or_path!r}: no such file")
        return path
    shipped = builtin_specs()
    if name_or_path not in shipped:
        raise SpecError(f"SPEC={name_or_path!r} is neither a file nor a shipped spec "
                        f"(shipped: {', '.join(sorted(shipped))})")
    return shipped[name_or_path]


def load(name_or_path: str, claims=None, max_tasks: int = MAX_TASKS) -> SweepSpec:
    """Read and validate a spec (by shipped name or path); ``claims``: the known claim ids
    (default: the claims registered with ``proofs_check.verdicts.on_stack``)."""
    path = resolve(name_or_path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"SPEC {path}: not UTF-8 text (byte {exc.start}: {exc.reason}); a spec is a TOML file") \
            from None
    except OSError as exc:
        raise SpecError(f"SPEC {path}: cannot be read ({type(exc).__name__}: {exc.strerror or exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"SPEC {path}: not valid TOML: {exc}") from None
    return parse(data, name=path.stem, claims=claims, source=text, max_tasks=max_tasks)


def describe(path) -> dict:
    """A shipped spec's description, claims and task count, read without validating it."""
    data = tomllib.loads(Path(path).read_text())
    tasks = 0
    for table in data.get("sweep", []):
        n = table.get("seeds", 1)
        for key, value in table.items():
            if key in AXES and isinstance(value, list):
                n *= len(value)
        tasks += n
    return {"description": data.get("description", ""), "tasks": tasks,
            "claims": [t.get("claim", "?") for t in data.get("sweep", [])]}


class _Registered:
    """The claims with an on-stack form (``proofs_check.verdicts.registry.on_stack_claims``); the claim modules
    are imported the first time a claim is not found (importing them takes seconds)."""

    loaded = False

    def __contains__(self, claim) -> bool:
        from proofs_check.verdicts.registry import load_checks, on_stack_claims

        if claim not in on_stack_claims() and not self.loaded:
            load_checks()
            self.loaded = True
        return claim in on_stack_claims()

    def names(self) -> list[str]:
        from proofs_check.verdicts.registry import on_stack_claims

        return sorted(on_stack_claims())


def parse(data: dict, *, name: str = "sweep", claims=None, source: str = "", max_tasks: int = MAX_TASKS) -> SweepSpec:
    """Validate a parsed TOML document against :class:`SweepFile`, then its claims, presets and grid;
    raise :class:`SpecError` naming the first bad key."""
    try:
        doc = SweepFile.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_refusal(exc.errors()[0], data)) from None
    name = doc.name if doc.name is not None else name
    if not name.strip() or "/" in name or name in (".", "..") or not name.isprintable():
        raise SpecError(f"name={name!r} must be a non-empty printable string without '/' (it names the "
                        "default output folder)")
    claims = _Registered() if claims is None else list(claims)
    sweeps = tuple(_parse_sweep(i, table, list(raw), claims) for i, (table, raw) in enumerate(zip(doc.sweep,
                                                                                                   data["sweep"])))
    spec = SweepSpec(name=name, sweeps=sweeps, description=doc.description, profile=doc.profile, batch=doc.batch,
                     source=source)
    from proofs_check.sweep.grid import check_grid, grid_size

    sizes = [grid_size(s) for s in sweeps]
    if sum(sizes) > max_tasks:
        largest = max(range(len(sizes)), key=sizes.__getitem__)
        raise SpecError(f"the grid has {sum(sizes):,} tasks (points × seeds; sweep[{largest}] alone "
                        f"{sizes[largest]:,}), more than the limit of {max_tasks:,}: shrink it, or pass "
                        f"--max-tasks {sum(sizes)} to run it anyway")

    try:
        check_grid(spec)
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    return spec


def _parse_sweep(index: int, table, order: list[str], claims) -> Sweep:
    """A validated ``[[sweep]]`` table as a :class:`Sweep`: its claim registered, its preset known, its
    seeds in range and its figures on varied axes; ``order``: the table's keys as the file wrote them."""
    where = f"sweep[{index}]"
    if table.claim not in claims:
        names = claims.names() if isinstance(claims, _Registered) else claims
        raise SpecError(f"{where}.claim={table.claim!r} is not a claim on a stack "
                        f"(registered: {', '.join(names) or 'none'})")
    if table.first_seed + table.seeds > SEED_MAX:
        raise SpecError(f"{where}.seeds={table.seeds!r}: the seeds first_seed … first_seed + seeds - 1 must stay "
                        f"below 2**63 - 1")
    axes = _scale_base(table.scale, where) if table.scale is not None else {}
    for key in order:
        if key in AXES:
            axes[key] = getattr(table, key)
    for i, fig in enumerate(table.figure):
        _check_figure(f"{where}.figure[{i}]", fig, axes)
    return Sweep(index=index, claim=table.claim, axes=axes, seeds=table.seeds, first_seed=table.first_seed,
                 scale=table.scale, arch_options=dict(table.arch_options), figures=tuple(table.figure))


def _scale_base(name, where: str) -> dict:
    """The sizes of scale preset ``name`` as one-point axes (the sweep's own axes override them)."""
    from proofs_check.sweep.grid import scale_presets

    presets = scale_presets()
    if name not in presets:
        raise SpecError(f"{where}.scale={name!r} is not a scale preset "
                        f"(known: {', '.join(presets) or 'none available'})")
    preset = presets[name]
    base = {}
    for f in fields(StackSpec):
        if f.name in SIZE_AXES and f.name != "arch":
            value = getattr(preset, f.name)
            if value is not None:
                base[f.name] = (value,)
    for key, value in dict(preset.knobs).items():
        base[key] = (_coerce(_value_type(key), value),)
    return base


def _check_figure(where: str, fig: Figure, axes: dict) -> None:
    """A figure's x and y must be distinct varied axes of its sweep; boundary and contour exclude each other."""
    for key in ("x", "y"):
        value = getattr(fig, key)
        if value not in axes or len(axes[value]) < 2:
            raise SpecError(f"{where}.{key}={value!r} is not a varied axis of this sweep "
                            f"(varied: {', '.join(k for k, v in axes.items() if len(v) > 1) or 'none'})")
    if fig.x == fig.y:
        raise SpecError(f"{where}.y: x and y are both {fig.x!r}")
    if fig.boundary is not None and fig.contour is not None:
        raise SpecError(f"{where}.contour: give boundary or contour, not both")
