"""Torch numerics: random untied stacks, kernels, reference trajectories and the claims' numerics."""

from numerics.stack import Stack, StackConfig, random_stack, resolve_device
from numerics.factorisation import mode_blocks
from numerics import architectures  # noqa: F401  (registers the variants with random_stack)
from numerics.spec import StackSpec

__all__ = ["Stack", "StackConfig", "StackSpec", "mode_blocks", "random_stack", "resolve_device"]
