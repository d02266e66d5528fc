"""The log–log fit every convergence and scaling claim reads its exponent from.

A power law y = c xᵖ is the straight line ln y = ln c + p ln x.  :func:`loglog_fit` fits that line by
ordinary least squares in float64 (the closed form of simple linear regression, on centred ln x) and
returns the slope p, the intercept ln c and the largest residual in ln y (zero for an exact power law:
how far the data are from one straight line).  With two points it is the endpoint slope
ln(y₂/y₁)/ln(x₂/x₁).  A decay y ∝ x⁻ᵖ has slope −p.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

F64 = torch.float64


class LogLogFit(NamedTuple):
    """Least-squares line ln y = intercept + slope · ln x, and max |ln y − line| over the points."""
    slope: float
    intercept: float
    max_residual: float


def loglog_fit(xs, ys) -> LogLogFit:
    """Fit ln y = a + p ln x by least squares: p = Σ (ln xᵢ − m_x)(ln yᵢ − m_y) / Σ (ln xᵢ − m_x)², a = m_y − p m_x.

    ``xs`` and ``ys``: equal-length sequences (or tensors/arrays) of at least two positive, finite numbers, with
    at least two distinct x.  Anything else raises ``ValueError`` naming what is wrong (a logarithm of zero or a
    negative number has no slope)."""
    x = torch.as_tensor([float(v) for v in xs], dtype=F64, device="cpu")  # a fit of Python floats: CPU by design
    y = torch.as_tensor([float(v) for v in ys], dtype=F64, device="cpu")  # (the inputs were turned into floats)
    if x.numel() != y.numel() or x.numel() < 2:
        raise ValueError(f"loglog_fit needs at least two (x, y) pairs of equal length, got {x.numel()} x "
                         f"and {y.numel()} y")
    for name, v in (("x", x), ("y", y)):
        if not bool(torch.isfinite(v).all()) or bool((v <= 0).any()):
            raise ValueError(f"loglog_fit needs positive finite {name}, got {v.tolist()}")
    lx, ly = torch.log(x), torch.log(y)
    xc = lx - lx.mean()
    if not bool((xc != 0).any()):
        raise ValueError(f"loglog_fit needs at least two distinct x, got {x.tolist()}")
    slope = (xc * (ly - ly.mean())).sum() / (xc * xc).sum()
    intercept = ly.mean() - slope * lx.mean()
    residual = (ly - intercept - slope * lx).abs().max()
    return LogLogFit(float(slope), float(intercept), float(residual))


__all__ = ["LogLogFit", "loglog_fit"]
