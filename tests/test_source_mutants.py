"""The source-mutant catalogue (proofs_check/mutation/hand_written_source.py): every entry still applies to the
current source exactly once, a stale entry is an error rather than a kill, and cheap mutants are
killed by the ledger itself (a fresh interpreter on a scratch copy, as ``fastslow mutate`` runs them)."""

from __future__ import annotations

import pytest

from proofs_check.mutation import hand_written_source as sm
@pytest.mark.parametrize("mutant", sm.CATALOGUE, ids=lambda m: m.name)
def test_every_source_mutant_applies_to_the_current_source_exactly_once(mutant):
    text = (sm.REPO / mutant.path).read_text()
    assert text.count(mutant.old) == 1, f"{mutant.name} is stale: update its line to {mutant.path}'s code"
    assert mutant.old != mutant.new
    assert mutant.claims and mutant.where in ("forward pass", "reference trajectory", "kernels", "pooling",
                                              "certificate", "training", "claim numerics")


def test_catalogue_covers_every_place_and_names_known_claims():
    known = sm.catalogue()  # raises on duplicate names or unknown claim ids
    assert len(known) >= 16
    assert {m.where for m in known.values()} == {"forward pass", "reference trajectory", "kernels", "pooling",
                                                 "certificate", "training", "claim numerics"}


def test_a_stale_mutant_is_an_error_not_a_kill(tmp_path):
    stale = sm.SourceMutant("stale", "numerics/stacks/stack.py", "this line is not in the stack", "x", ("2.1",),
                            "negative control", "forward pass")
    (tmp_path / "numerics" / "stacks").mkdir(parents=True)
    (tmp_path / "numerics" / "stacks" / "stack.py").write_text("a = 1\n")
    with pytest.raises(ValueError, match="stale: its line occurs 0 times"):
        stale.apply(tmp_path)
    twice = sm.SourceMutant("twice", "numerics/stacks/stack.py", "a = 1", "a = 2", ("2.1",), "control", "forward pass")
    (tmp_path / "numerics" / "stacks" / "stack.py").write_text("a = 1\na = 1\n")
    with pytest.raises(ValueError, match="occurs 2 times"):
        twice.apply(tmp_path)


def test_a_cheap_source_mutant_is_killed_by_the_ledger_and_the_unmutated_copy_is_not():
    """cert-margin-frobenius on a scratch copy fails 5.1; the same pipeline with an identity
    replacement leaves 5.1 verified, so the kill is the mistake's, not the scratch copy's (≈ 10 s each)."""
    result = sm.run_one("cert-margin-frobenius", run_tests=False)
    assert not result["crashes"], result["crashes"]
    assert result["killed_by_ledger"], f"survived the ledger of {result['claims']}"
    line = "norms.append(spectral_norm(M))"
    identity = sm.SourceMutant("identity", "numerics/families/stability.py", line, line, ("5.1",), "control", "certificate")
    control = sm.run_one(identity, run_tests=False)
    assert not control["crashes"] and control["killed_by_ledger"] is None, control


def test_mutate_only_names_source_mutants_with_source_only():
    from proofs_check.cli import main

    assert main(["mutate", "--source-only", "--only", "G-sign-flip", "--no-tests"]) == 2


def test_a_scale_mutant_is_killed_by_the_scale_ledger():
    """scale-tolerance-sqrt on a scratch copy, in a fresh interpreter: its ledger is ``check --scale toy``'s
    2.4, which refuses the √γ tolerance (the monkeypatched forms of the other ledger-power mistakes are in
    tests/test_ledger_power.py)."""
    result = sm.run_one("scale-tolerance-sqrt", run_tests=False)
    assert not result["crashes"], result["crashes"]
    assert "does not match its stated derivation" in (result["killed_by_ledger"] or "")
