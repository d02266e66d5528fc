"""Claims 1.1–1.2 numerics: Euler convergence of smooth-path stacks, the i.i.d. control, and
the Jacobian as the depth-ordered product of layer Jacobians.

The reference for Claim 1.1 is a DOP853 solve (scipy, rtol 1e-12 by default) of
dX/dt = F(θ(t), X), F = ``Layer.vector_field`` evaluated with θ(t) = ``stack.weights_at(t)``.
``StackSpec(..., knobs={"weight_path": "smooth"}, seed=s)`` draws the path θ(t) from the seed before
sampling it at ℓh, so every depth L with the same seed discretises the same ODE.

The stack's error constant C = lim L (X_L − X(1)) is measured by Richardson extrapolation of
the stack's own outputs and predicted by :func:`error_constant_reference`: DOP853 on the
variational system E′ = F′E + D, E(0) = 0, with the split-step defect D = g′f₁ − ½(∂_t F + F′F)
(docs/theory.md §1), solved in the shifted variable Ẽ = E + F/2 with the generated source
D̃ = g′f₁ − ½F′F, built from directional derivatives of the real sublayers f₁ = −αX + Attn(X),
g = MLP∘LN₂ along the real weight path.
"""

from __future__ import annotations


import torch
from scipy.integrate import solve_ivp
from torch import nn

from numerics.generated import depth_flow as gen
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import Stack


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
    """X(1) for dX/dt = F(θ(t), X), X(0) = X0, by DOP853.

    SciPy integrates on the host with adaptive error control (the reference's accuracy is what DOP853's
    rtol states); the vector field runs on X0's device, so each right-hand side copies the state (T·d
    numbers) to the device and back: two transfers per evaluation, 12 evaluations per DOP853 step."""
    if not (0 < rtol < 1e-3):
        raise ValueError(f"rtol={rtol} must be in (0, 1e-3)")
    shape = X0.shape

    def rhs(t, y):
        X = torch.from_numpy(y).reshape(shape).to(dtype=X0.dtype, device=X0.device)
        with torch.no_grad():
            return vector_field_at(stack, float(t), X).reshape(-1).cpu().numpy()

    sol = solve_ivp(rhs, (0.0, 1.0), X0.detach().reshape(-1).cpu().numpy(), method="DOP853", rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"DOP853 failed: {sol.message}")
    return torch.from_numpy(sol.y[:, -1]).reshape(shape).to(dtype=X0.dtype, device=X0.device)


