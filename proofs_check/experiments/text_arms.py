"""Claim 7.3 on text, the capacity-matched arm and the gauge-invariant measure of the gate.

**The capacity-matched arm** (``capacity``): the hierarchical stack of the ``coupled`` arm, the
same weights at init, the same batches, every gate learnt, and the same trained parameters
(the slow path's modules are the coupled arm's, with the same shapes and names), but each
slow path is fed the block means of an *independent sequence*: in a batch of B ≥ 2 windows,
window i's slow path reads the layer's normalised states of window (i + ⌊B/2⌋) mod B
(:class:`IndependentHistory`).  Causality is kept (block b still reads blocks < b, of the
other window), the parameter count and the compute are the coupled arm's, and the slow path
carries no information about the current window's earlier blocks: only what any other window
of the corpus carries.  What the coupled arm gains over this arm is what the slow path's
cross-block information gives; what this arm gains over ``frozen`` is capacity (and the
corpus-level statistics an unrelated window shares).

**The gauge-invariant measure.**  The map (g, W_O^slow) → (−g, −W_O^slow) leaves the model
unchanged (g·SlowPath is linear in W_O^slow), so the sign of a learnt gate is not a property
of the model.  :func:`slow_share` measures the slow path's share of each layer's output on
held-out text, ρ_ℓ = ‖h·g_ℓ·S_ℓ(LN₁ X_ℓ)‖_F / ‖X_{ℓ+1}‖_F, and :func:`gate_norm_product` the
weight-space form |g_ℓ|·‖W_O^slow‖₂; both are invariant under the flip, the sign rule is not.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from numerics.stacks.stack import SlowPath

ARMS = ("coupled", "capacity", "frozen")


class IndependentHistory(SlowPath):
    """The slow path on another window's states: row i of the batch reads row (i + ⌊B/2⌋) mod B.

    The batch's windows must be independent of each other (training: seeded random offsets;
    validation: consecutive windows, so the partner lies B/2 windows away).  A batch of one
    window has no other window to read and is refused."""

    def forward(self, z):
        if z.dim() < 3 or z.shape[0] < 2:
            raise ValueError(f"the capacity arm needs a batch of at least 2 windows (got shape {tuple(z.shape)})")
        return super().forward(z.roll(z.shape[0] // 2, dims=0))


def capacity_matched(model: nn.Module) -> nn.Module:
    """Swap every slow path of ``model`` (in place) for an :class:`IndependentHistory` with the
    same weights; the parameters, their names and their count are unchanged."""
    cfg = model.stack.config
    for layer in model.stack.layers:
        if getattr(layer, "slow", None) is None:
            continue
        dtype = next(layer.slow.parameters()).dtype   # cast before loading: a load into float32 would round
        new = IndependentHistory(cfg.d, cfg.heads, cfg.T, cfg.P, cfg.slow_kernel).to(dtype)
        new.load_state_dict(layer.slow.state_dict())
        layer.slow = new
    return model


def build_model(cfg, arm: str) -> nn.Module:
    """The language model of ``cfg`` (a ``TextConfig``, hierarchical) for one arm, at init."""
    from numerics.text.corpus import VOCAB
    from numerics.text.training import LanguageModel

    if arm not in ARMS:
        raise ValueError(f"arm={arm!r} is not one of {', '.join(ARMS)}")
    model = LanguageModel(VOCAB, cfg.spec("cpu").build(), cfg.seed,
                          dtype=torch.float32 if cfg.dtype == "float32" else torch.float64,
                          freeze_gates=arm == "frozen")
    return capacity_matched(model) if arm == "capacity" else model


def trained_count(model: nn.Module) -> int:
    """The number of trained scalars (parameters with requires_grad)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def train_arm(cfg, arm: str, out: str | Path, *, threads: int = 1, progress: bool = False) -> dict:
    """Train one arm of ``cfg`` into the checkpoint folder ``out`` (resuming); return its curves.
    The data, schedule and validation are ``fastslow train``'s (``proofs_check.experiments.train``)."""
    from dataclasses import replace

    from numerics.storage import checkpoint as ckpt
    from numerics.text.corpus import ByteCorpus
    from numerics.text.training import batch_seed, fit, torch_threads

    cfg = replace(cfg, freeze_gates=arm == "frozen")
    corpus = ByteCorpus.load()
    with ckpt.claim(out, name="--out"), torch_threads(threads):
        model = build_model(cfg, arm)
        validation = corpus.validation_windows(cfg.T, cfg.eval_windows)
        curves = fit(model, cfg.optimiser(), lambda step: corpus.windows("train", cfg.batch, cfg.T,
                                                                            batch_seed(cfg.seed, step)),
                     validation, identity={"kind": "byte-corpus",
                                           "config": {**cfg.as_dict(), "arm": arm, "corpus": corpus.sha256}},
                     checkpoint=out, checkpoint_every=max(1, cfg.steps // 10), progress=progress,
                     desc=f"{arm} {cfg.label()}")
        tensors, _ = ckpt.load(out)
        model.load_state_dict(tensors["model"])
        measured = gate_measures(model, validation)
    return {"seed": cfg.seed, "arm": arm, "checkpoint": str(out), "final_eval_loss": curves["eval_loss"][-1],
            "final_eval_per_seq": curves["final_eval_per_seq"], "eval_step": curves["eval_step"],
            "eval_loss": curves["eval_loss"], "lr": curves["lr"], "gates_final": [g[-1] for g in curves["gates"]],
            "gates": curves["gates"], "tokens": curves["tokens"], "seconds": curves["seconds"],
            "trained_parameters": trained_count(model), **measured}


def slow_share(model: nn.Module, tokens: torch.Tensor) -> list[float]:
    """ρ_ℓ = ‖h·g_ℓ·S_ℓ(LN₁ X_ℓ)‖_F / ‖X_{ℓ+1}‖_F over the windows ``tokens`` (float64, no grad):
    the slow path's share of layer ℓ's output.  Invariant under (g, W_O^slow) → (−g, −W_O^slow)."""
    model = _float64_copy(model)
    with torch.no_grad():
        x = model.embed[tokens]
        shares = []
        for layer in model.stack.layers:
            contribution = layer.h * layer.gate * layer.slow(layer.ln1(x))
            x = layer(x)
            shares.append(float(contribution.norm() / x.norm()))
    return shares


def gate_norm_product(model: nn.Module) -> list[float]:
    """|g_ℓ|·‖W_O^slow‖₂ per layer, W_O^slow as the (heads·d_k, d) matrix (spectral norm)."""
    out = []
    for layer in model.stack.layers:
        W = layer.slow.attn.W_O.detach().double()
        out.append(float(abs(layer.gate.detach().double()) * torch.linalg.matrix_norm(W.reshape(-1, W.shape[-1]), 2)))
    return out


def gate_measures(model: nn.Module, validation: torch.Tensor) -> dict:
    """The gauge-invariant measures of a trained model on the validation windows."""
    return {"slow_share": slow_share(model, validation), "gate_norm_product": gate_norm_product(model)}


def flip_gauge(model: nn.Module, layer: int) -> nn.Module:
    """A copy of ``model`` with (g_ℓ, W_O^slow_ℓ) → (−g_ℓ, −W_O^slow_ℓ): the same function."""
    import copy

    flipped = copy.deepcopy(model)
    target = flipped.stack.layers[layer]
    with torch.no_grad():
        target.gate.neg_()
        target.slow.attn.W_O.neg_()
    return flipped


def _float64_copy(model: nn.Module) -> nn.Module:
    import copy

    return copy.deepcopy(model).double().eval()
