"""Benchmark: the generated mode-block function G_ℓ(λ) against the same formula in plain torch.

``ratio`` = time(generated ``numerics.generated.factorisation.G_layer``) / time(the formula
written directly in torch below), both batched over N = 1024 independent layers ("stacks")
in one call, float64, median of repeated runs after warm-up, the two timed in
alternation so that load from elsewhere on a shared machine falls on both.  Both outputs are compared
(relative max difference) before any time is reported.

For reference the same comparison is made against ``sympytorch`` and
``sympy.lambdify(modules="torch")`` as far as they can express it.  Neither can take the
matrix-level G_ℓ(λ) (sympytorch has no matrix nodes; SymPy's TorchPrinter cannot print
``DiagMatrix``), and the entry-wise explicit form of G_ℓ(λ) does not finish expanding even
at d = 2 (measured: > 300 s); so the reference point is the largest piece they do express,
the LN Jacobian J_LN(z) (generated ``ln_jacobian``), at d = 4 written out entry by entry.
``sympytorch_ratio`` / ``lambdify_ratio`` = time(generated) / time(that tool), same batch.
"""

from __future__ import annotations

import inspect
import math

import sympy as sp
import torch

from benchmarks.timing import interleaved_median_times
from numerics.stacks.stack import LN_EPS
from proofs_check.extras import available

BATCH = 1024
QUICK_D, FULL_D = 32, 64  # width d of the batched layers (MLP width 4d); d = 16 hides the O(d m²) cost
SKIPPED = "skipped: sympytorch not installed"  # an optional reference tool ([dev]); the run goes on without it
REFERENCE_D = 4  # entry-wise size at which sympytorch / lambdify can express J_LN
AGREEMENT = 1e-12  # generated vs hand-written: same formula, float64 rounding × d-term sums


def call_by_name(fn, inputs: dict):
    """Call a generated function with its positional arguments taken from ``inputs`` by name."""
    return fn(*(inputs[name] for name in inspect.signature(fn).parameters))


def _gen():
    from numerics.generated import factorisation as gen

    return gen


def handwritten_G_layer(x, gamma1, beta1, W_VO, gamma2, beta2, W1, b1, W2, h, alpha, eps, lam, u=None):
    """G_ℓ(λ) = (I + C_ℓ)((1 − hα) I + hλ B_ℓ) written directly in torch (the baseline).

    B_ℓ = W_VOᵀ J_LN₁(x̄), C_ℓ = h W₂ᵀ diag(GELU′(W₁ᵀ LN₂(ū) + b₁)) W₁ᵀ J_LN₂(ū),
    J_LN(v) = diag(γ)/σ (I − 11ᵀ/d − x̂x̂ᵀ/d); ū given or = (1 − hα) x̄ + h W_VOᵀ LN₁(x̄).
    """
    s = lambda t: t[..., None, None]  # noqa: E731  scalar batch -> broadcast over a matrix
    d = x.shape[-2]
    eye = torch.eye(d, dtype=x.dtype, device=x.device)

    def normalise(v):
        c = v - v.mean(-2, keepdim=True)
        sigma = torch.sqrt((c * c).mean(-2, keepdim=True) + s(eps))
        return c / sigma, sigma

    def ln_jacobian(xh, sigma, g):
        return g * (eye - 1.0 / d - xh @ xh.mT / d) / sigma

    xh1, s1 = normalise(x)
    if u is None:
        u = (1 - s(h * alpha)) * x + s(h) * W_VO.mT @ (gamma1 * xh1 + beta1)
    xh2, s2 = normalise(u)
    pre = W1.mT @ (gamma2 * xh2 + beta2) + b1
    gelu_prime = 0.5 * (1 + torch.erf(pre / math.sqrt(2))) + pre * torch.exp(-pre * pre / 2) / math.sqrt(2 * math.pi)
    C = s(h) * (W2.mT @ (gelu_prime * W1.mT)) @ ln_jacobian(xh2, s2, gamma2)
    B = W_VO.mT @ ln_jacobian(xh1, s1, gamma1)
    return (eye + C) @ ((1 - s(h * alpha)) * eye + s(h * lam) * B)


