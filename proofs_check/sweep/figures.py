"""Phase diagrams of a sweep: where a claim holds over two of its axes.

For each ``[[sweep.figure]]`` of a spec, and each 2-D slice (one panel per combination of the
sweep's other varied axes), the cell colour is the measured column ``value`` aggregated over the
seeds (median by default).  Over it the theory's predicted boundary is drawn: ``boundary`` is a
predicted column giving the x (or, with ``boundary_axis = "y"``, the y) at which the claim is
predicted to flip, one point per row of the grid; ``contour`` draws the level set ``level`` of a
column as the cell edges between cells on either side of it.  Cells where any seed's verdict is
*fails* are marked ×, cells where every verdict is *n/a* are hatched.  Axes are drawn by index
(values as tick labels), so uneven and categorical grids read alike; a boundary value between two
grid values is placed by linear interpolation.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from pathlib import Path

import numpy as np

from proofs_check.sweep.grid import sweep_tasks


def _positions(values: list, target: float) -> float | None:
    """The index coordinate of ``target`` on an axis with numeric ``values`` (None off the axis)."""
    try:
        xs = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(target) or target < xs.min() or target > xs.max():
        return None
    order = np.argsort(xs)
    return float(np.interp(target, xs[order], np.arange(len(xs))[order]))


def column(df, expr: str):
    """The values of ``expr`` over ``df``'s rows as floats: a column ``name``, an entry ``name[i]`` of a
    column of JSON lists (e.g. ``measured_two_sided[-1]``, the last depth), or a quotient ``a / b``."""
    import pandas as pd

    if " / " in expr:
        num, den = (column(df, part.strip()) for part in expr.split(" / ", 1))
        return num / den
    match = re.fullmatch(r"(\w+)\[(-?\d+)\]", expr)
    if match:
        name, index = match.group(1), int(match.group(2))

        def pick(text):
            values = json.loads(text) if isinstance(text, str) else None
            return values[index] if isinstance(values, list) and -len(values) <= index < len(values) else None

        return pd.to_numeric(df[name].map(pick), errors="coerce").astype(float)
    return pd.to_numeric(df[expr], errors="coerce").astype(float)


def columns_of(expr: str) -> list[str]:
    """The stored columns an expression of :func:`column` reads."""
    return [re.sub(r"\[-?\d+\]$", "", part.strip()) for part in expr.split(" / ")]


def _aggregate(series, how: str) -> float:
    values = series.dropna().astype(float)
    if values.empty:
        return math.nan
    return float(getattr(values, how)())


def _slices(df, sweep, fig):
    others = [a for a in sweep.varied if a not in (fig.x, fig.y)]
    combos = list(itertools.product(*(sweep.axes[a] for a in others))) or [()]
    for combo in combos:
        part = df
        for axis, value in zip(others, combo):
            part = part[part[axis] == value]
        yield dict(zip(others, combo)), part


def _save(fig, path: Path) -> None:
    """Through the project's atomic writer (``numerics.storage.io.atomic_path``)."""
    from numerics.storage.io import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", dpi=130, bbox_inches="tight")


