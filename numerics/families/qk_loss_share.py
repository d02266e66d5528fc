"""Claim 4.1 in the per-token loss: how much W_Q, W_K move a language model's loss, relative to W_V, W_O.

At the token-homogeneous reference 1x̄ᵀ every attention row averages equal values, so a change of W_Q, W_K
moves nothing and the share ‖Δℓ[δ_QK]‖/‖Δℓ[δ_VO]‖ is 0 for any weights; on a language model's held-out
text the tokens differ and the share is whatever the weights make it.  Two routes measure it: forward-mode
directional derivatives of the per-token losses and central differences under θ ± ε δ (they agree to O(ε²)).
"""

from __future__ import annotations

import torch

from numerics.text import held_out
from numerics.text import reach as R
from numerics.text import visited as VI
FD_STEP = 1e-4          # relative step of the finite weight perturbations


def loss_qk_shares(h: held_out.HeldOut, seed: int = 7, step: float = FD_STEP) -> dict:
    """‖Δℓ[δ_QK]‖/‖Δℓ[δ_VO]‖ of the per-token loss on ``h``'s windows by forward mode (``qk_loss_share``) and by
    central differences (``qk_loss_share_finite_difference``), and the two routes' largest relative gap."""
    from torch.func import functional_call, jvp

    base = VI.plain(h.stack)
    params = {n: p.detach() for n, p in base.named_parameters()}

    def losses(tangents: dict, scale: float) -> torch.Tensor:
        moved = {n: params[n] + scale * t for n, t in tangents.items()}
        with VI._unchecked(base), torch.no_grad():
            return h.per_token_losses(functional_call(base, {**params, **moved}, (h.X0,)))

    def derivative(tangents: dict) -> torch.Tensor:
        names = list(tangents)

        def f(*ps):
            return h.per_token_losses(functional_call(base, {**params, **dict(zip(names, ps))}, (h.X0,)))

        with VI._unchecked(base), torch.no_grad():
            return jvp(f, tuple(params[n] for n in names), tuple(tangents[n] for n in names))[1]

    out = {}
    for key, leaves, probe_seed in (("qk", R.QK, seed), ("vo", R.VALUE, seed + 1)):
        t = R.relative_tangents(base, leaves, probe_seed)
        out[key + "_fd"] = (losses(t, step) - losses(t, -step)) / (2 * step)
        out[key] = derivative(t)
    return {"qk_loss_share": R.pooled_ratio(out["qk"], out["vo"]),
            "qk_loss_share_finite_difference": R.pooled_ratio(out["qk_fd"], out["vo_fd"]),
            "finite_difference_vs_jvp": max(R.pooled_ratio(out[k + "_fd"] - out[k], out[k]) for k in ("qk", "vo"))}
