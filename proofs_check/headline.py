"""The headline: an abstract of the ledger, the claims table and the real-Transformer bullets, generated.

Every sentence is built from a record: the ledger JSON (``fastslow check --json docs/ledger.json``) and the
committed measurement files under docs/ (docs/reach/*.json, docs/trained/*.json, the performance log
docs/timings.json).  A number that is in no record is not written.  ``python -m proofs_check.headline --write
FILE`` rewrites every generated section FILE has, each between ``<!-- generated:NAME -->`` and
``<!-- /generated:NAME -->``: ``claims`` (README.md: abstract, claims table, real-Transformer bullets),
``timings`` (README.md: the timing sentences) and ``summary`` (docs/claims.md: ``fastslow check --summary``'s
table); ``--check FILE`` exits 1 when one of them is stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from proofs_check.verdicts.vocabulary import Decision, Standing

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LEDGER = DOCS / "ledger.json"
BEGIN, END = "<!-- generated:claims -->", "<!-- /generated:claims -->"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
NEGATIVE = ((Standing.FAILS, "Fail in the paper's setting"),
            (Standing.ABSENT, "Absent in the paper's setting (the effect is not there)"),
            (Standing.VACUOUS, "Vacuous in the paper's setting (the bound cannot bind)"))


def _record(name: str) -> dict | None:
    path = DOCS / name
    return json.loads(path.read_text()) if path.is_file() else None


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _ids(records) -> str:
    return ", ".join(r["id"] for r in records)


def _by_standing(ledger: dict, standing: str) -> list[dict]:
    return [c for c in ledger["claims"] if c.get("standing") == standing]


def _measured(record: dict) -> str:
    m = record.get("measurement")
    return f"{record['id']} ({m['short']})" if m else record["id"]


def abstract_lines(ledger: dict) -> list[str]:
    """The ledger in 5–8 lines: what holds, what fails or is absent or vacuous in the paper's setting (with
    the measured number), what was rebuilt, what reaches real stacks and what does not.  Built from the
    ledger's records and the committed measurement files; a line with nothing to say is left out."""
    from proofs_check.verdicts.standing import PAPER_SETTING

    claims = ledger["claims"]
    holds = _by_standing(ledger, Standing.HOLDS)
    identities = [c for c in holds if c.get("kind") == "identity"]
    lines = [f"{len(claims)} claims, each judged by what its check measured in the paper's setting ({PAPER_SETTING})."]
    if holds:
        text = f"Hold as stated: {_ids(holds)}"
        if identities:
            text += (f"; {_ids(identities)} are identities, exact at their reference for any weights, so their pass "
                     "is no evidence about trained Transformers")
        lines.append(text + ".")
    for standing, verb in NEGATIVE:
        records = _by_standing(ledger, standing)
        if records:
            lines.append(f"{verb}: " + "; ".join(_measured(c) for c in records) + ".")
    conditional = _by_standing(ledger, Standing.CONDITIONAL)
    if conditional:
        lines.append("Hold only under a condition the paper does not state: "
                     + "; ".join(f"{c['id']} ({c.get('condition') or 'named in the ledger'})" for c in conditional)
                     + ".")
    rebuilt = _by_standing(ledger, Standing.RECONSTRUCTION)
    if rebuilt:
        lines.append(f"Rebuilt (docs/theory.md reconstructs the definition, so the paper's own statement is not what "
                     f"was checked): {_ids(rebuilt)}.")
    reach = _reach_line()
    if reach:
        lines.append(reach)
    broken = [c for c in claims if c.get("status") in (Decision.ERROR, Decision.FAILED, Decision.SKIPPED)]
    if broken:
        lines.append("No evidence either way: " + "; ".join(f"{c['id']} {c['status']}" for c in broken) + ".")
    return lines


