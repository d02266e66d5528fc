"""Claim 2.4: W_Q and W_K are invisible at the reference (every score row constant over its keys).

Each claim is one ``@on_stack`` function of a :class:`numerics.stacks.spec.StackSpec` (docs/theory.md §2): the
ledger's ``@claim`` check runs it on the preln specs and adds the symbolic steps and the negative control;
the claims × architectures grid runs it on every variant's specs; its matrix-free form is in ``matrix_free``.
"""

from __future__ import annotations

import numpy as np
import torch

from numerics.stacks.architectures.capabilities import has
from numerics.fitting import loglog_fit
from numerics.linearised.jacobians import reference_input, stack_jacobian, state_jacobian
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import random_xbar
from proofs_check.verdicts.on_stack import matrix_spec
from proofs_check.verdicts.standing import HOLDS, PAPER
from proofs_check.verdicts.evidence import ClaimResult, ControlResult, NumericResult, symbolic_steps
from proofs_check.verdicts.registry import claim, evaluate, on_stack
from proofs_check.verdicts.on_stack import EXACT, Verdict, shrink
from proofs_check.claims.factorisation.frozen_kernel import SLOPE_TOL
from theory import factorisation_proofs as th


def _qk_specs(arch, ctx):
    if has(arch, "paper_stack"):  # the paper's block, and GPT-2's (h = 1, gelu_new, the query bias b_Q among the tangents)
        base = StackSpec(T=4, d=4, layers=2, heads=2, kernel="causal", seed=ctx.seed)
        return [base, base.with_(knobs={"step": 1.0, "activation": "gelu_new", "attn_bias": True})]
    return [matrix_spec(arch, ctx)]


def _qk_invisibility(spec: StackSpec, homogeneous=True):
    """Relative change of the output and the state Jacobian when W_Q, W_K are redrawn (a variant)."""
    s = spec.build_arch()
    X = reference_input(s, spec.seed, homogeneous=homogeneous)
    with torch.no_grad():
        out0 = s(X)
    J0 = state_jacobian(s, X)
    g = torch.Generator().manual_seed(spec.seed + 99)
    with torch.no_grad():
        for name, p in s.named_parameters():
            if name.endswith("W_Q") or name.endswith("W_K"):
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64, device="cpu"))  # seeded on the host (a CPU generator); copy_ moves it
        out1 = s(X)
    J1 = state_jacobian(s, X)
    return max(float((out1 - out0).norm() / out0.norm()), float(torch.linalg.norm(J1 - J0) / torch.linalg.norm(J0)))


@on_stack("2.4", specs=_qk_specs, homogeneous_reference=True, along_text=True)
def evaluate_2_4(spec: StackSpec, ctx) -> Verdict:
    """W_Q, W_K invisible at 1x̄ᵀ: preln, ∂(A_ℓ, X_L, J)/∂(W_Q, W_K) = 0 by autograd; a variant,
    redrawing W_Q, W_K leaves output and Jacobian unchanged (and changes them off the reference)."""
    if spec.checkpoint is not None:   # a trained or imported model: at the states its held-out text visits
        from proofs_check.claims import along_text

        return along_text.qk_invisibility(spec)
    if has(spec.arch, "paper_stack"):
        at_ref = qk_derivative_norm(0.0, spec)
        status = "holds" if at_ref <= 1e-13 else "fails"
        return Verdict("2.4", status, measured={"qk_derivative_max": at_ref}, error=at_ref, tolerance=1e-13,
                       counterexample=None if status == "holds" else {"spec": spec.as_dict()})
    err = _qk_invisibility(spec)
    control = _qk_invisibility(spec, homogeneous=False)
    ev = {"rel_change_after_redrawing_WQ_WK": err, "tolerance": EXACT, "control_inhomogeneous": control}
    if err <= EXACT and control > 1e-6:
        return Verdict("2.4", "holds", measured=ev, error=err, tolerance=EXACT)
    if has(spec.arch, "compressed_branch"):
        ev["rel_change_gate0"] = _qk_invisibility(spec.with_(arch_options={"compress_gate": 0.0}))
        from hypothesis import strategies as hst

        cex = shrink(lambda p: _qk_invisibility(spec.with_(seed=p["seed"], arch_options={
            "compress_gate": p["compress_gate"]})) > 1e-8,
            hst.fixed_dictionaries({"seed": hst.integers(0, 20), "compress_gate": hst.floats(0.0, 2.0)}),
            max_examples=5)
        return Verdict("2.4", "fails", measured=ev, error=err, tolerance=EXACT,
                       condition="compress_gate = 0: after the first layer the early tokens differ (no compressed "
                                 "keys yet), the scores are no longer constant and W_Q, W_K become visible",
                       counterexample={"arch": spec.arch, **(cex or {}), "T": spec.T, "P": spec.P})
    return Verdict("2.4", "fails", measured=ev, error=err, tolerance=EXACT, counterexample={"spec": spec.as_dict()})


