"""The reproduction report: ``report.md`` and a self-contained ``report.html`` from the ledger.

One section per claim: statement, assumptions, reconstruction flag, the derivation (the
generated functions' SymPy expressions as LaTeX), the symbolic steps, the numeric
table, the control, any finding, and the figure.  The HTML embeds its figures as
base64 PNG and needs no network.
"""

from __future__ import annotations

import base64
import html
import importlib
from functools import lru_cache
from pathlib import Path

MAX_LATEX = 1500  # longer derivations are shown by name only; the generated module holds them


@lru_cache(maxsize=None)
def _family_functions(family: str) -> dict:
    """A theory family's GenFunctions by name (SymPy work done once per report)."""
    theory = importlib.import_module(f"theory.{family}")
    return {fn.name: fn for fn in theory.generated_functions()}


def derivation_latex(generated: list[str]) -> list[tuple[str, str]]:
    """(qualified name, LaTeX) for each generated function a claim lists, from its SymPy source."""
    import sympy

    out = []
    for qualname in generated:
        module_name, _, fn_name = qualname.rpartition(".")
        family = module_name.rsplit(".", 1)[-1]
        try:
            fns = _family_functions(family)
        except (ImportError, AttributeError):
            continue
        if fn_name in fns:
            tex = sympy.latex(fns[fn_name].expr)
            out.append((qualname, tex if len(tex) <= MAX_LATEX else r"\text{(expression too long to print; see the generated module)}"))
    return out


def _numeric_table_md(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(k)) for k in keys) + " |")
    return lines


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def ledger_table_md(ledger: dict) -> list[str]:
    lines = ["| claim | title | status | symbolic | numeric max error / tolerance | control |",
             "|---|---|---|---|---|---|"]
    for c in ledger["claims"]:
        num = c.get("numeric")
        num_s = f"{num['max_error']:.2e} / {num['tolerance']:.1e}" if num else "–"
        flag = " *(reconstruction)*" if c.get("reconstruction") else ""
        ctl = (c.get("control") or {}).get("status", "–")
        lines.append(f"| {c['id']} | {c['title']}{flag} | **{c['status']}** | "
                     f"{c['symbolic']['proved']}/{c['symbolic']['steps']} | {num_s} | {ctl} |")
    return lines


def render_markdown(ledger: dict, figures_dir: Path, timings: dict[str, float],
                    figure_index: dict[str, list[str]], extra_sections: list[str] = ()) -> str:
    env = ledger["environment"]
    lines = ["# fastslow reproduction report", "",
             "Claims of *Attention is Just Another Name for Coupling? A Fast–Slow ODE Perspective on "
             "Hierarchical Pretraining* (arXiv 2606.16730), checked symbolically (SymPy), at 50 digits "
             "(mpmath), and numerically against random untied Transformer stacks, each beside a negative "
             "control. Definitions marked *(reconstruction)* are THEORY.md's where the paper's could not be "
             "recovered.", "",
             f"Environment: Python {env['python']}, torch {env['torch']}, SymPy {env['sympy']}, device "
             f"{env['device']}; options {ledger.get('options')}.", "", "## Ledger", ""]
    lines += ledger_table_md(ledger)
    lines += ["", "## Timings", "", "| step | seconds |", "|---|---|"]
    lines += [f"| {step} | {sec:.1f} |" for step, sec in timings.items()]
    lines += list(extra_sections)
    for c in ledger["claims"]:
        lines += ["", f"## Claim {c['id']}: {c['title']}", "",
                  f"**Status: {c['status']}**" + (" — *reconstruction*" if c.get("reconstruction") else ""), ""]
        if c["status"] == "skipped":
            lines.append(c.get("detail", ""))
            continue
        lines += [f"**Statement.** {c.get('statement', '')}", ""]
        if c.get("assumptions"):
            lines += ["**Assumptions.**", ""] + [f"- {a}" for a in c["assumptions"]] + [""]
        derivs = derivation_latex(c.get("generated", []))
        if derivs:
            lines += ["**Derivation (generated from SymPy).**", ""]
            for name, tex in derivs:
                lines += [f"`{name}`", "", f"$$ {tex} $$", ""]
        steps = c["symbolic"].get("list", [])
        if steps:
            lines += ["**Symbolic steps.**", ""]
            lines += [f"- {'proved' if s['proved'] else 'NOT proved'} ({s['method']}): {s['name']}"
                      + (f" — {s['detail']}" if s.get("detail") else "") for s in steps]
            lines.append("")
        num = c.get("numeric")
        if num:
            lines += [f"**Numeric check.** {num['cases']} cases, max error {num['max_error']:.3e} against "
                      f"tolerance {num['tolerance']:.3e}. {num.get('detail', '')}", ""]
            lines += _numeric_table_md(num.get("table", []))
            lines.append("")
        ctl = c.get("control")
        if ctl:
            lines += [f"**Negative control** ({c.get('control_name', c.get('control', ''))}): "
                      f"{ctl['status']}. {ctl.get('detail', '')}", ""]
        if c.get("finding"):
            lines += [f"> **Finding.** {c['finding']}", ""]
        if c.get("detail"):
            lines += [f"Detail: {c['detail']}", ""]
        for fig in figure_index.get(c["id"], []):
            lines += [f"![{fig}](figures/{fig}.png)", ""]
    return "\n".join(lines) + "\n"


