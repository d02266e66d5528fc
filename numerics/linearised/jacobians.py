"""The numerical toolkit of every claim about a stack: Jacobians along the trajectory and their blocks
in the frozen kernel's eigenbasis.

:func:`stack_jacobian` is the one dense Jacobian of the suite: of the whole stack, or of any map of its
state (a layer, a step, the run of the steps, embed, readout).  The trajectory helpers work on the base
:class:`numerics.stacks.stack.Stack` (``layer_jacobians``) and on any :class:`numerics.stacks.architectures.ArchStack`
(a state S of shape (T, F), ``embed``, ``n_steps`` step maps, ``readout``), so the same functions serve
the base stack and every variant.  Dense autograd Jacobians: small sizes only ((T F)² entries); the
matrix-free actions for large stacks live in ``numerics.linearised.matrix_free``.
"""

from __future__ import annotations

import torch

F64 = torch.float64


def stack_jacobian(f, x: torch.Tensor, chunk_size: int | None = None, *, create_graph: bool = False) -> torch.Tensor:
    """The dense Jacobian ∂ vec f(x) / ∂ vec x (row-major vec), shape (f(x).numel(), x.numel()), by
    reverse-mode autograd (``torch.func.jacrev``); f is the stack, a layer, a step or any map of the state.

    ``chunk_size``: how many rows one batched vector–Jacobian product computes.  None: all rows in one
    vmap; 1: one product per row without vmap (the products ``torch.autograd.functional.jacobian``
    takes, bit for bit, and no vmap restrictions on f); k: k rows at a time, to bound memory.
    ``create_graph``: keep the result differentiable (in the weights, or under an enclosing
    ``torch.func`` transform); by default it is detached, as ``torch.autograd.functional.jacobian``'s."""
    J = torch.func.jacrev(f, chunk_size=chunk_size)(x).reshape(-1, x.numel())
    return J if create_graph else J.detach()


def layer_jacobians(stack, X: torch.Tensor) -> list[torch.Tensor]:
    """J_ℓ = ∂X_{ℓ+1}/∂X_ℓ of a :class:`numerics.stacks.stack.Stack` at the states visited from X, each
    (T d, T d), detached from the weights."""
    states = stack.trajectory(X).detach()
    return [stack_jacobian(layer, states[ell]) for ell, layer in enumerate(stack.layers)]


def reference_input(stack, seed: int, homogeneous: bool = True, delta: float = 0.0) -> torch.Tensor:
    """A seeded input: 1x̄ᵀ (homogeneous) or i.i.d. tokens, plus ``delta`` times an i.i.d. perturbation."""
    g = torch.Generator().manual_seed(seed)
    T, d = stack.config.T, stack.config.d
    device = next((p.device for p in stack.parameters()), torch.device("cpu"))
    xbar = torch.randn(d, generator=g, dtype=F64, device="cpu")  # seeded on the host (a CPU generator)
    X = xbar.expand(T, d).clone() if homogeneous else torch.randn(T, d, generator=g, dtype=F64, device="cpu")  # seeded
    return (X + delta * torch.randn(T, d, generator=g, dtype=F64, device="cpu")).to(device)  # seeded, moved on


def state_jacobian(stack, X: torch.Tensor) -> torch.Tensor:
    """∂S_n/∂S_0 at S_0 = embed(X): (T F, T F)."""
    s0 = stack.embed(X).detach()

    def run(s):
        for i in range(stack.n_steps):
            s = stack.step(i, s)
        return s

    return stack_jacobian(run, s0, chunk_size=1)


def step_jacobians(stack, X: torch.Tensor, states=None) -> list[torch.Tensor]:
    """The per-step state Jacobians along the trajectory from embed(X) (or at the given states)."""
    if states is None:
        with torch.no_grad():
            states = stack.trajectory(X)
    return [stack_jacobian(lambda z, i=i: stack.step(i, z), states[i].detach(), chunk_size=1)
            for i in range(stack.n_steps)]


def commutator_error(J: torch.Tensor, A: torch.Tensor, F: int) -> float:
    """‖J(A⊗I_F) − (A⊗I_F)J‖ / ‖J‖: zero iff J is block diagonal in A's eigenbasis (distinct λ)."""
    AI = torch.kron(A, torch.eye(F, dtype=J.dtype, device=J.device))
    return float(torch.linalg.norm(J @ AI - AI @ J) / torch.linalg.norm(J))


def eigen_blocks(J: torch.Tensor, A: torch.Tensor, F: int):
    """(λ, blocks, cond S): the blocks (w_kᵀ ⊗ I) J (s_k ⊗ I) for every eigenpair of A (left w,
    right s, wᵀs = 1), as a (T, F, F) tensor, λ in descending order."""
    lam, Sm = torch.linalg.eig(A)
    lam, Sm = lam.real, Sm.real
    order = torch.argsort(lam, descending=True)
    lam, Sm = lam[order], Sm[:, order]
    W = torch.linalg.inv(Sm)  # rows: left eigenvectors
    I = torch.eye(F, dtype=J.dtype, device=J.device)
    blocks = torch.stack([torch.kron(W[k:k + 1], I) @ J @ torch.kron(Sm[:, k:k + 1], I)
                          for k in range(len(lam))])
    return lam, blocks, float(torch.linalg.cond(Sm))