def random_layers(n: int, d: int, m: int, device: str, seed: int = 0) -> dict[str, torch.Tensor]:
    """Inputs of G_ℓ(λ) for n independent layers, drawn like ``build(spec)`` draws them."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randn(n, *shape, generator=g, dtype=torch.float64)  # noqa: E731
    W_V, W_O = r(d, d) / math.sqrt(d), r(d, d) / math.sqrt(d)
    inputs = {"x": r(d, 1), "gamma1": 1 + 0.1 * r(d, 1), "beta1": 0.1 * r(d, 1), "W_VO": W_V @ W_O,
              "gamma2": 1 + 0.1 * r(d, 1), "beta2": 0.1 * r(d, 1), "W1": r(d, m) / math.sqrt(d),
              "b1": 0.1 * r(m, 1), "W2": r(m, d) / math.sqrt(m), "h": torch.full((n,), 1 / 12.0),
              "alpha": torch.zeros(n), "eps": torch.full((n,), LN_EPS), "b_O": torch.zeros(n, d, 1),
              "lam": torch.rand(n, generator=g, dtype=torch.float64)}
    inputs = {k: v.to(device=device, dtype=torch.float64) for k, v in inputs.items()}
    return inputs


def _relative_max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def generated_vs_handwritten(d: int, repeats: int, device: str) -> dict:
    gen = _gen()
    inputs = random_layers(BATCH, d, 4 * d, device)
    if "u" in inspect.signature(gen.G_layer).parameters:
        inputs["u"] = call_by_name(gen.ubar, inputs)
    generated = lambda: call_by_name(gen.G_layer, inputs)  # noqa: E731
    hand_params = inspect.signature(handwritten_G_layer).parameters
    hand_kwargs = {k: v for k, v in inputs.items() if k in hand_params}
    handwritten = lambda: handwritten_G_layer(**hand_kwargs)  # noqa: E731
    diff = _relative_max_difference(generated(), handwritten())
    if not diff <= AGREEMENT:
        raise AssertionError(f"generated G_layer and the hand-written formula differ by {diff:.2e} "
                             f"(> {AGREEMENT:.0e}); no timing is reported")
    times = interleaved_median_times({"generated": generated, "handwritten": handwritten}, device,
                                     repeats=repeats, warmup=3)
    t_gen, t_hand = times["generated"], times["handwritten"]
    return {"ratio": t_gen["median"] / t_hand["median"], "generated_seconds": t_gen["median"],
            "handwritten_seconds": t_hand["median"], "relative_max_difference": diff,
            "generated_runs": t_gen["runs"], "handwritten_runs": t_hand["runs"],
            "config": {"function": "numerics.generated.factorisation.G_layer", "batch": BATCH, "d": d,
                       "mlp_width": 4 * d, "dtype": "float64", "repeats": repeats}}


# ---- sympytorch / lambdify reference --------------------------------------------------------
def _gen_function(name: str):
    from theory import factorisation as theory_fact

    return next(f for f in theory_fact.generated_functions() if f.name == name)


def explicit_entries(expr, args, dims: dict) -> tuple[sp.Matrix, dict]:
    """``expr`` with the dimension symbols set to ``dims`` and every matrix symbol written out
    entry by entry: (explicit Matrix, {matrix symbol name: its entry symbols (row-major)})."""
    e = expr.xreplace(dims)
    entries, rep = {}, {}
    for a in args:
        if isinstance(a, sp.MatrixSymbol):
            r, c = (int(n) for n in a.shape.xreplace(dims)) if hasattr(a.shape, "xreplace") else \
                (int(sp.sympify(n).xreplace(dims)) for n in a.shape)
            syms = sp.symbols(f"{a.name}_0:{r * c}", real=True)
            entries[a.name] = syms
            rep[sp.MatrixSymbol(a.name, r, c)] = sp.ImmutableMatrix(r, c, syms)
    e = e.xreplace({sp.MatrixSymbol(a.name, *a.shape): sp.MatrixSymbol(a.name, *[
        sp.sympify(n).xreplace(dims) for n in a.shape]) for a in args if isinstance(a, sp.MatrixSymbol)})
    e = e.xreplace(rep)
    e = e.xreplace({i: sp.ImmutableMatrix(sp.eye(i.shape[0])) for i in e.atoms(sp.Identity)})
    e = e.xreplace({o: sp.ImmutableMatrix(sp.ones(*o.shape)) for o in e.atoms(sp.OneMatrix)})
    return sp.Matrix(e.doit()), entries


def _what_they_cannot_express(with_sympytorch: bool) -> dict:
    """Try the matrix-level G_ℓ(λ) in both tools and report the error each raises."""
    fn = _gen_function("G_layer")
    out = {}
    try:
        sp.lambdify(fn.args, fn.expr, modules="torch")
        out["lambdify_G_layer"] = "expressed"
    except Exception as err:  # the tool's own limitation is the result here
        out["lambdify_G_layer"] = f"cannot: {type(err).__name__}: {str(err).splitlines()[0]}"
    if not with_sympytorch:
        out["sympytorch_G_layer"] = SKIPPED
        return out
    import sympytorch

    try:
        sympytorch.SymPyModule(expressions=[fn.expr])
        out["sympytorch_G_layer"] = "expressed"
    except Exception as err:
        out["sympytorch_G_layer"] = f"cannot: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
    out["entrywise_G_layer"] = ("explicit entry-wise expansion of G_layer did not finish in 300 s "
                                "at d = 2 (measured once, not rerun by the benchmark)")
    return out


def reference_tools(repeats: int, device: str, with_sympytorch: bool = True) -> dict:
    """Generated ``ln_jacobian`` vs sympytorch and lambdify of its explicit entries (d = 4); without
    sympytorch (an optional reference tool, not installed) its side is skipped and lambdify's still runs."""
    gen = _gen()
    fn = _gen_function("ln_jacobian")
    d_sym = next(iter(fn.args[0].shape[0].free_symbols))
    dd = REFERENCE_D
    matrix, entries = explicit_entries(fn.expr, fn.args, {d_sym: dd})
    g = torch.Generator().manual_seed(3)
    tensors = {a.name: torch.randn(BATCH, dd, 1, generator=g, dtype=torch.float64).to(device)
               for a in fn.args if isinstance(a, sp.MatrixSymbol)}
    tensors.update({a.name: torch.full((BATCH,), LN_EPS, dtype=torch.float64, device=device)
                    for a in fn.args if not isinstance(a, sp.MatrixSymbol)})
    scalars = {}
    for name, syms in entries.items():
        flat = tensors[name].reshape(BATCH, -1)
        scalars.update({s.name: flat[:, i] for i, s in enumerate(syms)})
    scalars.update({a.name: tensors[a.name] for a in fn.args if not isinstance(a, sp.MatrixSymbol)})
    symbols = sorted(matrix.free_symbols, key=lambda s: s.name)
    lam_fn = sp.lambdify(symbols, list(matrix), modules="torch", cse=True)

    generated = lambda: gen.ln_jacobian(*(tensors[a.name] for a in fn.args))  # noqa: E731
    lambdified = lambda: torch.stack(lam_fn(*(scalars[s.name] for s in symbols)), -1)  # noqa: E731
    sides = {"generated": generated, "lambdify": lambdified}
    if with_sympytorch:
        import sympytorch

        st_module = sympytorch.SymPyModule(expressions=list(matrix)).to(device)
        sides["sympytorch"] = lambda: st_module(**{s.name: scalars[s.name] for s in symbols})
    want = generated().reshape(BATCH, dd * dd)
    diffs = {name: _relative_max_difference(fn_(), want) for name, fn_ in sides.items() if name != "generated"}
    times = interleaved_median_times(sides, device, repeats=repeats, warmup=1)
    t = {name: r["median"] for name, r in times.items()}
    return {"sympytorch_ratio": t["generated"] / t["sympytorch"] if with_sympytorch else None,
            "lambdify_ratio": t["generated"] / t["lambdify"],
            "reference_seconds": t, "reference_relative_max_difference": diffs,
            "reference_config": {"function": "ln_jacobian (J_LN, part of G_layer)", "d": dd,
                                 "batch": BATCH, "entries": dd * dd,
                                 "sympy_ops": int(sum(sp.count_ops(e) for e in matrix))}}


def run(quick: bool, device: str) -> dict:
    """The ``generated_vs_handwritten`` section."""
    result = generated_vs_handwritten(QUICK_D if quick else FULL_D, 15 if quick else 25, device)
    with_sympytorch = available("sympytorch")
    result.update(reference_tools(3 if quick else 5, device, with_sympytorch))
    result["cannot_express"] = _what_they_cannot_express(with_sympytorch)
    if not with_sympytorch:
        result["skipped"] = [SKIPPED]
    result["definitions"] = ("ratio = t(generated G_layer) / t(hand-written torch, same formula); "
                             "sympytorch_ratio, lambdify_ratio = t(generated ln_jacobian) / t(tool), "
                             "d = 4 entry-wise; < 1 means the generated code is faster")
    return result
