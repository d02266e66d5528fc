"""The versions and device a ledger was computed with (recorded in every ledger)."""

from __future__ import annotations

import platform
import sys


def environment(device: str) -> dict:
    import mpmath
    import numpy
    import scipy
    import sympy
    import torch

    return {"python": sys.version.split()[0], "platform": platform.platform(), "device": device,
            "torch": torch.__version__, "sympy": sympy.__version__, "numpy": numpy.__version__,
            "scipy": scipy.__version__, "mpmath": mpmath.__version__,
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