def _reach_line() -> str | None:
    """What reaches real stacks: the identities on the trained GPT-2 import, and their miss at text's spreads."""
    check, reach = _record("trained/gpt2-bytes-check.json"), _record("trained/gpt2-bytes-reach.json")
    if check is None or reach is None:
        return None
    free = check["imports"]["matrix-free"]["claims"]
    holding = [c["id"] for c in free if c["status"] == "holds"]
    return (f"On a GPT-2 trained on bytes and imported ({_record_size(check)}), {', '.join(holding)} hold at the "
            f"token-homogeneous reference; at the spreads its text produces (s ≈ {reach['text_spread']:.2f}) the "
            f"factorised J·V misses by {_pct(reach['text_error_mean'])} on average, so the identities do not reach the "
            "states a trained model runs on.")


def _record_size(check: dict) -> str:
    return f"T = {check['imports']['matrix-free']['T']}, docs/trained/gpt2-bytes-check.json"


def claims_table(ledger: dict) -> list[str]:
    """The claims table: id, kind, standing, the ledger's word, the measurement in the paper's setting."""
    from proofs_check.tables import bold, markdown_table
    from proofs_check.verdicts.standing import ledger_word

    rows = [(c["id"], c.get("kind") or "—", bold(c.get("standing") or "—"), bold(str(ledger_word(c))),
             (c.get("measurement") or {}).get("short", "").replace("|", "\\|") or "—") for c in ledger["claims"]]
    return markdown_table(("claim", "kind", "standing", "ledger", "measured in the paper's setting"), rows)


LEGEND = ("*identity*: exact at its reference for any weights, so a pass is no evidence about Transformers; "
          "*lemma*: a fact about a model system; *prediction*: could fail on a stack; *experiment*: depends on "
          "data. *standing*: set by the check's measurement in the paper's setting (the last column). *ledger*: "
          "the mechanical decision in the claim's setting. Settings and findings: [docs/claims.md](docs/claims.md) "
          "(`fastslow check --summary FILE`); this section: `python -m proofs_check.headline --write README.md` "
          "from docs/ledger.json (`fastslow check --json docs/ledger.json`) and the records under docs/.")


#: What a checkpoint verdict's ``error`` is, per claim, where it is not a relative miss of the factorised form.
MEASURE_TEXT = {
    "1.1": "layer-to-layer change {err:.2f}; an Euler path needs ≤ h = {tol:g}",
    "2.2": "token spread {err:.2f}; the conditions need 0",
}


def _measure(claim_id: str, verdict: dict) -> str:
    """A judged number on a checkpoint, in words: a relative miss as a percentage against its rounding
    tolerance, or the quantity :data:`MEASURE_TEXT` names."""
    err, tol = verdict["error"], verdict["tolerance"]
    if claim_id in MEASURE_TEXT:
        return MEASURE_TEXT[claim_id].format(err=err, tol=tol)
    return f"misses by {_pct(err)}, against {tol:.1e} rounding"


