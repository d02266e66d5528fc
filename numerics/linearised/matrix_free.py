"""Matrix-free Jacobian actions of a stack at the token-homogeneous reference (docs/theory.md §2).

At X = 1x̄ᵀ the stack's Jacobian is J = Σ_m A^m ⊗ K_m (Claim 2.3): A the frozen kernel (T×T),
K_m the coefficients of the mode product G(λ) = Σ_m λ^m K_m (d×d, from the generated code of
``numerics.families.factorisation``).  In the row-major state form, for V of shape (..., T, d),

    J·V  = Σ_m A^m V K_mᵀ,        Jᵀ·V = Σ_m (Aᵀ)^m V K_m,

evaluated by Horner's rule: L + 1 products with d×d matrices and L kernel applications, never the
(Td)² matrix.  The causal kernel is applied as a running mean (O(T d), not O(T² d)).

The independent route is autograd of the real stack: :func:`stack_jvp` / :func:`stack_vjp`
(``torch.func.jvp`` / ``vjp``, batched over probes with ``vmap``).  Their agreement is measured
on random probes, and operator norms by power iteration (:func:`operator_norm`); the tolerance
:func:`rounding_tolerance` is the dot-product rounding bound of both routes (u × the summed
inner dimensions), for float64 and float32 alike.
"""

from __future__ import annotations

import math

import torch
from torch.func import functional_call

from numerics.families.factorisation import common_kernel, layer_B_C, polynomial_coefficients
from numerics.precision import unit_roundoff


def dot_product_length(T: int, d: int, layers: int, mlp_ratio: int = 4) -> int:
    """n = L·(2T + (3 + 2·mlp_ratio)·d): the summed inner dimensions of one J·V (see :func:`rounding_tolerance`)."""
    return layers * (2 * T + (3 + 2 * mlp_ratio) * d)


def rounding_tolerance(T: int, d: int, layers: int, dtype: torch.dtype, mlp_ratio: int = 4,
                       model: str = "worst") -> float:
    """γ = n·u with n = L·(2T + (3 + 2·mlp_ratio)·d): the worst-case relative rounding of J·V by either route
    (``model="worst"``), or the probabilistic bound γ = 4·√n·u (``model="probabilistic"``: rounding
    errors as independent zero-mean variables, Higham & Mary 2019, λ = 4), which float32 runs use
    because the worst case (≈ 7e-3 at GPT-2-small size) would hide first-order departures.

    A length-n dot product has relative error ≤ n·u (times Σ|aᵢbᵢ|/|Σaᵢbᵢ|, which the callers
    account for with the term-norm ratio of :meth:`JacobianAction.apply`).  Per layer the autograd
    route sums over T tokens twice (softmax normaliser, mixing), over d three times (Q/K/V, O, LN)
    and over the MLP width twice (W₁, W₂); the polynomial route sums over d per product and over T
    per kernel application, which is less.  Summed over L layers.
    """
    n = dot_product_length(T, d, layers, mlp_ratio)
    if model == "worst":
        return n * unit_roundoff(dtype)
    if model == "probabilistic":
        return 4.0 * math.sqrt(n) * unit_roundoff(dtype)
    raise ValueError(f"model={model!r} is not one of worst, probabilistic")


# ---- the frozen kernel as an operator ---------------------------------------------------------
def _is_causal_mean(A: torch.Tensor) -> bool:
    """A_ij = 1/i for j ≤ i (1-based), 0 above the diagonal: the causal frozen kernel."""
    T = A.shape[-1]
    i = torch.arange(1, T + 1, dtype=A.dtype, device=A.device)
    expected = torch.tril(torch.ones(T, T, dtype=A.dtype, device=A.device)) / i[:, None]
    return bool(torch.allclose(A, expected, rtol=4 * unit_roundoff(A.dtype), atol=0))


