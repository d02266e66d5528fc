"""The frozen pre-registrations (tests/docs_inventory.py's FROZEN) against the runs that followed them: each
registered setting the run's record holds is the setting it ran with, and the record names a commit at or after
the one that registered the text.  A pre-registration is dated text that is never edited after the data are
seen, so its numbers are tied here to the record, not regenerated."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _record(path: str) -> dict:
    return json.loads((ROOT / path).read_text())


#: Records changed in one registered setting each (the negative controls below).
CHANGED: dict[str, dict] = {}


def _read(path: str) -> dict:
    return CHANGED.get(path) or _record(path)


def _text(doc: str) -> str:
    return " ".join((ROOT / doc).read_text().split())


def _says(doc: str, *phrases: str) -> None:
    text = _text(doc)
    missing = [p for p in phrases if " ".join(p.split()) not in text]
    assert not missing, f"{doc} does not register {missing}"


def test_depth_study_ran_what_amendment_3_registered():
    c = _read("docs/depth_study/depth_study.json")
    cfg = c["config"]
    depths = ", ".join(map(str, c["depths"]))
    _says("docs/depth_study.md",
          f"d = {cfg['d']}, {cfg['heads']} heads, T = {cfg['T']}, L ∈ {{{depths}}}, seed {cfg['seed']}",
          f"{cfg['steps']} AdamW steps of {cfg['batch']} windows of {cfg['T']} bytes",
          f"warm-up {cfg['warmup']} steps, cosine to 0 at step {cfg['steps']}",
          "snapshots at steps " + ", ".join(map(str, cfg["snapshots"])),
          f"validation every {cfg['eval_every']} steps on {cfg['eval_windows']} windows",
          f"lr {cfg['lr']:.0e}".replace("e-0", "e-") + f", weight decay {cfg['weight_decay']:g}",
          f"{c['recorded']['workers']} local Dask workers",
          f"--d {cfg['d']} --steps {cfg['steps']} --batch {cfg['batch']} --workers {c['recorded']['workers']}")


def test_text_7_3_ran_what_the_power_analysis_registered():
    r = _read("docs/trained/text-7.3.json")
    cfg = r["config"]
    seeds = ", ".join(map(str, r["seeds"]))
    _says("docs/trained/text-7.3-power.md",
          f"Five fresh seeds, **{seeds}**",
          f"d = {cfg['d']}, L = {cfg['layers']}, H = {cfg['heads']}, T = {cfg['T']}, P = {cfg['P']}, "
          f"{cfg['tokens'] // 1000}k training bytes, batch {cfg['batch']}",
          f"--seeds {' '.join(map(str, r['seeds']))}")
    pilot = _record(r["pilot"])["seeds"]
    assert not set(r["seeds"]) & set(pilot), "the confirmatory seeds reuse the pilot's"


def test_capacity_control_ran_what_it_registered():
    r = _read("docs/trained/text-7.3-capacity.json")
    seeds = ", ".join(map(str, r["seeds"]))
    _says("docs/trained/text-7.3-capacity.md", f"Seeds **{seeds}**",
          "text_capacity OUT.json CACHE " + " ".join(map(str, r["seeds"])))
    # the cut is the registered one: the record says the run was cut at the registered deadline
    deadline = re.search(r"not complete by (\d\d:\d\d) UTC", _text("docs/trained/text-7.3-capacity.md")).group(1)
    assert f"not complete by {deadline} UTC" in r["cut"]


def _added(doc: str) -> str | None:
    out = subprocess.run(["git", "log", "--format=%H", "--diff-filter=A", "--", doc], cwd=ROOT,
                         capture_output=True, text=True)
    lines = out.stdout.split()
    return lines[-1] if out.returncode == 0 and lines else None


@pytest.mark.parametrize("doc, record", [("docs/trained/text-7.3-capacity.md", "docs/trained/text-7.3-capacity.json"),
                                         ("docs/depth_study.md", "docs/depth_study/depth_study.json")])
def test_the_run_came_after_its_registration(doc, record):
    """The commit that added the pre-registration is an ancestor of (or is) the commit the run recorded."""
    added = _added(doc)
    r = _record(record)
    ran = r.get("git") or r["recorded"]["git"]
    if added is None or subprocess.run(["git", "cat-file", "-e", ran], cwd=ROOT).returncode:
        pytest.skip("the checkout has no history of the registration or the run (a shallow clone)")
    ancestor = subprocess.run(["git", "merge-base", "--is-ancestor", added, ran], cwd=ROOT).returncode
    assert ancestor == 0, f"{record} ran on {ran[:7]}, not after {doc} was registered in {added[:7]}"


@pytest.mark.parametrize("record, path, value, check", [
    ("docs/depth_study/depth_study.json", ("config", "steps"), 300, test_depth_study_ran_what_amendment_3_registered),
    ("docs/depth_study/depth_study.json", ("config", "lr"), 3e-3, test_depth_study_ran_what_amendment_3_registered),
    ("docs/depth_study/depth_study.json", ("depths",), [4, 8, 16], test_depth_study_ran_what_amendment_3_registered),
    ("docs/trained/text-7.3.json", ("seeds",), [2, 3, 4, 5, 6], test_text_7_3_ran_what_the_power_analysis_registered),
    ("docs/trained/text-7.3.json", ("config", "batch"), 16, test_text_7_3_ran_what_the_power_analysis_registered),
    ("docs/trained/text-7.3-capacity.json", ("seeds",), [3, 4, 5, 6], test_capacity_control_ran_what_it_registered),
    ("docs/trained/text-7.3-capacity.json", ("cut",), "not complete by 22:50 UTC", test_capacity_control_ran_what_it_registered),
])
def test_control_a_run_that_departs_from_its_registration_is_caught(record, path, value, check):
    changed = _record(record)
    node = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    CHANGED[record] = changed
    try:
        with pytest.raises(AssertionError):
            check()
    finally:
        CHANGED.clear()