def render(spec, df, out: str | os.PathLike) -> list[Path]:
    """Every figure of ``spec`` from the rows ``df``; returns the PNG paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for sweep in spec.sweeps:
        keys = {t.key for t in sweep_tasks(spec, sweep)}
        rows = df[df["row_key"].isin(keys)]
        for k, fig in enumerate(sweep.figures):
            needed = [c for e in (fig.value, fig.boundary, fig.contour) if e for c in columns_of(e)]
            missing = [c for c in needed if c not in rows.columns]
            if missing:
                have = [c for c in rows.columns if c.startswith(("measured_", "predicted_", "error"))]
                raise ValueError(f"{sweep.where}.figure[{k}]: no column {missing[0]!r} in the results "
                                 f"(columns: {', '.join(have)})")
            slices = list(_slices(rows, sweep, fig))
            ncols = min(3, len(slices))
            nrows = math.ceil(len(slices) / ncols)
            figure, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.8 * nrows), squeeze=False)
            values = column(rows, fig.value).replace([np.inf, -np.inf], np.nan)
            limits = (values.min(), values.max()) if values.notna().any() else (None, None)
            for ax, (where, part) in zip(axes.flat, slices):
                _panel(ax, part, sweep, fig, where, limits)
            for ax in list(axes.flat)[len(slices):]:
                ax.set_visible(False)
            figure.suptitle(f"claim {sweep.claim}: {fig.label or fig.value} over {axis_label(fig.x)} and {axis_label(fig.y)}")
            figure.tight_layout()
            path = Path(out) / f"{spec.name}_{sweep.index}_{k}_{sweep.claim}_{fig.x}_{fig.y}.png"
            _save(figure, path)
            plt.close(figure)
            written.append(path)
    return written


#: A sweep axis in the paper's notation (docs/theory.md §0); an axis not named here is printed as its name.
AXIS_LABELS = {
    "T": "tokens T", "P": "block length P (ε = 1/P)", "d": "width d", "layers": "depth L", "heads": "heads",
    "kernel": "fast kernel A", "seed": "seed", "value_scale": "value scale c (W_VO ≈ c·I)",
    "weight_scale": "weight noise scale", "decay": "decay α", "ln_gain": "LN gain γ", "gate": "gate g",
    "step": "depth step h", "block_size": "kernel block length", "mlp_ratio": "MLP width / d",
    "slow_kernel": "slow kernel", "ln_eps": "LN ε", "activation": "MLP activation", "attn_bias": "attention biases",
    "weight_path": "weights in depth",
}
#: The same, short, for a panel's title (``c = 20``).
AXIS_SYMBOLS = {"value_scale": "c", "decay": "α", "ln_gain": "γ", "gate": "g", "layers": "L", "step": "h",
                "kernel": "A", "weight_scale": "σ_w"}


def axis_label(name: str) -> str:
    return AXIS_LABELS.get(name, name)


def _panel(ax, part, sweep, fig, where: dict, limits: tuple) -> None:
    from matplotlib.patches import Rectangle

    part = part.assign(_value=column(part, fig.value),
                       _contour=column(part, fig.contour) if fig.contour else math.nan,
                       _boundary=column(part, fig.boundary) + fig.boundary_shift if fig.boundary else math.nan)
    xs, ys = list(sweep.axes[fig.x]), list(sweep.axes[fig.y])
    grid = np.full((len(ys), len(xs)), math.nan)
    fails = np.zeros_like(grid, dtype=bool)
    na = np.zeros_like(grid, dtype=bool)
    for (i, y), (j, x) in itertools.product(enumerate(ys), enumerate(xs)):
        cell = part[(part[fig.x] == x) & (part[fig.y] == y)]
        if cell.empty:
            continue
        grid[i, j] = _aggregate(cell["_value"], fig.aggregate)
        fails[i, j] = (cell["verdict"] == "fails").any()
        na[i, j] = (cell["verdict"] == "n/a").all()
    mesh = ax.pcolormesh(np.arange(len(xs) + 1) - 0.5, np.arange(len(ys) + 1) - 0.5,
                         np.ma.masked_invalid(grid), cmap="viridis", shading="flat", vmin=limits[0], vmax=limits[1])
    ax.figure.colorbar(mesh, ax=ax, label=fig.label or fig.value)
    fi, fj = np.nonzero(fails)
    if len(fi):
        ax.scatter(fj, fi, marker="x", color="red", s=40, label="fails", zorder=3)
    ni, nj = np.nonzero(na)
    for i, j in zip(ni, nj):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", edgecolor="grey", lw=0))
    label = fig.boundary_label or f"theory: {fig.boundary or fig.contour}" + (
        f" = {fig.level:g}" if fig.contour else "")
    if fig.boundary:
        _boundary_curve(ax, part, fig, xs, ys, label)
    elif fig.contour:
        level_grid = np.full_like(grid, math.nan)
        for (i, y), (j, x) in itertools.product(enumerate(ys), enumerate(xs)):
            cell = part[(part[fig.x] == x) & (part[fig.y] == y)]
            if not cell.empty:
                level_grid[i, j] = _aggregate(cell["_contour"], fig.aggregate)
        if _level_edges(ax, level_grid, fig.level):
            ax.plot([], [], color="white", lw=2, label=label)
    ax.set_xticks(range(len(xs)), [f"{v:g}" if isinstance(v, float) else str(v) for v in xs])
    ax.set_yticks(range(len(ys)), [f"{v:g}" if isinstance(v, float) else str(v) for v in ys])
    ax.set_xlabel(axis_label(fig.x))
    ax.set_ylabel(axis_label(fig.y))
    ax.set_title(", ".join(f"{AXIS_SYMBOLS.get(k, axis_label(k))} = {v}" for k, v in where.items()) or "all points",
                 fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper right", framealpha=0.7)


def _level_edges(ax, grid: np.ndarray, level: float) -> bool:
    """Draw the cell edges that separate cells above ``level`` from cells at or below it (the level
    set on a discrete grid, with no interpolation between grid values); True if any was drawn."""
    side = np.where(np.isfinite(grid), grid > level, np.nan)
    segments = []
    for i, j in itertools.product(range(grid.shape[0]), range(grid.shape[1])):
        if j + 1 < grid.shape[1] and abs(side[i, j] - side[i, j + 1]) == 1:
            segments.append(([j + 0.5, j + 0.5], [i - 0.5, i + 0.5]))
        if i + 1 < grid.shape[0] and abs(side[i, j] - side[i + 1, j]) == 1:
            segments.append(([j - 0.5, j + 0.5], [i + 0.5, i + 0.5]))
    for sx, sy in segments:
        ax.plot(sx, sy, color="white", lw=2.5, solid_capstyle="round")
    return bool(segments)


def _boundary_curve(ax, part, fig, xs, ys, label: str) -> None:
    """The predicted flip point along ``boundary_axis``, one per value of the other axis."""
    along, across = (xs, ys) if fig.boundary_axis == "x" else (ys, xs)
    across_name = fig.y if fig.boundary_axis == "x" else fig.x
    pts = []
    for k, value in enumerate(across):
        pred = _aggregate(part[part[across_name] == value]["_boundary"], "median")
        pos = _positions(along, pred) if math.isfinite(pred) else None
        if pos is not None:
            pts.append((pos, k) if fig.boundary_axis == "x" else (k, pos))
    if pts:
        px, py = zip(*pts)
        ax.plot(px, py, color="white", lw=2, marker="o", ms=4, label=label)