class KernelAction:
    """E ↦ A E (or Aᵀ E) on (..., T, d); the causal kernel as a running mean, others densely."""

    def __init__(self, A: torch.Tensor):
        self.A = A
        self.T = A.shape[-1]
        self.causal = _is_causal_mean(A)
        self.counts = torch.arange(1, self.T + 1, dtype=A.dtype, device=A.device)[:, None]

    def __call__(self, E: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        if not self.causal:
            return (self.A.mT if transpose else self.A) @ E
        if not transpose:                       # (AE)_i = (1/i) Σ_{j≤i} E_j
            return torch.cumsum(E, dim=-2) / self.counts
        scaled = E / self.counts                # (AᵀE)_j = Σ_{i≥j} E_i / i
        return torch.flip(torch.cumsum(torch.flip(scaled, (-2,)), dim=-2), (-2,))


# ---- J·V at the reference -------------------------------------------------------------------
class JacobianAction:
    """J = Σ_m A^m ⊗ K_m of ``stack`` at 1x̄ᵀ, as an operator on (..., T, d) states.

    Build once (the coefficients cost O(L² d³)), apply many times (O(L T d²) each).
    Assumptions: gate 0 (or no slow path) and one frozen kernel shared by every head.
    """

    def __init__(self, stack, xbar: torch.Tensor):
        p = next(stack.parameters())
        xbar = xbar.to(dtype=p.dtype, device=p.device)
        with torch.no_grad():
            self.A = common_kernel(stack).to(p.dtype)
            self.K = polynomial_coefficients(stack, xbar).detach()
        self.kernel = KernelAction(self.A)
        self.T, self.d = stack.config.T, stack.config.d

    def _check(self, V: torch.Tensor) -> None:
        if V.dim() < 2 or tuple(V.shape[-2:]) != (self.T, self.d):
            raise ValueError(f"V has shape {tuple(V.shape)}, expected (..., T={self.T}, d={self.d})")

    def apply(self, V: torch.Tensor, transpose: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """(J·V or Jᵀ·V, Σ_m ‖m-th term‖_F / ‖result‖_F per probe): the second is the cancellation
        factor that multiplies the rounding tolerance (1 when no term cancels another)."""
        self._check(V)
        V = V.to(self.K.dtype)
        Km = self.K if transpose else self.K.mT
        out = torch.zeros_like(V)
        term_norms = torch.zeros(V.shape[:-2], dtype=V.dtype, device=V.device)
        AmV = V
        with torch.no_grad():
            for m in range(Km.shape[0]):
                term = AmV @ Km[m]
                term_norms = term_norms + torch.linalg.matrix_norm(term)
                out = out + term
                if m + 1 < Km.shape[0]:
                    AmV = self.kernel(AmV, transpose=transpose)
        return out, term_norms / torch.linalg.matrix_norm(out).clamp_min(torch.finfo(V.dtype).tiny)

    def __call__(self, V: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        return self.apply(V, transpose)[0]


def _check_operand(name: str, x) -> None:
    """A real floating tensor, finite, not requiring grad (the action runs under ``no_grad``: a graph
    through it would be cut silently); ValueError naming the argument otherwise."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.is_complex() or not x.is_floating_point():
        raise ValueError(f"{name} has dtype {x.dtype}: a real floating tensor is needed (the Jacobian is real)")
    if x.requires_grad:
        raise ValueError(f"{name} requires grad: the matrix-free action is not differentiable (it runs under "
                         "no_grad); detach it, or use stack_jvp / stack_vjp for a differentiable J·V")
    bad = ~torch.isfinite(x)
    if bool(bad.any()):
        index = tuple(int(i) for i in torch.nonzero(bad)[0])
        raise ValueError(f"{name} is not finite at index {index} ({float(x[index])})")


def _plain_stack(stack):
    """The plain pre-LN ``Stack`` behind ``stack`` (its ``PreLN`` wrapper included); ValueError naming the
    architecture for a variant, which has no polynomial form at the reference, and for an open gate."""
    from numerics.stacks.stack import Stack

    if not isinstance(stack, Stack) and getattr(stack, "arch", None) == "preln" and isinstance(
            getattr(stack, "base", None), Stack):
        stack = stack.base
    if not isinstance(stack, Stack):
        arch = getattr(stack, "arch", type(stack).__name__)
        raise ValueError(f"arch={arch!r}: the matrix-free J·V is the pre-LN stack's polynomial form "
                         "J = Σ A^m ⊗ K_m (Claim 2.3); this architecture has none, use stack_jvp (autograd)")
    if has_open_gate(stack):
        raise ValueError("gate ≠ 0: the slow path moves the trajectory off 1x̄ᵀ, so the polynomial form does not "
                         "apply; use stack_jvp (autograd)")
    return stack


def jacobian_apply(stack, xbar: torch.Tensor, V: torch.Tensor, transpose: bool = False) -> torch.Tensor:
    """J·V (or Jᵀ·V with ``transpose=True``) of ``stack`` at the reference 1x̄ᵀ, same shape as V (..., T, d).

    Refused (ValueError naming the argument): ``xbar`` or ``V`` not a real floating tensor, not
    finite, or requiring grad; a stack other than the pre-LN one (looped, post-LN, mHC, ...) or
    with an open gate."""
    stack = _plain_stack(stack)
    _check_operand("xbar", xbar)
    _check_operand("V", V)
    return JacobianAction(stack, xbar)(V, transpose=transpose)


def layered_apply(stack, xbar: torch.Tensor, V: torch.Tensor, *, mixer: torch.Tensor | None = None,
                  delta: float = 0.0, reverse: bool = False) -> torch.Tensor:
    """J·V as the depth-ordered product of the layer maps (Claim 1.2 at the reference):
    E ↦ ((1 − hα)E + h A E B_ℓᵀ), then [E ↦ (I + δM)E,] then E ↦ E (I + C_ℓ)ᵀ, for ℓ = 0..L−1.

    ``mixer`` M (T×T, M1 = 0) inserts the token-mixing sublayer of
    ``numerics.families.factorisation.TokenMixedStack`` before each MLP: the exact linearisation of that
    stack at 1x̄ᵀ (M1 = 0 keeps the reference).  ``reverse=True`` multiplies the layers in the
    wrong order (ℓ = L−1 first): the control of the chain rule.
    """
    p = next(stack.parameters())
    xbar = xbar.to(dtype=p.dtype, device=p.device)
    with torch.no_grad():
        B, C = layer_B_C(stack, xbar)
        kernel = KernelAction(common_kernel(stack).to(p.dtype))
        h, alpha = stack.h, stack.config.decay
        eye = torch.eye(B.shape[-1], dtype=B.dtype, device=B.device)
        E = V.to(B.dtype)
        order = range(B.shape[0] - 1, -1, -1) if reverse else range(B.shape[0])
        for ell in order:
            E = (1.0 - h * alpha) * E + h * kernel(E) @ B[ell].mT
            if mixer is not None:
                E = E + delta * (mixer.to(E.dtype) @ E)
            E = E @ (eye + C[ell]).mT
    return E


def has_open_gate(stack) -> bool:
    """A slow path with a nonzero gate: the trajectory from 1x̄ᵀ leaves the token-homogeneous set, so
    the layer maps at the reference (:func:`layered_apply`, the generated B_ℓ, C_ℓ) do not exist."""
    return any(getattr(layer, "slow", None) is not None and float(layer.gate.detach()) != 0.0
               for layer in stack.layers)


def visited_layer_apply(stack, X: torch.Tensor, V: torch.Tensor, *, reverse: bool = False) -> torch.Tensor:
    """J·V as the depth-ordered product of the layer Jacobians at the visited states X_ℓ of the
    trajectory from X (Claim 1.2 at any state, gates included): E ↦ D layer_ℓ(X_ℓ)[E] by one
    ``torch.func.jvp`` of layer ℓ alone, for ℓ = 0..L−1.  ``reverse=True`` applies the same maps
    in the wrong order (ℓ = L−1 first): the control of the chain rule."""
    with torch.no_grad():
        states = stack.trajectory(X.detach())
    order = range(len(stack.layers) - 1, -1, -1) if reverse else range(len(stack.layers))
    E = V[None]
    for ell in order:
        E = stack_jvp(stack.layers[ell], states[ell], E)
    return E[0]


# ---- the independent route: autograd of the real stack --------------------------------------
def reference_state(stack, xbar: torch.Tensor) -> torch.Tensor:
    """1x̄ᵀ, (T, d), in the stack's dtype and device."""
    p = next(stack.parameters())
    return xbar.to(dtype=p.dtype, device=p.device).expand(stack.config.T, -1).clone()


def stack_jvp(module, X: torch.Tensor, V: torch.Tensor | None = None, *,
              param_tangents: dict[str, torch.Tensor] | None = None, chunk: int = 4) -> torch.Tensor:
    """Batched forward-mode derivatives of ``module`` at X by ``torch.func.jvp``: for k probes, the
    output tangent of input tangent V[i] (k, T, d) plus parameter tangents param_tangents[name][i]
    (k, *param.shape).  Returns (k, T, d).  No autograd graph is kept; ``chunk`` probes share one
    primal pass (memory grows with it)."""
    names = list(param_tangents or {})
    base = {n: p.detach() for n, p in module.named_parameters()}
    k = V.shape[0] if V is not None else next(iter(param_tangents.values())).shape[0]
    if V is None:
        V = torch.zeros(k, *X.shape, dtype=X.dtype, device=X.device)

    def f(x, *ps):
        return functional_call(module, {**base, **dict(zip(names, ps))}, (x,))

    primals = (X.detach(), *[base[n] for n in names])

    def one(v, *dps):
        return torch.func.jvp(f, primals, (v, *dps))[1]

    outs = []
    with torch.no_grad():
        for start in range(0, k, chunk):
            sl = slice(start, start + chunk)
            outs.append(torch.func.vmap(one)(V[sl], *[param_tangents[n][sl] for n in names]))
    return torch.cat(outs)


def stack_vjp(module, X: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Jᵀ·W[i] for k cotangents W (k, T, d) by ``torch.func.vjp`` of the real module at X."""
    base = {n: p.detach() for n, p in module.named_parameters()}
    _, pullback = torch.func.vjp(lambda x: functional_call(module, base, (x,)), X.detach())
    return torch.stack([pullback(w)[0] for w in W]).detach()


def adjoint_errors(action: "JacobianAction", module, X: torch.Tensor, U: torch.Tensor,
                   V: torch.Tensor) -> dict:
    """The matrix-free Jᵀ against two independent routes, for probes U, V (k, T, d):

    ``vjp``: max_i ‖Jᵀ·U_i − vjp(U_i)‖/‖vjp(U_i)‖ / κ_i (``torch.func.vjp`` of the real module at X;
    κ_i the transpose polynomial's cancellation factor), to be ≤ γ; ``adjoint``: max_i
    |⟨U_i, J·V_i⟩ − ⟨Jᵀ·U_i, V_i⟩| / (‖U_i‖‖J·V_i‖ + ‖Jᵀ·U_i‖‖V_i‖) / κ_i, κ_i the larger factor of
    the two directions, to be ≤ γ + T·d·u (the two length-T·d inner products); ``kappa``: the
    largest factor.  A wrong transpose anywhere in Jᵀ (the kernel's, a coefficient's) is O(1) in both.

    The adjoint identity is a guard only when U and V are independent: with V = U (one seed reused)
    ⟨U, J·U⟩ = ⟨M·U, U⟩ holds for M = J as well as for M = Jᵀ, and a dropped transpose passes.
    ``probe_cosine`` is max_i |⟨U_i, V_i⟩|/(‖U_i‖‖V_i‖); above :func:`dependence_bound` the probes are
    dependent and ``adjoint`` is reported as inf (refused), whatever the identity gives."""
    cosine = probe_cosine(U, V)
    JV, kappa_f = action.apply(V)
    JtU, kappa_t = action.apply(U, transpose=True)
    exact = stack_vjp(module, X, U)
    vjp = relative_errors(JtU, exact) / kappa_t
    left = (U.to(JV.dtype) * JV).sum(dim=(-2, -1))
    right = (JtU * V.to(JtU.dtype)).sum(dim=(-2, -1))
    scale = (torch.linalg.matrix_norm(U.to(JV.dtype)) * torch.linalg.matrix_norm(JV)
             + torch.linalg.matrix_norm(JtU) * torch.linalg.matrix_norm(V.to(JtU.dtype)))
    kappa = torch.maximum(kappa_f, kappa_t)
    adjoint = float(((left - right).abs() / scale.clamp_min(torch.finfo(scale.dtype).tiny) / kappa).max())
    bound = dependence_bound(U.shape[-2] * U.shape[-1])
    return {"vjp": float(vjp.max()), "adjoint": adjoint if cosine <= bound else math.inf,
            "kappa": float(kappa.max()), "probe_cosine": cosine, "cosine_bound": bound}


def probe_cosine(U: torch.Tensor, V: torch.Tensor) -> float:
    """max_i |⟨U_i, V_i⟩| / (‖U_i‖ ‖V_i‖) over the paired probes (k, T, d): 1 when a pair is parallel."""
    u, v = U.flatten(-2).to(torch.float64), V.flatten(-2).to(torch.float64)
    norms = (u.norm(dim=-1) * v.norm(dim=-1)).clamp_min(torch.finfo(torch.float64).tiny)
    return float(((u * v).sum(-1).abs() / norms).max())


def dependence_bound(n: int) -> float:
    """The largest |cos| two independent isotropic probes in n dimensions reach, except with probability
    about 1e-9: min(6/√n, 1 − 10⁻⁶).  cos² ~ Beta(½, (n−1)/2), so P(|cos| > c) ≈ 2Φ(−c√n) for large n
    (c = 6/√n: 2·10⁻⁹); for n ≤ 36, 6/√n ≥ 1 and the bound 1 − 10⁻⁶ refuses only (near-)parallel pairs,
    which independent draws reach with probability ≲ (2·10⁻⁶)^((n−1)/2)."""
    return min(6.0 / math.sqrt(n), 1.0 - 1e-6)


# ---- randomised estimates ------------------------------------------------------------------
def probes(k: int, T: int, d: int, *, seed: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """k i.i.d. standard Gaussian probes (k, T, d), drawn in float64 on the CPU from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(k, T, d, generator=g, dtype=torch.float64, device="cpu").to(dtype=dtype, device=device)


def relative_errors(approx: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """‖approx_i − exact_i‖_F / ‖exact_i‖_F per probe (leading dimension)."""
    diff = torch.linalg.matrix_norm(approx.to(exact.dtype) - exact)
    return diff / torch.linalg.matrix_norm(exact).clamp_min(torch.finfo(exact.dtype).tiny)


def operator_norm(apply, apply_t, shape: tuple, *, iters: int = 12, seed: int = 0,
                  dtype=torch.float64, device=None) -> tuple[float, float]:
    """(σ, change) with σ the power-iteration estimate of ‖M‖₂ after ``iters`` steps of x ↦ MᵀMx
    and ``change`` the relative change of σ over the last step (a lower bound that increases
    monotonically to ‖M‖₂; ``change`` says how converged it is)."""
    x = probes(1, *shape, seed=seed, dtype=dtype, device=device)[0]
    x = x / torch.linalg.matrix_norm(x)
    sigma, prev = 0.0, 0.0
    for _ in range(iters):
        y = apply(x)
        prev, sigma = sigma, float(torch.linalg.matrix_norm(y))
        x = apply_t(y)
        x = x / torch.linalg.matrix_norm(x).clamp_min(torch.finfo(dtype).tiny)
    return sigma, abs(sigma - prev) / max(sigma, torch.finfo(dtype).tiny)


# ---- modes of the causal kernel -------------------------------------------------------------
def causal_eigenvector(T: int, k: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """Right eigenvector of the causal kernel for λ = 1/k (1 ≤ k ≤ T), unit norm:
    s_i = C(i−1, k−1) for i ≥ k (1-based), 0 before; A s = s/k since Σ_{j≤i} s_j = C(i, k).
    Computed from log-binomials, so entries below the smallest float are zero."""
    if not 1 <= k <= T:
        raise ValueError(f"k={k} must be in 1..T={T}")
    i = torch.arange(k, T + 1, dtype=torch.float64, device="cpu")  # built in float64 on the host, moved at the end
    logc = torch.lgamma(i) - math.lgamma(k) - torch.lgamma(i - k + 1)
    s = torch.zeros(T, dtype=torch.float64, device="cpu")  # as i
    s[k - 1:] = torch.exp(logc - logc.max())
    return (s / s.norm()).to(dtype=dtype, device=device)


def representable_causal_modes(T: int, count: int = 16) -> list[int]:
    """``count`` mode indices k (λ = 1/k) whose eigenvectors are representable in float64: the first
    and last count/2 (entries C(i−1, k−1) span ≲ 1e17 for k ≤ 8 at T = 1024; k near T has few
    nonzero entries).  Always includes λ = 1 (k = 1) and the smallest eigenvalue λ = 1/T."""
    half = max(1, count // 2)
    return sorted(set(range(1, min(half, T) + 1)) | set(range(max(1, T - (count - half) + 1), T + 1)))


def sampled_causal_eigenvalues(T: int, count: int = 16) -> list[float]:
    """``count`` eigenvalues 1/k of the causal kernel with k log-spaced in 1..T (λ = 1 and λ = 1/T included)."""
    ks = sorted({int(round(math.exp(t * math.log(T) / max(count - 1, 1)))) for t in range(count)} | {1, T})
    extra = [k for k in range(2, T) if k not in ks]
    while len(ks) < min(count, T) and extra:
        ks.append(extra.pop(0))
    return [1.0 / k for k in sorted(ks)]
