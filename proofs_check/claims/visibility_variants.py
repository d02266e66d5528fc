"""Claims 4.1 and 4.2 on the architecture variants (the claims × architectures grid): the persistent
component's response slopes (4.1, a full-kernel variant) and the gradients of the output's size with
respect to the gates and the slow path's value weights (4.2).  The pre-LN stack's forms are in
``proofs_check.claims.visibility``.
"""

from __future__ import annotations

import math

import torch

from numerics.stacks.architectures.capabilities import has
from numerics.families import visibility as nv
from numerics.fitting import loglog_fit
from numerics.linearised.jacobians import reference_input
from proofs_check.verdicts.on_stack import Verdict

F64 = torch.float64


def arch_4_1(spec, ctx) -> Verdict:
    """A variant with the full kernel (w = 1/T): response slopes of the persistent component."""
    s = spec.build_arch()
    w = nv.persistent_vector(s)
    X = reference_input(s, spec.seed)
    g = torch.Generator().manual_seed(spec.seed + 1)
    p = torch.randn(s.config.T, generator=g, dtype=F64, device="cpu")  # seeded on the host (a CPU generator), as the variant's CPU stack
    p_dec = p - (w @ p) * torch.ones_like(p)  # wᵀp = 0: supported on the decaying bundle
    v = torch.randn(s.config.d, generator=g, dtype=F64, device="cpu")  # seeded on the host (a CPU generator), as the variant's CPU stack
    deltas = (1e-3, 10 ** -2.5, 1e-2)

    def moves(pp):
        with torch.no_grad():
            base = w @ s(X)
            return [float((w @ s(X + dl * torch.outer(pp, v)) - base).norm()) for dl in deltas]

    sl_dec, sl_mean = loglog_fit(deltas, moves(p_dec)).slope, loglog_fit(deltas, moves(torch.ones_like(p))).slope
    measured = {"decaying_slope": sl_dec, "mean_carrying_slope": sl_mean}
    predicted = {"decaying_slope": 2.0, "mean_carrying_slope": 1.0, "bands": [[1.8, 2.2], [0.9, 1.1]]}
    if 1.8 <= sl_dec <= 2.2 and 0.9 <= sl_mean <= 1.1:
        return Verdict("4.1", "holds", measured=measured, predicted=predicted)
    return Verdict("4.1", "fails", measured=measured, predicted=predicted, counterexample=spec.as_dict())



def arch_4_2(spec, ctx) -> Verdict:
    """A variant: gradients of ‖s(X)‖² w.r.t. the gates (at 0) and the slow W_V/W_O (at g = 0 and 0.5)."""
    s = spec.build_arch()
    if has(spec.arch, "compressed_branch"):
        s.compress_gate = torch.tensor(0.0, dtype=F64, requires_grad=True, device="cpu")  # as the variant's CPU stack
        gates = [s.compress_gate]
        slow = [p for n, p in s.named_parameters() if n.startswith("compress") and n.split(".")[-1] in ("W_V", "W_O")]
    else:
        gates = [p for n, p in s.named_parameters() if n.endswith("gate")]
        slow = [p for n, p in s.named_parameters() if ".slow." in n and n.split(".")[-1] in ("W_V", "W_O")]
    X = reference_input(s, spec.seed, homogeneous=False)
    grads = torch.autograd.grad(s(X).pow(2).sum(), gates + slow, allow_unused=True)

    def norm(group):
        return math.sqrt(sum(0.0 if gr is None else float(gr.norm()) ** 2 for gr in group))

    g_gate, g_slow0 = norm(grads[:len(gates)]), norm(grads[len(gates):])
    with torch.no_grad():
        for gt in gates:
            gt.fill_(0.5)
    g_slow1 = norm(torch.autograd.grad(s(X).pow(2).sum(), slow, allow_unused=True))
    measured = {"grad_gate_at_0": g_gate, "grad_slow_WV_WO_at_0": g_slow0, "grad_slow_WV_WO_at_0.5": g_slow1}
    predicted = {"grad_gate_at_0": "> 1e-8", "grad_slow_WV_WO_at_0": 0.0, "grad_slow_WV_WO_at_0.5": "> 1e-8"}
    if g_gate > 1e-8 and g_slow0 == 0.0 and g_slow1 > 1e-8:
        return Verdict("4.2", "holds", measured=measured, predicted=predicted)
    return Verdict("4.2", "fails", measured=measured, predicted=predicted, counterexample=spec.as_dict())