def render_html(markdown_text: str, figures_dir: Path) -> str:
    """A small, dependency-free Markdown subset to HTML, figures inlined as base64."""
    body = []
    in_list = in_table = False
    for raw in markdown_text.splitlines():
        line = raw.rstrip()
        if in_list and not line.startswith("- "):
            body.append("</ul>")
            in_list = False
        if in_table and not line.startswith("|"):
            body.append("</table>")
            in_table = False
        if line.startswith("# "):
            body.append(f"<h1>{_inline(line[2:])}</h1>")
        elif line.startswith("## "):
            anchor = line[3:].split(":")[0].replace(" ", "-").replace(".", "-").lower()
            body.append(f'<h2 id="{anchor}">{_inline(line[3:])}</h2>')
        elif line.startswith("- "):
            if not in_list:
                body.append("<ul>")
                in_list = True
            body.append(f"<li>{_inline(line[2:])}</li>")
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if all(set(c) <= set("-") and c for c in cells):
                continue
            tag = "th" if not in_table else "td"
            if not in_table:
                body.append("<table>")
                in_table = True
            body.append("<tr>" + "".join(f"<{tag} class='{_status_class(c)}'>{_inline(c)}</{tag}>"
                                          for c in cells) + "</tr>")
        elif line.startswith("$$"):
            body.append(f"<pre class='latex'>{html.escape(line.strip('$ '))}</pre>")
        elif line.startswith("!["):
            name = line[line.index("(") + 1:-1]
            path = figures_dir.parent / name
            if path.exists():
                data = base64.b64encode(path.read_bytes()).decode()
                body.append(f"<img alt='{html.escape(name)}' src='data:image/png;base64,{data}'>")
        elif line.startswith("> "):
            body.append(f"<blockquote>{_inline(line[2:])}</blockquote>")
        elif line:
            body.append(f"<p>{_inline(line)}</p>")
    if in_list:
        body.append("</ul>")
    if in_table:
        body.append("</table>")
    style = ("body{font-family:system-ui,sans-serif;max-width:70em;margin:2em auto;line-height:1.45;padding:0 1em}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;font-size:.92em}"
             "img{max-width:100%;border:1px solid #eee}pre.latex{background:#f6f6f6;padding:.6em;overflow-x:auto;"
             "white-space:pre-wrap}blockquote{border-left:4px solid #d98b00;margin:1em 0;padding:.3em 1em;background:#fff8ec}"
             ".verified,.holds{background:#e3f6e3}.failed,.fails{background:#fbe1e1}.skipped,.n-a{background:#eee}"
             ".conditional{background:#fff3cd}")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>fastslow reproduction report</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _status_class(cell: str) -> str:
    word = cell.strip("* ").lower().replace("/", "-")
    return word if word in ("verified", "failed", "skipped", "holds", "fails", "conditional", "n-a") else ""


def _inline(text: str) -> str:
    import re

    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"\*(.+?)\*", r"<i>\1</i>", text)
    text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
    return text
