"""``fastslow reproduce``: derive --check, every claim, every figure, and the report, in one run.

Writes into ``out``: ``figures/*.png|pdf``, ``ledger.json``, ``claims_summary.md``, ``report.md``, ``report.html``
(each atomically: an interrupted run leaves the previous file or none, never half of one),
and keeps the training experiment's curves in ``out/cache`` so a rerun reuses them.
``derive --check`` always derives afresh from the sources (the cache only speeds up ``derive``).

Before any work the output folder is claimed (``numerics.storage.outdir``: it must be new, empty or
reproduce's own; a folder holding files reproduce did not write is refused, exit 2, and nothing
in it is touched), the folder is locked against a second run, the atomic writer's temporaries
that a killed earlier run left in it are removed, and ``numerics/generated/`` is
checked against the hashes its derivations recorded (``proofs_check.integrity``): drift
refuses the run (1) unless ``allow_drift``, and an override is printed in the ledger and the report.
Every file is written through ``numerics.storage.io``.
"""

from __future__ import annotations

import time
from pathlib import Path

from numerics.storage.io import write_bytes, write_json, write_text
from proofs_check.report.provenance import ROOT, recorded, stamp, this_run
from proofs_check.tables import bold, code as code_span, markdown_table

#: files in the output folder that reproduce reads (written there by other commands)
INPUTS = ("mutation.json",)


def reproduce(out: Path, quick: bool = False, device: str = "cpu", allow_drift: bool = False) -> int:
    """Run everything; return 0 when the derivations match and no claim failed."""
    from numerics.storage import outdir
    from proofs_check.validation import check_output_dir

    with outdir.claim(check_output_dir(out), "reproduce", inputs=INPUTS) as folder:
        return _reproduce(folder, quick, device, allow_drift)


def _reproduce(out: Path, quick: bool, device: str, allow_drift: bool) -> int:
    import sys

    from proofs_check.integrity import verify

    integrity = verify()
    integrity.override = allow_drift and not integrity.ok
    if integrity.stale or not integrity.ok:
        print(str(integrity), file=sys.stderr)
    if not integrity.ok and not integrity.override:
        return 1
    from proofs_check.runners.check import format_table, run_checks
    from proofs_check.report.figures import render
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.progress import track
    from proofs_check.report.document import derivations
    from proofs_check.runners.derive import derive

    figures_dir = out / "figures"
    cache_dir = out / "cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    steps = ["derive --check", "check claims", "claims x architectures", "claims at scale (ci preset)", "figures",
             "report"]
    results: dict = {}
    for step in track(steps, "reproduce", unit="step"):
        start = time.perf_counter()
        if step == "derive --check":
            results["derive"] = derive(check=True, progress=False)
        elif step == "check claims":
            results["ledger"] = run_checks(None, device=device, quick=quick, progress=True,
                                           cache_dir=str(cache_dir))
        elif step == "claims x architectures":
            from proofs_check.runners.grid import run_matrix

            results["matrix"] = run_matrix(quick=quick, ledger=results["ledger"], device=device,
                                           progress=True)
            write_json(cache_dir / "matrix.json", results["matrix"])  # read by the claims_matrix figure
            write_json(out / "matrix.json", results["matrix"])
        elif step == "claims at scale (ci preset)":
            from proofs_check.runners.scale import run_scale

            results["scale"] = run_scale("ci", None, device=device, progress=True)
            write_json(out / "scale-ci.json", results["scale"])
            write_json(cache_dir / "scale-ci.json", results["scale"])  # read by the error-vs-size figure
        elif step == "figures":
            ctx = CheckContext(device=device, quick=quick, cache_dir=str(cache_dir))
            from proofs_check.runners import reach
            results["reach"] = reach.run(ctx)
            write_json(cache_dir / "reach.json", results["reach"])  # read by the reach_factorised figure
            results["figures"] = render(None, ctx, figures_dir)
        else:
            ledger = results["ledger"]
            for c in ledger["claims"]:  # the SymPy work of the report, timed before the page is written
                derivations(c.get("generated", []))
            timings[step] = time.perf_counter() - start
            ledger["timings"] = timings
            ledger["provenance"] = this_run()
            ledger["derive"] = {"ok": results["derive"].ok, "summary": str(results["derive"]),
                                "integrity": str(integrity)}
            ledger["integrity"] = integrity.as_dict()
            from proofs_check.experiments import depth_smoothness, text_capacity_record, text_experiment
            from proofs_check.runners import trained_findings

            ledger["recorded"] = {"text-7.3": {**text_experiment.ledger_entry(text_experiment.recorded()),
                                               "capacity_control": text_capacity_record.ledger_entry()},
                                  "depth-smoothness": depth_smoothness.ledger_entry()}
            ledger["trained"] = trained_findings.findings(results["matrix"])
            ledger["reach"] = results["reach"]
            write_json(out / "ledger.json", ledger)
            from proofs_check.experiments.recorded_findings import recorded_findings
            from proofs_check.verdicts.standing import summary_markdown

            write_text(out / "claims_summary.md", summary_markdown(ledger, recorded_findings()))  # the README's claims table
            write_report(out, ledger, results["matrix"], results["scale"])
        timings[step] = time.perf_counter() - start
    ledger = results["ledger"]
    print(format_table(ledger))
    print(f"\nderive --check: {'ok' if results['derive'].ok else 'DRIFT'}")
    print(f"figures: {sum(len(p) for p in results['figures'].values())} files in {figures_dir}")
    print(f"report: {out / 'report.md'}, {out / 'report.html'}; ledger: {out / 'ledger.json'}")
    print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    from proofs_check.runners.check import exit_code

    return 0 if results["derive"].ok and not exit_code(ledger) else 1


