"""The claims × architectures matrix on a small slice.

Every assertion is about a structural verdict: exact identities (tolerance EXACT = 1e-12,
float64 through a few O(1) layers) or a counterexample that must reproduce.
"""

import json

import pytest

from proofs_check.verdicts.evidence import CheckContext
from proofs_check.verdicts.on_stack import matrix_spec
from proofs_check.claims.factorisation.frozen_kernel import _factorisation_error, evaluate_2_1
from proofs_check.runners.grid import STATUSES, preln_cell, run_matrix
from proofs_check.verdicts.on_stack import EXACT


@pytest.fixture(scope="module")
def small():
    return run_matrix(only_arch=["looped", "mhc"], claims=["1.2", "2.1", "6.1"])


def test_slice_cells_and_json(small):
    by = {(c["claim"], c["arch"]): c for c in small["cells"]}
    assert len(by) == 6
    for arch in ("looped", "mhc"):
        for cid in ("1.2", "2.1"):
            assert by[(cid, arch)]["status"] == "holds", by[(cid, arch)]
        assert by[("6.1", arch)]["status"] == "n/a" and by[("6.1", arch)]["condition"]
    # the evidence carries the measured numbers and the control that must fail
    ev = by[("2.1", "mhc")]["evidence"]["cases"][0]["measured"]
    assert ev["commutator_rel"] <= EXACT and ev["control_inhomogeneous_commutator_rel"] > 1e-3
    assert ev["generated_block_formula_rel_error"] <= 1e-10  # mhc composite kernel formula (generated)
    json.dumps(small)  # JSON-ready
    assert all(c["status"] in STATUSES for c in small["cells"])


def test_compressed_counterexample_reproduces():
    ctx = CheckContext()
    spec = matrix_spec("compressed", ctx)
    v = evaluate_2_1(spec, ctx)
    cex = v.counterexample
    assert v.status == "fails" and "compress_gate = 0" in v.condition
    err, _ = _factorisation_error(spec.with_(seed=cex["seed"], arch_options={"compress_gate": cex["compress_gate"]}))
    assert err > 1e-8  # the shrunk counterexample breaks block diagonality
    closed, _ = _factorisation_error(spec.with_(seed=cex["seed"], arch_options={"compress_gate": 0.0}))
    assert closed <= EXACT  # and the named condition restores it


def test_preln_cells_follow_the_ledger():
    base = {"numeric": {"cases": 3, "max_error": 1e-15, "tolerance": 1e-12}, "control": {"status": "fails-as-predicted"}}
    assert preln_cell({"id": "2.1", "status": "verified", **base})["status"] == "holds"
    cond = preln_cell({"id": "3.2", "status": "verified", "finding": "causal kernel fails (b)", **base})
    assert cond["status"] == "conditional" and "causal" in cond["condition"]
    assert preln_cell({"id": "1.1", "status": "skipped", "numeric": None, "control": None})["status"] == "n/a"
    failed = preln_cell({"id": "1.1", "status": "failed", "detail": "slope 0.5", **base})
    assert failed["status"] == "fails" and failed["counterexample"]


def test_bad_arch_and_claim():
    with pytest.raises(ValueError, match="arch='gpt' is not one of"):
        run_matrix(only_arch=["gpt"], claims=["1.2"])
    with pytest.raises(ValueError, match="not claims of docs/theory.md"):
        run_matrix(only_arch=["looped"], claims=["9.9"])


def test_cli_matrix_json(tmp_path, capsys):
    from proofs_check.cli import main

    out = tmp_path / "m.json"
    assert main(["grid", "--only-arch", "looped", "--claim", "1.2", "--json", str(out), "--no-progress"]) == 0
    cells = json.loads(out.read_text())["cells"]
    assert cells == [c for c in cells if c["claim"] == "1.2" and c["arch"] == "looped"] and len(cells) == 1
    assert "holds" in capsys.readouterr().out


def test_shrink_finds_the_simplest_case_and_keeps_to_its_budget():
    """The counterexample search: the minimal failing integer when the budget allows, and, with a
    budget of 3 distinct cases, a case that still fails, after at most 3 predicate evaluations."""
    from hypothesis import strategies as hst

    from proofs_check.verdicts.on_stack import shrink

    calls = []
    predicate = lambda x: calls.append(x) or x > 1000  # noqa: E731
    assert shrink(predicate, hst.integers(0, 10**9)) == 1001
    calls.clear()
    found = shrink(predicate, hst.integers(0, 10**9), budget=3)
    assert found is not None and found > 1000 and len(set(calls)) <= 3
    assert shrink(lambda x: False, hst.integers(0, 10**9)) is None
