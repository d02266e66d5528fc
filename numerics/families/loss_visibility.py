"""Claim 4.2 seen in the per-token loss: where the gate of the slow path is visible (docs/theory.md §4).

The persistent component of the causal stack is its first token (w = e₁), which the one-block-shifted
slow path never reaches, so ∂(wᵀX_L)/∂g = 0 exactly.  A language model's loss, though, is a sum of
per-token losses ℓ_t = CE(head(LN_f(x_{L,t})), y_t), one for every position.  At the homogeneous
reference 1x̄ᵀ and g = 0 the slow path's output at layer ℓ is S_ℓ = m s̄_ℓᵀ with
s̄_ℓ = W_VO,slowᵀ LN₁(x̄_ℓ) (the slow kernel's rows sum to 1 on equal pooled tokens) and m the
indicator of the tokens of blocks ≥ 1 (block 0 receives zero).  To first order in g_ℓ,

    ∂X_{ℓ+1}/∂g_ℓ = h m s̄_ℓᵀ (I + C_ℓ)ᵀ,     ∂X_L/∂g_ℓ = J_{ℓ+1..L−1}[h m s̄_ℓᵀ (I + C_ℓ)ᵀ],

with J_{ℓ+1..L−1} = Σ_m A^m ⊗ K_m the later layers' factorised Jacobian at the reference (Claim 2.3),
so ∂ℓ_t/∂g_ℓ = ∇_{x_t}ℓ_t · (∂X_L/∂g_ℓ)_t.  For the causal kernel Aᵐm vanishes on block 0 and is
positive on every later token: the gate is **invisible in the loss of block 0 and visible in the loss
of every later token**, the prediction computed here without differentiating through the gates.
"""

from __future__ import annotations

import torch
from torch.func import jacrev

from numerics.linearised import matrix_free as mf
from numerics.families.factorisation import layer_B_C
from numerics.text.reach import tail_stack


def readout(d: int, vocab: int, seed: int, dtype=torch.float64):
    """A random readout (LN gains/biases, head, head bias) as a function x (..., d) -> logits (..., V)."""
    g = torch.Generator().manual_seed(seed)
    gamma = 1.0 + 0.1 * torch.randn(d, generator=g, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    beta = 0.1 * torch.randn(d, generator=g, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    head = torch.randn(d, vocab, generator=g, dtype=torch.float64, device="cpu") / d ** 0.5  # seeded on the host (a CPU generator)
    bias = 0.1 * torch.randn(vocab, generator=g, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    gamma, beta, head, bias = (t.to(dtype) for t in (gamma, beta, head, bias))

    def logits(x):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (gamma * (x - mu) / torch.sqrt(var + 1e-5) + beta) @ head + bias

    return logits


def per_token_losses(logits_fn, X: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """ℓ_t = −log softmax(logits(x_t))[y_t], shape (T,)."""
    logp = torch.log_softmax(logits_fn(X), dim=-1)
    return -logp.gather(-1, targets[:, None])[:, 0]


def gate_loss_jacobian(stack, X0: torch.Tensor, logits_fn, targets: torch.Tensor) -> torch.Tensor:
    """∂ℓ_t/∂g_ℓ by autograd through the whole stack, shape (T, L)."""
    from torch.func import functional_call

    names = [f"layers.{i}.gate" for i in range(len(stack.layers))]
    params = {k: v.detach() for k, v in stack.named_parameters()}

    def f(*gates):
        out = functional_call(stack, {**params, **dict(zip(names, gates))}, (X0,))
        return per_token_losses(logits_fn, out, targets)

    jac = jacrev(f, argnums=tuple(range(len(names))))(*(params[k] for k in names))
    return torch.stack(jac, dim=-1)


def predicted_gate_loss_jacobian(stack, xbar: torch.Tensor, logits_fn, targets: torch.Tensor) -> torch.Tensor:
    """The same (T, L) from the factorised form: ∇_{x_t}ℓ_t · (J_{ℓ+1..}[h m s̄_ℓᵀ(I + C_ℓ)ᵀ])_t."""
    cfg = stack.config
    T, d, P = cfg.T, cfg.d, cfg.P
    traj = stack.reference_trajectory(xbar).detach()          # x̄_0 .. x̄_L
    _, C = layer_B_C(stack, xbar)
    m = (torch.arange(T, device=xbar.device) >= P).to(xbar.dtype)[:, None]
    X_L = traj[-1].expand(T, d)
    grads = torch.stack([jacrev(lambda x, t=t: per_token_losses(logits_fn, x[None], targets[t:t + 1])[0])(X_L[t])
                         for t in range(T)]).detach()                    # ∇_{x_t} ℓ_t, (T, d)
    eye = torch.eye(d, dtype=xbar.dtype, device=xbar.device)
    cols = []
    for ell, layer in enumerate(stack.layers):
        with torch.no_grad():
            sbar = layer.ln1(traj[ell]) @ layer.slow.attn.value_output()
            if layer.slow.attn.b_O is not None:
                sbar = sbar + layer.slow.attn.b_O
            E = layer.h * (m * sbar[None, :]) @ (eye + C[ell]).mT
            if ell + 1 < len(stack.layers):
                E = mf.JacobianAction(tail_stack(stack, ell + 1), traj[ell + 1])(E[None])[0]
        cols.append((grads * E).sum(-1))
    return torch.stack(cols, dim=-1)