@claim("2.4", title="Q/K invisibility at the reference", family="factorisation",
       statement="∂(A, x̄_ℓ, G(λ))/∂(W_Q, W_K) = 0 at 1x̄ᵀ; off it the derivative is nonzero and linear in the "
                 "inhomogeneity.",
       assumptions=["token-homogeneous reference", "T=4, d=4, 2 layers, causal, 2 heads; the paper's block and "
                    "GPT-2's (h = 1, gelu_new, query bias b_Q differentiated with W_Q, W_K)"],
       tests=["tests/test_factorisation.py::test_qk_invisible", "tests/test_factorisation.py::test_qk_visible_off_reference"],
       control="X = 1x̄ᵀ + δZ: ‖∂/∂(W_Q, W_K)‖ ∝ δ (slope 1)", figure=None,
       kind='identity', setting=PAPER, standing=HOLDS,
       headline='W_Q, W_K are invisible at 1x̄ᵀ for any weights (to rounding); off the reference their derivative grows linearly with the spread')
def check_2_4(ctx) -> ClaimResult:
    spec, *others = _qk_specs("preln", ctx)
    at_ref = max(v.error if v.error is not None else float("inf")
                 for v in (evaluate("2.4", s, ctx) for s in [spec, *others]))
    deltas = np.logspace(-4, -1, 4)
    vals = [qk_derivative_norm(float(dl), spec) for dl in deltas]
    slope = loglog_fit(deltas, vals).slope
    ok = abs(slope - 1) <= SLOPE_TOL
    return ClaimResult(
        symbolic=symbolic_steps(th.all_proofs("2.4", ctx.quick)),
        numeric=NumericResult(cases=1 + len(others), max_error=at_ref, tolerance=1e-13,
                              detail=f"max |∂(A_ℓ, X_L, J)/∂(W_Q, W_K[, b_Q])| at 1x̄ᵀ = {at_ref:.3g}, the paper's "
                                     "block and GPT-2's "
                                     "(tolerance: a few eps, softmax rows sum to 1 only to rounding)"),
        control=ControlResult("fails-as-predicted" if ok else "did-not-fail",
                              "off the reference: " + ", ".join(f"δ={dl:.0e}: {m:.3g}" for dl, m in zip(deltas, vals))
                              + f"; fitted slope {slope:.3f} (predicted 1)"))


QK_DIRECTIONS = 4


def qk_derivative_norm(delta, spec: StackSpec | None = None, directions: int = QK_DIRECTIONS):
    """max |D·v| over ``directions`` Gaussian tangents v (unit-variance entries in every layer's W_Q, W_K),
    D = ∂(attention matrices A_ℓ, final state X_L, stack Jacobian)/∂(W_Q, W_K) at 1x̄ᵀ + δZ, on the stack
    ``spec`` names (its weights: a checkpoint's when it has one).

    Each D·v is one forward-over-reverse ``torch.func.jvp`` (cost a few stack Jacobians, at any
    parameter count).  A nonzero linear map D has D·v = 0 only on a hyperplane of v, a null set of
    the Gaussian, so D·v = 0 for a random v means D = 0 with probability 1; |D·v| ≈ ‖D row‖₂."""
    spec = spec or StackSpec(T=4, d=4, layers=2, heads=2, kernel="causal", seed=0)
    st = spec.build()
    T, d, L = spec.T, spec.d, spec.layers
    params = {k: v.detach() for k, v in st.named_parameters()}
    like = next(iter(params.values()))
    xbar = random_xbar(d, 500)
    Z = torch.randn(T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(spec.seed + 3), device="cpu")  # seeded on the host (a CPU generator), moved below
    X = (xbar.expand(T, d) + delta * Z).to(dtype=like.dtype, device=like.device)
    qk = {k: v for k, v in params.items() if k.endswith(("W_Q", "W_K", "b_Q"))}  # b_Q: GPT-2's query bias

    def observables(qk_params):
        p = {**params, **qk_params}

        def run(x):
            return torch.func.functional_call(st, p, (x,))

        As, x = [], X
        for ell in range(L):
            lp = {k.split(".", 2)[2]: v for k, v in p.items() if k.startswith(f"layers.{ell}.")}
            layer = st.layers[ell]
            z = torch.func.functional_call(layer.ln1, {"gamma": lp["ln1.gamma"], "beta": lp["ln1.beta"]}, (x,))
            attn_p = {"attn." + k[5:]: v for k, v in lp.items() if k.startswith("attn.")}
            As.append(torch.func.functional_call(_Weights(layer.attn), attn_p, (z,)))
            x = torch.func.functional_call(layer, lp, (x,))
        J = stack_jacobian(run, X, create_graph=True)  # differentiated below by jvp in the Q/K weights
        return torch.cat([torch.stack(As).flatten(), x.flatten(), J.flatten()])

    g = torch.Generator().manual_seed(spec.seed + 17)
    worst = 0.0
    for _ in range(directions):
        v = {k: torch.randn(t.shape, generator=g, dtype=torch.float64, device="cpu").to(dtype=t.dtype, device=t.device)
             for k, t in qk.items()}
        _, Dv = torch.func.jvp(observables, (qk,), (v,))
        worst = max(worst, float(Dv.abs().max()))
    return worst


class _Weights(torch.nn.Module):
    """Calls ``Attention.weights`` under ``functional_call`` (the attention matrices)."""

    def __init__(self, attn):
        super().__init__()
        self.attn = attn

    def forward(self, z):
        return self.attn.weights(z)