def transformer_bullets(ledger: dict) -> list[str]:
    """What the ledger and the committed records say about real Transformers, one bullet per record."""
    by = {c["id"]: c for c in ledger["claims"]}
    out = []
    small, reach = _record("reach/gpt2-small.json"), _record("reach/reach-small.json")
    gpt2 = _record("trained/gpt2-bytes-reach.json")
    if small and reach and gpt2:
        at_text = next(p for p in small["curve"] if p["s"] == small["text_spread"])
        stacks = {s["stack"]: s for s in reach["stacks"]}
        out.append(
            f"- **Off the reference** ([docs/reach.md](docs/reach.md)): the identities at 1x̄ᵀ depart at the order "
            f"their expansion predicts (slope {small['fitted_slope']:.6f} against 1 ± {small['check']['slope_tolerance']:.3f} "
            f"on random GPT-2-small-sized weights with the suite's block, h = 1/L). At text's spreads the factorised "
            f"J·V misses by {_pct(at_text['error'])} there (s = {small['text_spread']}), and, averaged over text windows, by "
            + ", ".join(f"{_pct(s['text_error_mean'])} on the {name} stack" for name, s in stacks.items())
            + f" (docs/reach/reach-small.json) and {_pct(gpt2['text_error_mean'])} on the trained GPT-2 import.")
    if "6.4" in by and reach and gpt2:
        m = by["6.4"].get("measurement") or {}
        stacks = {s["stack"]: s for s in reach["stacks"]}
        spread = ", ".join(f"{name} {s['layers'][0]['spread_mean']:.2f} → {s['layers'][-1]['spread_mean']:.2f}"
                           for name, s in stacks.items())
        out.append(f"- **Along depth** (6.4, {by['6.4'].get('standing')}): {m.get('short', '')}. Text's relative "
                   f"spread from the first to the last layer: {spread} (docs/reach/reach-small.json); the trained "
                   f"GPT-2 import {gpt2['layers'][0]['spread_mean']:.2f} → {gpt2['layers'][-1]['spread_mean']:.2f}.")
    rough = _record("trained/gpt2-bytes-depth-smoothness.json")
    if "1.1" in by and rough:
        m = by["1.1"].get("measurement") or {}
        t = rough["by_layer"]["trained"]
        mean = {g: sum(t[g]) / len(t[g]) for g in ("W_QK", "W_VO", "ln1.gamma", "ln2.gamma")}
        out.append(f"- **Trained weights are not an Euler path** (1.1, {by['1.1'].get('standing')}): "
                   f"{m.get('short', '')} on the suite's text-trained stacks. On the trained GPT-2 import the mean "
                   f"layer-to-layer change is W_QK {mean['W_QK']:.2f}, W_VO {mean['W_VO']:.2f}, LN gains "
                   f"{mean['ln1.gamma']:.2f} and {mean['ln2.gamma']:.2f} "
                   "(docs/trained/gpt2-bytes-depth-smoothness.json).")
    text = _record("trained/text-7.3.json")
    if text:
        t = text["summary"]["paired_t"]
        out.append(f"- **Claim 7.3 on text**, powered as pre-registered ({t['n']} seeds, α = {t['alpha']}): the gated "
                   f"slow path lowers validation loss by {t['mean']:+.4f} nats/byte, {_pct(1 - t['alpha'])} interval "
                   f"[{t['interval'][0]:+.4f}, {t['interval'][1]:+.4f}], p = {t['p']:.4f} (docs/trained/text-7.3.json).")
    capacity = _record("trained/text-7.3-capacity.json")
    if text and capacity:
        c = capacity["summary"]["cap_vs_coupled"]
        out.append(f"  Against a capacity-matched arm (the same trained parameters, each slow path fed an independent "
                   f"window's history; pre-registered, {c['n']} seeds) the coupled arm is still lower by "
                   f"{c['mean']:+.4f} nats/byte, {_pct(1 - c['alpha'])} interval [{c['interval'][0]:+.4f}, "
                   f"{c['interval'][1]:+.4f}], p = {c['p']:.4f}; the pre-registered reading: "
                   f"{capacity['summary']['reading']} (docs/trained/text-7.3-capacity.json).")
    study = _record("depth_study/depth_study.json")
    if "8.1" in by and study:
        fits = study["decision"]["fits"]
        arms = "; ".join(f"{arm} arm: per-layer step ∝ L^{f['trained']['p_step']:.2f}, weight roughness ∝ "
                         f"L^{f['trained']['p_rough']:.2f} after training ({f['trained']['reading']})"
                         for arm, f in fits.items())
        out.append(f"- **Depth study** (8.1, [docs/depth_study.md](docs/depth_study.md), pre-registered; "
                   f"{by['8.1'].get('standing')}): trained at L = {', '.join(map(str, study['depths']))}; {arms}. "
                   "An Euler reading needs both exponents near −1 (docs/depth_study/depth_study.json).")
    for name, what in (("trained/gpt2-bytes-along-text.json", "the GPT-2 trained here on bytes and imported"),
                       ("scale/hf-gpt2-small-along-text.json", "a randomly initialised GPT-2-small (124M) imported")):
        along = _record(name)
        if along:
            sp = along["stack"]["spec"]
            judged = [c for c in along["claims"] if (c.get("verdict") or {}).get("error") is not None]
            parts = [f"{c['id']} {c['status']} ({_measure(c['id'], c['verdict'])})" for c in judged]
            out.append(f"- **Along held-out text** on {what} (T = {sp['T']}, d = {sp['d']}, L = {sp['layers']}; "
                       f"`check --stack`, docs/{name}): " + "; ".join(parts) + ". The identities hold at 1x̄ᵀ for any "
                       "weights; these numbers are how far a real forward pass is from that reference.")
    check = None if _record("trained/gpt2-bytes-along-text.json") else _record("trained/gpt2-bytes-check.json")
    if check:
        parts = []
        for form, imp in check["imports"].items():
            status = {}
            for c in imp["claims"]:
                status.setdefault(c["status"], []).append(c["id"])
            verb = {"holds": "hold", "fails": "fail"}
            parts.append(f"{form} at T = {imp['T']}: " + "; ".join(
                f"{', '.join(ids)} {verb.get(word, word)}" for word, ids in status.items() if word != "n/a"))
        out.append("- **A GPT-2 checkpoint** trained here with `transformers` and imported "
                   "([docs/real_models.md](docs/real_models.md), docs/trained/gpt2-bytes-check.json): "
                   + "; ".join(parts) + "; the rest n/a (they need stacks one checkpoint does not hold).")
    return out


