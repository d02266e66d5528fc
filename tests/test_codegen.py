"""The SymPy -> torch code generator (theory/codegen) and the derive driver (proofs_check/runners/derive.py).

Every comparison executes generated code; nothing compares printed strings.
Tolerances: float64 table entries against mpmath at 50 digits to 1e-13 relative
(torch's kernels are accurate to a few ulp, 1e-13 is ~450 ulp); random
expressions to 1e-12 (float64) and 1e-5 (float32) relative to 1 + max|ref|,
which leaves room for the cancellation a random tree can contain.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap
import warnings

import mpmath
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.codegen import cfunctions
from sympy.matrices.expressions.matexpr import MatrixElement
from sympy.printing.pytorch import TorchPrinter as StockTorchPrinter
from sympy.tensor.array.expressions import ArrayContraction, ArrayTensorProduct

from proofs_check.runners import derive as derive_mod
from theory.codegen import (
    TORCH_FUNCTIONS,
    CodegenError,
    GenFunction,
    TorchPrinter,
    render_function,
    render_module,
    to_sympy,
)

EXAMPLES = max(30, settings().max_examples)
x, y = sp.symbols("x y")
d = sp.Symbol("d", integer=True, positive=True)
B, C = sp.MatrixSymbol("B", d, d), sp.MatrixSymbol("C", d, d)
h, lam = sp.symbols("h lam")


def compile_fns(*fns: GenFunction) -> dict:
    """Render ``fns`` as a module and execute it; returns its namespace."""
    namespace: dict = {}
    exec(compile(render_module("demo", "theory.demo", list(fns)), "<generated demo>", "exec"),
         namespace)
    return namespace


def compile_one(expr, args=(x, y), name="f"):
    return compile_fns(GenFunction(name, tuple(args), expr, "0.0", "Test function."))[name]


def stock(expr, **tensors):
    """Evaluate SymPy's stock TorchPrinter output (its warnings are not ours)."""
    code = StockTorchPrinter().doprint(expr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eval(code, {"torch": torch, **tensors})


# -- the function table against mpmath ---------------------------------------------
def _sympy_function(name):
    return getattr(sp, name, None) or getattr(cfunctions, name)


#: Sampling interval per table entry (each argument), away from poles and branch cuts.
DOMAINS = {
    "exp": (-5, 5), "exp2": (-5, 5), "expm1": (-3, 3), "log": (0.01, 10), "log2": (0.01, 10),
    "log10": (0.01, 10), "log1p": (-0.9, 5), "Sqrt": (0.01, 10), "hypot": (-3, 3),
    "sin": (-3, 3), "cos": (-1.5, 1.5), "tan": (-1.4, 1.4), "sec": (-1.4, 1.4),
    "csc": (0.1, 3), "cot": (0.1, 1.5), "asin": (-0.99, 0.99), "acos": (-0.99, 0.99),
    "atan": (-5, 5), "atan2": (0.1, 3), "sinh": (-4, 4), "cosh": (-4, 4), "tanh": (-4, 4),
    "sech": (-4, 4), "csch": (0.1, 4), "coth": (0.1, 4), "asinh": (-5, 5), "acosh": (1.01, 10),
    "atanh": (-0.99, 0.99), "erf": (-3, 3), "erfc": (-2, 3), "erfinv": (-0.99, 0.99),
    "loggamma": (2.5, 10), "Abs": (-5, 5), "sign": (-5, 5), "floor": (1, 5),
    "ceiling": (-5, -1.1),
}


def test_every_table_entry_has_a_domain():
    assert set(DOMAINS) == set(TORCH_FUNCTIONS)


def _mpmath_reference(expr, args, points):
    """``expr`` at ``points`` (float64 rows) evaluated by mpmath at 50 digits."""
    # expand_func spells sympy.codegen's log2, exp2, ... elementarily; SymPy's mpmath
    # printer misprints them (z/log2(x) -> "z/log(x)/log(2)").
    with mpmath.workdps(50):
        fn = sp.lambdify(args, sp.expand_func(expr), modules="mpmath")
        return np.array([float(fn(*(mpmath.mpf(float(v)) for v in row))) for row in points])


@pytest.mark.parametrize("name", sorted(TORCH_FUNCTIONS))
def test_table_entry_matches_mpmath(name):
    fn = _sympy_function(name)
    arity = TORCH_FUNCTIONS[name].count("{")
    args = (x, y)[:arity]
    lo, hi = DOMAINS[name]
    points = np.random.default_rng(len(name)).uniform(lo, hi, size=(16, arity))
    z = sp.Symbol("z")
    const = fn(*(sp.Rational(round(v * 64), 64) for v in points[0]), evaluate=False)
    # the entry alone, inside a quotient and a power (precedence), and at a constant
    # argument (printed with `math`, or as a literal where `math` lacks the function)
    for expr in (fn(*args), z / fn(*args), fn(*args) ** 2, z / const + const * z):
        all_args = (*args, z)
        pts = np.concatenate([points, np.full((16, 1), 0.75)], axis=1)
        ref = _mpmath_reference(expr, all_args, pts)
        got = compile_one(expr, all_args)(*torch.from_numpy(pts).T)
        assert got.dtype == torch.float64
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-13, atol=1e-15, err_msg=str(expr))


