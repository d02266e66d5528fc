"""The reproduction report: markdown rendered by markdown-it-py, then drawn in a real browser.

The unit tests pin each way the report can lie about the ledger (a status cell without its
colour, a footnote marker left as text, a table whose rows do not share columns, a ``*``
read as emphasis, ``None`` printed for a quantity that does not exist).  The browser test
renders a report built from real ledger entries (claims 3.1 and 5.1, whose tables hold
missing quantities), a real matrix slice and a real figure in headless Chromium and reads
the page the browser laid out.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from proofs_check.report.document import document as R
from proofs_check.runners.grid import matrix_section

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
LEFTOVER_MATH = re.compile(r"\$[^$\s][^$]*\$")  # a $…$ the page still shows as source


def _html(md: str, tmp_path: Path) -> str:
    return R.render_html(md, tmp_path / "figures")


def test_mixed_rows_become_one_table_each(tmp_path):
    # the shapes of Claim 1.1 (a series, then a constant row) and 6.2 (a row whose columns are empty)
    rows = [{"L": 8, "error": 0.72}, {"L": 16, "error": 0.36},
            {"scalar C (derived)": 1.0304, "Richardson estimate": 1.0304, "rel. error": 6e-7},
            {"P": None, "dist_to_p_st": None, "generated_vs_mpmath": 2.2e-16}]
    md = "\n".join(R.numeric_tables_md(rows))
    page = _html(md, tmp_path)
    assert page.count("<table>") == 3
    assert "None" not in md and "None" not in page
    assert "<th>generated_vs_mpmath</th>" in page and "<th>P</th>" not in page  # empty columns dropped


def test_missing_quantity_is_a_dash_with_a_legend(tmp_path):
    rows = [{"c": 0, "measured ℓ*": None, "bound": None}, {"c": 20, "measured ℓ*": 3, "bound": 652}]
    md = "\n".join(R.numeric_tables_md(rows))
    assert "None" not in md and f"| 0 | {R.MISSING} | {R.MISSING} |" in md
    assert "does not exist for that row" in md


def test_ledger_text_is_literal(tmp_path):
    title = "Gate bound: below g* the product never expands; θ_ℓ and |x| and [1, 2] and $5"
    page = _html(R.md_escape(title), tmp_path)
    assert "<em>" not in page and "g*" in page and "θ_ℓ" in page and "|x|" in page and "[1, 2]" in page
    assert "$5" in page and 'class="math' not in page


def test_status_cells_are_coloured_and_footnotes_render(tmp_path):
    matrix = {"options": {"quick": True, "archs": ["preln", "looped"], "claims": ["1.2", "6.1"]},
              "cells": [{"claim": "1.2", "arch": "preln", "status": "holds", "condition": None,
                         "evidence": {"numeric": {"cases": 2, "max_error": 3.1e-16}}, "counterexample": None},
                        {"claim": "1.2", "arch": "looped", "status": "conditional", "condition": "g_ℓ* small",
                         "evidence": {}, "counterexample": None},
                        {"claim": "6.1", "arch": "preln", "status": "fails", "condition": None,
                         "evidence": {}, "counterexample": {"seed": 3, "value": None}},
                        {"claim": "6.1", "arch": "looped", "status": "n/a", "condition": "token-rate claim",
                         "evidence": {}, "counterexample": None}]}
    md = "\n".join(matrix_section(matrix))
    page = _html(md, tmp_path)
    for cls in ("holds", "conditional", "fails", "na"):
        assert f'<td class="{cls}">' in page
    assert "[^" not in page and page.count('class="footnote-item"') == 4
    assert "None" not in page and "(cases = 2, max_error = 3.1e-16)" in page


def test_fenced_code_and_maths(tmp_path):
    md = "```\ndepth_flow: ok\n```\n\n$$\n\\frac{a}{b}\n$$\n"
    page = _html(md, tmp_path)
    assert "<pre><code>depth_flow: ok" in page and "```" not in page
    assert "<svg" in page and "\\frac" not in page.split("aria-label")[0]  # mathtext drew it


def test_derivation_is_mathml_of_the_expression():
    from theory.coarse_graining import generated_functions

    name = generated_functions()[0].name
    d = R.derivations([f"numerics.generated.coarse_graining.{name}"])[0]
    assert R.render_math(d.latex, True) == f'<math display="block">{d.mathml}</math>'
    assert "<mi>" in d.mathml or "<mn>" in d.mathml


# ----------------------------------------------------------------------------- in a browser
@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    from proofs_check.runners.check import run_checks
    from proofs_check.report.figures import render
    from numerics.io import write_json
    from proofs_check.claims.evidence import CheckContext
    from proofs_check.runners.grid import run_matrix

    out = tmp_path_factory.mktemp("report")
    claims = ["3.1", "5.1"]
    ledger = run_checks(claims, progress=False)
    matrix = run_matrix(only_arch=["preln", "looped"], claims=claims, ledger=ledger)
    write_json(out / "cache" / "matrix.json", matrix)
    render(["mode_products", "claims_matrix"], CheckContext(cache_dir=str(out / "cache")), out / "figures",
           formats=("png",))
    # the generated-code section as reproduce writes it: a heading and derive's text in a fenced block
    extra = (["", "## Generated code", "", "```", "coarse_graining: numerics/generated/coarse_graining.py ok", "```", ""]
             + matrix_section(matrix, figures=["claims_matrix"]))
    md = R.render_markdown(ledger, out / "figures", {"check claims": 1.0, "report": 0.5},
                           {"3.1": ["mode_products"]}, extra_sections=extra)
    (out / "report.md").write_text(md)
    (out / "report.html").write_text(R.render_html(md, out / "figures"))
    return out


PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const maths = [...document.querySelectorAll('math, svg.mathtext')];
  const out = {
    text: document.body.innerText,
    images: imgs.length,
    loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
    maths: maths.length,
    drawn: maths.filter(m => m.getBoundingClientRect().width > 0).length,
    coloured: document.querySelectorAll('td.holds, td.conditional, td.fails, td.na').length,
    footnotes: document.querySelectorAll('li.footnote-item').length,
  };
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script></body>"""


def _browser_probe(html_path: Path, tmp_path: Path) -> dict:
    probed = tmp_path / "probed.html"
    probed.write_text(html_path.read_text().replace("</body>", PROBE, 1))
    dom = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--virtual-time-budget=10000", "--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    match = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert match, "the browser did not run the page's probe"
    import html

    return json.loads(html.unescape(match.group(1)))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; "
                                             ".ci/run installs it where apt is available)")
def test_report_in_headless_chromium(report_dir, tmp_path):
    probe = _browser_probe(report_dir / "report.html", tmp_path)
    text = probe["text"]
    assert "[^" not in text, "a footnote marker is left as text"
    assert not re.search(r"\bNone\b", text), "a literal None is shown"
    assert not LEFTOVER_MATH.search(text), f"unrendered maths: {LEFTOVER_MATH.search(text).group(0)[:80]}"
    assert "```" not in text
    assert probe["images"] == 2 and probe["loaded"] == 2, probe  # mode_products and claims_matrix
    assert probe["maths"] > 0 and probe["drawn"] == probe["maths"], probe
    # the summary's status and ledger cells of 2 claims, two ledger status cells, 2 claims × 2 architectures
    assert probe["coloured"] == 2 * 2 + 2 + 4 and probe["footnotes"] == 4, probe
    # the figure of the matrix sits under the matrix, not under a claim
    assert text.index("Claims × architectures") < text.index("claims_matrix") < text.index("Claim 3.1:")