def generated_section(ledger: dict) -> str:
    """The text between the markers: the abstract, the claims table, its legend, the real-Transformer bullets."""
    lines = (abstract_lines(ledger) + [""] + claims_table(ledger)
             + ["", LEGEND, "", "What the ledger says about real Transformers:"] + transformer_bullets(ledger))
    return "\n".join(lines)


def load_ledger(path: Path = LEDGER) -> dict:
    return json.loads(Path(path).read_text())


def sections(ledger: dict) -> dict:
    """Each generated section's name -> a function writing its text."""
    from proofs_check.timings import timing_section
    from proofs_check.verdicts.standing import summary_markdown

    return {"claims": lambda: generated_section(ledger), "timings": timing_section,
            "summary": lambda: summary_markdown(ledger)}


def splice(readme: str, section: str, name: str = "claims") -> str:
    """``readme`` with the text between section ``name``'s markers replaced by ``section`` (ValueError without
    markers)."""
    begin, end = markers(name)
    start, stop = readme.find(begin), readme.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"README has no {begin} … {end} section")
    return readme[:start + len(begin)] + "\n" + section.strip() + "\n" + readme[stop:]


def regenerate(text: str, ledger: dict) -> str:
    """``text`` with every generated section it has rewritten (ValueError when it has none)."""
    found = {name: make for name, make in sections(ledger).items() if markers(name)[0] in text}
    if not found:
        raise ValueError(f"README has no {BEGIN} … {END} section (nor any other <!-- generated:NAME --> section)")
    for name, make in found.items():
        text = splice(text, make(), name)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proofs_check.headline", description=__doc__.splitlines()[0])
    parser.add_argument("--ledger", type=Path, default=LEDGER, help="the ledger JSON (default docs/ledger.json)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", type=Path, metavar="FILE", help="rewrite FILE's generated sections")
    mode.add_argument("--check", type=Path, metavar="FILE", help="exit 1 when one of FILE's sections is stale")
    args = parser.parse_args(argv)
    path = args.write or args.check
    readme = path.read_text()
    fresh = regenerate(readme, load_ledger(args.ledger))
    if args.check:
        if fresh != readme:
            print(f"{path}: a generated section is stale (python -m proofs_check.headline --write {path})",
                  file=sys.stderr)
            return 1
        return 0
    from numerics.storage.io import write_text

    write_text(path, fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
