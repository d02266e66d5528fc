"""``compressed``: causal attention plus attention over block-compressed keys and values;
see ``numerics.stacks.architectures``."""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import nn

from numerics.stacks import kernels as K
from numerics.stacks import stack as S
from numerics.stacks.architectures.base import _attention_shapes, _depth_draws, base_spec
from numerics.stacks.architectures.preln import PreLN


class CompressedAttention(nn.Module):
    """Token queries against block-mean (compressed) keys/values of complete blocks only.

    Token t may see block b when (b+1)P − 1 ≤ t; a token that sees no block gets zero.
    The weights live in an ``stack.Attention`` (same names and shapes).
    """

    def __init__(self, d: int, heads: int, T: int, P: int):
        super().__init__()
        self.P = P
        self.attn = S.Attention(d, heads, torch.zeros(heads, 1, 1, device="cpu"))  # built with the module; .to(device) moves it
        t = torch.arange(T, device="cpu")[:, None]  # a host mask registered as a buffer: .to(device) moves it
        b = torch.arange(T // P, device="cpu")[None, :]  # with t: the buffer's host mask
        self.register_buffer("visible", (b + 1) * P - 1 <= t)  # (T, n)

    def kernel_mask(self):
        return self.visible

    def forward(self, z):
        *batch, T, d = z.shape
        pooled = z.reshape(*batch, T // self.P, self.P, d).mean(-2)
        a = self.attn
        q = torch.einsum("...td,hdk->...htk", z, a.W_Q)
        k = torch.einsum("...nd,hdk->...hnk", pooled, a.W_K)
        v = torch.einsum("...nd,hdk->...hnk", pooled, a.W_V)
        scores = q @ k.transpose(-1, -2) / math.sqrt(a.W_Q.shape[-1])
        any_visible = self.visible.any(-1, keepdim=True)  # (T, 1)
        # rows with no visible block get a finite dummy score and are zeroed after the softmax
        scores = scores.masked_fill(~self.visible, -math.inf).masked_fill(~any_visible, 0.0)
        weights = torch.softmax(scores, dim=-1) * any_visible
        return torch.einsum("...htk,hkd->...td", weights @ v, a.W_O)

    def frozen_kernel(self) -> torch.Tensor:
        """(T, n): uniform over visible blocks at a homogeneous state; zero rows before block 0 completes."""
        m = self.visible.to(torch.float64)
        return m / m.sum(-1, keepdim=True).clamp_min(1.0)


class Compressed(PreLN):
    """Pre-LN layers whose attention update is Attn(z) + g_c · CompressedAttn(z), z = LN₁(X)."""

    arch = "compressed"
    CAPABILITIES = frozenset({"compressed_branch"})
    OPTIONS = {"compress_gate": 1.0}

    @classmethod
    def check_options(cls, options):
        S._finite(options["compress_gate"], "compress_gate")

    @classmethod
    def base_stack(cls, spec):
        """A plain (P unset) stack; ``P`` is the compression block, not a hierarchical slow path."""
        if spec.P is None:
            raise ValueError("arch='compressed' needs P (the compression block length)")
        if spec.knob("gate", 0.0) != 0.0:
            raise ValueError("arch='compressed' has no hierarchical slow path: use "
                             "arch_options={'compress_gate': g} instead of gate")
        K.check_divisible(spec.T, spec.P, "P")
        base = S._draw(base_spec(spec, P=None))
        return base, replace(base.config, P=spec.P, arch=cls.arch)

    def __init__(self, config, options, base, gen, dtype, device):
        super().__init__(config, options, base, gen, dtype, device)
        self.compress_gate = float(options["compress_gate"])
        self.compress = nn.ModuleList(CompressedAttention(config.d, config.heads, config.T, config.P)
                                      for _ in base.layers)
        draws = {name: _depth_draws(shape, config.layers, config, gen) * scale
                 for name, shape, scale in _attention_shapes(config)}
        with torch.no_grad():
            for ell, branch in enumerate(self.compress):
                for name, value in draws.items():
                    getattr(branch.attn, name).copy_(value[ell])
        self.compress.to(dtype=dtype, device=device)

    def step(self, i, s):
        layer = self.base.layers[i]
        z = layer.ln1(s)
        u = (1.0 - layer.h * layer.decay) * s + layer.h * (layer.attn(z) + self.compress_gate * self.compress[i](z))
        return u + layer.h * layer.mlp(layer.ln2(u))

    def attention_degree(self):
        return self.n_steps

    def _check_reference(self):
        if self.compress_gate != 0.0:
            raise ValueError("arch='compressed' with compress_gate≠0 has no token-homogeneous reference: "
                             "tokens before the first complete block see no compressed keys, so the "
                             "compressed kernel's rows do not all sum to 1 (A_c Π 1 ≠ 1)")
