"""The reproduction report: ``report.md`` and a self-contained ``report.html`` from the ledger.

It reads as a paper: the claims summary first (kind, setting, status, finding), then one
section per claim (docs/theory.md §1–§7: statement, assumptions, the derivation typeset from
each generated function's SymPy expression and captioned by what it computes, the symbolic
steps, the numeric tables, the negative control, any finding, the figures), then the
sections of the other runs (claims × architectures with its conditions table, scale, sweeps,
trained stacks, reach), and the mechanical ledger and timings as an appendix.

``report.md`` is CommonMark with tables and inline HTML (the typeset formulas of
``proofs_check.report.typeset``, ``<sub>``/``<sup>``), which GitHub's markdown also draws.
``report.html`` is that markdown rendered by markdown-it-py; it needs no network: figures
are embedded as base64 PNG, and formulas are HTML text.  ``$$…$$`` LaTeX that did not come
from a derivation is drawn by matplotlib's mathtext as inline SVG.
"""

from __future__ import annotations

import base64
import html
import importlib
import io
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from proofs_check.report.prose import plain, prose
from proofs_check.report.provenance import line as provenance_line, this_run
from proofs_check.report.typeset import Formula, typeset
from proofs_check.report.values import MISSING, cell, label, number, numbers_in_prose
from proofs_check.tables import Markdown, bold, markdown_table, md_escape
from proofs_check.verdicts.vocabulary import TONES
from proofs_check.verdicts.vocabulary import TONES




@dataclass(frozen=True)
class Derivation:
    name: str  # qualified name of the generated function (kept for the ledger, never printed)
    formula: Formula


@lru_cache(maxsize=None)
def _family_functions(family: str) -> dict:
    """A theory family's GenFunctions by name (SymPy work done once per report)."""
    theory = importlib.import_module(f"theory.{family}")
    return {fn.name: fn for fn in theory.generated_functions()}


@lru_cache(maxsize=None)
def _derivation(qualname: str) -> Derivation | None:
    module_name, _, fn_name = qualname.rpartition(".")
    family = module_name.rsplit(".", 1)[-1]
    try:
        fns = _family_functions(family)
    except (ImportError, AttributeError):
        return None
    if fn_name not in fns:
        return None
    fn = fns[fn_name]
    return Derivation(qualname, typeset(fn.expr, caption=prose(_caption(fn.doc), escape=html.escape), doc=fn.doc,
                                        family=family))


def _caption(doc: str) -> str:
    """What a formula computes: the docstring after its formula ("G_{≤ℓ}(λ) = …: one step of the mode product"
    → "One step of the mode product."), the whole docstring where it names no formula first."""
    head, sep, what = doc.partition(": ")
    if not sep or not what.strip() or len(head) > 160 or not re.search(r"[=⌈(/^_]", head):
        return doc
    return what[:1].upper() + what[1:]


def derivations(generated: list[str]) -> list[Derivation]:
    """The derivation of each generated function a claim lists, typeset from its SymPy source."""
    return [d for d in map(_derivation, generated) if d is not None]


# ----------------------------------------------------------------------------- markdown text


def _table_groups(rows: list[dict]) -> list[tuple[list[str], list[dict]]]:
    """Consecutive rows with the same columns form one table; a column empty in a group is dropped."""
    groups: list[tuple[list[str], list[dict]]] = []
    for row in rows:
        keys = list(row)
        if groups and groups[-1][0] == keys:
            groups[-1][1].append(row)
        else:
            groups.append((keys, [row]))
    out = []
    for keys, group in groups:
        kept = [k for k in keys if any(r.get(k) is not None for r in group)]
        if kept:
            out.append((kept, group))
    return out


def numeric_tables_md(rows: list[dict]) -> list[str]:
    """Markdown tables of a check's measured rows, one table per shape of row."""
    lines: list[str] = []
    groups = _table_groups(rows)
    for keys, group in groups:
        lines += markdown_table([label(k) for k in keys], [[cell(r.get(k)) for k in keys] for r in group])
        lines.append("")
    if any(r.get(k) is None for keys, group in groups for r in group for k in keys):
        lines += [f"{MISSING} marks a quantity that does not exist for that row "
                  "(no saturation depth, a vacuous bound, a column another case does not have).", ""]
    return lines


