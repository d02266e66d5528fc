"""Claim 7.3 on text, the capacity control (proofs_check/experiments/text_arms.py, text_capacity_record.py).

Small sizes, CPU, float64 where a quantity is compared: the arm's parameter count, that its slow
path carries no cross-block information (with the true history as the control that does), that
the gauge-invariant gate measures do not move under (g, W_O) → (−g, −W_O) while the sign rule does,
and the record's schema round trip.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from proofs_check.experiments import text_arms as ta
from proofs_check.experiments.train import TextConfig

SMALL = TextConfig(arch="hierarchical", d=8, layers=2, heads=2, T=32, P=8, tokens=2_000, batch=4, dtype="float64")


def test_capacity_arm_trains_the_coupled_arms_parameters():
    """Same names, shapes, values at init and count; the frozen arm (control) trains L fewer (its gates)."""
    coupled, capacity, frozen = (ta.build_model(SMALL, arm) for arm in ta.ARMS)
    a, b = dict(coupled.named_parameters()), dict(capacity.named_parameters())
    assert list(a) == list(b)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert ta.trained_count(capacity) == ta.trained_count(coupled)
    assert ta.trained_count(coupled) - ta.trained_count(frozen) == SMALL.layers
    assert all(isinstance(layer.slow, ta.IndependentHistory) for layer in capacity.stack.layers)


def _r2(x: torch.Tensor, y: torch.Tensor) -> float:
    """R² of the least-squares fit of y (N,) on x (N, p) with an intercept."""
    X = torch.cat([torch.ones(len(x), 1, dtype=x.dtype), x], 1)
    resid = y - X @ torch.linalg.lstsq(X, y[:, None]).solution[:, 0]
    return float(1 - resid.square().sum() / (y - y.mean()).square().sum())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_independent_history_carries_no_cross_block_information(seed):
    """Target: the first coordinate of window i's block-0 mean of normalised states.  The slow path's
    output at block 1 is that mean times W_V W_O (attention over one block token), so with the true
    history it is linearly recoverable: R² = 1 up to float64 rounding × cond(W_VO) (< 1e-8 here).
    With the independent history it is window i + N/2's block 0, independent of window i's: R² of
    d predictors on N windows is Beta(d/2, (N − d − 1)/2) under independence: mean d/(N − 1) = 0.040 and
    sd √(2d(N − d − 1)/((N − 1)²(N + 1))) = 0.020 at N = 200, d = 8; the bound is mean + 6 sd."""
    N, d = 200, SMALL.d
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(N, SMALL.T, d, generator=gen, dtype=torch.float64)
    target = z[:, :SMALL.P].mean(1)[:, 0]
    slow = {arm: ta.build_model(SMALL, arm).double().stack.layers[0].slow for arm in ("coupled", "capacity")}
    with torch.no_grad():
        r2 = {arm: _r2(s(z)[:, SMALL.P], target) for arm, s in slow.items()}
    mean = d / (N - 1)
    sd = math.sqrt(2 * d * (N - d - 1) / ((N - 1) ** 2 * (N + 1)))
    assert r2["coupled"] > 1 - 1e-8, r2          # the control: the true history carries block 0
    assert r2["capacity"] < mean + 6 * sd, r2


def test_independent_history_is_causal_and_refuses_a_single_window():
    """Window i's slow output depends on its partner's earlier blocks only: changing the partner's last
    block leaves it unchanged (to rounding), changing the partner's first block moves it; one window is refused."""
    slow = ta.build_model(SMALL, "capacity").double().stack.layers[0].slow
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(4, SMALL.T, SMALL.d, generator=gen, dtype=torch.float64)
    late, early = z.clone(), z.clone()
    late[2, -SMALL.P:] += 1.0            # window 0 reads window 2 (shift 4 // 2)
    early[2, :SMALL.P] += 1.0
    with torch.no_grad():
        base, out_late, out_early = slow(z)[0], slow(late)[0], slow(early)[0]
        own = z.clone()
        own[0, :SMALL.P] += 1.0
        out_own = slow(own)[0]
    scale = base.abs().max()
    assert (out_late - base).abs().max() <= 1e-12 * scale
    assert (out_own - base).abs().max() <= 1e-12 * scale      # window 0's own history is not read
    assert (out_early - base).abs().max() > 1e-3 * scale       # the control: the partner's history is
    with pytest.raises(ValueError, match="at least 2 windows"):
        slow(z[:1])


def _opened(seed=0):
    """A small coupled model with every gate set to 0.3 (an open slow path) and validation-like windows."""
    model = ta.build_model(SMALL, "coupled").double()
    with torch.no_grad():
        for g in model.gates():
            g.fill_(0.3)
    tokens = torch.randint(256, (6, SMALL.T), generator=torch.Generator().manual_seed(seed))
    return model, tokens


