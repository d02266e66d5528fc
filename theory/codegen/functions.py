"""The SymPy -> torch function table: one entry per scalar SymPy function.

Keys are SymPy class names (``type(expr).__name__``); values are torch spellings
with ``{0}``, ``{1}`` standing for the printed arguments.  Every argument sits in
call position, so no argument needs extra parentheses; a spelling that is not a
single call is wrapped in parentheses so that it binds like one.  Every entry is
executed against mpmath at 50 digits in ``tests/test_codegen.py``.

Structural nodes (``Add``, ``Mul``, ``Pow``, ``Piecewise``, ``Max``/``Min``,
``Heaviside``, relations, matrix expressions) are printed by
:class:`theory.codegen.printer.TorchPrinter` itself, because their torch form
depends on which operands are tensors and which are Python constants.
"""

TORCH_FUNCTIONS: dict[str, str] = {
    # exponentials and logarithms (exp2/log2/log10/expm1/log1p/hypot: sympy.codegen.cfunctions)
    "exp": "torch.exp({0})",
    "exp2": "torch.exp2({0})",
    "expm1": "torch.expm1({0})",
    "log": "torch.log({0})",
    "log2": "torch.log2({0})",
    "log10": "torch.log10({0})",
    "log1p": "torch.log1p({0})",
    "Sqrt": "torch.sqrt({0})",
    "hypot": "torch.hypot({0}, {1})",
    # trigonometric
    "sin": "torch.sin({0})",
    "cos": "torch.cos({0})",
    "tan": "torch.tan({0})",
    "sec": "(1/torch.cos({0}))",
    "csc": "(1/torch.sin({0}))",
    "cot": "(1/torch.tan({0}))",
    "asin": "torch.asin({0})",
    "acos": "torch.acos({0})",
    "atan": "torch.atan({0})",
    "atan2": "torch.atan2({0}, {1})",
    # hyperbolic
    "sinh": "torch.sinh({0})",
    "cosh": "torch.cosh({0})",
    "tanh": "torch.tanh({0})",
    "sech": "(1/torch.cosh({0}))",
    "csch": "(1/torch.sinh({0}))",
    "coth": "(1/torch.tanh({0}))",
    "asinh": "torch.asinh({0})",
    "acosh": "torch.acosh({0})",
    "atanh": "torch.atanh({0})",
    # special functions
    "erf": "torch.erf({0})",
    "erfc": "torch.special.erfc({0})",
    "erfinv": "torch.erfinv({0})",
    "loggamma": "torch.lgamma({0})",
    # piecewise-constant and sign
    "Abs": "torch.abs({0})",
    "sign": "torch.sign({0})",
    "floor": "torch.floor({0})",
    "ceiling": "torch.ceil({0})",
}