def write_report(out: Path, ledger: dict | None = None, matrix: dict | None = None, scale: dict | None = None) -> None:
    """``report.md`` and ``report.html`` in ``out`` from what ``reproduce`` wrote there (``ledger.json``,
    ``matrix.json``, ``scale-ci.json``, ``figures/``): the report can be rebuilt without rerunning a check
    (``python -m proofs_check.report.reproduce OUT``)."""
    import json

    from proofs_check.experiments import text_capacity_record, text_experiment
    from proofs_check.report.conditions import grid_section
    from proofs_check.report.document import render_html, render_markdown
    from proofs_check.report.figures import load_figures
    from proofs_check.report.sections import depth_smoothness_section, reach_section, trained_section

    out = Path(out)
    ledger = ledger or json.loads((out / "ledger.json").read_text())
    matrix = matrix or json.loads((out / "matrix.json").read_text())
    scale = scale or json.loads((out / "scale-ci.json").read_text())
    figures_dir = out / "figures"
    figures = load_figures()
    figure_index: dict[str, list[str]] = {}
    for c in ledger["claims"]:
        if c.get("figure") in figures:
            figure_index[c["id"]] = [c["figure"]]
    for name, fig in sorted(figures.items()):
        if name not in figure_index.get(fig.claim, []):
            figure_index.setdefault(fig.claim, []).append(name)
    if not ledger.get("provenance"):  # a ledger from before provenance was recorded: say so, do not guess
        ledger = dict(ledger, provenance={"commit": "not recorded in the ledger", "date": "date not recorded"})
    run = ledger["provenance"]
    extra = stamp(grid_section(matrix, figures=["claims_matrix"]), run)
    extra += stamp(scale_section([scale, *recorded_scale_runs()]), run)
    extra += sweep_section(figures_dir)
    extra += stamp(trained_section(ledger["trained"]), run)
    extra += stamp(reach_section(ledger["reach"]), run)
    extra += stamp(depth_smoothness_section(ledger["recorded"]["depth-smoothness"]),
                   recorded(ROOT / "docs" / "trained" / "depth_smoothness.json"))
    extra += stamp(text_experiment.report_section(text_experiment.recorded(), figures_dir)
                   + text_capacity_record.report_lines(figures_dir), recorded(text_experiment.RECORDED))
    extra += _mutation_section(out)
    extra += stamp(_derive_section(ledger["derive"], ledger["integrity"]), run)
    md = render_markdown(ledger, figures_dir, ledger.get("timings", {}), figure_index, extra_sections=extra)
    write_text(out / "report.md", md)
    write_text(out / "report.html", render_html(md, figures_dir))


def recorded_scale_runs() -> list[dict]:
    """Scale ledgers committed under ``docs/scale/`` (``fastslow check --scale PRESET --json``): runs too long
    for ``reproduce``, shown with their own environment and date, never as this run's verdict.  A file there that
    the ledger schema refuses (a ``check --stack`` record of an imported checkpoint) is another kind of record and
    is not read."""
    import json

    from pydantic import ValidationError

    from proofs_check.verdicts.ledger_schema import Ledger

    folder = Path(__file__).resolve().parents[2] / "docs" / "scale"
    runs = []
    for p in sorted(folder.glob("*.json")):
        record = json.loads(p.read_text())
        try:
            Ledger.model_validate(record)
        except ValidationError:
            continue
        runs.append(dict(record, recorded=p.name))
    return runs


def scale_section(runs: list[dict]) -> list[str]:
    """Per claim: the largest size at which its scale form was verified, and the error there."""
    best: dict[str, tuple] = {}
    for run in runs:
        for c in run["claims"]:
            size = c.get("size") or {}
            if c["status"] != "verified" or not size:
                continue
            key = (size["T"] * size["d"] * size["layers"], size["T"], size["d"])
            if c["id"] not in best or key > best[c["id"]][0]:
                best[c["id"]] = (key, size, c["numeric"], run.get("recorded") or "this run")
    lines = ["", "## Claims at scale", "",
             "Each stack claim's matrix-free scale form (`fastslow check --scale PRESET`), with its negative "
             "control at the same size. This run checks the `ci` preset; larger presets take tens of minutes "
             "and are recorded runs from `docs/scale/` (their environment is in the file).", ""]
    rows = []
    for cid in sorted(best, key=lambda c: [int(x) for x in c.split(".")]):
        _, size, num, source = best[cid]
        rows.append((cid, size["preset"], size["T"], size["d"], size["layers"], size["dtype"],
                     f"{num['max_error']:.2g} / {num['tolerance']:.2g}", source))
    lines += markdown_table(("claim", "largest verified size", "T", "d", "L", "dtype", "error / tolerance", "source"),
                            rows)
    skipped = sorted({c["id"] for run in runs for c in run["claims"] if c["status"] == "skipped"})
    if skipped:
        lines += ["", "No scale form (not a statement about a stack): " + ", ".join(skipped) + "."]
    return lines + ["", "![Scale: error vs size](figures/scale_error_vs_size.png)"]


