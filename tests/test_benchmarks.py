"""The benchmark harness: correctness of the factorised Jacobian it times, and the JSON it returns.

No timing is asserted anywhere (machines are shared and noisy); only that the compared
objects agree and that the harness reports every section under its documented key.
"""

import inspect
import math

import pytest
import torch

from benchmarks import codegen_speed, derive_time, jacobian, training
from benchmarks.run import run_benchmarks
from numerics.fitting import loglog_fit
from numerics.linearised.jacobians import stack_jacobian
from numerics.linearised.matrix_free import reference_state
from proofs_check.experiments.train import TextConfig

TINY = dict(T=6, d=8, layers=3, heads=2)
TINY_TEXT = TextConfig(d=8, layers=1, heads=2, T=16, P=4, batch=4)


def test_factorised_jacobian_equals_dense():
    # Claim 2.3 at the reference: same (Td)x(Td) matrix; float64 rounding through 3 layers of
    # d=8 products and the (L+1)-term assembly gives ~1e-15 relative; 1e-10 is the benchmark's bar.
    stack, xbar = jacobian.benchmark_stack(**TINY, device="cpu")
    J_dense = stack_jacobian(stack, reference_state(stack, xbar))
    J_fact = jacobian.factorised_jacobian(stack, xbar)
    assert J_fact.shape == J_dense.shape == (TINY["T"] * TINY["d"],) * 2
    assert jacobian.relative_error(J_fact, J_dense) <= 1e-10


def test_control_inhomogeneous_state_breaks_agreement_linearly():
    # Negative control: the factorisation holds only at X = 1x̄ᵀ.  At X = 1x̄ᵀ + δE the dense
    # Jacobian moves by O(δ) (the attention-weight term δA·V is linear in the inhomogeneity),
    # so the mismatch must be far above 1e-10 and grow with slope 1 in δ.
    stack, xbar = jacobian.benchmark_stack(**TINY, device="cpu")
    J_fact = jacobian.factorised_jacobian(stack, xbar)
    E = torch.randn(TINY["T"], TINY["d"], generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    deltas = [1e-4, 1e-3, 1e-2]
    errors = []
    for delta in deltas:
        X = xbar.expand(TINY["T"], TINY["d"]) + delta * E
        J_dense = stack_jacobian(stack, X)
        errors.append(jacobian.relative_error(J_fact, J_dense))
    assert min(errors) > 1e-8
    slope = loglog_fit(deltas, errors).slope
    assert abs(slope - 1.0) < 0.1  # first order in δ; the O(δ²) term is 100x smaller at δ=1e-2


def test_assembly_is_the_kronecker_sum():
    # assemble() (one GEMM + permute) against numerics.families.factorisation.polynomial_jacobian (torch.kron
    # summed term by term): two spellings of J = Σ_m A^m ⊗ K_m; float64 sums of L+1 = 4 products.
    from numerics.families.factorisation import polynomial_jacobian

    g = torch.Generator().manual_seed(1)
    A = torch.tril(torch.rand(5, 5, generator=g, dtype=torch.float64))
    K = torch.randn(4, 3, 3, generator=g, dtype=torch.float64)
    want = polynomial_jacobian(A, K)
    got = jacobian.assemble(jacobian.kernel_powers(A, 3), K)
    assert torch.allclose(got, want, rtol=1e-14, atol=1e-14 * want.abs().max())
    # control: transposing the Kronecker factors' roles (K ⊗ A ordering) gives another matrix
    wrong = sum(torch.kron(K[m], torch.linalg.matrix_power(A, m)) for m in range(4))
    assert (wrong - got).abs().max() > 1e-2 * want.abs().max()


def test_handwritten_baseline_matches_generated():
    # The speed baseline must compute the generated function's value: same formula, float64.
    inputs = codegen_speed.random_layers(4, 6, 24, "cpu")
    from numerics.generated import factorisation as gen

    if "u" in inspect.signature(gen.G_layer).parameters:
        inputs["u"] = codegen_speed.call_by_name(gen.ubar, inputs)
    want = codegen_speed.call_by_name(gen.G_layer, inputs)
    accepted = inspect.signature(codegen_speed.handwritten_G_layer).parameters
    got = codegen_speed.handwritten_G_layer(**{k: v for k, v in inputs.items() if k in accepted})
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12 * want.abs().max())  # d=6 sums: ~1e-15


