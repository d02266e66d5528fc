"""Claims 3.1 and 3.2 (docs/theory.md §3): what their checks share — the grid's stacks with the compressed
branch closed, and the reasons a preln stack has no token-homogeneous mode decomposition.
"""

from __future__ import annotations

import torch

from numerics.precision import EPS64 as EPS
from numerics.stacks.spec import StackSpec
from proofs_check.verdicts.on_stack import matrix_spec as base_matrix_spec

F64 = torch.float64
TAU = 0.5
RESOLVED = 1e-3   # a predicted residual whose rounding bound exceeds this is not a prediction
FLOAT64_ONLY = "the rounding tolerances are derived for float64 (ε = 2⁻⁵²); other dtypes have none yet"


def matrix_spec(arch: str, ctx, *, compress_gate: float | None = 0.0, **fields) -> StackSpec:
    """``on_stack.matrix_spec`` with the compressed branch closed (compress_gate = 0) by default."""
    return base_matrix_spec(arch, ctx, compress_gate=compress_gate, **fields)


def unique_specs(specs):
    out = []
    for s in specs:
        if s not in out:
            out.append(s)
    return out


def preln_na(spec) -> str | None:
    """Why a preln spec has no token-homogeneous mode decomposition (or no derived tolerance), or None."""
    if spec.dtype != "float64":
        return FLOAT64_ONLY
    if spec.knob("gate", 0.0) != 0.0:
        return "gate ≠ 0: the trajectory from 1x̄ᵀ is not token-homogeneous, there are no mode blocks"
    if spec.kernel == "alibi":
        return "alibi gives each head its own frozen kernel: no single eigenbasis for the mode blocks"
    if spec.T < 2:
        return "T = 1: the frozen kernel has no decaying mode"
    return None