# -- the gaps of SymPy 1.14's TorchPrinter, each shown failing there -------------------
def test_max_min_with_float_constant():
    t = torch.linspace(-2, 2, 9, dtype=torch.float64)
    with pytest.raises(TypeError):
        stock(sp.Max(x, 1.0), x=t)
    torch.testing.assert_close(compile_one(sp.Max(x, 1.0), (x,))(t), torch.clamp(t, min=1.0))
    torch.testing.assert_close(compile_one(sp.Min(x, y, 0.5))(t, -t),
                               torch.minimum(torch.minimum(t, -t), torch.tensor(0.5).double()))


def test_transpose_is_batched():
    b = torch.randn(4, 3, 3, dtype=torch.float64)
    with pytest.raises(TypeError):
        stock(B.T, B=b)
    torch.testing.assert_close(compile_one(B.T * C, (B, C))(b, b), b.mT @ b)


def test_explicit_matrix_keeps_batch_and_autograd():
    expr = sp.Matrix([[x, 0], [sp.exp(x * y), 1 / y]])
    xs = torch.rand(4, 3, dtype=torch.float64, requires_grad=True)
    ys = torch.rand(3, dtype=torch.float64, requires_grad=True) + 0.5
    with pytest.raises((ValueError, TypeError, RuntimeError)):
        stock(expr, x=xs, y=ys)
    f = compile_one(expr)
    out = f(xs, ys)
    assert out.shape == (4, 3, 2, 2) and out.dtype == torch.float64
    torch.testing.assert_close(out[..., 1, 0], torch.exp(xs * ys))
    torch.testing.assert_close(out[..., 0, 1], torch.zeros(4, 3, dtype=torch.float64))
    assert torch.autograd.gradcheck(f, (xs, ys))
    assert f(xs.float(), ys.float()).dtype == torch.float32


def test_trace_and_matpow_are_batched():
    b = torch.randn(5, 3, 3, dtype=torch.float64)
    with pytest.raises(RuntimeError):
        stock(sp.Trace(B), B=b)
    with pytest.raises(RuntimeError):
        stock(B**3, B=b)
    torch.testing.assert_close(compile_one(sp.Trace(B), (B,))(b), b.diagonal(dim1=-2, dim2=-1).sum(-1))
    torch.testing.assert_close(compile_one(B**3, (B,))(b), b @ b @ b)


def test_array_einsums_are_refused_and_kronecker_is_batched():
    b3, c3 = sp.MatrixSymbol("B", 3, 3), sp.MatrixSymbol("C", 3, 3)
    contraction = ArrayContraction(ArrayTensorProduct(b3, c3), (1, 2))
    batched = torch.randn(2, 3, 3, dtype=torch.float64)
    with pytest.raises(RuntimeError):  # stock einsum "ab,bc->ac" has no `...`
        stock(contraction, B=batched, C=batched)
    with pytest.raises(CodegenError, match="ArrayContraction"):
        compile_one(contraction, (b3, c3))
    a = torch.randn(2, 2, 3, dtype=torch.float64)
    c = torch.randn(4, 1, 3, 2, dtype=torch.float64)
    m = sp.MatrixSymbol("A", 2, 3)
    k = sp.MatrixSymbol("K", 3, 2)
    out = compile_one(sp.KroneckerProduct(m, k), (m, k))(a, c)
    assert out.shape == (4, 2, 6, 6)
    torch.testing.assert_close(out[3, 1], torch.kron(a[1], c[3, 0]))


@pytest.mark.parametrize("fn", [cfunctions.log1p, cfunctions.expm1, sp.sech, sp.erfc])
def test_unmapped_stock_functions(fn):
    t = torch.linspace(0.1, 2, 7, dtype=torch.float64)
    with pytest.raises(Exception, match="Unsupported|not supported|is not defined"):
        stock(fn(x), x=t)
    ref = _mpmath_reference(fn(x), (x,), t.numpy()[:, None])
    np.testing.assert_allclose(compile_one(fn(x), (x,))(t).numpy(), ref, rtol=1e-13)


