"""docs/ARCHITECTURE.md's recipe for a new claim: one module registering it on the one ``Claim`` object
(``proofs_check.verdicts.registry``) — its theory's id, the ledger check, the on-stack ``evaluate`` with its
specs and not-applicable reasons, and the matrix-free form — is enough for every consumer to run it.

A throwaway claim, registered inside the test and removed after it, runs in the ledger (``run_claim``), the
claims × architectures grid, ``check --scale`` (``run_scale_claim``), ``check --stack`` (``run_stack_checks``)
and one sweep task (``evaluate_task``), with no other file touched.  Its statement is a real one, small:
a stack started at the token-homogeneous reference 1x̄ᵀ with its gates at 0 stays token-homogeneous
(``on_stack.reference_spread`` ≤ its float64 rounding tolerance); the control starts one token off the
reference by δ = 1e-3 and must leave the set by far more than that tolerance.
"""

from __future__ import annotations

import pytest
import torch

from numerics.stacks.stack import random_xbar
from proofs_check.verdicts import registry
from proofs_check.verdicts.evidence import CheckContext, ClaimResult, ControlResult, NumericResult
from proofs_check.verdicts.ids import CLAIM_IDS
from proofs_check.verdicts.on_stack import Verdict, matrix_spec, reference_spread

ID, FAMILY = "9.1", "toy_recipe"
DELTA = 1e-3


def _spread(stack, xbar, delta: float = 0.0) -> tuple[float, float]:
    """(spread of the trajectory from 1x̄ᵀ, its rounding tolerance); ``delta``: token 0 moved by δ."""
    if delta == 0.0:
        ref = reference_spread(stack, xbar)
        return ref["spread"], ref["tolerance"]
    param = next(stack.parameters())
    T, d = stack.config.T, stack.config.d
    X0 = xbar.to(dtype=param.dtype).expand(T, d).clone()
    X0[0] += delta
    with torch.no_grad():
        X = stack.trajectory(X0)[-1]
    spread = float(torch.linalg.norm(X - X.mean(dim=-2, keepdim=True)) / torch.linalg.norm(X))
    return spread, reference_spread(stack, xbar)["tolerance"]


def _register(monkeypatch):
    """The new claim's module, as ARCHITECTURE.md lays it out: its id in the theory's table, then its parts."""
    monkeypatch.setitem(CLAIM_IDS, ID, FAMILY)
    monkeypatch.setitem(registry.CLAIMS, ID, registry.Claim(ID, family=FAMILY))   # removed after the test

    @registry.on_stack(ID, specs=lambda arch, ctx: [matrix_spec(arch, ctx)], homogeneous_reference=True,
                       needs=("paper_stack",))
    def evaluate(spec, ctx):
        err, tol = _spread(spec.build(), random_xbar(spec.d, spec.seed))
        return Verdict(ID, "holds" if err <= tol else "fails", measured={"spread": err}, error=err, tolerance=tol)

    @registry.matrix_free(ID, variants={"preset"})
    def matrix_free(run):
        err, tol = _spread(run.stack(), run.xbar())
        off, _ = _spread(run.stack(), run.xbar(), DELTA)
        return ClaimResult(symbolic=[], numeric=NumericResult(cases=1, max_error=err / tol, tolerance=1.0,
                                                              detail="spread / rounding tolerance"),
                           control=ControlResult("fails-as-predicted" if off > 1e3 * tol else "did-not-fail"))

    @registry.claim(ID, title="A token-homogeneous start stays token-homogeneous", family=FAMILY,
                    statement="X₀ = 1x̄ᵀ at gate 0 ⇒ every X_ℓ = 1x̄_ℓᵀ", assumptions=["gates 0"],
                    control="one token moved by δ = 1e-3 leaves the set")
    def check(ctx):
        cases, unusable = registry.ledger_cases(ID, ctx)
        errs = [v.error / v.tolerance for _, v in cases] + [float("inf")] * len(unusable)
        stack = cases[0][0].build()
        xbar = random_xbar(stack.config.d, 0)
        off, tol = _spread(stack, xbar, DELTA)
        return ClaimResult(symbolic=[], numeric=NumericResult(cases=len(errs), max_error=max(errs), tolerance=1.0),
                           control=ControlResult("fails-as-predicted" if off > 1e3 * tol else "did-not-fail",
                                                 f"spread {off:.1e} at δ = {DELTA}"))

    return evaluate, matrix_free