def sweep_section(figures_dir: Path) -> list[str]:
    """The shipped sweeps' phase diagrams (``fastslow sweep NAME``), copied next to the report's figures."""
    source = Path(__file__).resolve().parents[2] / "docs" / "figures" / "sweeps"
    images = sorted(source.glob("*.png"))
    if not images:
        return []
    (figures_dir / "sweeps").mkdir(parents=True, exist_ok=True)
    lines = ["", "## Sweeps: where each claim holds", "",
             "Phase diagrams from the shipped sweep specs (`fastslow sweep --list`), recorded by "
             "`fastslow sweep NAME --figures docs/figures/sweeps`: the measured quantity over a 2-D slice, "
             "the theory's predicted boundary drawn over it, failing cells marked.", ""]
    lines = stamp(lines, recorded(source))
    for img in images:
        write_bytes(figures_dir / "sweeps" / img.name, img.read_bytes())
        what = img.stem.replace("_", " ")
        lines += [f"![Sweep {what}](figures/sweeps/{img.name})", "",
                  f"*Figure: sweep {what}. Colour is the measured quantity over the two swept parameters; the line is "
                  "the theory's predicted boundary and crosses mark the cells where the claim fails, so look for "
                  "failures on the side of the line where the theory says the claim holds.*", ""]
    return lines


def _mutation_section(out: Path) -> list[str]:
    """The mutation scores from ``fastslow mutate --json out/mutation.json``, when that was run."""
    import json

    path = out / "mutation.json"
    if not path.exists():
        return ["", "## Verification power", "",
                f"No mutation run in {out}: `fastslow mutate --json {path}` measures it "
                "(about 20 minutes on 2 cores), and the next `reproduce` shows it here."]
    data = json.loads(path.read_text())
    import datetime

    written = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
    lines = ["", "## Verification power", "",
             f"*Source: `fastslow mutate` run written to {path.name} on {written:%Y-%m-%d %H:%M UTC}"
             + (f", commit {str(data['git'])[:10]}" if data.get("git") else "") + ".*", ""]
    theory = data.get("theory")
    if theory:
        lines += [f"Theory mutation score: **{theory['killed']}/{theory['total']} = {theory['score']:.2f}**", ""]
        lines += markdown_table(("mutant", "claim", "killed by"), [(m["name"], m["claim"], m["killed_by"] or bold("SURVIVED"))
                                                                 for m in theory["mutants"]])
    if data.get("source"):
        from proofs_check.mutation.hand_written_source import markdown_section

        lines += [""] + markdown_section(data["source"])
    code = data.get("code")
    if code:
        justified = code.get("justified")
        why = (f" ({justified['equivalent']} equivalent, {justified['device-only']} device-only, "
               f"{justified['open']} open; rules in proofs_check/mutation/equivalents.py, list in "
               "docs/equivalent_mutants.md)") if justified else ""
        lines += ["", f"Code mutation score ({code['tool']}): **{code['killed']}/{code['total']} = "
                  f"{code['score']:.3f}**; survivors: {len(code.get('survivors', []))}{why}."]
        if code.get("by_file"):
            lines += [""] + markdown_table(("file", "mutants", "killed", "score"),
                                           [(code_span(f), t, k, f"{k / t:.3f}") for f, (t, k) in code["by_file"].items()])
    return lines


def _derive_section(derive: dict, integrity: dict) -> list[str]:
    """``derive --check`` and the integrity check, from the ledger's records of them."""
    lines = ["", "## Generated code", "", "`fastslow derive --check`: "
             + ("every generated module matches its derivation." if derive["ok"] else "DRIFT:"), "",
             "```", derive["summary"], "```", ""]
    if integrity.get("override"):
        lines += ["**Integrity check overridden (`--allow-drift`)**: this report's verdicts rest on generated "
                  "code that does not match the hashes its derivations recorded.", "", "```",
                  derive.get("integrity") or "\n".join(integrity.get("drifted", [])), "```"]
    else:
        lines.append(f"Integrity: {integrity['checked']} generated modules match the hashes recorded by "
                     "`fastslow derive` (numerics/generated/manifest.json).")
    return lines


if __name__ == "__main__":
    import sys

    write_report(Path(sys.argv[1] if len(sys.argv) > 1 else "out"))
