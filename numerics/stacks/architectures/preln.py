"""The pre-LN family: ``preln`` (the base stack, wrapped), ``postln`` (LN after the residual add),
``relu`` (a ReLU MLP, differentiable off the kink set); see ``numerics.stacks.architectures``."""

from __future__ import annotations

import math

import torch

from numerics.stacks import stack as S
from numerics.stacks.architectures.base import ArchStack


def relu_mlp_forward(mlp: S.MLP, z: torch.Tensor) -> torch.Tensor:
    return torch.relu(z @ mlp.W1 + mlp.b1) @ mlp.W2 + mlp.b2


class ReluMLP(S.MLP):
    """MLP(z) = ReLU(zW₁ + b₁)W₂ + b₂ (same parameters and names as ``stack.MLP``)."""

    def forward(self, z):
        return relu_mlp_forward(self, z)


class PreLN(ArchStack):
    arch = "preln"
    CAPABILITIES = frozenset({"paper_stack"})

    def step(self, i, s):
        return self.base.layers[i](s)

    def token_step(self, i, sbar):
        return self.base.layers[i].token_map(sbar)


class PostLN(ArchStack):
    """Post-LN: U = LN₁((1−hα)X + h·(Attn(X) + g·Slow(X))), X' = LN₂(U + h·MLP(U))."""

    arch = "postln"
    CAPABILITIES = frozenset({"post_norm", "mode_block_formula"})
    MODE_BLOCK_FORMULA = "theory.architectures.postln_mode_block"

    def step(self, i, s):
        layer = self.base.layers[i]
        update = layer.attn(s)
        if layer.slow is not None:
            update = update + layer.gate * layer.slow(s)
        u = layer.ln1((1.0 - layer.h * layer.decay) * s + layer.h * update)
        return layer.ln2(u + layer.h * layer.mlp(u))

    def token_step(self, i, sbar):
        layer = self.base.layers[i]
        u = layer.ln1((1.0 - layer.h * layer.decay) * sbar + layer.h * sbar @ layer.attn.value_output())
        return layer.ln2(u + layer.h * layer.mlp(u))


class ReLU(PreLN):
    """Pre-LN with a ReLU MLP; differentiable off the kink set (see the module docstring)."""

    arch = "relu"
    CAPABILITIES = frozenset({"kink_set"})

    def __init__(self, config, options, base, gen, dtype, device):
        super().__init__(config, options, base, gen, dtype, device)
        for layer in base.layers:
            relu = ReluMLP(config.d, config.mlp_ratio * config.d).to(layer.mlp.W1)
            relu.load_state_dict(layer.mlp.state_dict())
            layer.mlp = relu

    def kink_distance(self, x) -> torch.Tensor:
        """min |pre-activation| over the whole forward pass: the distance (in pre-activation) to the kink set."""
        self._check_input(x)
        best = torch.tensor(math.inf, dtype=x.dtype, device=x.device)
        for layer in self.base.layers:
            u = (1.0 - layer.h * layer.decay) * x + layer.h * layer.mixing(x)
            pre = layer.ln2(u) @ layer.mlp.W1 + layer.mlp.b1
            best = torch.minimum(best, pre.abs().min())
            x = layer(x)
        return best


def wrap(stack: S.Stack) -> PreLN:
    """The plain pre-LN stack as an :class:`ArchStack` (state = tokens, one step per layer)."""
    return PreLN(stack.config, {}, stack, None, None, None)