@pytest.fixture
def toy(monkeypatch):
    registry.load_checks()
    parts = _register(monkeypatch)
    yield parts
    assert ID in registry.CLAIMS   # monkeypatch removes it after the test


def test_the_ledger_runs_it(toy):
    from proofs_check.runners.ledger import run_claim

    entry = run_claim(ID, CheckContext())
    assert entry["status"] == "verified", entry.get("detail")
    assert entry["title"] == "A token-homogeneous start stays token-homogeneous"
    assert entry["control"]["status"] == "fails-as-predicted"


def test_the_grid_runs_it_and_says_where_it_does_not_apply(toy):
    from proofs_check.runners.grid import run_matrix

    cells = {c["arch"]: c for c in run_matrix(only_arch=["preln", "hrm"], claims=[ID], trained=False)["cells"]}
    assert cells["preln"]["status"] == "holds"   # the ledger's entry
    assert cells["hrm"]["status"] == "n/a" and cells["hrm"]["condition"].startswith("n/a: hrm has no paper_stack (")


def test_check_scale_runs_its_matrix_free_form_and_skips_with_a_reason(toy, monkeypatch):
    from proofs_check.verdicts.scale_run import ScaleRun
    from proofs_check.runners.scale import run_scale_claim

    entry = run_scale_claim(ID, ScaleRun("toy"))
    assert entry["status"] == "verified" and entry["control"]["status"] == "fails-as-predicted"
    monkeypatch.setattr(registry.CLAIMS[ID], "matrix_free", None)   # no form: skipped with the reason, no KeyError
    skipped = run_scale_claim(ID, ScaleRun("toy"))
    assert skipped["status"] == "skipped" and skipped["detail"] == "no scale form: no matrix-free form is registered"
    registry.no_matrix_free(ID, "toy: nothing to scale")
    assert run_scale_claim(ID, ScaleRun("toy"))["detail"] == "no scale form: toy: nothing to scale"


def test_evaluate_picks_the_form_by_size(toy):
    small = matrix_spec("preln", CheckContext())
    big = small.with_(T=32, d=16)   # T·d = 512 > DENSE_FEATURES
    assert registry.evaluate(ID, small, CheckContext()).measured == {"spread": pytest.approx(0.0, abs=1e-12)}
    v = registry.evaluate(ID, big, CheckContext())
    assert v.status == "holds" and v.measured["form"] == "matrix-free"


def test_check_stack_runs_it_on_a_trained_checkpoint(toy, tmp_path):
    from proofs_check.experiments import train
    from proofs_check.runners.check import run_stack_checks

    out = tmp_path / "ckpt"
    train.train_text(train.TextConfig(arch="hierarchical", tokens=2_000, d=4, layers=2, heads=2, T=8, P=4,
                                      batch=16, eval_every=50, eval_windows=8), out, progress=False, threads=1)
    ledger = run_stack_checks(str(out), [ID], progress=False)
    (entry,) = ledger["claims"]
    # stated at 1x̄ᵀ: holds where the trained gates keep the reference homogeneous, else n/a with the spread
    assert entry["status"] in ("holds", "n/a"), entry
    assert entry["status"] == "holds" or entry["reason"].startswith("spread ")


def test_one_sweep_task_runs_it(toy):
    from proofs_check.sweep.grid import expand
    from proofs_check.sweep.run import evaluate_task
    from proofs_check.sweep.spec import parse

    spec = parse({"name": "toy", "sweep": [{"claim": ID, "seeds": 1, "T": 4, "d": 4, "layers": [2]}]})
    (task,) = expand(spec)
    row = evaluate_task(task.payload())
    assert row["claim"] == ID and row["verdict"] == "holds"
