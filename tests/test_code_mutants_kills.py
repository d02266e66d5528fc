"""Every generated function evaluates its own SymPy derivation, on batches, keeping dtype and device.

These tests kill code mutants (`fastslow mutate --code`) of ``numerics/generated/*.py``:
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
    """float32 CPU tensors in, float32 CPU values out while the defaults are float64 on meta:
    a tensor made on the default device has no data and one in the default dtype changes
    the result's dtype, so a dropped ``dtype=``/``device=`` shows."""
    generated = getattr(importlib.import_module(f"numerics.generated.{family}"), name)
    inputs, reference = _case(family, name)
    inputs = [x.float() for x in inputs]
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