class _Sublayers(nn.Module):
    """The layer's two sublayers as vector fields: f₁(X) = −αX + Attn(X) and g(X) = MLP(LN₂(X))."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return -self.layer.decay * x + self.layer.mixing(x), self.layer.mlp(self.layer.ln2(x))


FD_X = 1e-5  # central-difference step along unit directions of the state (entries O(1))


def _unit(v: torch.Tensor):
    n = float(v.norm())
    return (v / n, n) if n > 0 else (v, 0.0)


def error_constant_reference(stack: Stack, X0: torch.Tensor, rtol: float = 1e-10, atol: float = 1e-12):
    """(X(1), C): DOP853 on X′ = F(θ(t), X) and the shifted variational equation Ẽ′ = F′Ẽ + D̃,
    D̃ = g′f₁ − ½F′F (generated ``shifted_defect``), Ẽ(0) = F(0, X0)/2; C = Ẽ(1) − F(1, X(1))/2 is
    the constant of X_L − X(1) = C/L + O(1/L²) for the split layers sampled at θ(ℓ/L)
    (theory.depth_flow: Ẽ = E + F/2, E′ = F′E + g′f₁ − ½(∂_t F + F′F), E(0) = 0).

    The directional derivatives F′Ẽ, F′F and g′f₁ are central differences of the real sublayers
    along unit directions (step FD_X): truncation (FD_X²/6)·|third derivative| and rounding
    eps·|F|/FD_X are both ≲ 1e-9 relative, far below the 1e-4 accuracy at which C is compared.
    Integrated on the host like :func:`flow_reference`, the sublayers on X0's device."""
    if not (0 < rtol < 1e-3):
        raise ValueError(f"rtol={rtol} must be in (0, 1e-3)")
    shape, n = X0.shape, X0.numel()
    split = _Sublayers(stack.layers[0])

    def sublayers(t, X):
        params = {f"layer.{k}": v for k, v in stack.weights_at(float(t)).items()}
        with torch.no_grad():
            return torch.func.functional_call(split, params, (X,))

    def rhs(t, y):
        y = torch.from_numpy(y).to(dtype=X0.dtype, device=X0.device)
        X, Et = y[:n].reshape(shape), y[n:].reshape(shape)
        with torch.no_grad():
            params = {f"layer.{k}": v for k, v in stack.weights_at(float(t)).items()}
            f1, g = torch.func.functional_call(split, params, (X,))
            F = f1 + g
            dirs = [_unit(v) for v in (Et, F, f1)]
            pts = torch.stack([X + sgn * FD_X * u for u, _ in dirs for sgn in (1.0, -1.0)])
            pf1, pg = torch.func.functional_call(split, params, (pts,))
            pF = pf1 + pg
            FEt, FF = ((pF[2 * i] - pF[2 * i + 1]) / (2 * FD_X) * dirs[i][1] for i in range(2))
            gf1 = (pg[4] - pg[5]) / (2 * FD_X) * dirs[2][1]
            dEt = FEt + gen.shifted_defect(gf1, FF)
        return torch.cat([F.reshape(-1), dEt.reshape(-1)]).cpu().numpy()

    X0 = X0.detach()
    y0 = torch.cat([X0.reshape(-1), (sum(sublayers(0.0, X0)) / 2).reshape(-1)]).cpu().numpy()
    sol = solve_ivp(rhs, (0.0, 1.0), y0, method="DOP853", rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"DOP853 failed: {sol.message}")
    y1 = torch.from_numpy(sol.y[:, -1]).to(dtype=X0.dtype, device=X0.device)
    X1 = y1[:n].reshape(shape)
    return X1, y1[n:].reshape(shape) - sum(sublayers(1.0, X1)) / 2


def richardson(depths, scaled):
    """Richardson extrapolation of c_L = L (X_L − X(1)) = C + a/L + b/L² + c/L³ + …, depths doubling.

    Returns (R₁, R₂, estimate): R₁ = 2c_{2L} − c_L over the last pair (error O(1/L²)), R₂ = (4R₁ − R₁′)/3
    over the last triple (error b′/L³ + O(1/L⁴)), and the estimate ‖R₂′ − R₂‖/7 of ‖R₂ − C‖ from the
    two last R₂ (their O(1/L³) terms differ by a factor 8 per doubling).  Needs four doubling depths."""
    if len(depths) < 4 or any(b != 2 * a for a, b in zip(depths[-4:], depths[-3:])):
        raise ValueError(f"richardson needs at least four doubling depths, got {list(depths)}")
    c = scaled[-4:]
    R1s = [2 * c[k + 1] - c[k] for k in range(3)]
    R2s = [(4 * R1s[k + 1] - R1s[k]) / 3 for k in range(2)]
    return R1s[-1], R2s[-1], float((R2s[1] - R2s[0]).norm()) / 7


def smooth_stacks_outputs(T: int, d: int, depths, *, heads: int = 2, kernel: str = "causal", seed: int = 0,
                          x_seed: int = 1, stack_fn=None):
    """(X0, {L: X_L}) for smooth-path stacks of each depth L (same seed ⇒ same path θ(t));
    ``stack_fn(L)`` replaces ``build(spec)`` (a broken stack for the tests)."""
    X0 = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(x_seed), device="cpu")  # seeded on the host (a CPU generator), as a stack's weights
    build = stack_fn or (lambda L: StackSpec(T=T, d=d, layers=L, heads=heads, kernel=kernel, seed=seed, knobs={"weight_path": "smooth"}).build())
    with torch.no_grad():
        return X0, {L: build(L)(X0) for L in depths}


