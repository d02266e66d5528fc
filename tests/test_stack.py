"""The random untied stack (docs/theory.md §0) against a plain re-implementation, and its invariances.

Tolerances: one layer is O(10) float64 operations deep per entry on O(1) values, so an
independent re-implementation agrees to ~1e-15; 1e-12 leaves three decades of room
for reordered sums (einsum vs loops) without hiding a wrong formula (errors of a
wrong mask, scale or shift are O(1e-2) or larger at these sizes).
"""

import math

import pytest
import torch
from hypothesis import example, given, strategies as st

from numerics.stacks.kernels import alibi_slopes
from numerics.stacks.spec import StackSpec
from strategies import HARD_CASES, stack_specs

F64 = torch.float64
EPS64 = torch.finfo(F64).eps


def plain_layer(layer, X, kernel, P=None, block_size=None, slow_kernel="causal", shift=1):
    """docs/theory.md §0 written out token by token, head by head, with explicit loops.

    ``shift`` is the slow path's block shift (1 in the model; 0 only for the control).
    """
    T, d = X.shape
    h, alpha = layer.h, layer.decay

    def ln(x, g, b):
        out = torch.empty_like(x)
        for t in range(x.shape[0]):
            mu = x[t].mean()
            var = ((x[t] - mu) ** 2).mean()
            out[t] = g * (x[t] - mu) / math.sqrt(var + 1e-5) + b
        return out

    def allowed(i, j, kern, size):
        if kern == "full":
            return True
        if kern == "block":
            return j // size <= i // size
        return j <= i

    def attend(z, attn, kern, size, n_tok):
        out = torch.zeros(n_tok, d, dtype=z.dtype)
        heads = attn.W_Q.shape[0]
        for hd in range(heads):
            q, k, v = z @ attn.W_Q[hd], z @ attn.W_K[hd], z @ attn.W_V[hd]
            dk = q.shape[1]
            for i in range(n_tok):
                scores = []
                for j in range(n_tok):
                    if allowed(i, j, kern, size):
                        s = float(q[i] @ k[j]) / math.sqrt(dk)
                        if kern == "alibi":
                            s -= alibi_slopes(heads)[hd] * (i - j)
                        scores.append((j, s))
                m = max(s for _, s in scores)
                weights = [(j, math.exp(s - m)) for j, s in scores]
                total = sum(w for _, w in weights)
                mixed = sum((w / total) * v[j] for j, w in weights)
                out[i] += mixed @ attn.W_O[hd]
        return out

    z = ln(X, layer.ln1.gamma, layer.ln1.beta)
    U = (1 - h * alpha) * X + h * attend(z, layer.attn, kernel, block_size or P, T)
    if layer.slow is not None:
        n = T // P
        pooled = torch.stack([z[b * P:(b + 1) * P].mean(0) for b in range(n)])
        slow = attend(pooled, layer.slow.attn, slow_kernel, None, n)
        for t in range(T):
            b = t // P - shift
            if b >= 0:
                U[t] = U[t] + h * layer.gate * slow[b]
    z2 = ln(U, layer.ln2.gamma, layer.ln2.beta)
    hidden = z2 @ layer.mlp.W1 + layer.mlp.b1
    gelu = 0.5 * hidden * (1 + torch.erf(hidden / math.sqrt(2)))
    return U + h * (gelu @ layer.mlp.W2 + layer.mlp.b2)


