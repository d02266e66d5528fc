"""Measurements are shared inside one run and never across runs (proofs_check.verdicts.run_scope): a check run
after the code changed never reads a derivative, Jacobian or margin the old code made."""

from __future__ import annotations

import pytest

from proofs_check.runners.ledger import run_claim
from proofs_check.verdicts.evidence import CheckContext
from proofs_check.verdicts.registry import load_checks
from proofs_check.verdicts.run_scope import one_run, per_run, shared


@pytest.fixture(scope="module", autouse=True)
def claims():
    return load_checks()


def _calls():
    made = []

    @per_run(maxsize=2)
    def measure(x):
        made.append(x)
        return [x]          # a fresh object per computation: sharing shows as identity

    return measure, made


def test_shared_inside_a_run_recomputed_outside():
    measure, made = _calls()
    with one_run():
        a, b = measure(1), measure(1)
        with one_run():                       # a nested scope is the outer run
            c = measure(1)
    assert a is b is c and made == [1]
    assert measure(1) is not measure(1) and made == [1, 1, 1]
    with one_run():
        assert shared("x") is shared("x")
    assert shared("x") is not shared("x")


def test_a_run_keeps_at_most_maxsize_values_per_function():
    measure, made = _calls()
    with one_run():
        first = measure(1)
        measure(2), measure(3)                # 1 is the oldest: dropped
        assert measure(1) is not first and made == [1, 2, 3, 1]
        assert measure(3) is measure(3) and made == [1, 2, 3, 1]


def test_a_changed_forward_pass_does_not_reach_the_next_check(monkeypatch):
    """3.2 run with a wrong forward pass (its entry fails), then 1.2 with the right one: 1.2's scale-vs-dense
    cross-check must compare the toy stack's jvp against a dense Jacobian of the *right* stack (before the run
    scope, a module-level store kept the wrong one and 1.2 read *failed* with errors ~3 against 8e-13)."""
    from numerics.stacks.stack import Layer
    from test_coarse_graining import _mlp_reads_layer_input

    with monkeypatch.context() as m:
        m.setattr(Layer, "forward", _mlp_reads_layer_input)
        assert run_claim("3.2", CheckContext())["status"] == "failed"
    entry = run_claim("1.2", CheckContext())
    assert entry["status"] == "verified", entry.get("detail")
    dense = next(c for c in entry["cross_checks"] if c["name"].startswith("scale form vs dense"))
    assert dense["status"] == "verified"