def test_harness_returns_every_key(monkeypatch):
    # Smoke: tiny sizes everywhere, one cheap derive family and one claim; keys as documented.
    monkeypatch.setattr(jacobian, "HEADLINE", {**jacobian.HEADLINE, "T": 4, "d": 8, "layers": 2, "heads": 2})
    monkeypatch.setattr(jacobian, "QUICK_CURVE", (2, 4))
    monkeypatch.setattr(codegen_speed, "BATCH", 8)
    monkeypatch.setattr(codegen_speed, "QUICK_D", 4)
    monkeypatch.setattr(derive_time, "FAMILIES", ["stability"])
    monkeypatch.setattr(derive_time, "quick_claims", lambda: ["5.1"])
    from benchmarks import scale, sweep

    monkeypatch.setattr(sweep, "QUICK_STACKS", 2)
    monkeypatch.setattr(sweep, "REPEATS", 1)
    monkeypatch.setattr(scale, "QUICK", {**scale.QUICK, "T": (8, 16), "d": 8})
    monkeypatch.setenv("FASTSLOW_BENCH_SCALE_CLAIMS", "0")
    monkeypatch.setattr(training, "CONFIG", TINY_TEXT)
    results = run_benchmarks(quick=True, device="cpu")
    assert set(results) >= {"factorised_vs_dense_jacobian", "generated_vs_handwritten", "derive",
                            "memory", "training", "machine"}
    assert results["machine"]["section_errors"] in ([], ["slow_path_cost"])
    j = results["factorised_vs_dense_jacobian"]
    assert {"speedup", "dense_seconds", "factorised_seconds", "relative_error", "config", "curve"} <= set(j)
    assert j["relative_error"] <= 1e-10 and math.isfinite(j["speedup"])
    assert [p["T"] for p in j["curve"]] == [2, 4] and all("speedup" in p for p in j["curve"])
    g = results["generated_vs_handwritten"]
    assert {"ratio", "sympytorch_ratio", "lambdify_ratio"} <= set(g)
    d = results["derive"]
    assert {"cold_seconds", "warm_seconds", "check_seconds_per_claim"} <= set(d)
    assert list(d["check_seconds_per_claim"]) == ["5.1"] and d["warm_cached_families"] == ["stability"]
    assert {"dense_peak_rss_mb", "factorised_peak_rss_mb", "ratio"} <= set(results["memory"])


def test_training_section_reports_tokens_per_second_and_the_projection(monkeypatch):
    # The quick section at a tiny config: every field, positive rates, and the projection exactly as
    # computed (the token budget over the measured tokens/s); no timing is asserted.
    monkeypatch.setattr(training, "CONFIG", TINY_TEXT)
    r = training.run(quick=True, device="cpu")
    assert r["config"]["device"] == "cpu" and r["config"]["timed_steps"] == training.QUICK_STEPS
    assert r["budget_tokens"] == TINY_TEXT.tokens == 500_000 and set(r["archs"]) == set(training.ARCHS)
    for a in r["archs"].values():
        assert a["tokens_per_step"] == TINY_TEXT.batch * TINY_TEXT.T
        assert len(a["step_runs"]) == len(a["forward_backward_runs"]) == training.QUICK_STEPS
        assert a["step_seconds"] > 0 and a["forward_backward_seconds"] > 0
        assert a["tokens_per_s"] == a["tokens_per_step"] / a["step_seconds"] > 0
        assert a["projected_seconds"] == r["budget_tokens"] / a["tokens_per_s"]
        assert a["trainer_over_forward_backward"] == a["step_seconds"] / a["forward_backward_seconds"]
    rates = {arch: a["tokens_per_s"] for arch, a in r["archs"].items()}
    assert r["hierarchical_over_preln"] == rates["preln"] / rates["hierarchical"]
    assert "forward + backward" in r["baseline"] and len(r["load_average_1min"]) == 2
    text = "\n".join(training.format_lines(r))
    assert "preln" in text and "hierarchical" in text and "tokens/s" in text


def test_bad_device_is_a_value_error():
    with pytest.raises(ValueError, match="device"):
        run_benchmarks(quick=True, device="tpu")
