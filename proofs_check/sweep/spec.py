"""A sweep's TOML spec, parsed and validated before any task runs.

A spec file holds one ``[[sweep]]`` table per claim::

    name = "coarse_graining"          # optional (default: the file's stem)
    description = "..."               # optional
    profile = "ci"                    # optional: the CheckContext profile (ci | thorough)
    batch = 50                        # optional: rows per Parquet file

    [[sweep]]
    claim = "3.2"                     # a claim registered with proofs_check.claims.on_stack
    seeds = 3                         # seeds first_seed … first_seed + seeds - 1 (default 1)
    first_seed = 0                    # optional
    scale = "toy"                     # optional: a scale preset's sizes as the base
    kernel = ["causal", "full"]       # an axis: a non-empty list
    layers = [1, 2, 4, 8]
    value_scale = [0, 5, 20]          # any random_stack knob
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
point's stack configuration (``numerics.stack.validate_config``: T divisible by P, heads
dividing d, ...) and architecture options.  A bad spec raises :class:`SpecError` naming the
key; the command line turns it into exit status 2.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path

from numerics.params import FLOAT_KNOBS, KNOBS
from numerics.spec import StackSpec

#: StackSpec fields a sweep may put on an axis (besides the random_stack knobs).
SIZE_AXES = ("arch", "kernel", "T", "P", "d", "layers", "heads", "dtype")
AXES = SIZE_AXES + KNOBS
#: keys of a ``[[sweep]]`` table that are not axes.
SWEEP_KEYS = ("claim", "seeds", "first_seed", "scale", "arch_options", "figure")
TOP_KEYS = ("name", "description", "profile", "batch", "sweep")
PROFILES = ("ci", "thorough")
FIGURE_KEYS = ("x", "y", "value", "boundary", "boundary_axis", "boundary_shift", "contour", "level", "label",
               "boundary_label", "aggregate")

INT_AXES = ("T", "P", "d", "layers", "heads", "mlp_ratio", "block_size")
STR_AXES = ("arch", "kernel", "dtype", "weight_path", "slow_kernel")


#: the largest grid (tasks = points × seeds, summed over the tables) run without ``--max-tasks``:
#: the shipped ``thorough`` spec (70 016 tasks) fits; each task is a few kB in the scheduler.
MAX_TASKS = 200_000
SEED_MAX = 2**63 - 1


class SpecError(ValueError):
    """A bad sweep spec; the message names the offending key."""


@dataclass(frozen=True)
class Figure:
    """One phase diagram: ``value`` over (``x``, ``y``) per slice of the sweep's other axes.

    The theory's boundary is either ``boundary`` (a column giving, for each y, the predicted x
    at which the verdict flips, plus ``boundary_shift``; ``boundary_axis = "y"`` swaps the roles)
    or ``contour`` (a column whose level set at ``level`` is the predicted boundary).  ``value``,
    ``boundary`` and ``contour`` name a column, an entry of a JSON-list column (``name[-1]``) or a
    quotient ``a / b`` (``proofs_check.sweep.figures.column``).
    """

    x: str
    y: str
    value: str = "error_ratio"
    boundary: str | None = None
    boundary_axis: str = "x"
    boundary_shift: float = 0.0
    contour: str | None = None
    level: float = 1.0
    label: str | None = None
    boundary_label: str | None = None
    aggregate: str = "median"


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
    (default: the claims registered with ``proofs_check.claims.on_stack``)."""
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
            if key not in SWEEP_KEYS and isinstance(value, list):
                n *= len(value)
        tasks += n
    return {"description": data.get("description", ""), "tasks": tasks,
            "claims": [t.get("claim", "?") for t in data.get("sweep", [])]}


class _Registered:
    """The claims with an on-stack form (``proofs_check.claims.registry.on_stack_claims``); the claim modules
    are imported the first time a claim is not found (importing them takes seconds)."""

    loaded = False

    def __contains__(self, claim) -> bool:
        from proofs_check.claims.registry import load_checks, on_stack_claims

        if claim not in on_stack_claims() and not self.loaded:
            load_checks()
            self.loaded = True
        return claim in on_stack_claims()

    def names(self) -> list[str]:
        from proofs_check.claims.registry import on_stack_claims

        return sorted(on_stack_claims())


def parse(data: dict, *, name: str = "sweep", claims=None, source: str = "", max_tasks: int = MAX_TASKS) -> SweepSpec:
    """Validate a parsed TOML document; raise :class:`SpecError` naming the first bad key."""
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise SpecError(f"{unknown[0]}: unknown top-level key (known: {', '.join(TOP_KEYS)})")
    name = data.get("name", name)
    if (not isinstance(name, str) or not name.strip() or "/" in name or name in (".", "..")
            or not name.isprintable()):
        raise SpecError(f"name={name!r} must be a non-empty printable string without '/' (it names the "
                        "default output folder)")
    profile = data.get("profile", "ci")
    if profile not in PROFILES:
        raise SpecError(f"profile={profile!r} is not one of {', '.join(PROFILES)}")
    batch = data.get("batch")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise SpecError(f"batch={batch!r} must be a positive integer")
    tables = data.get("sweep")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise SpecError("sweep: the spec needs at least one [[sweep]] table")
    claims = _Registered() if claims is None else list(claims)
    sweeps = tuple(_parse_sweep(i, table, claims) for i, table in enumerate(tables))
    spec = SweepSpec(name=name, sweeps=sweeps, description=str(data.get("description", "")),
                     profile=profile, batch=batch, source=source)
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


