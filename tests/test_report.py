"""The reproduction report reads like a paper, and says what the ledger says.

Printer unit tests: each ``_print_X`` of ``proofs_check.report.latex.PaperLatexPrinter`` on a
small expression, against the notation of docs/theory.md written out by hand in LaTeX (Π⁺,
I − 11ᵀ/d, diag(γ), G_{≤ℓ−1}(λ), decimals, an entrywise map named below the formula).  Page tests: a report rendered from a
small canned ledger and grid (two claims whose derivations are the real theory expressions)
shows no SymPy names, no serialised records, the claims summary before the first
derivation and the conditions table; the unit tests of the markdown pin each way a table or
status cell could lie.  The browser test reads the page headless Chromium laid out.
"""

from __future__ import annotations

import html as html_lib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import sympy as sp
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction

from proofs_check.report import document as R
from proofs_check.report.conditions import conditions_rows, grid_section
from proofs_check.report.prose import prose
from proofs_check.report.latex import PaperLatexPrinter, lhs_latex, symbol_latex
from proofs_check.report.typeset import typeset

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
LEFTOVER_MATH = re.compile(r"\$[^$\s][^$]*\$")  # a $…$ the page still shows as source

d, x, y, a = sp.symbols("d x y a")
A, B = sp.MatrixSymbol("A", d, d), sp.MatrixSymbol("B", d, d)
z = sp.MatrixSymbol("z", d, 1)


def show(expr) -> str:
    return PaperLatexPrinter().doprint(expr)


# ----------------------------------------------------------------------------- the LaTeX printer, node by node
@pytest.mark.parametrize("name, expected", [
    ("Pi_plus", r"\Pi^{+}"), ("W_VO", r"W_{\mathrm{VO}}"), ("x0", "x_{0}"), ("H_ij", "H_{ij}"),
    ("sigma2", r"\sigma^{2}"), ("tbar", r"\bar{t}"), ("norm_G", r"\lVert G_{\ell}(\lambda) \rVert"),
    ("norm_y_next", r"\lVert y_{\ell+1} \rVert"), ("lam", r"\lambda"), ("Delta", r"\Delta"),
    ("a_min", r"a_{\min}"), ("gamma1", r"\gamma_{1}"), ("G_prev", r"G_{\le \ell-1}(\lambda)"),
    ("gf1", "g' f_{1}"), ("FF", "F' F"), ("norm_decaying", r"\lVert G_{\le \ell}(\lambda) \rVert")])
def test_symbols_print_in_the_papers_notation(name, expected):
    assert symbol_latex(name) == expected
    assert show(sp.Symbol(name)) == expected
    assert show(sp.MatrixSymbol(name, 3, 3)) == expected


def test_a_familys_own_symbol():
    # §3's mode product: G is G_ℓ(λ) there, so G·G_prev reads G_ℓ(λ) G_{≤ℓ−1}(λ)
    G, G_prev = sp.MatrixSymbol("G", d, d), sp.MatrixSymbol("G_prev", d, d)
    assert PaperLatexPrinter(family="coarse_graining").doprint(G * G_prev) == \
        r"G_{\ell}(\lambda) G_{\le \ell-1}(\lambda)"
    assert show(G * G_prev) == r"G G_{\le \ell-1}(\lambda)"


@pytest.mark.parametrize("expr, expected", [
    (sp.Identity(d) - sp.OneMatrix(d, d) / d, r"I - \frac{1}{d} \mathbf{1}\mathbf{1}^{\top}"),
    (sp.OneMatrix(d, 1), r"\mathbf{1}"), (z * z.T, r"z {z}^{\top}"), (sp.Transpose(A * B), r"{\left(A B\right)}^{\top}"),
    (sp.DiagMatrix(z), r"\operatorname{diag}\left(z\right)"), (sp.MatrixSymbol("G", 2, 2)[0, 1], "{G}_{12}"),
    (sp.Matrix([[x]]), "x"), (sp.loggamma(x + 1), r"\log\Gamma\left(x + 1\right)")])
def test_print_matrix_and_function_nodes(expr, expected):
    assert show(expr) == expected


@pytest.mark.parametrize("value, expected", [
    (sp.Rational(8943, 200000), "0.044715"),   # GELU's constant, written as a decimal in the source
    (sp.Rational(3, 20), r"\frac{3}{20}"), (sp.Rational(1, 125), r"\frac{1}{125}"), (sp.S.Half, r"\frac{1}{2}")])
