"""The figure registry: ``@figure(name, claim=...)`` functions ``(ctx, out_dir) -> list[Path]``.

Figure modules live beside this file, one per claim family, and are discovered on
first use.  Every figure is written as PNG and PDF through ``save``, atomically.
"""

from __future__ import annotations

import contextvars
import importlib
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib

from numerics.storage.io import atomic_path

matplotlib.use("Agg")

FIGURES: dict[str, "Figure"] = {}
FORMATS = ("png", "pdf")
_formats = contextvars.ContextVar("formats", default=FORMATS)


@dataclass
class Figure:
    name: str
    claim: str
    title: str
    render: Callable


def figure(name: str, *, claim: str, title: str):
    """Register a figure renderer under ``name`` (used by ``fastslow figures --only name``)."""

    def register(fn):
        if name in FIGURES:
            raise ValueError(f"figure {name!r} is registered twice")
        FIGURES[name] = Figure(name=name, claim=claim, title=title, render=fn)
        return fn

    return register


def load_figures() -> dict[str, Figure]:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return FIGURES


REPORT_WIDTH_PX = 1100  # the report's text column: a wider figure is shown scaled down to it
MIN_TEXT_PX = 11  # the smallest text a reader should meet at report width
_SUBSCRIPT = re.compile(r"(?<=[^\s$_])_(\{[^{}$]+\}|[A-Za-z0-9ℓ]+)")
_SUPERSCRIPT = re.compile(r"(?<=[^\s$^])\^(\{[^{}$]+\}|[-−]?[A-Za-z0-9]+)")


def _readable(fig) -> None:
    """Titles, axis labels and tick labels legible at report width (at least ``MIN_TEXT_PX`` once the
    figure is scaled to the report's column; legends keep their size, so they cover no more data), and
    ``a_b``/``a^b`` in a plain label drawn as a sub/superscript (mathtext), never as ``_b``/``^b``."""
    from matplotlib.text import Text

    floor_pt = max(8.0, MIN_TEXT_PX * 72 * fig.get_size_inches()[0] / REPORT_WIDTH_PX)
    titles = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        titles += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            ticks = axis.get_ticklabels()
            if ticks and ticks[0].get_fontsize() < floor_pt:
                ax.tick_params(axis=name, which="both", labelsize=floor_pt)
    for text in titles:
        if text.get_fontsize() < floor_pt:
            text.set_fontsize(floor_pt)
    for text in fig.findobj(Text):
        label = text.get_text()
        if ("_" in label or "^" in label) and "$" not in label:
            label = _SUBSCRIPT.sub(lambda m: "$_{" + m.group(1).strip("{}") + "}$", label)
            text.set_text(_SUPERSCRIPT.sub(lambda m: "$^{" + m.group(1).strip("{}") + "}$", label))


def save(fig, out_dir: Path, name: str) -> list[Path]:
    """Write ``fig`` as ``name.png`` and ``name.pdf`` (the formats ``render`` asked for) atomically; close it."""
    import matplotlib.pyplot as plt

    _readable(fig)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in _formats.get():
        final = out_dir / f"{name}.{ext}"
        with atomic_path(final) as tmp:
            fig.savefig(tmp, format=ext, dpi=130, bbox_inches="tight")
        paths.append(final)
    plt.close(fig)
    return paths


def render(names: list[str] | None, ctx, out_dir: Path, formats=FORMATS) -> dict[str, list[Path]]:
    """Render the named figures (all when ``names`` is None) in ``formats``; unknown names are an error."""
    from proofs_check.progress import track

    figures = load_figures()
    unknown = [n for n in names or [] if n not in figures]
    if unknown:
        raise ValueError(f"--only {', '.join(unknown)}: no such figure (known: {', '.join(sorted(figures))})")
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ValueError(f"--format {', '.join(bad)}: not one of {', '.join(FORMATS)}")
    token = _formats.set(tuple(formats))
    try:
        selected = names or sorted(figures)
        return {name: figures[name].render(ctx, Path(out_dir))
                for name in track(selected, "figures", unit="figure", enabled=len(selected) > 1)}
    finally:
        _formats.reset(token)
