"""Every figure, read through matplotlib's own objects (not pixels): labelled axes, sensible ticks.

Each figure is rendered once at the quick sizes (the training figure at its smoke size)
with ``savefig`` replaced by a draw, so the test sees the laid-out Figure without encoding
files.  The rules:

- every axes that shows data names both axes: an axis label, or category tick labels
  (the claims matrix), or a y-axis shared with a labelled neighbour; colourbars are labelled;
- every axis shows at least two labelled major ticks inside its view;
- an axis of layers, depths or training steps has integer ticks;
- legend entries print no rounding noise (``λ = 3.34e-33`` is an exact 0);
- a legend drawn inside an axes covers none of that axes' data markers;
- no title, suptitle or axis label overlaps another one, or another axes' tick labels (bounding boxes
  from ``get_window_extent`` after the draw).
"""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

from proofs_check.report.figures import load_figures, render  # noqa: E402
from proofs_check.verdicts.evidence import CheckContext# noqa: E402

NAMES = sorted(load_figures())
INTEGER_AXIS = re.compile(r"\b(layer|depth|step)\b", re.I)
NOISE = re.compile(r"\d(\.\d+)?e-(1[3-9]|[2-9]\d|\d{3})\b")  # |x| < 1e-12 printed in scientific form


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """name → the Figure objects its renderer saved (drawn, not written)."""
    from numerics.storage.io import write_json
    from proofs_check.runners.grid import run_matrix

    cache = tmp_path_factory.mktemp("figure-cache")
    write_json(cache / "matrix.json", run_matrix(only_arch=["looped", "mhc"], claims=["1.2", "6.1"]))
    ctx = CheckContext(cache_dir=str(cache))
    ctx.smoke = True  # the training figure's seconds-sized run (numerics.text.training.experiment_configs)
    saved: dict[str, list[Figure]] = {}
    current: list[str] = []
    original = Figure.savefig

    def record(fig, *args, **kwargs):
        fig.canvas.draw()
        fig.test_renderer = fig.canvas.get_renderer()  # pyplot.close swaps the canvas afterwards
        if fig not in saved.setdefault(current[0], []):
            saved[current[0]].append(fig)

    Figure.savefig = record
    try:
        out = tmp_path_factory.mktemp("figures")
        for name in NAMES:
            current[:] = [name]
            render([name], ctx, out, formats=("png",))
    finally:
        Figure.savefig = original
    return saved


def _is_colorbar(ax) -> bool:
    return getattr(ax, "_colorbar", None) is not None


def _is_inset(ax) -> bool:
    return any(ax in other.child_axes for other in ax.figure.axes if other is not ax)


def _has_data(ax) -> bool:
    return bool(ax.lines or ax.collections or ax.patches or ax.images)


def _category_ticks(axis) -> bool:
    texts = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
    return bool(texts) and all(re.search(r"[A-Za-z]", t) for t in texts)


def _visible_ticks(axis) -> list[float]:
    """Major tick positions inside the view (a locator may place some outside it)."""
    lo, hi = sorted(axis.get_view_interval())
    slack = 1e-9 * abs(hi - lo)
    return [v for v in axis.get_majorticklocs() if lo - slack <= v <= hi + slack]


def _shares_labelled(ax, which: str) -> bool:
    group = ax.get_shared_y_axes() if which == "y" else ax.get_shared_x_axes()
    return any(other is not ax and group.joined(ax, other)
               and (other.get_ylabel() if which == "y" else other.get_xlabel())
               for other in ax.figure.axes)


def axis_problems(fig, name: str) -> list[str]:
    """What is wrong with the labels and ticks of ``fig`` (empty when nothing is)."""
    problems = []
    for ax in fig.axes:
        if _is_colorbar(ax):
            if not (ax.get_ylabel() or ax.get_xlabel()):
                problems.append(f"{name}: unlabelled colourbar")
            continue
        if _is_inset(ax) or not ax.get_visible() or not _has_data(ax) or not ax.axison:
            continue
        where = f"{name}, axes {ax.get_title()!r}"
        for which, axis, label in (("x", ax.xaxis, ax.get_xlabel()), ("y", ax.yaxis, ax.get_ylabel())):
            if not (label or _category_ticks(axis) or _shares_labelled(ax, which)):
                problems.append(f"{where}: the {which} axis has no label")
            if label.strip().lower() in ("value", "values", "y", "x"):
                problems.append(f"{where}: {which} label {label!r} names no quantity")
            if any(t.get_text() for t in axis.get_ticklabels()) and len(_visible_ticks(axis)) < 2:
                problems.append(f"{where}: fewer than two {which} ticks")
            if label and INTEGER_AXIS.search(label) and axis.get_scale() == "linear":
                locs = _visible_ticks(axis)
                if any(abs(v - round(v)) > 1e-9 for v in locs):
                    problems.append(f"{where}: fractional {which} ticks {locs}")
    return problems


def legend_problems(fig, name: str) -> list[str]:
    """Rounding noise printed in a legend, or a legend inside an axes covering its data markers."""
    problems = []
    renderer = fig.test_renderer
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        problems += [f"{name}: legend entry {t.get_text()!r}" for t in legend.get_texts() if NOISE.search(t.get_text())]
        box = legend.get_window_extent(renderer)
        if not ax.get_window_extent(renderer).overlaps(box):
            continue  # placed outside the axes
        for line in ax.get_lines():
            if line.get_marker() in (None, "None", "", " ") or not line.get_visible():
                continue
            pts = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
            inside = sum(box.contains(x, y) for x, y in pts)
            if inside:
                problems.append(f"{name}: the legend covers {inside} markers of {line.get_label()!r}")
    return problems


