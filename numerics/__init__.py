"""Torch numerics: random untied stacks, kernels, reference trajectories and the claims' numerics."""

from numerics.stack import Stack, StackConfig, random_stack, resolve_device
from numerics.factorisation import mode_blocks

__all__ = ["Stack", "StackConfig", "mode_blocks", "random_stack", "resolve_device"]
