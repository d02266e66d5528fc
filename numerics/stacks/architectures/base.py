"""The abstract variant ``ArchStack``, the table ``ARCHITECTURES`` of its subclasses and ``build``."""

from __future__ import annotations

import abc
import math
from dataclasses import replace
from typing import ClassVar

import torch
from torch import nn

from numerics.stacks import stack as S
EXTRA_SEED_OFFSET = 1_000_003

#: arch name -> its ArchStack subclass, in definition order (filled as each subclass is defined)
ARCHITECTURES: dict[str, type] = {}


def base_spec(spec, **changes):
    """The pre-LN spec a variant draws its base stack from: ``spec`` with ``changes``, no options."""
    return replace(spec, arch="preln", arch_options=(), **changes)


def check_arch(arch: str) -> str:
    if arch not in ARCHITECTURES:
        raise ValueError(f"arch={arch!r} is not one of {', '.join(ARCHITECTURES)}")
    return arch


def resolve_options(arch: str, options: dict | None) -> dict:
    """Defaults of ``arch`` updated by ``options``; an unknown or bad option is a ValueError."""
    cls = ARCHITECTURES[check_arch(arch)]
    options = dict(options or {})
    unknown = sorted(set(options) - set(cls.OPTIONS))
    if unknown:
        known = ", ".join(cls.OPTIONS) or "none"
        raise ValueError(f"arch_options {unknown} are not options of arch={arch!r} (known: {known})")
    out = {**cls.OPTIONS, **options}
    cls.check_options(out)
    return out


class ArchStack(nn.Module, metaclass=abc.ABCMeta):
    """A variant: state (..., T, F), ``embed``, ``n_steps`` maps ``step(i, S)``, ``readout``.

    A subclass is one row of the table ``ARCHITECTURES``: it names itself (``arch``), owns its
    options (``OPTIONS``: name -> default, checked by ``check_options``) and how it is drawn from
    a spec (``base_stack``: the base stack it wraps and its config); defining it registers it, so
    that ``numerics.stacks.spec.build`` of a spec with its ``arch`` draws it.
    """

    arch: ClassVar[str]
    OPTIONS: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "arch" in cls.__dict__:
            ARCHITECTURES[cls.arch] = cls
            if cls.arch != "preln":
                S.register_variant(cls.arch, build)

    def __init__(self, config: S.StackConfig, options: dict, base: S.Stack, gen: torch.Generator, dtype, device):
        """``gen`` draws the variant's own parameters (seeded ``config.seed + EXTRA_SEED_OFFSET``)."""
        super().__init__()
        self.config = config
        self.options = options
        self.base = base

    # -- the row of the table -----------------------------------------------------
    @classmethod
    def check_options(cls, options: dict) -> None:
        """Raise ValueError naming a bad option value (``options`` holds every option)."""

    @classmethod
    def base_stack(cls, spec) -> tuple[S.Stack, S.StackConfig]:
        """The base stack ``spec`` draws (its pre-LN stack), and the variant's config."""
        base = S._draw(base_spec(spec))
        return base, replace(base.config, arch=cls.arch)


    # -- interface --------------------------------------------------------------
    @property
    def h(self) -> float:
        return self.config.h

    @property
    def features(self) -> int:
        return self.config.d

    @property
    def n_steps(self) -> int:
        return len(self.base.layers)

    def embed(self, x):
        return x

    def readout(self, s):
        return s

    @abc.abstractmethod
    def step(self, i: int, s):
        """Step map i of the state (..., T, F)."""

    @abc.abstractmethod
    def token_step(self, i: int, sbar):
        """``step`` on a token-homogeneous state 1s̄ᵀ, computed on s̄ (..., F) alone."""

    def attention_degree(self) -> int:
        """How many times the token kernel is applied: the degree of G(λ) in λ (Claim 2.3)."""
        return self.n_steps

    # -- derived ----------------------------------------------------------------
    def forward(self, x):
        self._check_input(x)
        s = self.embed(x)
        for i in range(self.n_steps):
            s = self.step(i, s)
        return self.readout(s)

    def trajectory(self, x):
        """States S_0 .. S_n, shape (n_steps+1, ..., T, F)."""
        self._check_input(x)
        states = [self.embed(x)]
        for i in range(self.n_steps):
            states.append(self.step(i, states[-1]))
        return torch.stack(states)

    def reference_trajectory(self, xbar):
        """Token-homogeneous reference s̄_0 .. s̄_n, shape (..., n_steps+1, F), computed on s̄ only."""
        self._check_reference()
        if xbar.shape[-1] != self.config.d:
            raise ValueError(f"xbar has last dimension {xbar.shape[-1]}, expected d={self.config.d}")
        states = [self.embed(xbar.unsqueeze(-2)).squeeze(-2)]
        for i in range(self.n_steps):
            states.append(self.token_step(i, states[-1]))
        return torch.stack(states, dim=-2)

    def frozen_kernels(self):
        return self.base.frozen_kernels()

    def frozen_kernel(self):
        """The common token kernel A (T, T) at a token-homogeneous state."""
        return self.base.frozen_kernel()

    def _check_reference(self):
        if any(layer.slow is not None and float(layer.gate.detach()) != 0.0 for layer in self.base.layers):
            raise ValueError(f"arch={self.arch!r}: reference_trajectory needs gate=0 (the slow path's "
                             "one-block shift breaks token homogeneity)")

    def _check_input(self, x):
        S.check_input(x, self.config.T, self.config.d, finite=self.base.check_inputs)


def _depth_draws(shape, layers, cfg, gen) -> torch.Tensor:
    """(layers, *shape) standard normal draws: i.i.d. per layer, or on the smooth cosine path."""
    if cfg.weight_path == "smooth":
        modes = [torch.randn(*shape, generator=gen, dtype=torch.float64, device="cpu") / (1 + k) ** 2  # seeded on the host (a CPU generator)
                 for k in range(S.PATH_MODES)]
        return torch.stack([sum(math.cos(math.pi * k * ell * cfg.h) * modes[k] for k in range(S.PATH_MODES))
                            for ell in range(layers)])
    return torch.randn(layers, *shape, generator=gen, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)


def _attention_shapes(cfg):
    d, dk, heads, s = cfg.d, cfg.d_k, cfg.heads, cfg.weight_scale
    return [("W_Q", (heads, d, dk), s / math.sqrt(d)), ("W_K", (heads, d, dk), s / math.sqrt(d)),
            ("W_V", (heads, d, dk), s / math.sqrt(d)), ("W_O", (heads, dk, d), s / math.sqrt(dk * heads))]


def build(spec) -> ArchStack:
    """Draw the variant (an :class:`ArchStack`) a ``numerics.stacks.spec.StackSpec`` names.

    ``arch="preln"`` wraps the plain stack.  ``compressed`` uses ``P`` as its compression
    block (no hierarchical slow path); ``hrm`` draws two layers (L, H) and runs ``layers``
    cycles; ``looped`` draws one layer.  Reached through ``numerics.stacks.spec.build``.
    """
    options = resolve_options(spec.arch, dict(spec.arch_options))
    cls = ARCHITECTURES[spec.arch]
    device = S.resolve_device(spec.device)
    base, config = cls.base_stack(spec)
    gen = torch.Generator().manual_seed(config.seed + EXTRA_SEED_OFFSET)
    return cls(config, options, base, gen, S.DTYPES[spec.dtype], device)