def _texts(fig) -> list[tuple[str, object, object]]:
    """(what, artist, its axes) for every title, suptitle and axis label with text."""
    found = []
    if getattr(fig, "_suptitle", None) is not None:
        found.append(("suptitle", fig._suptitle, None))
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for what, artist in (("title", ax.title), ("left title", ax._left_title), ("right title", ax._right_title),
                             ("x label", ax.xaxis.label), ("y label", ax.yaxis.label)):
            found.append((what, artist, ax))
    return [(w, a, ax) for w, a, ax in found if a.get_visible() and a.get_text().strip()]


def overlap_problems(fig, name: str) -> list[str]:
    """Titles and axis labels that overlap each other, or overlap tick labels of another axes."""
    renderer = fig.test_renderer
    texts = [(w, a, ax, a.get_window_extent(renderer)) for w, a, ax in _texts(fig)]
    problems = []
    for i, (w1, a1, ax1, b1) in enumerate(texts):
        for w2, a2, ax2, b2 in texts[i + 1:]:
            if b1.overlaps(b2) and b1.width > 0 and b2.width > 0:
                problems.append(f"{name}: {w1} {a1.get_text()!r} overlaps {w2} {a2.get_text()!r}")
        for ax in fig.axes:
            if ax is ax1 or not ax.get_visible() or _is_colorbar(ax):
                continue
            ticks = [t for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_visible() and t.get_text()]
            if any(b1.overlaps(t.get_window_extent(renderer)) for t in ticks):
                problems.append(f"{name}: {w1} {a1.get_text()!r} overlaps another axes' tick labels")
    return problems


@pytest.mark.parametrize("name", NAMES)
def test_titles_and_labels_do_not_overlap(drawn, name):
    assert [p for fig in drawn[name] for p in overlap_problems(fig, name)] == []


@pytest.mark.parametrize("name", NAMES)
def test_axes_are_labelled_and_ticks_sensible(drawn, name):
    assert drawn.get(name), f"{name} saved no figure"
    assert [p for fig in drawn[name] for p in axis_problems(fig, name)] == []


@pytest.mark.parametrize("name", NAMES)
def test_legends_print_no_noise_and_cover_no_data(drawn, name):
    assert [p for fig in drawn[name] for p in legend_problems(fig, name)] == []


def test_the_rules_catch_each_defect():
    """Control: a figure with every defect the rules look for is reported on each count."""
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2)
    layers = np.arange(6)
    for k in range(3):
        ax.plot(layers, 0.5 + 0.1 * k + 0 * layers, "o-", label=f"λ = {3.34e-33 if k == 0 else k:.3g}")
    ax.set_xlim(0, 2.5)  # linear ticks at 0, 0.5, …: fractional layers
    ax.set_xlabel("layer ℓ"), ax.set_ylabel("value")
    ax.legend(loc="center")
    im = ax2.imshow(np.eye(3))
    fig.colorbar(im, ax=ax2)
    ax2.set_xlabel("j"), ax2.set_ylabel("i")
    fig.canvas.draw()
    fig.test_renderer = fig.canvas.get_renderer()
    ax2.set_title("a title")
    ax2.yaxis.set_label_coords(0.5, 1.03)  # the y label drawn where the title is (Fig. 26's defect)
    fig.canvas.draw()
    fig.test_renderer = fig.canvas.get_renderer()
    found = " | ".join(axis_problems(fig, "bad") + legend_problems(fig, "bad") + overlap_problems(fig, "bad"))
    plt.close(fig)
    for defect in ("unlabelled colourbar", "names no quantity", "fractional x ticks", "legend entry 'λ = 3.34e-33'",
                   "the legend covers", "overlaps"):
        assert defect in found, (defect, found)


def test_every_figure_has_a_caption_saying_what_to_look_at():
    from proofs_check.report.document import figure_md
    from proofs_check.report.figures._captions import LOOK

    assert sorted(LOOK) == NAMES, "a figure without a 'what to look at' sentence, or one for no figure"
    caption = figure_md("factorisation_controls", "Off-block mass vs violation δ")[2]
    assert caption.startswith("*Figure: Off-block mass vs violation δ. The off-block mass against") and \
        caption.endswith(".*")


def test_mode_products_exact_zero_eigenvalue():
    from proofs_check.report.figures.coarse_graining import eigenvalue_label

    # the full kernel 11ᵀ/T has eigenvalue 0; float64 eigvals return ~1e-17 (or 3e-33)
    assert eigenvalue_label(3.34e-33) == "0" and eigenvalue_label(-2e-17) == "0"
    assert eigenvalue_label(1 / 6) == "0.167"  # the causal kernel's smallest, T = 6


def test_stationary_distribution_pdf_is_rasterised(drawn, tmp_path):
    meshes = [c for fig in drawn["stationary_distribution"] for ax in fig.axes if not _is_colorbar(ax)
              for c in ax.collections if type(c).__name__ == "QuadMesh"]
    assert len(meshes) == 3 and all(m.get_rasterized() for m in meshes)
    paths = render(["stationary_distribution"], CheckContext(), tmp_path, formats=("pdf",))
    size = paths["stationary_distribution"][0].stat().st_size
    assert size < 300_000, f"{size} bytes: the n² mesh was written as vectors"
