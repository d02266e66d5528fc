"""SymPy -> torch code generation for `fastslow derive`.

A theory module lists its formulas as :class:`GenFunction` objects;
:func:`render_module` turns them into a readable, batched torch module
(``numerics/generated/<family>.py``) and :func:`to_sympy` maps a generated
function back to the SymPy expression it came from.

Modules: ``functions`` (the SymPy -> torch function table), ``printer``
(:class:`TorchPrinter`), ``render`` (functions and modules), ``errors``.
"""

from .errors import CodegenError
from .functions import TORCH_FUNCTIONS
from .printer import TorchPrinter
from .render import (
    CODEGEN_VERSION,
    GenFunction,
    parse_header,
    render_function,
    render_module,
    to_sympy,
)

__all__ = [
    "CODEGEN_VERSION",
    "CodegenError",
    "GenFunction",
    "TORCH_FUNCTIONS",
    "TorchPrinter",
    "parse_header",
    "render_function",
    "render_module",
    "to_sympy",
]