def test_gate_measures_are_invariant_under_the_gauge_flip_and_the_sign_rule_is_not():
    """(g, W_O) → (−g, −W_O) is the same function (outputs equal to float64 rounding, ~1e-15 relative);
    ρ_ℓ and |g|·‖W_O‖₂ agree to 1e-12; the sign rule's verdict flips (the control)."""
    from proofs_check.experiments.text_capacity_record import sign_rule

    model, tokens = _opened()
    flipped = ta.flip_gauge(model, 0)
    with torch.no_grad():
        a, b = model(tokens), flipped(tokens)
    assert (a - b).abs().max() <= 1e-12 * a.abs().max()
    for measure in (lambda m: ta.slow_share(m, tokens), ta.gate_norm_product):
        x, y = measure(model), measure(flipped)
        assert all(abs(p - q) <= 1e-12 * abs(p) for p, q in zip(x, y)), (x, y)
    gates = [[g.item() for g in model.gates()]] * 3
    flipped_one = gates[:2] + [[g.item() for g in flipped.gates()]]
    assert sign_rule(gates, reach=1.0) == [0, 1]
    assert sign_rule(flipped_one, reach=1.0) == [1]             # same models, another verdict on layer 0


def test_slow_share_scales_with_the_gate():
    """ρ_ℓ is not a constant: the slow contribution is linear in g, so halving g₀ halves layer 0's
    numerator; its denominator ‖X₁‖ moves by O(h·g·‖S‖/‖X₁‖), so the ratio is ½ to within 2ρ₀."""
    model, tokens = _opened()
    rho = ta.slow_share(model, tokens)
    with torch.no_grad():
        model.gates()[0].mul_(0.5)
    half = ta.slow_share(model, tokens)
    assert rho[0] > 0.0
    assert abs(half[0] / rho[0] - 0.5) <= 2 * rho[0]


def test_record_schema_round_trip_and_refusal():
    """The committed record validates, round-trips through JSON unchanged, and a run missing a field is refused."""
    from pydantic import ValidationError

    from proofs_check.experiments import text_capacity_record as rec

    if not rec.CAPACITY_RECORD.exists():
        pytest.skip("no committed capacity record")
    raw = json.loads(rec.CAPACITY_RECORD.read_text())
    model = rec.CapacityRecord.model_validate(raw)
    assert rec.CapacityRecord.model_validate_json(model.model_dump_json()) == model
    broken = {**raw, "runs": [{k: v for k, v in raw["runs"][0].items() if k != "slow_share"}]}
    with pytest.raises(ValidationError, match="slow_share"):
        rec.CapacityRecord.model_validate(broken)


def test_reading_follows_the_preregistered_table():
    """Each row of the pre-registration's table from constructed per-seed gaps: a tight positive set
    (mean 0.02, sd 0.0016: t ≈ 28 on 4 dof, p < 1e-5) is *helps*; a set centred on 0 (mean 0.0001) is
    *not detected*; the reading combines them as the table says."""
    from proofs_check.experiments.text_capacity_record import reading

    pos = [0.020, 0.021, 0.019, 0.022, 0.018]
    null = [0.001, -0.002, 0.0015, -0.001, 0.0005]
    assert reading(pos, null) == "the gain is the slow path's cross-block information"
    assert reading(null, pos) == "the gain is capacity (or corpus-level statistics any window shares)"
    assert reading(null, null) == "not attributed at this n"
    assert reading([-g for g in pos], null) == "the independent history beats the true one"
    assert reading(pos, pos).startswith("both") and reading(pos, pos).endswith("0.50")


N = r"([+−-]?[0-9]+(?:\.[0-9]+)?(?:e[+−-]?[0-9]+)?)"
CAPACITY_QUOTE = (rf"loss\(capacity\) − loss\(coupled\) = {N} nats/byte over {N} seeds, 99 % interval \[{N}, {N}\], "
                  rf"p = {N}: \*helps\*; loss\(frozen\) − loss\(capacity\) = {N} \(descriptive, {N} seeds, p = {N}\)\..*?"
                  rf"ρ₀ = {N} in the coupled arm \(seed 3\) against at most {N} in the capacity arm")


def _capacity_numbers(summary: dict) -> list[float]:
    pt, fc = summary["cap_vs_coupled"], summary["frozen_vs_capacity_descriptive"]["test"]
    return [pt["mean"], pt["n"], *pt["interval"], pt["p"], fc["mean"], fc["n"], fc["p"],
            summary["slow_share"]["coupled"][0][0], max(summary["slow_share_max_over_seeds"]["capacity"])]


@pytest.mark.parametrize("doc", ["docs/theory.md", "docs/trained.md"])
def test_quoted_capacity_numbers_are_the_records(doc):
    """The capacity control's numbers in the docs are the committed record's at the quoted precision
    (tests/test_docs_numbers.py's rule: |quoted − value| ≤ ½ unit of the last digit)."""
    import re
    from pathlib import Path

    from proofs_check.experiments import text_capacity_record as rec

    record = rec.load()
    if record is None:
        pytest.skip("no committed capacity record")
    text = (Path(__file__).resolve().parents[1] / doc).read_text()
    matches = re.findall(CAPACITY_QUOTE, text, flags=re.S)
    assert len(matches) == 1, f"{doc}: the capacity passage occurs {len(matches)} times"
    for quoted, value in zip(matches[0], _capacity_numbers(record["summary"])):
        q = quoted.replace("−", "-")
        if "e" in q:                                   # a mantissa with k decimals
            mant = q.split("e")[0]
            places = len(mant.split(".")[1]) if "." in mant else 0
            assert abs(float(q) - value) <= 0.5 * 10 ** (-places) * 10 ** int(q.split("e")[1]) + 1e-15, (quoted, value)
        else:
            places = len(q.split(".")[1]) if "." in q else 0
            assert abs(float(q) - value) <= 0.5 * 10 ** -places + 1e-12, (quoted, value)