def _parse_sweep(index: int, table: dict, claims) -> Sweep:
    where = f"sweep[{index}]"
    if "claim" not in table:
        raise SpecError(f"{where}.claim: missing (which claim does this sweep evaluate?)")
    claim = table["claim"]
    if not isinstance(claim, str) or claim not in claims:
        names = claims.names() if isinstance(claims, _Registered) else claims
        raise SpecError(f"{where}.claim={claim!r} is not a claim on a stack "
                        f"(registered: {', '.join(names) or 'none'})")
    seeds = table.get("seeds", 1)
    first_seed = table.get("first_seed", 0)
    for key, value, low in (("seeds", seeds, 1), ("first_seed", first_seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise SpecError(f"{where}.{key}={value!r} must be an integer ≥ {low}")
    if first_seed + seeds > SEED_MAX:
        raise SpecError(f"{where}.seeds={seeds!r}: the seeds first_seed … first_seed + seeds - 1 must stay "
                        f"below 2**63 - 1")
    scale = table.get("scale")
    base = _scale_base(scale, where) if scale is not None else {}
    arch_options = table.get("arch_options", {})
    if not isinstance(arch_options, dict):
        raise SpecError(f"{where}.arch_options must be a table")
    axes = dict(base)
    for key, value in table.items():
        if key in SWEEP_KEYS:
            continue
        if key == "seed":
            raise SpecError(f"{where}.seed: not an axis; use seeds = N (and first_seed)")
        if key not in AXES:
            raise SpecError(f"{where}.{key}: unknown knob (axes: {', '.join(AXES)})")
        values = value if isinstance(value, list) else [value]
        if not values:
            raise SpecError(f"{where}.{key}: empty axis (give at least one value)")
        axes[key] = tuple(_coerce(f"{where}.{key}", key, v) for v in values)
        if len(set(axes[key])) != len(axes[key]):
            raise SpecError(f"{where}.{key}: repeated values {list(values)}")
    figures = table.get("figure", [])
    if isinstance(figures, dict):
        figures = [figures]
    if not isinstance(figures, list):
        raise SpecError(f"{where}.figure must be a table or an array of tables")
    figs = tuple(_parse_figure(f"{where}.figure[{i}]", f, axes) for i, f in enumerate(figures))
    return Sweep(index=index, claim=claim, axes=axes, seeds=seeds, first_seed=first_seed, scale=scale,
                 arch_options=dict(arch_options), figures=figs)


def _coerce(where: str, key: str, value):
    """One axis value, checked for its type; float knobs become floats (5 and 5.0 are one point)."""
    if isinstance(value, (list, dict)):
        raise SpecError(f"{where}: values must be scalars, got {value!r}")
    if key in FLOAT_KNOBS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"{where}={value!r} must be a number")
        return float(value)
    if key in INT_AXES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"{where}={value!r} must be an integer")
        return value
    if key in STR_AXES:
        if not isinstance(value, str):
            raise SpecError(f"{where}={value!r} must be a string")
        return value
    raise SpecError(f"{where}: no type known for {key!r}")  # pragma: no cover  (AXES are all typed above)


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
        base[key] = (_coerce(f"{where}.scale", key, value),)
    return base


def _parse_figure(where: str, table: dict, axes: dict) -> Figure:
    if not isinstance(table, dict):
        raise SpecError(f"{where} must be a table")
    unknown = [k for k in table if k not in FIGURE_KEYS]
    if unknown:
        raise SpecError(f"{where}.{unknown[0]}: unknown figure key (known: {', '.join(FIGURE_KEYS)})")
    for key in ("x", "y"):
        if key not in table:
            raise SpecError(f"{where}.{key}: missing (an axis of this sweep)")
        if table[key] not in axes or len(axes[table[key]]) < 2:
            raise SpecError(f"{where}.{key}={table[key]!r} is not a varied axis of this sweep "
                            f"(varied: {', '.join(k for k, v in axes.items() if len(v) > 1) or 'none'})")
    if table["x"] == table["y"]:
        raise SpecError(f"{where}.y: x and y are both {table['x']!r}")
    if table.get("boundary_axis", "x") not in ("x", "y"):
        raise SpecError(f"{where}.boundary_axis={table['boundary_axis']!r} must be 'x' or 'y'")
    if "boundary" in table and "contour" in table:
        raise SpecError(f"{where}.contour: give boundary or contour, not both")
    if table.get("aggregate", "median") not in ("median", "mean", "max", "min"):
        raise SpecError(f"{where}.aggregate={table['aggregate']!r} must be median, mean, max or min")
    for key in ("level", "boundary_shift"):
        if key in table and (isinstance(table[key], bool) or not isinstance(table[key], (int, float))):
            raise SpecError(f"{where}.{key}={table[key]!r} must be a number")
    for key in ("value", "boundary", "contour", "label", "boundary_label"):
        if key in table and not isinstance(table[key], str):
            raise SpecError(f"{where}.{key}={table[key]!r} must be a string")
    return Figure(**{k: (float(v) if k in ("level", "boundary_shift") else v) for k, v in table.items()})