def _control_word(status: str) -> str:
    return status.replace("-", " ")


def summary_md(ledger: dict) -> list[str]:
    """The report's first screen: one line per claim with its kind, setting, status and finding
    (``proofs_check.verdicts.standing``), before the mechanical ledger."""
    from proofs_check.experiments.recorded_findings import recorded_findings
    from proofs_check.verdicts.standing import summary_markdown

    return summary_markdown(ledger, recorded_findings()).splitlines() + [
        "", "Each claim's *kind* (identity: exact at its reference for any weights; lemma: a fact on a model "
            "system, no stack enters; prediction: a quantitative statement about stacks that can fail on "
            "some stack; experiment: depends on data), the *setting* it was checked in, and its *status*: "
            "holds as stated, holds under a condition the paper does not state, fails in the paper's "
            "setting, or reconstruction (the definition was rebuilt in docs/theory.md)."]


def abstract_md(ledger: dict) -> list[str]:
    """The verdict first: ``proofs_check.headline.abstract_lines`` as a list, each claim id a link to its section."""
    from proofs_check.headline import abstract_lines

    ids = sorted((c["id"] for c in ledger["claims"]), key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(i) for i in ids) + r")(?![\w]|\.\d)") if ids else None

    def linked(text: str) -> str:
        text = md_escape(text)
        return pattern.sub(lambda m: f"[{m.group(1)}](#claim-{_slug_id(m.group(1))})", text) if pattern else text

    return [f"- {linked(line)}" for line in abstract_lines(ledger)] + [""]


def contents_md(body: list[str]) -> list[str]:
    """A table of contents of the report's sections (its ``## `` headings), each a link."""
    heads = [text[3:].strip() for text in body if text.startswith("## ")]
    items = [f"- [{head}](#{_slug(re.sub(r'<[^>]+>|[`*]', '', head))})" for head in heads]
    return ["", "## Contents", ""] + items + [""]


def ledger_table_md(ledger: dict) -> list[str]:
    from proofs_check.verdicts.standing import ledger_word

    rows = []
    for c in ledger["claims"]:
        num = c.get("numeric")
        num_s = f"{number(num['max_error'])} / {number(num['tolerance'], 2)}" if num else MISSING
        flag = " *(reconstruction)*" if c.get("reconstruction") else ""
        ctl = c.get("control")
        ctl_s = _control_word(ctl["status"]) if ctl else MISSING
        rows.append((Markdown(f"[{c['id']}](#claim-{_slug_id(c['id'])})"), Markdown(prose(c["title"]) + flag),
                     bold(ledger_word(c)), f"{c['symbolic']['proved']}/{c['symbolic']['steps']}", num_s, ctl_s))
    return markdown_table(("claim", "title", "status", "symbolic", "numeric max error / tolerance", "control"), rows)


def _slug_id(cid: str) -> str:
    return cid.replace(".", "-")


def environment_line(ledger: dict) -> str:
    env = ledger.get("environment", {})
    opts = ledger.get("options", {})
    parts = [f"Python {env.get('python', '?')}", f"torch {env.get('torch', '?')}",
             f"SymPy {env.get('sympy', '?')}", f"NumPy {env.get('numpy', '?')}",
             f"SciPy {env.get('scipy', '?')}", f"mpmath {env.get('mpmath', '?')}"]
    device = env.get("device", "cpu") + (f" ({env['cuda']})" if env.get("cuda") else "")
    sizes = "quick (CI) sizes" if opts.get("quick", True) else "full sizes"
    return (f"Environment: {', '.join(parts)}; device {device}; platform {env.get('platform', '?')}. "
            f"Run: profile `{opts.get('profile', 'ci')}`, {sizes}.")


def timings_md(timings: dict[str, float]) -> list[str]:
    rows = [(step, f"{sec:.1f}") for step, sec in timings.items()]
    return markdown_table(("step", "seconds"), rows + [("total", f"{sum(timings.values()):.1f}")])


FIGURE = "*Figure:"  # numbered in page order by render_markdown