def test_decimal_constants_print_as_decimals(value, expected):
    assert typeset(value).latex == expected


@pytest.mark.parametrize("doc, expected", [
    ("r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖/‖G_{≤ℓ}(1)‖ from the two norms.", r"r_{\ell}(\lambda)"),
    ("ρ̃_ℓ = ‖G_ℓ(λ)‖ ‖y_ℓ‖/‖y_{ℓ+1}‖, y_{ℓ+1} = G_ℓ(1) y_ℓ", r"\tilde{\rho}_{\ell}"),
    ("Q = Π⁺Π: the projector onto block-constant token patterns.", r"Q"),
    ("⌈log(τ/κ)/log ρ⌉: the computable bound", None), ("exp(S/N) = |det …|", None),
    ("MᵀΠ⁺ − Π⁺M_cᵀ: the dual form of ΠM = M_cΠ.", None)])
def test_a_docstring_names_the_left_hand_side(doc, expected):
    assert lhs_latex(doc) == expected


def test_derivation_prints_as_an_equation_in_mathml():
    f = typeset(sp.MatrixSymbol("G", d, d) * sp.MatrixSymbol("G_prev", d, d),
                doc="G_{≤ℓ}(λ) = G_ℓ(λ) G_{≤ℓ−1}(λ): one step of the mode product.", family="coarse_graining")
    assert f.latex == r"G_{\le \ell}(\lambda) = G_{\ell}(\lambda) G_{\le \ell-1}(\lambda)"
    block = f.block()
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in block
    assert "G_prev" not in block and "<mo>&#x0003D;</mo>" in block


def test_elementwise_map_is_named_below_the_formula():
    t = sp.Dummy("d")
    f = typeset(ElementwiseApplyFunction(sp.Lambda(t, sp.exp(-t * sp.Symbol("Delta"))), z))
    assert f.latex == r"\varphi\left(z\right)"
    assert f.where == ((r"\varphi(y)", r"e^{- \Delta y}\text{, entrywise}"),)


def test_repeated_long_subexpression_becomes_a_definition():
    sigma = sp.sqrt(sp.Symbol("eps") + sp.Trace(A * B * A.T * B.T) / d + sp.Trace(A) * sp.Trace(B))
    f = typeset(A / sigma + B / sigma)
    assert [name for name, _ in f.where] == [r"\xi_{1}"]
    assert f.latex == r"\frac{1}{\sqrt{\xi_{1}}} A + \frac{1}{\sqrt{\xi_{1}}} B"


def test_layer_norm_jacobian_reads_as_notation():
    # J_LN(z) = diag(γ)/σ (P − P z zᵀ P/(dσ²)), σ² = ε + ‖Pz‖²/d, P = I − 11ᵀ/d, built as theory/factorisation.py does
    P = sp.Identity(d) - sp.OneMatrix(d, d) / d
    var = sp.Symbol("eps") + sp.Trace(P * z * z.T * P) / d
    f = typeset(sp.DiagMatrix(sp.MatrixSymbol("gamma", d, 1)) * (P - P * z * z.T * P / (d * var)) / sp.sqrt(var))
    centre = r"I - \frac{1}{d} \mathbf{1}\mathbf{1}^{\top}"
    assert f.latex == (r"\frac{1}{\sqrt{\xi_{1}}} \operatorname{diag}\left(\gamma\right) \left(" + centre
                       + r" - \frac{1}{d \xi_{1}} \left(" + centre + r"\right) z {z}^{\top} \left(" + centre
                       + r"\right)\right)")
    assert f.where[0][0] == r"\xi_{1}" and r"\varepsilon + " in f.where[0][1]