CASES = [
    dict(T=6, d=8, layers=3, heads=2, kernel="causal"),
    dict(T=6, d=8, layers=2, heads=2, kernel="full", decay=0.7),
    dict(T=6, d=8, layers=2, heads=2, kernel="alibi", value_scale=3.0),
    dict(T=8, d=8, layers=2, heads=4, kernel="block", P=4, gate=0.5),
    dict(T=8, d=8, layers=2, heads=2, kernel="causal", P=2, gate=-0.8, slow_kernel="full"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['kernel']}-P{c.get('P')}")
def test_stack_matches_plain_reimplementation(case):
    stack = StackSpec.of(seed=3, **case).build()
    X = torch.randn(case["T"], case["d"], dtype=F64, generator=torch.Generator().manual_seed(4))
    expected = X
    with torch.no_grad():
        for layer in stack.layers:
            expected = plain_layer(layer, expected, case["kernel"], case.get("P"),
                                   slow_kernel=case.get("slow_kernel", "causal"))
        got = stack(X)
    assert torch.allclose(got, expected, rtol=0, atol=1e-12), (got - expected).abs().max()


def test_unshifted_reimplementation_is_caught():
    """Control: the same loops without the one-block shift disagree with the stack by O(h·g)."""
    stack = StackSpec(T=8, d=8, layers=2, heads=2, kernel="causal", P=4, seed=3, knobs={"gate": 1.0}).build()
    X = torch.randn(8, 8, dtype=F64, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        expected = X
        for layer in stack.layers:
            expected = plain_layer(layer, expected, "causal", 4, shift=0)
        assert (stack(X) - expected).abs().max() > 1e-3


@given(batch=st.lists(st.integers(1, 3), min_size=0, max_size=2), seed=st.integers(0, 2**16))
def test_batching_matches_one_by_one(batch, seed):
    stack = StackSpec(T=8, d=8, layers=2, heads=2, kernel="causal", P=4, seed=seed, knobs={"gate": 0.3}).build()
    X = torch.randn(*batch, 8, 8, dtype=F64, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        batched = stack(X)
        flat = X.reshape(-1, 8, 8)
        single = torch.stack([stack(x) for x in flat]).reshape(batched.shape)
    # Same arithmetic per token up to batched-matmul blocking: rounding level (1e-15) × depth.
    assert torch.allclose(batched, single, rtol=0, atol=1e-13)


def test_dtype_and_device_round_trip():
    s64 = StackSpec(T=6, d=8, layers=2, heads=2, kernel="causal", seed=1).build()
    s32 = StackSpec(T=6, d=8, layers=2, heads=2, kernel="causal", seed=1, dtype="float32").build()
    assert all(p.dtype == torch.float32 for p in s32.parameters())
    X = torch.randn(6, 8, dtype=F64)
    with torch.no_grad():
        y64, y32 = s64(X), s32(X.float())
    assert y32.dtype == torch.float32
    # The same seed draws the same weights (float64 on the CPU, then cast): float32 rounding only.
    assert torch.allclose(y64, y32.double(), atol=1e-5)
    back = s32.to(F64)
    assert next(back.parameters()).dtype == F64


@given(stack_specs())
@example(StackSpec(T=8, d=8, layers=3, heads=2, kernel="block", P=4, seed=2, knobs={"value_scale": 2.0}))
@example(HARD_CASES[0])
@example(HARD_CASES[1])
@example(HARD_CASES[2])
@example(HARD_CASES[3])
def test_homogeneous_input_stays_homogeneous(spec):
    stack = spec.build()
    xbar = torch.randn(spec.d, dtype=F64, generator=torch.Generator().manual_seed(spec.seed + 1))
    with torch.no_grad():
        traj = stack.trajectory(xbar.expand(spec.T, spec.d).clone())
        ref = stack.reference_trajectory(xbar)
    # Every row of A sums to 1 up to T eps and every value row is equal, so a layer moves the rows
    # apart by at most (T + d) eps × their size; 8× that per layer covers the growth through depth.
    tol = 8 * (spec.T + spec.d) * spec.layers * EPS64 * max(1.0, float(traj.abs().max()))
    assert (traj - traj[..., :1, :]).abs().max() <= tol
    assert torch.allclose(traj[:, 0, :], ref, rtol=0, atol=tol)


def test_perturbed_input_is_not_homogeneous():
    """Control: a token-dependent perturbation of size δ survives to the output at O(δ)."""
    stack = StackSpec(T=8, d=8, layers=3, heads=2, kernel="causal", seed=2).build()
    xbar = torch.randn(8, dtype=F64)
    X = xbar.expand(8, 8).clone()
    X[3] += 1e-3 * torch.randn(8, dtype=F64)
    with torch.no_grad():
        out = stack(X)
    spread = (out - out[:1]).abs().max()
    assert 1e-5 < spread < 1e-1


def test_gate_breaks_the_reference_clearly():
    stack = StackSpec(T=8, d=8, layers=2, heads=2, kernel="causal", P=4, knobs={"gate": 0.5}).build()
    with pytest.raises(ValueError, match="gate"):
        stack.reference_trajectory(torch.zeros(8, dtype=F64))


def test_frozen_kernel_causal_and_alibi():
    stack = StackSpec(T=5, d=4, layers=1, heads=2, kernel="causal").build()
    A = stack.frozen_kernel()
    expected = torch.tril(torch.ones(5, 5, dtype=F64)) / torch.arange(1, 6, dtype=F64)[:, None]
    assert torch.allclose(A, expected, atol=1e-15)
    alibi = StackSpec(T=5, d=4, layers=1, heads=2, kernel="alibi").build()
    with pytest.raises(ValueError, match="frozen_kernels"):
        alibi.frozen_kernel()
    assert alibi.frozen_kernels().shape == (2, 5, 5)


def test_smooth_path_is_the_same_path_at_every_depth():
    """θ(t) depends on the seed only, so stacks of different L sample one path (Claim 1.1)."""
    a = StackSpec(T=6, d=8, layers=4, heads=2, kernel="causal", seed=5, knobs={"weight_path": "smooth"}).build()
    b = StackSpec(T=6, d=8, layers=8, heads=2, kernel="causal", seed=5, knobs={"weight_path": "smooth"}).build()
    for ell in range(4):
        assert torch.equal(a.layers[ell].attn.W_Q, b.layers[2 * ell].attn.W_Q)
    assert not torch.equal(a.layers[0].attn.W_Q, a.layers[1].attn.W_Q)


BAD = [
    (dict(T=10, P=4), "not divisible by P"),
    (dict(layers=0), "layers=0"),
    (dict(heads=3), "heads=3 does not divide d"),
    (dict(kernel="sparse"), "kernel='sparse'"),
    (dict(gate=float("nan"), P=4), "gate=nan"),
    (dict(gate=0.5), "needs the slow path"),
    (dict(decay=-1.0), "decay"),
    (dict(weight_path="rough"), "weight_path"),
    (dict(slow_kernel="alibi", P=4), "slow_kernel"),
    (dict(kernel="block"), "block_size"),
    (dict(device="cuda"), "CUDA"),
]


@pytest.mark.parametrize("override,message", BAD, ids=[m for _, m in BAD])
def test_bad_input_names_the_parameter(override, message):
    if override.get("device") == "cuda" and torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    args = dict(T=8, d=8, layers=2, heads=2, kernel="causal") | override
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        StackSpec.of(**args).build()


def test_nan_weights_are_reported_by_name():
    stack = StackSpec(T=6, d=8, layers=2, heads=2, kernel="causal").build()
    with torch.no_grad():
        stack.layers[1].mlp.W2[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"layers\.1\.mlp\.W2"):
        stack.check_finite()


def test_wrong_input_shape_is_reported():
    stack = StackSpec(T=6, d=8, layers=2, heads=2, kernel="causal").build()
    with pytest.raises(ValueError, match=r"T=6, d=8"):
        stack(torch.zeros(5, 8, dtype=F64))


def test_reference_trajectory_with_decay_and_one_head():
    """x̄' = (1 − hα)x̄ + h LN₁(x̄)W_VO + …: the token-wise reference equals the stack on 1x̄ᵀ with α > 0
    (a sign error in the decay moves it by 2hα|x̄| ≈ 0.3); one head gives its frozen kernel."""
    stack = StackSpec(T=4, d=4, layers=3, heads=1, kernel="causal", seed=2, knobs={"decay": 0.9}).build()
    xbar = torch.linspace(-1, 1, 4, dtype=F64)
    traj = stack.trajectory(xbar.expand(4, 4).clone())
    ref = stack.reference_trajectory(xbar)
    # one layer is O(10) float64 operations per entry: 1e-12 as in the module docstring.
    assert torch.allclose(traj[:, 0, :], ref, atol=1e-12) and ref.shape == (4, 4)
    assert torch.allclose(stack.frozen_kernel(), torch.tril(torch.ones(4, 4, dtype=F64))
                          / torch.arange(1, 5, dtype=F64)[:, None], atol=1e-15)
    with pytest.raises(ValueError, match=r"^xbar has last dimension 3, expected d=4$"):
        stack.reference_trajectory(torch.zeros(3, dtype=F64))