def figure_md(name: str, title: str | None = None) -> list[str]:
    """A figure with its numbered caption: what is drawn (its title), then what to look at in it."""
    from proofs_check.report.figures._captions import LOOK

    caption = prose(title) if title else prose(name.replace("_", " "))
    look = f" {prose(LOOK[name])}" if name in LOOK else ""
    return [f"![{caption}](figures/{name}.png)", "", f"{FIGURE} {caption.rstrip('.')}.{look}*", ""]


def _number_figures(text: str) -> str:
    count = iter(range(1, 10_000))
    return re.sub(re.escape(FIGURE), lambda _: f"*Figure {next(count)}.", text)


def figure_titles() -> dict[str, str]:
    from proofs_check.report.figures import load_figures

    return {name: fig.title for name, fig in load_figures().items()}


def claim_section_md(c: dict, figures: list[str], titles: dict[str, str], source: dict | None = None) -> list[str]:
    from proofs_check.verdicts.standing import ledger_word, setting_text

    recon = " *(reconstruction)*" if c.get("reconstruction") else ""
    lines = ["", f"## Claim {c['id']}: {prose(c['title'])}", ""]
    if source:
        lines += [provenance_line(source), ""]
    if c.get("standing"):
        lines += [f"**Status: {md_escape(c['standing'])}** — {md_escape(c.get('kind') or '')}, checked in "
                  f"{prose(setting_text(c.get('setting')))}; ledger: **{ledger_word(c)}**{recon}", ""]
        if c.get("condition"):
            lines += [f"*Condition the paper does not state:* {prose(c['condition'])}", ""]
        if c.get("standing_conflict"):
            lines += [f"*Standing corrected by the evidence:* {prose(c['standing_conflict'])}", ""]
    else:
        lines += [f"**Status: {c['status']}**{recon}", ""]
    if c["status"] == "skipped":
        return lines + [prose(c.get("detail", "")), ""]
    lines += [f"**Statement.** {prose(c.get('statement', ''))}", ""]
    if c.get("assumptions"):
        lines += ["**Assumptions.**", ""] + [f"- {prose(a)}" for a in c["assumptions"]] + [""]
    derivs = derivations(c.get("generated", []))
    if derivs:
        lines += ["**Derivation.** Each formula is the SymPy expression the generated code was compiled from, "
                  "typeset; its caption says what it computes.", ""]
        for d in derivs:
            lines += [d.formula.block(), ""]
    steps = c["symbolic"].get("list", [])
    if steps:
        lines += [f"**Symbolic steps** ({c['symbolic']['proved']}/{c['symbolic']['steps']} proved).", ""]
        lines += [f"- {'proved' if s['proved'] else '**NOT proved**'} ({md_escape(s['method'])}): "
                  f"{prose(s['name'])}" + (f" — {prose(s['detail'])}" if s.get("detail") else "")
                  for s in steps]
        lines.append("")
    num = c.get("numeric")
    if num:
        lines += [f"**Numeric check.** {num['cases']} cases, max error {number(num['max_error'])} against "
                  f"tolerance {number(num['tolerance'])}. {prose(num.get('detail', ''))}", ""]
        lines += numeric_tables_md(num.get("table", []))
    ctl = c.get("control")
    if ctl:
        lines += [f"**Negative control** — {_control_word(ctl['status'])}. {prose(ctl.get('detail', ''))}", ""]
    if c.get("finding"):
        lines += [f"> **Finding.** {prose(c['finding'])}", ""]
    if c.get("notes"):
        lines += [f"*Notes.* {prose(c['notes'])}", ""]
    if c.get("detail"):
        lines += [f"*Detail.* {prose(c['detail'])}", ""]
    for fig in figures:
        lines += figure_md(fig, titles.get(fig))
    return lines


