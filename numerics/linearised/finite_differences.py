"""Central differences of a stack: J·V from forward passes alone, with a derived error bound.

For f smooth, the central difference D_h = (f(X + hV) − f(X − hV)) / (2h) satisfies

    D_h − J V = (h²/6) D³f(X)[V, V, V] + O(h⁴)        (Taylor: the even orders cancel)

and each forward pass carries a rounding error ≤ γ‖f(X)‖ (γ = the dot-product bound of
``numerics.linearised.matrix_free.rounding_tolerance``), which the difference divides by 2h.  Hence

    ‖D_h − J V‖ ≤ (h²/6)‖D³f[V, V, V]‖ + γ‖f(X)‖/h + O(h⁴),

minimised at h* = (3γ‖f‖/‖D³f[V,V,V]‖)^{1/3}.  Over h ≫ h* the error is the h² term: log–log
slope 2.  No automatic differentiation enters D_h; the third derivative that sets the bound's
size is taken by nested forward mode.
"""

from __future__ import annotations

import torch
from torch.func import jvp


def central_difference(f, X: torch.Tensor, V: torch.Tensor, h: float) -> torch.Tensor:
    """(f(X + hV) − f(X − hV)) / (2h)."""
    with torch.no_grad():
        return (f(X + h * V) - f(X - h * V)) / (2.0 * h)


def third_derivative(f, X: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """D³f(X)[V, V, V] by three nested ``torch.func.jvp``."""
    def d1(x):
        return jvp(f, (x,), (V,))[1]

    def d2(x):
        return jvp(d1, (x,), (V,))[1]

    with torch.no_grad():
        return jvp(d2, (X,), (V,))[1]


def error_bound(third_norm: float, f_norm: float, gamma: float, h: float) -> float:
    """(h²/6)‖D³f[V,V,V]‖ + γ‖f‖/h: the truncation and the rounding term of the central difference."""
    return h * h / 6.0 * third_norm + gamma * f_norm / h


def optimal_step(third_norm: float, f_norm: float, gamma: float) -> float:
    """h* = (3γ‖f‖/‖D³f‖)^{1/3}, where the two terms of :func:`error_bound` balance."""
    return (3.0 * gamma * f_norm / max(third_norm, 1e-300)) ** (1.0 / 3.0)


def check_against(f, X: torch.Tensor, V: torch.Tensor, JV: torch.Tensor, gamma: float) -> dict:
    """Compare a claimed J·V with the central difference at h* and fit the truncation slope on h = 10h*,
    10^1.5 h*, 10²h*: at h* the truncation term is half the rounding term, so at 10h* it is 500 times the
    rounding term and the slope is 2 up to ≈ 1/500 (and the O(h⁴) remainder, h² smaller again)."""
    third = float(third_derivative(f, X, V).norm())
    with torch.no_grad():
        f_norm = float(f(X).norm())
    h = optimal_step(third, f_norm, gamma)
    err = float((central_difference(f, X, V, h) - JV).norm())
    bound = error_bound(third, f_norm, gamma, h)
    hs = [h * 10 ** e for e in (1.0, 1.5, 2.0)]
    errs = [float((central_difference(f, X, V, hh) - JV).norm()) for hh in hs]
    x = torch.log(torch.tensor(hs, dtype=torch.float64, device="cpu"))  # host: a fit of Python floats
    y = torch.log(torch.tensor(errs, dtype=torch.float64, device="cpu"))  # host: a fit of Python floats
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    return {"h": h, "error": err, "bound": bound, "ratio": err / bound, "slope_h": slope, "hs": hs, "errors": errs,
            "third_norm": third, "f_norm": f_norm}


def chain_rule_against_differences(stack, X: torch.Tensor, V: torch.Tensor) -> dict:
    """Claim 1.2 by a route without autograd of the whole stack: the depth-ordered product of the layer
    Jacobians applied to V against the central difference of the stack (:func:`check_against`), and the
    reversed product (the control) against the same difference."""
    from numerics.families import depth_flow as nd
    from numerics.linearised.jacobians import layer_jacobians
    from numerics.linearised.matrix_free import rounding_tolerance
    from numerics.stacks.stack import unchecked_inputs

    T, d = X.shape
    Js = layer_jacobians(stack, X)
    gamma = rounding_tolerance(T, d, len(Js), X.dtype)
    with unchecked_inputs(stack):
        out = check_against(stack, X, V, (nd.depth_ordered_product(Js) @ V.reshape(-1)).reshape(T, d), gamma)
        rev = (nd.depth_ordered_product(Js, reverse=True) @ V.reshape(-1)).reshape(T, d)
        out["reversed_ratio"] = float((central_difference(stack, X, V, out["h"]) - rev).norm()) / out["bound"]
    return out
