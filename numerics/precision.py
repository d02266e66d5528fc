"""The floating-point constants every tolerance is built from, stated once.

* ``EPS64`` = 2⁻⁵², the float64 machine epsilon (the gap from 1 to the next float64);
  ``U64`` = 2⁻⁵³ = EPS64/2, the float64 unit roundoff u: a correctly rounded operation has
  relative error ≤ u, so n operations in sequence stay within n·u to first order.
* ``unit_roundoff(dtype)``: u for the two dtypes a stack runs in (float64, float32 = 2⁻²⁴).
* ``SLOPE_TOL`` = 0.1: the half-width a fitted log–log slope may differ from its predicted order
  (docs/theory.md §1, §2, §4: slope k ± 0.1); ``SLOPE_TOL_STIFF`` = 0.15 for the stiff
  Radau fits of §6 (slope k+1 ± 0.15), whose fit range reaches the ε where the next order enters.
"""

from __future__ import annotations

import torch

EPS64 = 2.0**-52
U64 = 2.0**-53
UNIT_ROUNDOFF = {torch.float64: U64, torch.float32: 2.0**-24}

SLOPE_TOL = 0.1
SLOPE_TOL_STIFF = 0.15


def unit_roundoff(dtype: torch.dtype) -> float:
    """u of ``dtype``; a dtype without a stated u is a ValueError naming it."""
    if dtype not in UNIT_ROUNDOFF:
        raise ValueError(f"dtype={dtype} has no stated unit roundoff (float64 or float32)")
    return UNIT_ROUNDOFF[dtype]