def render_markdown(ledger: dict, figures_dir: Path, timings: dict[str, float],
                    figure_index: dict[str, list[str]], extra_sections: list[str] = ()) -> str:
    """The whole report as markdown: the claims summary, one section per claim, the other runs'
    sections, and the ledger and timings as an appendix.  A figure already placed by an extra
    section (the claims × architectures figure under its grid) is not repeated under its claim."""
    extra = list(extra_sections)
    placed = set(re.findall(r"\]\(figures/([\w-]+)\.png\)", "\n".join(extra)))
    titles = figure_titles()
    source = ledger.get("provenance") or this_run()
    lines = ["# fastslow reproduction report", "",
             "Claims of *Attention is Just Another Name for Coupling? A Fast–Slow ODE Perspective on "
             "Hierarchical Pretraining* (arXiv 2606.16730), checked by this run "
             f"(commit {source['commit']}, {source['date']}).", "", "## Abstract", ""]
    lines += abstract_md(ledger)
    body = ["", "## Summary", "", provenance_line(source), ""]
    body += summary_md(ledger)
    body += ["", environment_line(ledger), "", "## How each claim is checked", "",
             "Each claim is checked symbolically (SymPy), at 50 digits (mpmath) where a number is derived, and "
             "numerically against random untied Transformer stacks, each beside a negative control that breaks "
             "the claim's condition and must fail by the predicted amount. The claims and their assumptions "
             "are stated in the repository's docs/theory.md; definitions marked *(reconstruction)* are rebuilt "
             "there where the paper's could not be recovered. The mechanical ledger and the timings of this "
             "run are in the appendix."]
    for c in ledger["claims"]:
        figs = [f for f in figure_index.get(c["id"], []) if f not in placed]
        body += claim_section_md(c, figs, titles, source)
    body += extra
    body += ["", "## Appendix: the ledger", "", provenance_line(source), ""] + ledger_table_md(ledger)
    body += ["", "## Appendix: timings", ""] + timings_md(timings)
    lines += contents_md(body) + body
    return _number_figures(_scripts("\n".join(lines) + "\n"))


_PROTECTED = re.compile(r"(^```.*?^```$|^<.*?$|`[^`\n]*`|!\[[^\]\n]*\]\([^)\n]*\)|\]\([^)\n]*\))", re.S | re.M)
_SCRIPTED_WORD = re.compile(r"[^\s`]*(?:_|\^)[^\s`]*")
_PATH = re.compile(r"^(?:[\w.-]*/[\w./-]*|[\w./-]+\.(?:py|md|json|png|pdf|txt|toml))\W*$")  # a file or folder path


def _scripts(text: str) -> str:
    """Ledger text that other sections set literally (``θ\\_ℓ``, ``A^m``, ``value\\_scale``) set as prose: a
    symbol's sub- or superscript as one, a parameter name as code.  Fenced blocks, HTML lines, code
    spans, link targets and file paths are left as they are."""
    def word(m: re.Match) -> str:
        token = m.group(0)
        if _PATH.match(token) or "<" in token:
            return token
        return prose(re.sub(r"\\([\\`*_\[\]<>$|])", r"\1", token))

    parts = _PROTECTED.split(text)
    return "".join(part if i % 2 else _SCRIPTED_WORD.sub(word, plain(numbers_in_prose(part)))
                   for i, part in enumerate(parts))


# ----------------------------------------------------------------------------- HTML
#: every result word (proofs_check.verdicts.vocabulary) -> its table cell's class
#: a status word's CSS class: the one vocabulary's tones (proofs_check.verdicts.vocabulary.TONES)
STATUS_CLASSES = {str(word): str(tone) for word, tone in TONES.items()}
_STATUS_CELL = re.compile(r"^\*\*(" + "|".join(re.escape(k) for k in sorted(STATUS_CLASSES, key=len, reverse=True))
                          + r")\*\*")