def test_number_valued_subexpressions_stay_python_constants():
    t = torch.linspace(0.1, 2, 7, dtype=torch.float32)
    expr = (sp.sqrt(2) * x + sp.Rational(1, 3) + sp.exp(sp.pi) * sp.cosh(2) * x
            + sp.Rational(2**60 + 1, 3**40) * x**2 + sp.Float("0.1", 40) / x)
    with pytest.raises(TypeError):
        stock(expr, x=t)
    out = compile_one(expr, (x,))(t)
    assert out.dtype == torch.float32
    ref = _mpmath_reference(expr, (x,), t.double().numpy()[:, None])
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-7)


def test_piecewise_and_heaviside_with_constant_branches_keep_dtype():
    expr = sp.Piecewise((1, x > 1), (sp.Rational(1, 3), x > 0), (0, True)) + sp.Heaviside(x)
    t = torch.tensor([-1.0, 0.0, 0.5, 2.0], dtype=torch.float64)
    assert stock(sp.Piecewise((1, x > 0), (0, True)), x=t).dtype == torch.int64  # stock: ints
    out = compile_one(expr, (x,))(t)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, torch.tensor([0.0, 0.5, 1 / 3 + 1, 2.0], dtype=torch.float64))


def test_symbolic_identity_dimension():
    b = torch.randn(2, 4, 4, dtype=torch.float64)
    with pytest.raises(NameError):
        stock(sp.Identity(d) + B, B=b)
    torch.testing.assert_close(compile_one(sp.Identity(d) + B, (B,))(b), b + torch.eye(4).double())
    scaled = compile_one(sp.Trace(B) / sp.sqrt(d) + sp.Max(x, 1 / d) + x**d, (B, x))
    xs = torch.tensor([0.1, 0.5], dtype=torch.float64)
    torch.testing.assert_close(scaled(b, xs), b.diagonal(dim1=-2, dim2=-1).sum(-1) / 2
                               + torch.clamp(xs, min=0.25) + xs**4)


# -- random expressions: torch vs numpy lambdify vs evalf, gradients, torch.func --------
UNARY = [
    sp.sin, sp.cos, sp.tanh, sp.atan, sp.erf, sp.sech, sp.erfc, sp.Abs, sp.asinh,
    lambda u: cfunctions.log1p(u**2), lambda u: sp.sqrt(1 + u**2), lambda u: sp.exp(-u**2),
    lambda u: cfunctions.expm1(sp.tanh(u)), lambda u: u**2, lambda u: u**3,
    lambda u: 1 / (2 + sp.cos(u)), lambda u: sp.log(2 + sp.sin(u)),
    lambda u: (2 + sp.sin(u)) ** sp.Rational(-1, 2), lambda u: (2 + sp.cos(u)) ** sp.Rational(-3, 2),
    lambda u: cfunctions.hypot(u, 2), lambda u: sp.atan2(u, 1 + u**2),
]
BINARY = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, sp.Max, sp.Min,
    lambda a, b: a / (2 + sp.sin(b)), lambda a, b: sp.Piecewise((a, b > 0), (b, True)),
    lambda a, b: (2 + sp.sin(a)) ** sp.cos(b),
]
LEAVES = [x, y, x, y, sp.Rational(1, 3), sp.Integer(2), sp.pi / 4, sp.Float(0.3), sp.E]
expressions = st.recursive(
    st.sampled_from(LEAVES),
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(UNARY), inner).map(lambda t: t[0](t[1])),
        st.tuples(st.sampled_from(BINARY), inner, inner).map(lambda t: t[0](t[1], t[2])),
    ),
    max_leaves=6,
)