def smooth_stacks_errors(T: int, d: int, depths, *, heads: int = 2, kernel: str = "causal", seed: int = 0,
                         rtol: float = 1e-12, x_seed: int = 1):
    """‖X_L − X(1)‖_F for smooth-path stacks of each depth L (same seed ⇒ same path θ(t))."""
    X0 = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(x_seed), device="cpu")  # seeded on the host (a CPU generator), as a stack's weights
    ref = flow_reference(StackSpec(T=T, d=d, layers=1, heads=heads, kernel=kernel, seed=seed, knobs={"weight_path": "smooth"}).build(), X0, rtol=rtol)
    errs = []
    with torch.no_grad():
        for L in depths:
            stack = StackSpec(T=T, d=d, layers=L, heads=heads, kernel=kernel, seed=seed, knobs={"weight_path": "smooth"}).build()
            errs.append(float((stack(X0) - ref).norm()))
    return errs


def iid_drift(T: int, d: int, depths, seeds, *, heads: int = 2, kernel: str = "causal", x_seed: int = 1):
    """Mean over seeds of ‖X_L − X_0‖_F for i.i.d. untied stacks (no smooth path): the
    average of L independent zero-mean updates of size h shrinks like L^{−1/2}."""
    X0 = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(x_seed), device="cpu")  # seeded on the host (a CPU generator), as a stack's weights
    out = []
    with torch.no_grad():
        for L in depths:
            vals = [float((StackSpec(T=T, d=d, layers=L, heads=heads, kernel=kernel, seed=s).build()(X0) - X0).norm()) for s in seeds]
            out.append(sum(vals) / len(vals))
    return out


def iid_drift_prediction(T: int, d: int, draws: int, L: int, *, heads: int = 2, kernel: str = "causal",
                         x_seed: int = 1, seed0: int = 10_000) -> float:
    """Predicted ‖X_L − X_0‖ for i.i.d. layers: X_L − X_0 ≈ h Σ_ℓ F(θ_ℓ, X_0), a sum of L independent
    zero-mean updates (every weight distribution is centred, value_scale 0), so
    E‖X_L − X_0‖² ≈ h σ², σ² = E_θ ‖F(θ, X_0)‖², estimated from ``draws`` independent layers
    (seeds seed0.., disjoint from the stacks measured)."""
    X0 = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(x_seed), device="cpu")  # seeded on the host (a CPU generator), as a stack's weights
    with torch.no_grad():
        sq = [float(StackSpec(T=T, d=d, layers=1, heads=heads, kernel=kernel, seed=seed0 + k).build().layers[0].vector_field(X0).norm()) ** 2
              for k in range(draws)]
    return (sum(sq) / draws / L) ** 0.5


def scalar_euler(a0: float, a1: float, x0: float, L: int) -> float:
    """Explicit Euler for x′ = a(t) x with L steps, a from the generated ``scalar_rate``."""
    h = 1.0 / L
    ts = torch.arange(L, dtype=torch.float64, device="cpu") * h  # host: a scalar ODE of Python floats
    a = gen.scalar_rate(torch.tensor(a0, dtype=torch.float64, device="cpu"), torch.tensor(a1, dtype=torch.float64, device="cpu"), ts)  # host: Python floats
    return float(x0 * torch.prod(1 + h * a))


