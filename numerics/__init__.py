"""Torch numerics: random untied stacks, kernels, reference trajectories and the claims' numerics."""

from numerics.stacks.stack import Stack, StackConfig, resolve_device
from numerics.families.factorisation import mode_blocks
from numerics.stacks import architectures  # noqa: F401  (registers the variants with build)
from numerics.stacks.spec import StackSpec, build

__all__ = ["Stack", "StackConfig", "StackSpec", "build", "mode_blocks", "resolve_device"]