def _inputs(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    xs = (torch.rand(4, 3, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)
    ys = (torch.rand(3, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)
    return xs, ys


@settings(max_examples=EXAMPLES, deadline=None)
@given(expressions)
def test_random_expressions_match_numpy_and_evalf(expr):
    f = compile_one(expr)
    xs, ys = _inputs(torch.float64)
    got = f(xs, ys)
    assert got.shape == ((3,) if expr.free_symbols == {y} else (4, 3))
    assert got.dtype == torch.float64
    got = got.expand(4, 3)
    numpy_fn = sp.lambdify((x, y), expr, modules="numpy")
    xn, yn = np.broadcast_arrays(xs.numpy(), ys.numpy())
    ref = np.broadcast_to(np.vectorize(numpy_fn)(xn, yn), (4, 3)).astype(float)
    scale = 1 + np.abs(ref).max()
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12 * scale)
    for i, j in [(0, 0), (3, 2)]:
        exact = float(expr.evalf(30, subs={x: sp.Float(float(xn[i, j]), 30),
                                           y: sp.Float(float(yn[i, j]), 30)}))
        assert abs(float(got[i, j]) - exact) <= 1e-12 * scale
    got32 = f(*_inputs(torch.float32)).expand(4, 3)
    assert got32.dtype == torch.float32
    x32, y32 = (t.double().numpy() for t in _inputs(torch.float32))
    ref32 = np.broadcast_to(np.vectorize(numpy_fn)(*np.broadcast_arrays(x32, y32)), (4, 3))
    np.testing.assert_allclose(got32.numpy(), ref32, rtol=1e-5, atol=1e-5 * (1 + np.abs(ref32).max()))


@settings(max_examples=EXAMPLES, deadline=None)
@given(expressions.filter(lambda e: e.free_symbols))
def test_random_expressions_differentiate(expr):
    f = compile_one(expr)
    xs, ys = (t.requires_grad_() for t in _inputs(torch.float64, seed=1))
    assert torch.autograd.gradcheck(f, (xs, ys))
    torch.testing.assert_close(torch.func.vmap(f)(xs.detach(), ys.detach().expand(4, 3)),
                               f(xs.detach(), ys.detach()).expand(4, 3))
    gx, gy = torch.func.jacrev(f, argnums=(0, 1))(xs[0, 0].detach(), ys[0].detach())
    ax, ay = torch.autograd.grad(f(xs[0, 0], ys[0]), (xs, ys), allow_unused=True,
                                 materialize_grads=True)
    torch.testing.assert_close(gx, ax[0, 0])
    torch.testing.assert_close(gy, ay[0])


# -- matrix-level -------------------------------------------------------------------
def test_factorised_block_batched_over_layers_and_eigenvalues():
    G = (sp.Identity(d) + C) * (sp.Identity(d) + h * lam * B)
    f = compile_one(G, (C, B, h, lam))
    L, T, n = 4, 6, 5
    g = torch.Generator().manual_seed(3)
    b = torch.randn(L, 1, n, n, generator=g, dtype=torch.float64)
    c = torch.randn(L, 1, n, n, generator=g, dtype=torch.float64)
    lams = torch.rand(T, generator=g, dtype=torch.float64)
    hh = torch.tensor(1 / L, dtype=torch.float64)
    out = f(c, b, hh, lams)
    eye = torch.eye(n, dtype=torch.float64)
    ref = (eye + c) @ (eye + hh * lams[:, None, None] * b)
    assert out.shape == (L, T, n, n)
    torch.testing.assert_close(out, ref, rtol=1e-14, atol=1e-14)
    assert f(c.float(), b.float(), hh.float(), lams.float()).dtype == torch.float32
    meta = [t.to("meta") for t in (c, b, hh, lams)]
    assert f(*meta).device.type == "meta"
    bb = b[0, 0].clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda m: f(c[0, 0], m, hh, lams), (bb,))
    jac = torch.func.jacrev(lambda m: f(c[0, 0], m, hh, lams[0]))(b[0, 0])
    assert jac.shape == (n, n, n, n)


def test_matrix_nodes_against_direct_torch():
    v = sp.MatrixSymbol("v", d, 1)
    expr = (sp.HadamardProduct(B, C) + sp.Trace(B) * lam * B.T + sp.Inverse(C)
            + sp.DiagMatrix(v) + sp.HadamardPower(B, 2) + B.applyfunc(sp.exp)
            + B.applyfunc(sp.Lambda(x, x**2 + lam * x)) + v * v.T - 2 * sp.Determinant(C) * C
            + sp.DiagonalMatrix(B) + sp.DiagonalOf(C) * v.T + sp.ZeroMatrix(d, d)
            + (B + C).applyfunc(sp.Lambda(x, x * sp.exp(-x))))
    f = compile_one(expr, (B, C, v, lam))
    g = torch.Generator().manual_seed(4)
    b = torch.randn(2, 3, 3, generator=g, dtype=torch.float64)
    c = torch.randn(3, 3, generator=g, dtype=torch.float64) + 3 * torch.eye(3).double()
    vv = torch.randn(2, 3, 1, generator=g, dtype=torch.float64)
    la = torch.rand(2, generator=g, dtype=torch.float64)
    L4 = la[:, None, None]
    tr = b.diagonal(dim1=-2, dim2=-1).sum(-1)[:, None, None]
    ref = (b * c + tr * L4 * b.mT + torch.linalg.inv(c) + torch.diag_embed(vv[..., 0]) + b**2
           + b.exp() + b**2 + L4 * b + vv @ vv.mT - 2 * torch.linalg.det(c) * c
           + torch.diag_embed(b.diagonal(dim1=-2, dim2=-1)) + c.diagonal()[:, None] @ vv.mT
           + (b + c) * torch.exp(-(b + c)))
    torch.testing.assert_close(f(b, c, vv, la), ref)
    # (B*C)[1, 2] would become a Sum over a symbolic index: keep the element unevaluated
    element = compile_one(B[0, 1] * lam + MatrixElement(B * C, 1, 2) + MatrixElement(B + C, 0, 0),
                          (B, C, lam))
    torch.testing.assert_close(element(b, c, la),
                               b[:, 0, 1] * la + (b @ c)[:, 1, 2] + (b + c)[:, 0, 0])


def test_products_use_broadcasts_for_diagonals_outer_products_and_traces():
    """diag(v) and u wᵀ never become dense (d, d) temporaries; values match direct torch;
    ``sizes`` reorders a matrix chain (W₂ᵀ W₁ᵀ first when the MLP width m ≫ d)."""
    m = sp.Symbol("m", integer=True, positive=True)
    u, w = sp.MatrixSymbol("u", d, 1), sp.MatrixSymbol("w", d, 1)
    W1, W2 = sp.MatrixSymbol("W1", d, m), sp.MatrixSymbol("W2", m, d)
    D = sp.DiagMatrix(w)
    exprs = {"left": D * B * u, "middle": B * D * C, "right": B * C * D, "outer": B * u * w.T * C,
             "trace": sp.Trace(B * u * w.T) * C, "both": D * B * D}
    fns = compile_fns(*(GenFunction(name, (B, C, u, w), e, "0", "") for name, e in exprs.items()))
    g = torch.Generator().manual_seed(5)
    b, c = (torch.randn(3, 4, 4, generator=g, dtype=torch.float64) for _ in range(2))
    uu, ww = (torch.randn(3, 4, 1, generator=g, dtype=torch.float64) for _ in range(2))
    dd = torch.diag_embed(ww[..., 0])
    want = {"left": dd @ b @ uu, "middle": b @ dd @ c, "right": b @ c @ dd, "outer": b @ uu @ ww.mT @ c,
            "trace": (b @ uu @ ww.mT).diagonal(dim1=-2, dim2=-1).sum(-1)[:, None, None] * c,
            "both": dd @ b @ dd}
    for name, value in want.items():
        torch.testing.assert_close(fns[name](b, c, uu, ww), value, rtol=1e-13, atol=1e-13)
        source = render_function(GenFunction(name, (B, C, u, w), exprs[name], "0", ""))
        assert "diag_embed" not in source and "diagonal" not in source, source
    # outer product: the broadcast u * wᵀ (inner dimension the literal 1), never u @ wᵀ
    assert "(B @ u) * (w.transpose(-1, -2) @ C)" in render_function(
        GenFunction("outer", (B, C, u, w), exprs["outer"], "0", ""))
    chain = W2.T * W1.T * B
    assert "(W2.transpose(-1, -2) @ W1.transpose(-1, -2)) @ B" in render_function(
        GenFunction("g", (W1, W2, B), chain, "0", "", sizes={d: 64, m: 256}))
    assert "W2.transpose(-1, -2) @ (W1.transpose(-1, -2) @ B)" in render_function(
        GenFunction("g", (W1, W2, B), chain, "0", "", sizes={d: 256, m: 64}))
    with pytest.raises(CodegenError, match="sizes must map dimension symbols to ints ≥ 2"):
        GenFunction("g", (W1, W2, B), chain, "0", "", sizes={d: 1})


def test_constant_results_take_the_batch_shape():
    const = compile_fns(
        GenFunction("s", (x, B), sp.Rational(1, 3), "0", "Constant scalar."),
        GenFunction("m", (x, B), sp.Identity(d), "0", "Constant matrix."),
        GenFunction("e", (x, y), sp.Matrix([[1, 2], [3, sp.sqrt(2)]]), "0", "Constant Matrix."),
    )
    xs, b = torch.rand(5, dtype=torch.float32), torch.rand(2, 1, 3, 3, dtype=torch.float32)
    assert const["s"](xs, b).shape == (2, 5) and const["s"](xs, b).dtype == torch.float32
    assert const["m"](xs, b).shape == (2, 5, 3, 3)
    out = const["e"](xs, xs[:, None])
    assert out.shape == (5, 5, 2, 2) and out.dtype == torch.float32


# -- a differential test against independent printers ----------------------------------
DIFFERENTIAL = [
    x**2 * y + sp.exp(-x) * sp.sin(y),
    sp.log(1 + x**2) / (1 + y**2) + sp.cos(x * y),
    sp.tanh(x - y) * sp.sqrt(2 + y**2) + sp.Abs(x),
    (x + 1) ** 3 / 7 - sp.Rational(5, 4) * y,
]


@pytest.mark.parametrize("expr", DIFFERENTIAL, ids=str)
def test_against_sympytorch_and_lambdify_torch(expr):
    import sympytorch

    xs, ys = _inputs(torch.float64, seed=5)
    ys = ys.expand(4, 3)
    ours = compile_one(expr)(xs, ys)
    theirs = sympytorch.SymPyModule(expressions=[expr]).double()(x=xs, y=ys)[..., 0]
    lamb = sp.lambdify((x, y), expr, modules="torch")(xs, ys)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ours, lamb, rtol=1e-12, atol=1e-12)


