"""Recurrent-depth variants: ``looped`` (one tied layer, optional Parcae injection) and ``hrm``
(fast and slow modules); see ``numerics.stacks.architectures``."""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import nn

from numerics.stacks import stack as S
from numerics.stacks.architectures.base import ArchStack, base_spec


class Looped(ArchStack):
    """One tied layer applied ``loops`` times; optional Parcae diagonal decay injection (state [x | e])."""

    arch = "looped"
    OPTIONS = {"loops": None, "injection": False, "injection_delta": 0.5, "injection_rate": 1.0}

    @classmethod
    def check_options(cls, options):
        if options["loops"] is not None:
            S._positive_int(options["loops"], "loops")
        for name in ("injection_delta", "injection_rate"):
            S._finite(options[name], name)
            if options[name] <= 0:
                raise ValueError(f"{name}={options[name]} must be > 0 (Parcae: A, Δ > 0)")

    @classmethod
    def base_stack(cls, spec):
        """One layer, stepped h = 1/layers."""
        base = S._draw(base_spec(spec, layers=1))
        base.layers[0].h = 1.0 / spec.layers
        return base, replace(base.config, layers=spec.layers, arch=cls.arch)

    def __init__(self, config, options, base, gen, dtype, device):
        super().__init__(config, options, base, gen, dtype, device)
        self.loops = options["loops"] or config.layers
        self.injection = bool(options["injection"])
        d = config.d
        rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=torch.float64, device="cpu")  # noqa: E731
        # a > 0: rate·(1 + U(0,1)); Δ > 0; B ~ N(0, 1/d) — Parcae's A = −exp(·) < 0 written as −a.
        a = options["injection_rate"] * (1.0 + torch.rand(d, generator=gen, dtype=torch.float64, device="cpu"))  # seeded on the host (a CPU generator), moved with .to(device) below
        self.inj_a = nn.Parameter(a.to(dtype=dtype, device=device))
        self.inj_delta = nn.Parameter(torch.tensor(float(options["injection_delta"]), dtype=dtype, device=device))
        self.inj_B = nn.Parameter((rand(d, d) / math.sqrt(d)).to(dtype=dtype, device=device))

    @property
    def layer(self):
        return self.base.layers[0]

    @property
    def features(self):
        return 2 * self.config.d if self.injection else self.config.d

    @property
    def n_steps(self):
        return self.loops

    def decay_factors(self) -> torch.Tensor:
        """exp(−Δa), the diagonal of the injection's linear part (spectral radius exp(−Δ min a))."""
        return torch.exp(-self.inj_delta * self.inj_a)

    def embed(self, x):
        return torch.cat([x, x], dim=-1) if self.injection else x

    def readout(self, s):
        return s[..., : self.config.d] if self.injection else s

    def _inject(self, x, e, stepped):
        return self.decay_factors() * x + self.inj_delta * e @ self.inj_B + (stepped - x)

    def step(self, i, s):
        if not self.injection:
            return self.layer(s)
        d = self.config.d
        x, e = s[..., :d], s[..., d:]
        return torch.cat([self._inject(x, e, self.layer(x)), e], dim=-1)

    def token_step(self, i, sbar):
        if not self.injection:
            return self.layer.token_map(sbar)
        d = self.config.d
        x, e = sbar[..., :d], sbar[..., d:]
        return torch.cat([self._inject(x, e, self.layer.token_map(x)), e], dim=-1)

    def with_loops(self, loops: int) -> "Looped":
        """The same tied weights, run for ``loops`` steps (depth at test time)."""
        S._positive_int(loops, "loops")
        self.loops = loops
        return self


class HRM(ArchStack):
    """Fast module L (k steps per cycle, step 1/(layers·k)) and slow module H (one step per cycle)."""

    arch = "hrm"
    OPTIONS = {"k": 2}

    @classmethod
    def check_options(cls, options):
        S._positive_int(options["k"], "k")

    @classmethod
    def base_stack(cls, spec):
        """Two layers (L, H), run for ``layers`` cycles."""
        base = S._draw(base_spec(spec, layers=2))
        return base, replace(base.config, layers=spec.layers, arch=cls.arch)

    def __init__(self, config, options, base, gen, dtype, device):
        super().__init__(config, options, base, gen, dtype, device)
        self.k = options["k"]
        base.layers[0].h = 1.0 / (config.layers * self.k)  # L
        base.layers[1].h = 1.0 / config.layers  # H

    @property
    def features(self):
        return 2 * self.config.d

    @property
    def n_steps(self):
        return self.config.layers * (self.k + 1)

    def is_fast_step(self, i: int) -> bool:
        return i % (self.k + 1) < self.k

    def embed(self, x):
        return torch.cat([torch.zeros_like(x), x], dim=-1)

    def readout(self, s):
        return s[..., self.config.d:]

    def _substep(self, i, s, apply):
        d = self.config.d
        zl, zh = s[..., :d], s[..., d:]
        y = zl + zh
        if self.is_fast_step(i):
            return torch.cat([zl + apply(self.base.layers[0], y) - y, zh], dim=-1)
        return torch.cat([zl, zh + apply(self.base.layers[1], y) - y], dim=-1)

    def step(self, i, s):
        return self._substep(i, s, lambda layer, y: layer(y))

    def token_step(self, i, sbar):
        return self._substep(i, sbar, lambda layer, y: layer.token_map(y))