@pytest.mark.parametrize("text, expected", [
    ("J_LN(z) = diag(γ)/σ", "J<sub>LN</sub>(z) = diag(γ)/σ"),
    ("x**2 and a^{n+1} and b^(-1)", "x² and a<sup>n+1</sup> and b⁻¹"),
    ("θ_ℓ and W_VO", "θ<sub>ℓ</sub> and W<sub>VO</sub>"),
    ("g* and |x| and [1, 2]", "g\\* and \\|x\\| and \\[1, 2\\]"),        # a pair is an interval
    ("row [1/4, -1/4, 0, 0] and arch='postln'", "row (1/4, −1/4, 0, 0) and arch postln"),  # a vector, no repr
    ("A − QAQ = 0: True; ℓ* None vs None", "A − QAQ = 0; ℓ\\* none vs none"),     # no Python words
    ("ρ = 54981769109387232.00, error 9.99e-16", "ρ \\> 10¹⁵ (vacuous), error 9.99\u202f×\u202f10⁻¹⁶"),
    ("h * k", "h · k"),
    ("Pi_plus and decay 2, ln_gain 0.2", "Π⁺ and decay 2, `ln_gain` 0.2"),  # a parameter name is code
    ("x̄_{b−1}", "x̄<sub>b−1</sub>"), ("1_d", "1<sub>d</sub>"),
    ("-lam*x**2*(lam - 1)/2 and g*_norm", "-lam·x²·(lam - 1)/2 and g\\*<sub>norm</sub>"),
    ("see out/cache/trained_stacks/x and (numerics/families/saturation_quotient.py)",
     "see out/cache/trained\\_stacks/x and (numerics/families/saturation\\_quotient.py)"),
    ("‖G_ℓ(λ)‖/σ_min(G)", "‖G<sub>ℓ</sub>(λ)‖/σ<sub>min</sub>(G)"),
    ("W_Q/W_K and g*_norm/g*_Jury", "W<sub>Q</sub>/W<sub>K</sub> and g\\*<sub>norm</sub>/g\\*<sub>Jury</sub>")])
def test_prose(text, expected):
    assert prose(text) == expected


def test_escaped_ledger_text_of_other_sections_reads_as_prose():
    md = R._scripts("the null direction 1\\_d and x̄\\_ℓ, knob value\\_scale\n```\nraw a_b\n```\n")
    assert md == "the null direction 1<sub>d</sub> and x̄<sub>ℓ</sub>, knob `value_scale`\n```\nraw a_b\n```\n"


# ----------------------------------------------------------------------------- a canned report
def _claim(cid, title, generated, finding=None):
    return {"id": cid, "title": title, "status": "verified", "kind": "identity", "setting": "paper",
            "standing": "holds as stated", "headline": f"{title}, exact at the reference",
            "statement": "At X = 1x̄ᵀ the Jacobian factorises as A ⊗ G_ℓ with Π_plus the pseudo-inverse.",
            "assumptions": ["pre-LN stack with h**2 small"], "generated": generated,
            "symbolic": {"proved": 1, "steps": 1, "list": [{"name": "G_ℓ(λ) is affine in λ", "proved": True,
                                                             "method": "sympy.simplify", "detail": ""}]},
            "numeric": {"cases": 2, "max_error": 3.1e-16, "tolerance": 1e-12, "detail": "float64",
                        "table": [{"T": 4, "error": 3.1e-16}, {"T": 8, "error": None}]},
            "control": {"status": "fails-as-predicted", "detail": "a non-constant X breaks it"},
            "finding": finding}


# derivations from the cheap theory families (theory/factorisation.py takes about a minute to derive)
LEDGER = {"claims": [_claim("2.1", "Jacobian factorisation", ["numerics.generated.architectures.postln_mode_block",
                                                              "numerics.generated.architectures.looped_mode_block"]),
                     _claim("3.2", "Coarse graining", ["numerics.generated.coarse_graining.block_projector"])],
          "environment": {"python": "3.11"}, "options": {"quick": True}}

MATRIX = {"options": {"quick": True, "archs": ["preln", "looped", "mhc"], "claims": ["2.1", "3.2"]},
          "cells": [{"claim": "2.1", "arch": "preln", "status": "holds", "condition": None,
                     "evidence": {"numeric": {"cases": 2, "max_error": 3.1e-16}}, "counterexample": None},
                    {"claim": "2.1", "arch": "looped", "status": "conditional", "condition": "g_ℓ small",
                     "evidence": {"error": 0.1}, "counterexample": None},
                    {"claim": "2.1", "arch": "mhc", "status": "conditional", "condition": "g_ℓ small",
                     "evidence": {}, "counterexample": None},
                    {"claim": "3.2", "arch": "preln", "status": "fails", "condition": None,
                     "evidence": {"error": [1.0, 2.0]}, "counterexample": {"seed": 3, "value": None}},
                    {"claim": "3.2", "arch": "looped", "status": "n/a", "condition": "token-rate claim",
                     "evidence": {}, "counterexample": None},
                    {"claim": "3.2", "arch": "mhc", "status": "holds", "condition": None,
                     "evidence": {}, "counterexample": None}]}