# -- errors -------------------------------------------------------------------------
def test_clear_errors():
    with pytest.raises(CodegenError, match="unsupported SymPy node 'gamma' in function 'f'"):
        render_function(GenFunction("f", (x,), sp.gamma(x), "0", ""))
    with pytest.raises(CodegenError, match="unsupported SymPy node 'foo' in function 'f'"):
        render_function(GenFunction("f", (x,), sp.Function("foo")(x), "0", ""))
    with pytest.raises(CodegenError, match="free symbols y"):
        render_function(GenFunction("f", (x,), x + y, "0", ""))
    with pytest.raises(CodegenError, match="keyword"):
        render_function(GenFunction("f", (sp.Symbol("lambda"),), sp.Symbol("lambda"), "0", ""))
    with pytest.raises(CodegenError, match="non-integer exponent"):
        render_function(GenFunction("f", (B, x), sp.MatPow(B, x), "0", ""))
    with pytest.raises(CodegenError, match="twice"):
        render_module("fam", "theory.fam", [GenFunction("f", (x,), x, "0", "")] * 2)


def test_printer_is_a_sympy_torch_printer():
    assert issubclass(TorchPrinter, StockTorchPrinter)
    printer = TorchPrinter({x: "x"}, dtype_ref="x")
    assert eval(printer.doprint(sp.erfc(x)), {"torch": torch, "x": torch.tensor(0.0)}) == 1


