"""Every generated function evaluates its own SymPy derivation, on batches, keeping dtype and device.

These tests kill code mutants (`fastslow mutate`) of ``numerics/generated/*.py``:
a changed operator, constant, index, keyword or dropped term in a generated function
changes its value on generic inputs, its batch shape, or its dtype/device.

The reference is independent of theory.codegen's printer: the GenFunction's SymPy
expression with concrete dimensions, compiled by SymPy's stock SciPy/NumPy printer
(lambdify) and evaluated in numpy.  Inputs
are a batch of 5 generic points (scalars uniform in [0.2, 0.8], matrix entries too,
a point where the formula is not real drawn again;
dimension symbols 3, 4, 2, 6 in order of appearance, all different and different from
the batch size, so a swapped axis or a square-only shape cannot pass).
"""

from __future__ import annotations

import contextlib
import functools
import math
import importlib
import pkgutil

import numpy as np
import pytest
import sympy as sp
import torch
from sympy.printing.numpy import SciPyPrinter

import numerics.generated

BATCH = 5
DIM_SIZES = (3, 4, 2, 6)
FAMILIES = sorted(m.name for m in pkgutil.iter_modules(numerics.generated.__path__))
CASES = [(family, name) for family in FAMILIES
         for name in importlib.import_module(f"numerics.generated.{family}").__sympy_source__]


@functools.lru_cache(maxsize=None)
def _derivations(family: str) -> dict:
    theory_module = importlib.import_module(f"numerics.generated.{family}").__sympy_source__
    module_name = next(iter(theory_module.values()))[0]
    return {fn.name: fn for fn in importlib.import_module(module_name).generated_functions()}


def _dimension_values(fn) -> dict:
    dims: list = []
    for arg in fn.args:
        for size in getattr(arg, "shape", ()):
            if isinstance(size, sp.Symbol) and size not in dims:
                dims.append(size)
    scalars = {a for a in fn.args if not hasattr(a, "shape")}
    if set(dims) & scalars:
        raise ValueError(f"{fn.name}: a dimension symbol is also a scalar argument")
    return {s: sp.Integer(v) for s, v in zip(dims, DIM_SIZES)}


class ReferencePrinter(SciPyPrinter):
    """SymPy's stock SciPy/NumPy printer plus the two matrix nodes it lacks (trace, elementwise map)."""

    def _print_Trace(self, expr):
        return f"numpy.trace({self._print(expr.arg)})"

    def _print_ElementwiseApplyFunction(self, expr):
        (var,) = expr.function.variables
        return f"(lambda {self._print(var)}: {self._print(expr.function.expr)})({self._print(expr.expr)})"


@functools.lru_cache(maxsize=None)
def _case(family: str, name: str):
    """(inputs as float64 tensors with batch dim, reference values (BATCH, ...) as numpy)."""
    fn = _derivations(family)[name]
    dims = _dimension_values(fn)
    rng = np.random.default_rng(sum(map(ord, family + name)))  # a fixed seed per function
    concrete = [a.xreplace(dims) for a in fn.args]
    reference_fn = sp.lambdify(concrete, sp.sympify(fn.expr).xreplace(dims), modules=["scipy", "numpy"],
                               printer=ReferencePrinter)
    points, reference = [], []
    while len(reference) < BATCH:  # a point outside the formula's real domain is drawn again
        point = [rng.uniform(0.2, 0.8, size=tuple(map(int, getattr(a, "shape", ())))) for a in concrete]
        with np.errstate(all="ignore"):
            value = np.asarray(reference_fn(*point), dtype=float)
        if np.isfinite(value).all():
            points.append(point)
            reference.append(value)
    inputs = [torch.tensor(np.stack([p[i] for p in points]), dtype=torch.float64) for i in range(len(concrete))]
    return inputs, np.stack(reference)


