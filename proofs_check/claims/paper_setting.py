"""Measurements in the paper's setting on trained weights: GPT-2's block (causal, pre-LN, h = 1) trained on
bytes of the shipped corpus (docs/trained/gpt2-bytes, Hugging Face's format; its record
docs/trained/gpt2-bytes-train.json).

Claims 5.1 and 5.3: the stability margin μ on these weights (``numerics.trained_margin``): its upper bound
μ⁺ = −(1/(Lh)) Σ log‖G_ℓ‖₂ over the homogeneous modes (μ ≤ μ⁺ for every block length P), the mean
direction's gain per layer (1 − hα: exactly 1 on an undamped pre-LN block, for any weights) at the
reference and along held-out text, each against its independent route.
"""

from __future__ import annotations

import functools

import torch

from numerics import held_out, hf_gpt2
from numerics import trained_margin as tm
from proofs_check.integrity import REPO_ROOT

#: the committed trained byte GPT-2 (h = 1, i.i.d. initialisation, trained on the corpus's training split)
TRAINED_GPT2 = REPO_ROOT / "docs" / "trained" / "gpt2-bytes"
#: the central differences' error bound (``trained_margin.finite_difference_gains``: Richardson truncation
#: plus rounding) × 10
FD_MARGIN = 10.0


def mean_gain_tol(d: int) -> float:
    """|gain − (1 − hα)| by autograd or jvp: LN's mean subtraction cancels the shift to the rounding of a few
    operations per feature, ≤ 100·d·eps (1.4e-12 at d = 64)."""
    return 100 * d * torch.finfo(torch.float64).eps


def load_gpt2(folder=TRAINED_GPT2):
    """(float64 stack, X₀ of the held-out windows) of a Hugging Face GPT-2 folder."""
    config = hf_gpt2.read_config(folder)
    tensors = hf_gpt2.checked_tensors(hf_gpt2.weights_file(folder), config)
    _, stack = hf_gpt2.build_stack(config, tensors)
    outside = {k: v.to(torch.float64) for k, v in hf_gpt2.outside_tensors(tensors).items()}
    vocab = outside["embedding.wte"].shape[0]
    tokens = held_out.text_tokens(stack.config.T, vocab, held_out.WINDOWS, gpt2=True)
    return stack, hf_gpt2.embed(outside, tokens)


def margin_record(stack, X0: torch.Tensor) -> dict:
    """μ⁺ at the text's token mean, the norms and mean-direction gains by autograd and by central differences,
    and the mean-direction gains along the first held-out window's visited states (jvp)."""
    xbar = X0.mean(dim=(0, 1))
    m = tm.margin_on(stack, xbar)
    fd = tm.finite_difference_gains(stack, xbar)
    visited = tm.visited_mean_gains(stack, X0[0])
    norm_ratio = max(abs(a - b) / (FD_MARGIN * e) for a, b, e in zip(fd["norms"], m.norms, fd["norm_error_bound"]))
    want = m.predicted_mean_gain
    tol = mean_gain_tol(X0.shape[-1])
    gain_ratio = max([abs(g - want) / tol for g in m.mean_gains + visited]
                     + [abs(g - want) / (FD_MARGIN * e + tol)
                        for g, e in zip(fd["mean_gains"], fd["mean_gain_error_bound"])])
    return {**m.as_dict(), "visited_mean_gains": visited, "fd": fd, "norm_route_ratio": norm_ratio,
            "mean_gain_ratio": gain_ratio, "T": int(X0.shape[-2]), "d": int(X0.shape[-1])}


@functools.lru_cache(maxsize=1)
def trained_gpt2_margin() -> dict:
    """:func:`margin_record` on the committed trained byte GPT-2."""
    stack, X0 = load_gpt2()
    return margin_record(stack, X0)


def margin_routes_agree(r: dict) -> bool:
    """The autograd norms match their central differences and every mean-direction gain is 1 − hα."""
    return r["norm_route_ratio"] <= 1.0 and r["mean_gain_ratio"] <= 1.0


def margin_text(r: dict) -> str:
    """The trained margin in one clause."""
    return (f"μ ≤ μ⁺ = {r['mu_upper']:.3f} on the trained byte GPT-2 (L = {r['layers']}, d = {r['d']}, h = {r['h']:g}; "
            f"‖G_ℓ‖ = {', '.join(f'{a:.2f}' for a in r['norms'])}; the mean direction 1_d keeps gain "
            f"{r['predicted_mean_gain']:g} on every layer, so μ ≤ 0 for any undamped pre-LN weights)")