# -- rendering is deterministic ------------------------------------------------------
_RENDER_SCRIPT = textwrap.dedent("""
    import sympy as sp
    from theory.codegen import GenFunction, render_module
    d = sp.Symbol("d", integer=True, positive=True)
    B, C = sp.MatrixSymbol("B", d, d), sp.MatrixSymbol("C", d, d)
    x, y, h, lam = sp.symbols("x y h lam")
    G = (sp.Identity(d) + C) * (sp.Identity(d) + h * lam * B)
    fns = [GenFunction("G", (C, B, h, lam), G * G.T + B.applyfunc(lambda t: t**2 + lam), "2.1", "G."),
           GenFunction("s", (x, y), sp.exp(x + y) / (1 + sp.exp(x + y)) + sp.Max(x, y, 0), "1.1", "s."),
           GenFunction("m", (x, y), sp.Matrix([[x * y, sp.sin(x * y)], [0, y]]), "1.2", "m.")]
    text = render_module("demo", "theory.demo", fns)
""")


def test_rendering_is_independent_of_hash_seed():
    """`derive --check` compares text: it must not depend on set/dict iteration order."""
    here: dict = {}
    exec(_RENDER_SCRIPT, here)
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    there = subprocess.run(
        [sys.executable, "-c", _RENDER_SCRIPT + "print(text, end='')"], capture_output=True,
        text=True, check=True, env={**os.environ, "PYTHONHASHSEED": seed},
    ).stdout
    assert here["text"] == there


# -- to_sympy and derive with a fake theory family -----------------------------------
FAKE_FAMILY = """
import sympy as sp
from theory.codegen import GenFunction

FAMILY = "{family}"
x, y = sp.symbols("x y")
d = sp.Symbol("d", integer=True, positive=True)
B = sp.MatrixSymbol("B", d, d)


def generated_functions():
    return [
        GenFunction("f", (x, y), {expr}, "9.1", "A fake scalar formula."),
        GenFunction("g", (B, x), (sp.Identity(d) + x * B) ** 2, "9.2", "A fake matrix formula."),
    ]
"""


