"""Claims 1.1–1.2 numerics: Euler convergence of smooth-path stacks, the i.i.d. control, and
the Jacobian as the depth-ordered product of layer Jacobians.

The reference for Claim 1.1 is a DOP853 solve (scipy, rtol 1e-12 by default) of
dX/dt = F(θ(t), X), F = ``Layer.vector_field`` evaluated with θ(t) = ``stack.weights_at(t)``.
``random_stack(..., weight_path="smooth", seed=s)`` draws the path θ(t) from the seed before
sampling it at ℓh, so every depth L with the same seed discretises the same ODE.
"""

from __future__ import annotations


import numpy as np
import torch
from scipy.integrate import solve_ivp
from torch import nn

from numerics.generated import depth_flow as gen
from numerics.stack import Stack, random_stack


class _VectorField(nn.Module):
    """Wraps one layer so that ``functional_call`` evaluates F(θ, X) = ``layer.vector_field``."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer.vector_field(x)


def vector_field_at(stack: Stack, t: float, X: torch.Tensor) -> torch.Tensor:
    """F(θ(t), X) on the stack's smooth weight path."""
    params = {f"layer.{k}": v for k, v in stack.weights_at(t).items()}
    return torch.func.functional_call(_VectorField(stack.layers[0]), params, (X,))


def flow_reference(stack: Stack, X0: torch.Tensor, rtol: float = 1e-12, atol: float = 1e-12) -> torch.Tensor:
    """X(1) for dX/dt = F(θ(t), X), X(0) = X0, by DOP853."""
    if not (0 < rtol < 1e-3):
        raise ValueError(f"rtol={rtol} must be in (0, 1e-3)")
    shape = X0.shape

    def rhs(t, y):
        X = torch.from_numpy(y).reshape(shape).to(X0.dtype)
        with torch.no_grad():
            return vector_field_at(stack, float(t), X).reshape(-1).numpy()

    sol = solve_ivp(rhs, (0.0, 1.0), X0.detach().reshape(-1).numpy(), method="DOP853", rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"DOP853 failed: {sol.message}")
    return torch.from_numpy(sol.y[:, -1]).reshape(shape).to(X0.dtype)


def smooth_stacks_errors(T: int, d: int, depths, *, heads: int = 2, kernel: str = "causal", seed: int = 0,
                         rtol: float = 1e-12, x_seed: int = 1):
    """‖X_L − X(1)‖_F for smooth-path stacks of each depth L (same seed ⇒ same path θ(t))."""
    X0 = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(x_seed))
    ref = flow_reference(random_stack(T, d, 1, heads, kernel, seed=seed, weight_path="smooth"), X0, rtol=rtol)
    errs = []
    with torch.no_grad():
        for L in depths:
            stack = random_stack(T, d, L, heads, kernel, seed=seed, weight_path="smooth")
            errs.append(float((stack(X0) - ref).norm()))
    return errs


def iid_drift(T: int, d: int, depths, seeds, *, heads: int = 2, kernel: str = "causal", x_seed: int = 1):
    """Mean over seeds of ‖X_L − X_0‖_F for i.i.d. untied stacks (no smooth path): the
    average of L independent zero-mean updates of size h shrinks like L^{−1/2}."""
    X0 = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(x_seed))
    out = []
    with torch.no_grad():
        for L in depths:
            vals = [float((random_stack(T, d, L, heads, kernel, seed=s)(X0) - X0).norm()) for s in seeds]
            out.append(sum(vals) / len(vals))
    return out


def fitted_slope(depths, values) -> float:
    """Least-squares slope p of log value = c − p log L (p = 1 for O(h) convergence)."""
    if len(depths) != len(values) or len(depths) < 2:
        raise ValueError("fitted_slope needs at least two (depth, value) pairs of equal length")
    x, y = np.log(np.asarray(depths, float)), np.log(np.asarray(values, float))
    return float(-np.polyfit(x, y, 1)[0])


def scalar_euler(a0: float, a1: float, x0: float, L: int) -> float:
    """Explicit Euler for x′ = a(t) x with L steps, a from the generated ``scalar_rate``."""
    h = 1.0 / L
    ts = torch.arange(L, dtype=torch.float64) * h
    a = gen.scalar_rate(torch.tensor(a0, dtype=torch.float64), torch.tensor(a1, dtype=torch.float64), ts)
    return float(x0 * torch.prod(1 + h * a))


def scalar_error_constants(a0: float, a1: float, x0: float, depths):
    """Measured L·(x_L − x(1)) per depth, and the derived constant C."""
    args = [torch.tensor(v, dtype=torch.float64) for v in (a0, a1, x0)]
    exact = float(gen.scalar_exact(*args))
    C = float(gen.euler_error_constant(*args))
    return [L * (scalar_euler(a0, a1, x0, L) - exact) for L in depths], C


def layer_jacobians(stack: Stack, X: torch.Tensor) -> list[torch.Tensor]:
    """J_ℓ = ∂X_{ℓ+1}/∂X_ℓ at the visited states, each (T d, T d)."""
    T, d = X.shape
    states = stack.trajectory(X).detach()
    return [torch.func.jacrev(layer)(states[ell]).reshape(T * d, T * d)
            for ell, layer in enumerate(stack.layers)]


def depth_ordered_product(jacobians, reverse: bool = False) -> torch.Tensor:
    """J_{L−1} ⋯ J_0 (``reverse=True``: the wrong order J_0 ⋯ J_{L−1}, the control)."""
    seq = list(jacobians)
    J = torch.eye(seq[0].shape[0], dtype=seq[0].dtype, device=seq[0].device)
    for Jl in seq:
        J = J @ Jl if reverse else Jl @ J
    return J


def commutator_prediction(jacobians, h: float) -> torch.Tensor:
    """Leading term of (J_0⋯J_{L−1}) − (J_{L−1}⋯J_0) with J_ℓ = I + h M_ℓ:
    h² Σ_{i<j} [M_i, M_j] + O(h³)."""
    n = jacobians[0].shape[0]
    eye = torch.eye(n, dtype=jacobians[0].dtype)
    Ms = [(Jl - eye) / h for Jl in jacobians]
    out = torch.zeros_like(eye)
    for i in range(len(Ms)):
        for j in range(i + 1, len(Ms)):
            out = out + Ms[i] @ Ms[j] - Ms[j] @ Ms[i]
    return h * h * out


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).detach().norm() / b.detach().norm())


__all__ = ["commutator_prediction", "depth_ordered_product", "fitted_slope", "flow_reference", "iid_drift",
           "layer_jacobians", "relative", "scalar_error_constants", "scalar_euler", "smooth_stacks_errors",
           "vector_field_at"]