STYLE = """
body{font-family:system-ui,sans-serif;max-width:72em;margin:2em auto;line-height:1.5;padding:0 1em;color:#222}
h1{font-size:1.9em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:1em 0;display:block;overflow-x:auto}
td,th{border:1px solid #ccc;padding:.25em .6em;font-size:.92em;vertical-align:top}
th{background:#f4f4f4}
img{max-width:100%;border:1px solid #eee}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto}
code{font-size:.92em}
.math.block{overflow-x:auto;margin:.6em 0 1em 1em}
.formula{margin:.8em 0 1.2em 1.2em}
.formula .caption{font-size:.9em;color:#555;margin-bottom:.2em}
.formula .eq{font-family:"STIX Two Math","Cambria Math","Latin Modern Math","DejaVu Serif",serif;font-size:1.08em;
  padding-left:2em;text-indent:-2em;overflow-wrap:anywhere}
.formula .where{font-family:"DejaVu Serif",serif;font-size:.95em;padding-left:2em;text-indent:-1em;color:#333}
.mat{display:inline-table;vertical-align:middle;border-left:1px solid #333;border-right:1px solid #333;
  padding:0 .2em;margin:0 .2em;text-indent:0}
.mat .row{display:table-row}.mat .cell{display:table-cell;padding:.05em .5em;text-align:center}
sub,sup{font-size:.72em}
blockquote{border-left:4px solid #d98b00;margin:1em 0;padding:.3em 1em;background:#fff8ec}
.holds{background:#e3f6e3}.conditional{background:#fff3cd}.fails{background:#fbe1e1}.na{background:#eee}
.error{background:#e8e0f4}.error{background:#ecdcf5}
.footnotes{font-size:.88em}
"""


def _mathtext_svg(latex: str, display: bool) -> str:
    """LaTeX drawn by matplotlib's mathtext as an inline SVG element."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import math_to_image

    buf = io.BytesIO()
    math_to_image(f"${latex}$", buf, prop=FontProperties(size=13 if display else 11), format="svg")
    svg = buf.getvalue().decode()
    svg = svg[svg.index("<svg"):]
    return svg.replace("<svg", f'<svg class="mathtext" role="img" aria-label="{html.escape(latex)}"', 1)


def render_math(latex: str, display: bool) -> str:
    """HTML for one ``$$…$$`` LaTeX formula of an extra section: mathtext SVG."""
    return _mathtext_svg(latex.strip(), display)


def _markdown_it(figures_dir: Path):
    from markdown_it import MarkdownIt
    from mdit_py_plugins.anchors import anchors_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.footnote import footnote_plugin

    md = (MarkdownIt("commonmark", {"html": True})  # the typeset formulas and <sub>/<sup> are HTML
          .enable("table")
          .use(footnote_plugin)
          .use(anchors_plugin, min_level=2, max_level=3, slug_func=_slug)
          .use(dollarmath_plugin, allow_space=True, allow_digits=False, double_inline=True,
               renderer=lambda content, opts: render_math(content, opts.get("display_mode", False))))

    def cell_open(self, tokens, idx, options, env):
        inline = tokens[idx + 1] if idx + 1 < len(tokens) else None
        match = _STATUS_CELL.match(inline.content) if inline is not None and inline.type == "inline" else None
        if match:
            tokens[idx].attrSet("class", STATUS_CLASSES[match.group(1)])
        return self.renderToken(tokens, idx, options, env)

    def image(self, tokens, idx, options, env):
        token = tokens[idx]
        src = token.attrGet("src") or ""
        alt = html.escape(self.renderInlineAsText(token.children or [], options, env))
        path = figures_dir.parent / src
        if src.startswith("figures/") and path.is_file():
            data = base64.b64encode(path.read_bytes()).decode()
            return f'<img alt="{alt}" src="data:image/png;base64,{data}">'
        return f'<span class="missing-figure">[figure {html.escape(src)} was not rendered]</span>'

    md.add_render_rule("td_open", cell_open)
    md.add_render_rule("th_open", cell_open)
    md.add_render_rule("image", image)
    return md


def _slug(title: str) -> str:
    """Heading ids: "Claim 2.1: …" → "claim-2-1"; other headings by their words."""
    m = re.match(r"Claim (\d+)\.(\d+)", title)
    if m:
        return f"claim-{m.group(1)}-{m.group(2)}"
    return re.sub(r"[^\w]+", "-", title.lower()).strip("-")


def render_html(markdown_text: str, figures_dir: Path) -> str:
    """``report.md`` as one self-contained HTML page (figures inlined, maths as MathML/SVG)."""
    body = _markdown_it(Path(figures_dir)).render(markdown_text)
    return ("<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            "<title>fastslow reproduction report</title>"
            f"<style>{STYLE}</style></head><body>\n{body}</body></html>\n")
