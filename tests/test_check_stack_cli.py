"""``fastslow train`` then ``fastslow check --stack`` through the CLI, on tiny pre-LN and hierarchical
checkpoints, on both sides of ``DENSE_FEATURES`` (the dense forms and the matrix-free scale forms).

Every on-stack claim gets a verdict or an n/a with its reason; none fails and none crashes.  The chain
rule (1.2) holds on the checkpoint's own weights, gates included.  The claims stated at the gate-0
homogeneous reference are n/a with the measured spread on a hierarchical stack whose trained gates
are open, and hold on a pre-LN one.  Each checkpoint trains on 2048 bytes in a second or two.
"""

import json
import re

import pytest

from numerics import checkpoint as ck
from proofs_check.cli import main as _main
from proofs_check.verdicts.registry import CLAIMS, DENSE_FEATURES, homogeneous_reference, load_checks, on_stack_claims

load_checks()
HOMOGENEOUS = sorted(homogeneous_reference())


def main(argv):
    """The CLI's exit status, whether it returns it or argparse exits with it."""
    try:
        return _main(argv)
    except SystemExit as exc:
        return exc.code


CASES = [  # (arch, T, d, P): T·d = 64 runs the dense forms, 512 the matrix-free ones
    ("hierarchical", 8, 8, 4),
    ("hierarchical", 16, 32, 4),
    ("preln", 16, 32, 8),
]


@pytest.mark.parametrize("arch,T,d,P", CASES, ids=[f"{a}-T{T}-d{d}-P{P}" for a, T, d, P in CASES])
def test_check_stack_on_a_trained_checkpoint(tmp_path, capsys, arch, T, d, P):
    out, ledger_path = tmp_path / "ckpt", tmp_path / "stack.json"
    assert main(["train", "--arch", arch, "--d", str(d), "--layers", "2", "--heads", "2", "--T", str(T),
                 "--P", str(P), "--tokens", "2048", "--batch", "8", "--eval-every", "100", "--seed", "0",
                 "--out", str(out), "--no-progress"]) == 0
    status = main(["check", "--stack", str(out), "--json", str(ledger_path), "--no-progress"])
    printed = capsys.readouterr()
    assert status == 0, printed.err[-2000:]
    ledger = json.loads(ledger_path.read_text())
    by = {c["id"]: c for c in ledger["claims"]}
    assert set(on_stack_claims()) <= set(by)
    for cid, c in by.items():
        assert c["status"] in ("holds", "conditional", "n/a"), (cid, c["status"], c["reason"])
        if c["status"] == "n/a":
            assert c["reason"], cid

    matrix_free = T * d > DENSE_FEATURES
    chain = by["1.2"]["verdict"]
    assert by["1.2"]["status"] == "holds", by["1.2"]["reason"]
    assert chain["spec"]["checkpoint"] == str(out) and chain["spec"]["P"] == (P if arch == "hierarchical" else None)
    assert chain["measured"]["form"] == ("matrix-free" if matrix_free else "dense")
    assert chain["error"] <= chain["tolerance"]

    gates = [g[-1] for g in ck.read_manifest(out)["curves"].get("gates", [])]
    if arch == "hierarchical":
        assert len(gates) == 2 and all(g != 0.0 for g in gates)  # trained gates open: the reference moves
        if matrix_free:  # the layer maps of 1.2 are the layers' jvps at their visited states
            assert "visited state" in chain["measured"]["numeric"]
        for cid in HOMOGENEOUS:
            assert by[cid]["status"] == "n/a" and by[cid]["reason"].startswith("spread "), (cid, by[cid]["reason"])
    else:
        assert gates == []
        if matrix_free:  # gate 0: the generated layer maps at 1x̄ᵀ
            assert "generated B_ℓ, C_ℓ" in chain["measured"]["numeric"]
        for cid in ("2.1", "2.3", "2.4"):  # the structural claims at the reference, on the trained weights
            assert by[cid]["status"] == "holds", (cid, by[cid]["reason"])
            # each claim's own dense limit (registry: 2.3's dense form is jvp probes, up to T·d = 4096)
            assert by[cid]["verdict"]["measured"]["form"] == ("matrix-free" if T * d > CLAIMS[cid].dense_features
                                                              else "dense")
    if matrix_free:  # forms that build stacks of another shape say which one the checkpoint lacks
        for cid in ("1.1", "5.1"):
            assert by[cid]["status"] == "n/a" and "needs the stack variant" in by[cid]["reason"], by[cid]["reason"]
    assert "trained stack" in printed.out and not re.search(r"\bT=1\b", printed.out + printed.err)
