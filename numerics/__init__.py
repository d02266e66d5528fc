"""Torch numerics: random untied stacks, kernels, reference trajectories and the claims' numerics."""

from numerics.stack import Stack, StackConfig, random_stack, resolve_device

__all__ = ["Stack", "StackConfig", "random_stack", "resolve_device"]