@pytest.fixture
def fake_family(tmp_path, monkeypatch):
    """A theory family ``fake_fam`` importable from tmp_path; returns (write, load)."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(expr="sp.exp(x) * y + sp.sech(x)"):
        (tmp_path / "fake_fam.py").write_text(FAKE_FAMILY.format(family="fake_fam", expr=expr))
        sys.modules.pop("fake_fam", None)
        importlib.invalidate_caches()
        return importlib.import_module("fake_fam")

    yield write
    sys.modules.pop("fake_fam", None)


def _load(path, name="generated_fake"):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_to_sympy_round_trip(tmp_path, fake_family):
    theory_module = fake_family()
    path = tmp_path / "gen.py"
    path.write_text(render_module("fake_fam", "fake_fam", theory_module.generated_functions()))
    generated = _load(path)
    expr = to_sympy(generated.f)
    assert expr == theory_module.generated_functions()[0].expr
    xs, ys = _inputs(torch.float64)
    ref = sp.lambdify((x, y), expr, modules="numpy")(xs.numpy(), ys.numpy())
    np.testing.assert_allclose(generated.f(xs, ys).numpy(), ref, rtol=1e-13)
    b = torch.randn(3, 3, dtype=torch.float64)
    xv = torch.tensor(0.5, dtype=torch.float64)
    torch.testing.assert_close(generated.g(b, xv), torch.linalg.matrix_power(torch.eye(3).double() + xv * b, 2))
    assert to_sympy(generated.g) == theory_module.generated_functions()[1].expr
    fake_family("sp.exp(x) * y")  # the theory changed: the generated module is stale
    with pytest.raises(CodegenError, match="stale"):
        to_sympy(generated.f)


def test_derive_writes_caches_and_checks(tmp_path, fake_family, monkeypatch):
    out, cache = tmp_path / "generated", tmp_path / "cache"
    run = lambda **kw: derive_mod.derive({"fake_fam": fake_family.module}, out_dir=out,
                                         cache_dir=cache, progress=False, **kw)
    fake_family.module = fake_family()
    missing = run(check=True)
    assert not missing.ok and "missing" in str(missing) and not out.exists()
    first = run()
    target = out / "fake_fam.py"
    assert first.ok and first.written == [target] and first.cached == []
    text = target.read_text()
    assert text.startswith("# GENERATED by `fastslow derive`")
    assert _load(target).f(torch.tensor(0.0), torch.tensor(1.0)) == 2

    calls = []
    original = derive_mod.render_module
    monkeypatch.setattr(derive_mod, "render_module", lambda *a: calls.append(a) or original(*a))
    second = run()
    assert second.ok and second.unchanged == [target] and second.cached == ["fake_fam"] and not calls
    assert run(check=True).ok

    target.write_text(text.replace("torch.exp(x)", "torch.exp(x + 0)"))  # a hand edit
    edited = run(check=True)
    assert not edited.ok and edited.drifted[0][0] == target and "hand edit" in str(edited)
    assert "torch.exp(x + 0)" in target.read_text()  # check mode writes nothing
    run()
    assert target.read_text() == text

    fake_family.module = fake_family("sp.exp(x) * y")  # a changed derivation
    changed = run(check=True)
    assert not changed.ok and calls
    assert run().written == [target] and run(check=True).ok

    (cache / "fake_fam.py.txt").write_text("garbage\n")
    with pytest.warns(UserWarning, match="corrupt cache entry"):
        regenerated = run()
    assert regenerated.ok and regenerated.cached == [] and run().cached == ["fake_fam"]
    cached_text, text = (cache / "fake_fam.py.txt").read_text(), target.read_text()
    (cache / "fake_fam.py.txt").write_text(cached_text.replace("torch.exp", "torch.sin"))
    with pytest.warns(UserWarning, match="corrupt cache entry"):
        assert run().ok and target.read_text() == text
    # A forged entry: wrong code under a recomputed text hash.  derive ignores it (its text is not
    # what the manifest recorded for these sources); derive --check never reads the cache at all.
    forged_body = text.replace("torch.exp", "torch.sin")
    header = cached_text.partition("\n")[0].rsplit(" ", 1)[0]
    forged = f"{header} text={hashlib.sha256(forged_body.encode()).hexdigest()}\n{forged_body}"
    (cache / "fake_fam.py.txt").write_text(forged)
    with pytest.warns(UserWarning, match="forged or corrupt"):
        assert run().ok and target.read_text() == text
    (cache / "fake_fam.py.txt").write_text(forged)
    target.write_text(forged_body)
    calls.clear()
    forged_check = run(check=True)
    assert not forged_check.ok and calls and forged_check.cached == []
    with pytest.warns(UserWarning, match="forged or corrupt"):
        run()
    assert target.read_text() == text
    assert not list(out.glob(".*tmp"))


def test_discovery_orphans_and_broken_modules(tmp_path, monkeypatch):
    import theory

    package = tmp_path / "theory_pkg"
    package.mkdir()
    (package / "fake_fam.py").write_text(FAKE_FAMILY.format(family="fake_fam", expr="x * y"))
    (package / "broken.py").write_text("raise RuntimeError('boom')\n")
    (package / "_private.py").write_text("FAMILY = '_private'\n")
    (package / "notes.py").write_text("X = 1\n")
    monkeypatch.setattr(theory, "__path__", [str(package)])
    for name in ("fake_fam", "broken", "_private", "notes"):
        monkeypatch.delitem(sys.modules, f"theory.{name}", raising=False)
    with pytest.raises(RuntimeError, match="boom"):
        derive_mod.discover_families()
    errors: dict = {}
    assert list(derive_mod.discover_families(errors)) == ["fake_fam"] and list(errors) == ["broken"]

    out = tmp_path / "generated"
    out.mkdir()
    (out / "__init__.py").write_text("")
    (out / "helper.py").write_text("# not generated\n")
    (out / "gone.py").write_text("# GENERATED by `fastslow derive` from theory/gone.py — do not edit.\n")
    report = derive_mod.derive(out_dir=out, cache_dir=tmp_path / "cache", progress=False)
    reasons = {p.name: reason for p, reason in report.drifted}
    assert set(reasons) == {"gone.py", "broken.py"} and (out / "fake_fam.py").exists()
    assert "orphan" in reasons["gone.py"] and "boom" in reasons["broken.py"]
    only = derive_mod.derive(["fake_fam"], check=True, out_dir=out, cache_dir=tmp_path / "cache",
                             progress=False)
    assert only.ok and only.unchanged == [out / "fake_fam.py"]
    with pytest.raises(CodegenError, match="unknown families"):
        derive_mod.derive(["nope"], out_dir=out, progress=False)
    for name in ("fake_fam", "broken"):
        sys.modules.pop(f"theory.{name}", None)


def test_derive_reports_a_broken_family(tmp_path, fake_family):
    module = fake_family("sp.gamma(x)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = derive_mod.derive({"fake_fam": module}, out_dir=tmp_path / "o",
                                   cache_dir=tmp_path / "c", progress=False)
    assert not report.ok and "unsupported SymPy node 'gamma'" in str(report)


def test_discover_families_finds_only_families():
    families = derive_mod.discover_families()
    assert "codegen" not in families and "derive" not in families
    assert all(m.FAMILY == name and callable(m.generated_functions) for name, m in families.items())


def test_docstring_text_avoids_sympys_exponential_matmul_printing(monkeypatch):
    """sstr re-evaluates nested MatMuls (8272 MatMul.doit calls here); ours never does."""
    from sympy.matrices.expressions.matmul import MatMul

    M = B
    for _ in range(5):
        M = (sp.Identity(d) + h * M) * (sp.Identity(d) - M)
    calls = []
    original = MatMul.doit
    monkeypatch.setattr(MatMul, "doit", lambda self, **kw: calls.append(1) or original(self, **kw))
    text = render_function(GenFunction("f", (B, h), M, "0", "Nested products."))
    assert not calls and "Expression (sympy.sstr):" in text
    small = (sp.Identity(d) + C) * (sp.Identity(d) + h * lam * B) - 2 * B.T * C
    assert sp.sstr(small) in render_function(GenFunction("g", (B, C, h, lam), small, "0", "Small."))


# -- layout of long statements -------------------------------------------------------
_atoms = st.sampled_from(["a", "b", "m", "n", "2 * a", "f(a, m)", "m.T", "(-a)", "- a"])
_terms = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" + ", " - ", " * "]), inner).map("".join),
        st.tuples(inner, inner).map(lambda t: f"({t[0]} * m) @ ({t[1]} * n)"),
        inner.map(lambda s: f"({s})"),
        inner.map(lambda s: f"f({s}, {s})"),
    ),
    max_leaves=4,
)


def _chain(term_strategy):
    """Long chains ``t0 op t1 op ...``: long enough to need wrapping."""
    ops = st.sampled_from([" + ", " - ", " * ", " @ m @ "])
    return st.tuples(term_strategy, st.lists(st.tuples(ops, term_strategy), min_size=6,
                                             max_size=14)).map(
        lambda t: t[0] + "".join(op + term for op, term in t[1]))


_python_exprs = _chain(st.one_of(_terms, _chain(_terms).map(lambda s: f"({s})")))


@settings(max_examples=EXAMPLES, deadline=None)
@given(_python_exprs)
def test_line_layout_never_changes_the_value(expr):
    from theory.codegen.layout import WIDTH, wrap_statement

    g = torch.Generator().manual_seed(0)
    scope = dict(zip("abmn", torch.rand(4, 2, 2, generator=g, dtype=torch.float64) - 0.5))
    scope["f"] = lambda p, q: p * 2 - q
    line = "    x0 = " + expr
    lines = wrap_statement(line)
    assert len(line) <= WIDTH or len(lines) > 1
    original, wrapped = {}, {}
    exec(line.strip(), dict(scope), original)
    exec(textwrap.dedent("\n".join(lines)), dict(scope), wrapped)
    torch.testing.assert_close(wrapped["x0"], original["x0"], rtol=0, atol=0)