def _figure(folder: Path, name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [0, 1])
    fig.savefig(folder / f"{name}.png", dpi=40)
    plt.close(fig)


@pytest.fixture(scope="module")
def canned(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    _figure(out / "figures", "claims_matrix")
    extra = grid_section(MATRIX, figures=["claims_matrix"]) + ["", "## Generated code", "", "```", "ok", "```"]
    md = R.render_markdown(LEDGER, out / "figures", {"check claims": 1.0}, {}, extra_sections=extra)
    page = R.render_html(md, out / "figures")
    (out / "report.html").write_text(page)
    return out, md, page


def _text(page: str) -> str:
    """The HTML's text as a reader sees it (tags dropped, entities decoded, images' data left out)."""
    body = re.sub(r"<style>.*?</style>", "", page, flags=re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", body))


def test_no_sympy_names_operators_or_records(canned):
    _, md, page = canned
    text = _text(page)
    for raw in ("_plus", "**", "Symbol(", "Matrix(", "MatrixSymbol", "DiagMatrix", "OneMatrix", "numerics.generated",
                "\\mathbb", "^{", "Pi_plus", "G_ℓ", "W_VO"):
        assert raw not in text, raw
    assert not re.search(r"\{'|\['|': |\bNone\b|\[\^", text), "a serialised record or footnote marker is shown"
    assert page.count('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">') == 3
    assert "\\frac" not in text and "\\left" not in text and "entrywise" in text  # LaTeX drawn, not shown
    assert "<msup><mi>&#x003A0;</mi><mrow><mo>&#x0002B;</mo></mrow></msup>" in page  # Π⁺ as a superscript


def test_summary_comes_before_the_first_derivation(canned):
    _, _, page = canned
    text = _text(page)
    assert text.index("Summary") < text.index("holds as stated") < text.index("Derivation.")
    assert text.index("Claims × architectures") > text.index("Claim 3.2:")  # the body, then the other runs
    assert text.index("Appendix: the ledger") > text.index("Generated code")


def test_formulas_are_captioned_by_what_they_compute(canned):
    _, _, page = canned
    captions = re.findall(r'<div class="caption">(.*?)</div>', page)
    assert len(captions) == 3
    assert "G<sub>post</sub>(λ) = J₂(I + hM)J₁" in captions[0] and "W<sub>VO</sub>ᵀ" in captions[0]
    assert captions[2].startswith("Q = Π⁺Π, the projector")


def test_conditions_table_replaces_the_footnotes(canned):
    _, md, page = canned
    assert "Conditions" in page and 'class="footnote-item"' not in page
    rows = conditions_rows(MATRIX)
    assert rows == [("2.1", "conditional", "g_ℓ small", ["looped", "mhc"]),
                    ("3.2", "fails", "a counterexample was found (seed 3), recorded in matrix.json", ["preln"]),
                    ("3.2", "n/a", "token-rate claim", ["looped"])]
    assert "| 2.1 | **conditional** | looped, mhc | g<sub>ℓ</sub> small |" in md
    for cls in ("holds", "conditional", "fails", "na"):
        assert f'<td class="{cls}">' in page


def test_a_cache_path_in_a_reason_reads_as_what_it_means():
    from proofs_check.report.conditions import _reason

    cell = {"status": "n/a", "condition": "the check varies the stack beyond one checkpoint's shape: checkpoint "
            "out/cache/trained_stacks/preln-d16-L3-seed0-8c2d does not fit this stack: no tensor stack.layers.3.attn.W_K"}
    text = _reason(cell)
    assert "cache/" not in text and "stack.layers" not in text and "different shape" in text


def test_figures_are_numbered_in_page_order(canned):
    _, md, _ = canned
    assert "*Figure 1. " in md and "claims_matrix`" not in md


# ----------------------------------------------------------------------------- markdown details
def _html(md: str, tmp_path: Path) -> str:
    return R.render_html(md, tmp_path / "figures")


def test_mixed_rows_become_one_table_each(tmp_path):
    # the shapes of Claim 1.1 (a series, then a constant row) and 6.2 (a row whose columns are empty)
    rows = [{"L": 8, "error": 0.72}, {"L": 16, "error": 0.36},
            {"scalar C (derived)": 1.0304, "Richardson estimate": 1.0304, "rel. error": 6e-7},
            {"P": None, "dist_to_p_st": None, "generated_vs_mpmath": 2.2e-16}]
    md = R._scripts("\n".join(R.numeric_tables_md(rows)))  # as render_markdown sets the page
    page = _html(md, tmp_path)
    assert page.count("<table>") == 3
    assert "None" not in md and "None" not in page
    assert "<th>generated vs mpmath</th>" in page and "<th>P</th>" not in page  # declared label; empty columns dropped
    assert "<td>2.2\u202f×\u202f10⁻¹⁶</td>" in page  # a magnitude that cannot wrap at its minus sign


def test_missing_quantity_is_a_dash_with_a_legend(tmp_path):
    rows = [{"c": 0, "measured ℓ*": None, "bound": None}, {"c": 20, "measured ℓ*": 3, "bound": 652}]
    md = "\n".join(R.numeric_tables_md(rows))
    assert "None" not in md and f"| 0 | {R.MISSING} | {R.MISSING} |" in md
    assert "does not exist for that row" in md


def test_ledger_text_is_literal(tmp_path):
    title = "Gate bound: below g* the product never expands; |x| and [1, 2] and $5 and <b>"
    page = _html(R.md_escape(title), tmp_path)
    assert "<em>" not in page and "g*" in page and "|x|" in page and "[1, 2]" in page
    assert "$5" in page and 'class="math' not in page and "&lt;b&gt;" in page


def test_fenced_code_and_maths(tmp_path):
    md = "```\ndepth_flow: ok\n```\n\n$$\n\\frac{a}{b}\n$$\n"
    page = _html(md, tmp_path)
    assert "<pre><code>depth_flow: ok" in page and "```" not in page
    assert "<svg" in page and "\\frac" not in page.split("aria-label")[0]  # mathtext drew it


# ----------------------------------------------------------------------------- in a browser
PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const formulas = [...document.querySelectorAll('div.formula')];
  const out = {
    text: document.body.innerText,
    images: imgs.length,
    loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
    formulas: formulas.length,
    drawn: formulas.filter(m => m.getBoundingClientRect().width > 0).length,
    wrapped: formulas.filter(m => m.scrollWidth <= m.clientWidth + 1).length,
    coloured: document.querySelectorAll('td.holds, td.conditional, td.fails, td.na').length,
    maths: document.querySelectorAll('math').length,
    mathsDrawn: [...document.querySelectorAll('math')].filter(m => {
      const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length,
  };
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script></body>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; "
                                             ".ci/run installs it where apt is available)")
def test_report_in_headless_chromium(canned, tmp_path):
    out, _, _ = canned
    probed = tmp_path / "probed.html"
    probed.write_text((out / "report.html").read_text().replace("</body>", PROBE, 1))
    dom = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--window-size=800,2000", "--virtual-time-budget=10000", "--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    match = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert match, "the browser did not run the page's probe"
    probe = json.loads(html_lib.unescape(match.group(1)))
    text = probe["text"]
    assert "[^" not in text and not re.search(r"\bNone\b", text) and "```" not in text
    assert not LEFTOVER_MATH.search(text)
    assert "_plus" not in text and "**" not in text and "Π⁺" in text
    assert probe["images"] == 1 and probe["loaded"] == 1, probe
    assert probe["formulas"] == 3 and probe["drawn"] == 3 and probe["wrapped"] == 3, probe  # no formula overflows
    # summary: status and ledger cells of 2 claims; grid: 6 cells; conditions: 3 status cells; ledger: 2
    assert probe["coloured"] == 2 * 2 + 6 + 3 + 2, probe
    maths = (out / "report.html").read_text().count("<math ")  # 3 formulas and the where-definition of φ
    assert probe["maths"] == maths == 4 and probe["mathsDrawn"] == maths, probe  # MathML laid out natively
    assert text.index("Abstract") < text.index("Contents") < text.index("Summary") < text.index("Claim 2.1:") \
        < text.index("Conditions")


#: the report's sections shown in docs/report/ (file name → heading id, window height in px)
SCREENSHOTS = {"1-abstract.png": (None, 1100), "2-derivation.png": ("claim-3-1", 1100),
               "3-conditions.png": ("conditions", 1100), "4-figure.png": ("claim-2-2", 1900)}


def section_page(page: str, anchor: str | None) -> str:
    """The report cut to the section under heading ``anchor`` (the whole page's start for None)."""
    if anchor is None:
        return page
    head, body = page.split("<body>", 1)
    start = body.index(f'id="{anchor}"')
    start = body.rindex("<h", 0, start)
    end = body.find("<h2", start + 4)
    return f"{head}<body>\n{body[start:end if end > 0 else None]}</body></html>\n"


@pytest.mark.skipif(CHROMIUM is None or not os.environ.get("FASTSLOW_SCREENSHOTS"),
                    reason="set FASTSLOW_SCREENSHOTS=DIR (and FASTSLOW_REPORT=out/report.html) to draw the screenshots")
def test_screenshots_of_the_report(tmp_path):
    """``FASTSLOW_SCREENSHOTS=docs/report FASTSLOW_REPORT=out/report.html pytest tests/test_report.py -k screenshots``:
    the report's first screen, a derivation, the conditions table and a figure, as headless Chromium draws them."""
    page = Path(os.environ.get("FASTSLOW_REPORT", "out/report.html")).read_text()
    folder = Path(os.environ["FASTSLOW_SCREENSHOTS"])
    for name, (anchor, height) in SCREENSHOTS.items():
        cut = tmp_path / f"{name}.html"
        cut.write_text(section_page(page, anchor))
        subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--hide-scrollbars", f"--window-size=1280,{height}", "--virtual-time-budget=10000",
                        f"--screenshot={folder / name}", cut.as_uri()], capture_output=True, timeout=180, check=True)
        assert (folder / name).stat().st_size > 20_000, f"{name}: a blank page"


# ----------------------------------------------------------------------------- no Python reprs reach a reader
REPR = re.compile(r"\b(None|True|False)\b"                       # Python's constants
                  r"|\[(?![-+−]?[\d.]+, [-+−]?[\d.]+\])[^\]\n]*,[^\]\n]*\]"  # a list literal (an interval [a, b] is maths)
                  r"|\{['\"]"                                    # a dict literal
                  r"|(?<![\w])'[A-Za-z_]\w*'(?![\w])"             # a quoted name (a quoted phrase is prose)
                  r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")          # a snake_case key


def python_reprs(page: str) -> list[str]:
    """What of ``page`` (HTML) reads as Python: outside code, file paths and maths."""
    body = re.sub(r"<(style|code|pre|math|script)\b.*?</\1>", " ", page, flags=re.S)
    text = html_lib.unescape(re.sub(r"<[^>]+>", " ", body))
    text = re.sub(r"[\w./-]*/[\w./-]+|\b[\w-]+\.(?:json|md|py|png|toml)\b", " ", text)  # paths and file names
    return [m.group(0) for m in REPR.finditer(text)]


def test_the_scanner_finds_each_kind_of_repr():
    page = "<p>ℓ* None vs None; kept True; ['W1', 'alpha']; {'causal': 1}; rel_error; 'causal'; [0.1, 0.2]</p>"
    assert python_reprs(page) == ["None", "None", "True", "['W1', 'alpha']", "{'", "rel_error", "'causal'"]
    assert python_reprs("<p>see <code>value_scale</code> in docs/sweeps.md and matrix.json</p>") == []


def test_no_python_repr_in_the_report(canned, tmp_path):
    _, md, page = canned
    assert python_reprs(page) == []
    rows = [{"T": 4, "kernel": "causal", "rel_error": 2.2e-16, "r_last": [0.91, 0.89], "bound vacuous": True,
             "paper layer rel. error": {"causal": 4e-16, "full": 4.3e-16}, "ℓ*": None, "ρ": 5.5e16}]
    table = R.render_html(R._scripts("\n".join(R.numeric_tables_md(rows))), tmp_path / "figures")
    assert python_reprs(table) == [], table
    assert "> 10¹⁵" in html_lib.unescape(table) and "0.91, 0.89" in table and "rel. error" in table


def test_no_python_repr_in_the_printed_ledger():
    from proofs_check.runners.check import format_table

    text = format_table(LEDGER)  # what `fastslow check` prints: the summary, then the mechanical ledger
    assert "holds as stated" in text and python_reprs(html_lib.escape(text)) == [], text