def scalar_error_constants(a0: float, a1: float, x0: float, depths):
    """Measured L·(x_L − x(1)) per depth, and the derived constant C."""
    args = [torch.tensor(v, dtype=torch.float64, device="cpu") for v in (a0, a1, x0)]  # host: Python floats
    exact = float(gen.scalar_exact(*args))
    C = float(gen.euler_error_constant(*args))
    return [L * (scalar_euler(a0, a1, x0, L) - exact) for L in depths], C


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
    eye = torch.eye(n, dtype=jacobians[0].dtype, device=jacobians[0].device)
    Ms = [(Jl - eye) / h for Jl in jacobians]
    out = torch.zeros_like(eye)
    for i in range(len(Ms)):
        for j in range(i + 1, len(Ms)):
            out = out + Ms[i] @ Ms[j] - Ms[j] @ Ms[i]
    return h * h * out


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).detach().norm() / b.detach().norm())


__all__ = ["commutator_prediction", "depth_ordered_product", "error_constant_reference",
           "flow_reference", "iid_drift", "iid_drift_prediction", "relative", "richardson",
           "scalar_error_constants", "scalar_euler", "smooth_stacks_errors", "smooth_stacks_outputs",
           "vector_field_at"]


# ----------------------------------------------------------------------------- the paper's layer
def _paper_mask(T: int, kernel: str, block_size: int | None, heads: int, dtype, device=None) -> torch.Tensor | None:
    """SDPA's mask for docs/theory.md §0's kernels, built from the definitions alone: causal j ≤ i,
    block ⌊j/b⌋ ≤ ⌊i/b⌋, ALiBi causal with score −m_h (i − j), m_h = 2^(−8(h+1)/H); full: none."""
    i = torch.arange(T, device=device)
    if kernel == "full":
        return None
    if kernel == "block":
        return (i[None, :] // block_size <= i[:, None] // block_size).expand(heads, T, T)
    causal = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    if kernel == "causal":
        return causal.expand(heads, T, T)
    slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)], dtype=dtype, device=device)
    bias = -slopes[:, None, None] * (i[:, None] - i[None, :]).to(dtype)
    return bias.masked_fill(~causal, -float("inf"))


def paper_forward(stack: Stack, X: torch.Tensor) -> torch.Tensor:
    """The stack's output written from docs/theory.md §0 with torch's reference ops on the stack's
    weights (F.layer_norm, F.scaled_dot_product_attention with its 1/√d_k, F.gelu: exact, or its
    tanh approximation for ``activation="gelu_new"``):
    U = (1 − hα)X + h (Σ_h SDPA(LN₁X W_Q + b_Q, LN₁X W_K, LN₁X W_V) W_O + b_O),  X' = U + h MLP(LN₂U),
    with the query and output biases when the stack has them (``attn_bias``).
    An independent route to the forward pass (no code shared with numerics/stacks/stack.py); the slow
    path is not covered (P must be None)."""
    cfg = stack.config
    if cfg.P is not None:
        raise ValueError("paper_forward covers the plain stack only: P must be None")
    F = nn.functional
    T, d = X.shape[-2:]
    mask = _paper_mask(T, cfg.kernel, cfg.block_size, cfg.heads, X.dtype, X.device)
    for layer in stack.layers:
        ln = lambda z, m: F.layer_norm(z, (d,), m.gamma, m.beta, eps=cfg.ln_eps)  # noqa: E731
        z = ln(X, layer.ln1)
        a = layer.attn
        q, k, v = (torch.einsum("td,hdk->htk", z, W) for W in (a.W_Q, a.W_K, a.W_V))
        if cfg.attn_bias:
            q = q + a.b_Q
        mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out = torch.einsum("htk,hkd->td", mixed, a.W_O)
        U = (1.0 - cfg.h * cfg.decay) * X + cfg.h * (out + a.b_O if cfg.attn_bias else out)
        m = layer.mlp
        approximate = "tanh" if cfg.activation == "gelu_new" else "none"
        X = U + cfg.h * (F.gelu(ln(U, layer.ln2) @ m.W1 + m.b1, approximate=approximate) @ m.W2 + m.b2)
    return X