@pytest.mark.parametrize("family,name", CASES)
def test_generated_function_evaluates_its_derivation(family, name):
    generated = getattr(importlib.import_module(f"numerics.generated.{family}"), name)
    inputs, reference = _case(family, name)
    out = generated(*inputs)
    assert out.dtype == torch.float64
    assert tuple(out.shape) == reference.shape, f"{name}: batch/result shape"
    # Two float64 evaluations of the same formula by different operation orders: rounding
    # 1e-16 times the few-hundred operations of the longest derivation (G_layer, φ₂) times
    # its conditioning at these O(1) inputs; 1e-10 relative to 1 + |ref| leaves a 10^3 margin,
    # while a changed operator, constant or term moves a value at these generic inputs by O(1e-2) or more.
    np.testing.assert_allclose(out.numpy(), reference, rtol=1e-10, atol=1e-10 * (1 + np.abs(reference).max()))


@contextlib.contextmanager
def foreign_defaults():
    """Default dtype float64 and default device meta, restored afterwards."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with torch.device("meta"):
            yield
    finally:
        torch.set_default_dtype(previous)


@pytest.mark.parametrize("family,name", CASES)
def test_generated_function_keeps_dtype_and_device(family, name):
    """float32 CPU tensors with batch (1, 1, 5) in, float32 CPU values out while the defaults are
    float64 on meta: a tensor made on the default device has no data and one in the default
    dtype changes the result's dtype, so a dropped ``dtype=``/``device=`` shows; with three
    batch axes an axis counted from the front (``shape[2]``, ``stack(…, 1)``) is not the one
    counted from the back."""
    generated = getattr(importlib.import_module(f"numerics.generated.{family}"), name)
    inputs, reference = _case(family, name)
    inputs = [x.float().reshape(1, 1, *x.shape) for x in inputs]  # batch (1, 1, 5): axes counted from the end
    reference = reference.reshape(1, 1, *reference.shape)
    with foreign_defaults():
        out = generated(*inputs)
    assert (out.device.type, out.dtype, tuple(out.shape)) == ("cpu", torch.float32, reference.shape)
    # float32 rounding 6e-8 times the operation count and conditioning as above: 1e-4.
    np.testing.assert_allclose(out.numpy(), reference, rtol=1e-4, atol=1e-4 * (1 + np.abs(reference).max()))


def test_a_wrong_formula_is_caught():
    """Negative control: a generated function with one sign flipped fails the comparison."""
    family, name = "stability", "layer_log_growth"
    inputs, reference = _case(family, name)
    a, k, h, g = inputs
    wrong = torch.log(a + g * k)  # a dropped h: the right one is log(a + g h k)
    assert np.abs(wrong.numpy() - reference).max() > 1e-2


# -- numerics/stacks/kernels.py: the pooling, lift, shift and frozen-kernel matrices by their definitions --
def test_pool_lift_and_shift_matrices():
    """Π = I_n ⊗ 1ᵀ/P, Π⁺ = I_n ⊗ 1, ΠΠ⁺ = I_n, one-block shift S e_b = e_{b+1} (block 0 gets 0)."""
    from numerics.stacks import kernels as K
    T, P, n = 6, 2, 3
    Pi, lift = K.pool_matrix(T, P), K.lift_matrix(T, P)
    for t in range(T):
        for b in range(n):
            assert Pi[b, t] == (1 / P if t // P == b else 0) and lift[t, b] == (1 if t // P == b else 0)
    assert Pi.dtype == lift.dtype == torch.float64 and K.pool_matrix(T, P, dtype=torch.float32).dtype == torch.float32
    assert K.lift_matrix(T, P, dtype=torch.float32).dtype == torch.float32
    assert torch.equal(Pi @ lift, torch.eye(n, dtype=torch.float64))
    S = K.block_shift_matrix(n)
    assert torch.equal(S, torch.tensor([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=torch.float64))
    assert torch.equal(K.block_shift_matrix(1), torch.zeros(1, 1, dtype=torch.float64))
    assert K.block_shift_matrix(2, dtype=torch.float32).dtype == torch.float32
    assert K.block_shift_matrix(1, dtype=torch.float32).dtype == torch.float32
    with pytest.raises(ValueError, match="P=4"):
        K.pool_matrix(6, 4)
    with pytest.raises(ValueError, match="P=0"):
        K.lift_matrix(6, 0)


@pytest.mark.parametrize("kernel,expected_w", [("causal", [1.0, 0, 0, 0]), ("full", [0.25] * 4)])
def test_frozen_kernels_and_their_persistent_left_vector(kernel, expected_w):
    """A = softmax(mask): causal rows 1/(i+1) on j ≤ i, full 1/T; wᵀA = wᵀ, wᵀ1 = 1 (e₁ resp. 1/T)."""
    from numerics.stacks import kernels as K
    A = K.frozen_kernels(4, 2, kernel)
    i = torch.arange(4, dtype=torch.float64)
    allowed = (i[None, :] <= i[:, None]) if kernel == "causal" else torch.ones(4, 4, dtype=torch.bool)
    expected = allowed.double() / allowed.sum(-1, keepdim=True)
    assert A.shape == (2, 4, 4) and torch.allclose(A, expected.expand(2, 4, 4), atol=1e-15)
    assert K.frozen_kernels(4, 1, kernel, dtype=torch.float32).dtype == torch.float32
    w = K.persistent_left_vector(A[0])
    # least squares on an exactly consistent system: float64 rounding × cond(M) ≈ 10 → 1e-12.
    assert torch.allclose(w, torch.tensor(expected_w, dtype=torch.float64), atol=1e-12)
    block = K.frozen_kernels(4, 1, "block", block_size=2)[0]
    assert torch.allclose(block[1], torch.tensor([0.5, 0.5, 0, 0], dtype=torch.float64), atol=1e-15)
    assert torch.allclose(block[2], torch.full((4,), 0.25, dtype=torch.float64), atol=1e-15)


def test_alibi_bias_and_slopes():
    """ALiBi (Press et al.): slopes m_h = 2^(−8(h+1)/H); bias −m_h (i − j) on j ≤ i, −inf above."""
    from numerics.stacks import kernels as K
    assert K.alibi_slopes(2) == [2.0 ** -4, 2.0 ** -8]
    assert K.alibi_slopes(4) == [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8]
    bias = K.score_bias(3, 2, "alibi")
    assert bias[1, 2, 0] == -2 * 2.0 ** -8 and bias[0, 1, 0] == -(2.0 ** -4) and bias[0, 1, 1] == 0
    assert bias[0, 0, 1] == -math.inf and bias.dtype == torch.float64


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_kernel_constructors_honour_dtype_and_device(dtype):
    """Every matrix constructor returns the requested dtype and device, including dtypes other
    than torch's default (float32) and the shape-only ``meta`` device: a GPU run builds its
    kernels where its stacks live, never on the CPU and never in the default dtype."""
    from numerics.stacks import kernels as K
    made = {"score_bias": K.score_bias(4, 2, "causal", dtype=dtype),
            "score_bias alibi": K.score_bias(4, 2, "alibi", dtype=dtype),
            "frozen_kernels": K.frozen_kernels(4, 2, "block", block_size=2, dtype=dtype),
            "pool_matrix": K.pool_matrix(4, 2, dtype=dtype), "lift_matrix": K.lift_matrix(4, 2, dtype=dtype),
            "block_shift_matrix": K.block_shift_matrix(3, dtype=dtype),
            "block_shift_matrix n=1": K.block_shift_matrix(1, dtype=dtype)}
    assert {name: m.dtype for name, m in made.items()} == dict.fromkeys(made, dtype)
    # ALiBi in the requested precision: the float64 bias rounded once, not float32 slopes promoted
    alibi64 = K.score_bias(4, 2, "alibi")
    assert torch.equal(made["score_bias alibi"], alibi64.to(dtype))
    # past 256 tokens bfloat16 cannot hold the positions: the distances must be exact first
    long64 = K.score_bias(300, 1, "alibi")
    assert torch.equal(K.score_bias(300, 1, "alibi", dtype=dtype), long64.to(dtype))
    assert long64[0, 299, 0] == -299 * 2.0 ** -8
    # three heads: slopes 2^(−8/3), … are not binary fractions, so they must be float64 throughout
    three = K.score_bias(5, 3, "alibi")
    assert all(three[h, i, j] == -K.alibi_slopes(3)[h] * (i - j)
               for h in range(3) for i in range(5) for j in range(i + 1))
    assert torch.equal(K.frozen_kernels(4, 2, "alibi"), torch.softmax(alibi64, dim=-1))
    on_meta = {"allowed_mask": K.allowed_mask(4, "causal", device="meta"),
               "allowed_mask full": K.allowed_mask(4, "full", device="meta"),
               "allowed_mask block": K.allowed_mask(4, "block", block_size=2, device="meta"),
               "score_bias alibi": K.score_bias(4, 2, "alibi", device="meta"),
               "frozen_kernels": K.frozen_kernels(4, 2, "causal", device="meta"),
               "pool_matrix": K.pool_matrix(4, 2, device="meta"), "lift_matrix": K.lift_matrix(4, 2, device="meta"),
               "block_shift_matrix": K.block_shift_matrix(3, device="meta"),
               "block_shift_matrix n=1": K.block_shift_matrix(1, device="meta")}
    assert {name: m.device.type for name, m in on_meta.items()} == dict.fromkeys(on_meta, "meta")


def test_block_kernel_and_pooling_need_their_block_size():
    """Full messages, so that a changed or dropped parameter name in them is caught."""
    from numerics.stacks import kernels as K
    with pytest.raises(ValueError, match=r"^T=6 is not divisible by block_size=4: blocks of 4 tokens need T = n\*4$"):
        K.allowed_mask(6, "block", block_size=4)
    with pytest.raises(ValueError, match=r"^T=6 is not divisible by P=4: blocks of 4 tokens need T = n\*4$"):
        K.pool_matrix(6, 4)
    with pytest.raises(ValueError, match=r"^P=0 must be a positive integer$"):
        K.lift_matrix(6, 0)
    with pytest.raises(ValueError, match=r"^kernel='sliding' is not one of causal, full, alibi, block$"):
        K.frozen_kernels(4, 1, "sliding")
    with pytest.raises(ValueError, match=r"^A must be one square \(T, T\) kernel, got shape \(2, 4, 4\)$"):
        K.persistent_left_vector(K.frozen_kernels(4, 2, "causal"))
    with pytest.raises(ValueError, match=r"^A must be one square \(T, T\) kernel, got shape \(4, 3\)$"):
        K.persistent_left_vector(torch.ones(4, 3, dtype=torch.float64) / 3)


def test_kernel_errors_name_the_parameter():
    from numerics.stacks import kernels as K
    with pytest.raises(ValueError, match=r"^kernel='block' needs block_size \(or P\) to define its blocks$"):
        K.allowed_mask(4, "block")
    with pytest.raises(ValueError, match=r"^block_size=3 must|^T=4 is not divisible by block_size=3"):
        K.allowed_mask(4, "block", block_size=3)
    with pytest.raises(ValueError, match=r"^P=1\.5 must be a positive integer$"):
        K.check_divisible(4, 1.5)
    with pytest.raises(ValueError, match=r"^slow_kernel='alibi' is not one of causal, full$"):
        K.check_kernel("alibi", name="slow_kernel", allowed=K.SLOW_KERNELS)
    assert K.check_divisible(4, 1) is None and K.allowed_mask(3, "full").shape == (3, 3)
