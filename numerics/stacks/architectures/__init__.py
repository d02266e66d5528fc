"""Architecture variants of the stack, built from the base modules of numerics/stacks/stack.py.

Every variant is an :class:`ArchStack`: a *state* S of shape (..., T, F) (tokens are rows),
an ``embed`` X -> S, a list of ``n_steps`` step maps S -> S, and a ``readout`` S -> X, so that
``stack(X)`` maps (..., T, d) -> (..., T, d) like the base :class:`~numerics.stacks.stack.Stack`.
Features F per token:

* ``preln``  (F = d): the base stack, wrapped (``numerics.stacks.spec.build`` of a preln spec returns
  the plain :class:`Stack`; ``StackSpec.build_arch`` wraps it for the generic claims code).
* ``postln`` (F = d): LN after the residual add, U = LN₁((1−hα)X + h·Attn(X)),
  X' = LN₂(U + h·MLP(U)); attention sees the raw state (no pre-norm).
* ``relu``   (F = d): the pre-LN stack with MLP(z) = ReLU(zW₁ + b₁)W₂ + b₂.  Non-smooth: the
  stack is differentiable off the *kink set* {X : some pre-activation (LN₂(U)W₁ + b₁)_tj = 0},
  a finite union of hypersurfaces (Lebesgue-null), so its linearisation exists almost
  everywhere and is then the preln one with GELU' replaced by the step function 1[z > 0].
* ``looped`` (F = d, or 2d with injection): one layer, weights tied across depth, applied
  ``loops`` times (default ``layers``) with step h = 1/layers.  Optional Parcae-style diagonal
  decay injection (``injection=True``): x ← exp(−Δa) ⊙ x + Δ·eB + (layer(x) − x), a > 0, Δ > 0,
  e the input embedding, carried in the state as S = [x | e] so that every step is a map of
  the state alone.  The linear part exp(−Δa) has spectral radius exp(−Δ·min a) < 1.
* ``hrm``    (F = 2d): two modules, fast L and slow H (Hierarchical Reasoning Model); state
  [z_L | z_H], embed z_L = 0, z_H = X; each of the ``layers`` cycles runs k L-steps
  z_L ← z_L + (L(z_L + z_H) − (z_L + z_H)) with step 1/(layers·k), then one H-step
  z_H ← z_H + (H(z_H + z_L) − (z_H + z_L)) with step 1/layers; readout z_H.
* ``mhc``    (F = n·d): n residual streams (manifold-constrained hyper-connections).  Layer ℓ
  reads y = Σ_i α_i S_i, and writes S'_i = Σ_j H_ij S_j + β_i (layer(y) − y), with
  α = sigmoid(a_ℓ), β = 2·sigmoid(b_ℓ) and H = Sinkhorn(exp(M_ℓ)) after a fixed number of
  iterations (doubly stochastic up to the Sinkhorn tolerance), or ``mixing="unconstrained"``
  H = I + M_ℓ/√n (hyper-connections without the manifold constraint).  Embed: every stream
  is X; readout: the stream mean.
* ``compressed`` (F = d): causal attention plus attention over block-compressed keys/values
  (MiniMax / DeepSeek-V4 style): each token t queries the block means of LN₁(X) of the
  blocks that are complete at t ((b+1)P − 1 ≤ t); tokens before the first complete block
  receive zero.  Scaled by ``compress_gate`` (default 1) and added to the fast update.

Each variant is one :class:`ArchStack` subclass (``numerics/stacks/architectures/<module>.py``): its
name, its options and their checks, and how it draws its base stack; defining the subclass
registers it in ``ARCHITECTURES`` and with ``numerics.stacks.spec.build``.

Weights come from the base stack's distributions and seed (``numerics.stacks.stack._draw``); the extra parameters of a
variant (the mixing logits, the injection, the compressed branch) come from a second
generator seeded with ``seed + EXTRA_SEED_OFFSET``, i.i.d. per layer or on the smooth path.
"""

from __future__ import annotations

from numerics.stacks.architectures.base import ARCHITECTURES, EXTRA_SEED_OFFSET, ArchStack, build, check_arch, resolve_options
from numerics.stacks.architectures.preln import PostLN, PreLN, ReLU, ReluMLP, relu_mlp_forward, wrap
from numerics.stacks.architectures.recurrent import HRM, Looped
from numerics.stacks.architectures.mhc import MHC, MIXINGS, hilbert_diameter, sinkhorn, sinkhorn_tolerance
from numerics.stacks.architectures.compressed import Compressed, CompressedAttention

#: the architectures defined in this package, in the order the grid shows them
ARCHS = tuple(ARCHITECTURES)
#: arch -> {option: default}; ``StackSpec(arch=NAME, arch_options={...})``.
ARCH_OPTIONS = {name: dict(cls.OPTIONS) for name, cls in ARCHITECTURES.items()}

__all__ = ["ARCHITECTURES", "ARCHS", "ARCH_OPTIONS", "EXTRA_SEED_OFFSET", "MIXINGS", "ArchStack", "Compressed",
           "CompressedAttention", "HRM", "Looped", "MHC", "PostLN", "PreLN", "ReLU", "ReluMLP", "build", "check_arch",
           "hilbert_diameter", "relu_mlp_forward", "resolve_options", "sinkhorn", "sinkhorn_tolerance", "wrap"]
