"""Print one SymPy expression as batched, dtype/device-preserving torch code.

Value model of the printed code (every node has one of three kinds):

* *constant*: no argument in it (numbers, and symbolic dimensions, which are
  Python ints read from argument shapes).  Printed as a Python expression
  (``2``, ``1/3``, ``math.sqrt(2)``, ``math.sqrt(d)``); Python scalars never change a
  tensor's dtype.  Where torch insists on a tensor, the printer asks for a
  0-dim tensor constant (``_c0``) created once in the function prologue with
  the dtype/device of the reference argument.
* *scalar*: a tensor of shape ``(...)`` (batch dims only).
* *matrix*: a tensor of shape ``(..., m, n)``.  A scalar meeting a matrix
  (``lam*B``, an elementwise function with a scalar parameter) is unsqueezed at
  that point: ``lam[..., None, None] * B``.
"""

from __future__ import annotations

import sympy
from sympy import S
from sympy.matrices.expressions import (
    DiagMatrix,
    DiagonalMatrix,
    DiagonalOf,
    Identity,
    Inverse,
    KroneckerProduct,
    MatPow,
    MatrixSymbol,
    OneMatrix,
    Transpose,
    ZeroMatrix,
)
from sympy.printing.precedence import PRECEDENCE, precedence
from sympy.printing.pycode import PythonCodePrinter
from sympy.printing.pytorch import TorchPrinter as SymPyTorchPrinter

from .errors import CodegenError
from .functions import TORCH_FUNCTIONS
from .layout import is_group
from .matrix_printing import MatrixPrinting

#: Matrix nodes whose printed form is a name, call or subscript: never parenthesized.
_ATOMIC_MATRICES = (
    MatrixSymbol, Identity, ZeroMatrix, OneMatrix, Inverse, MatPow, Transpose,
    DiagMatrix, DiagonalOf, DiagonalMatrix, KroneckerProduct, sympy.MatrixBase,
)

_RELATIONS = frozenset({"==", "!=", "<", "<=", ">", ">="})


def is_constant(expr, dims=()) -> bool:
    """True for a scalar that contains no tensor argument (numbers, dimensions)."""
    if not isinstance(expr, sympy.Expr) or expr.is_Matrix:
        return False
    return expr.free_symbols <= set(dims)


class _MathPrinter(PythonCodePrinter):
    """Prints number-valued subexpressions with the ``math`` module."""

    def __init__(self):
        super().__init__({"strict": True, "fully_qualified_modules": True})


class TorchPrinter(MatrixPrinting, SymPyTorchPrinter):
    """Batched torch printer (subclass of SymPy 1.14's ``TorchPrinter``).

    Parameters
    ----------
    names:
        Python name of every ``Symbol``/``MatrixSymbol`` the expressions may
        contain (arguments and CSE temporaries).
    dims:
        Python name of every symbolic dimension (a local ``int`` read from an
        argument's shape by the caller's prologue).
    dtype_ref:
        Name of the argument whose dtype/device new tensors take.
    function:
        Name of the generated function, for error messages.

    Matrix expressions print by the rules of :class:`~theory.codegen.matrix_printing.MatrixPrinting`.

    After printing, ``used_dims`` holds the dimensions referenced and
    ``tensor_constants`` maps each literal that had to become a tensor to its
    local name; :func:`theory.codegen.render.render_function` emits both.
    """

    def __init__(self, names, dims=None, dtype_ref="x", function="<expr>", sizes=None):
        super().__init__({"strict": True})
        self._sizes = {dim: sympy.Integer(size) for dim, size in (sizes or {}).items()}
        self._names = dict(names)
        self._dims = dict(dims or {})
        self._dtype_ref = dtype_ref
        self._function = function
        self._broadcast_scalars = False
        self._elementwise_vars: set = set()
        self._constants: dict = {}
        self._math = _MathPrinter()
        self.used_dims: set = set()
        self.tensor_constants: dict[str, str] = {}

    # -- dispatch and helpers -------------------------------------------------
    def doprint(self, expr, assign_to=None):
        """The torch expression for ``expr`` (a single line, no assignment)."""
        if assign_to is not None:
            raise CodegenError("TorchPrinter.doprint does not assign")
        return self._print(sympy.sympify(expr))

    def _print(self, expr, **kwargs):
        if self._is_constant(expr):
            return self._print_constant(expr)
        if isinstance(expr, sympy.Function) and type(expr).__name__ in TORCH_FUNCTIONS:
            return self._print_Function(expr)  # the table wins over inherited printers
        return super()._print(expr, **kwargs)

    def _print_not_supported(self, expr):
        raise CodegenError(
            f"unsupported SymPy node {type(expr).__name__!r} in function {self._function!r}"
        )

    _print_Basic = _print_not_supported

    def _is_constant(self, expr) -> bool:
        if not isinstance(expr, sympy.Expr) or expr.is_Matrix:
            return False
        known = self._constants.get(expr)  # memo: free_symbols walks the whole subtree
        if known is None:
            known = self._constants[expr] = is_constant(expr, self._dims)
        return known

    def _print_constant(self, expr) -> str:
        """A Python expression for a constant: literal, ``math`` call or dimension."""
        if expr.free_symbols:  # arithmetic on dimensions (Python ints at run time)
            self.used_dims |= expr.free_symbols
            try:
                return self._math.doprint(expr)
            except Exception as err:
                raise CodegenError(
                    f"no Python spelling for {expr} in function {self._function!r}"
                ) from err
        if expr.is_Integer:
            return str(int(expr))
        if expr.is_Rational:
            p, q = int(expr.p), int(expr.q)
            if max(abs(p), q) < 2**53:  # exact operands: Python's division rounds correctly
                return f"{p}/{q}"
            return repr(float(expr))
        if expr.is_Float:
            return repr(float(expr))
        if expr.is_extended_real is False:
            raise CodegenError(f"complex constant {expr} in function {self._function!r}")
        try:
            return self._math.doprint(expr)
        except Exception:  # no math spelling (e.g. sech(2)): a correctly rounded literal
            return repr(float(expr.evalf(30)))

    def _tensor_constant(self, expr) -> str:
        """Name of a 0-dim tensor holding constant ``expr`` (created in the prologue)."""
        literal = self._print_constant(expr)
        if literal not in self.tensor_constants:
            self.tensor_constants[literal] = f"_c{len(self.tensor_constants)}"
        return self.tensor_constants[literal]

    def tensor_constant_lines(self) -> list[str]:
        """Prologue statements creating the tensor constants."""
        ref = self._dtype_ref
        return [
            f"{name} = torch.tensor({literal}, dtype={ref}.dtype, device={ref}.device)"
            for literal, name in self.tensor_constants.items()
        ]

    def _scalar_as_matrix(self, expr) -> str:
        """A scalar printed to broadcast against ``(..., m, n)`` matrices."""
        if self._is_constant(expr):
            return self.parenthesize(expr, PRECEDENCE["Mul"], strict=True)
        text = self._print(expr)
        if precedence(expr) < PRECEDENCE["Func"] and not is_group(text):
            text = f"({text})"
        return f"{text}[..., None, None]"

    def _broadcast(self, scalar_text: str) -> str:
        """A scalar tensor's text, unsqueezed inside an elementwise matrix function."""
        return f"{scalar_text}[..., None, None]" if self._broadcast_scalars else scalar_text

    def _operand(self, expr) -> str:
        """A matrix operand of ``@``, ``*``, ``.transpose``, ``[...]``."""
        text = self._print(expr)
        return text if isinstance(expr, _ATOMIC_MATRICES) else f"({text})"

    # -- symbols --------------------------------------------------------------
    def _print_Symbol(self, expr):
        if expr in self._dims:
            self.used_dims.add(expr)
            return self._dims[expr]
        name = self._names.get(expr)
        if name is None:
            raise CodegenError(
                f"symbol {expr.name!r} in function {self._function!r} is neither an "
                "argument nor a dimension of a MatrixSymbol argument"
            )
        if isinstance(expr, MatrixSymbol) or expr in self._elementwise_vars:
            return name
        return self._broadcast(name)

    _print_Dummy = _print_Symbol
    _print_MatrixSymbol = _print_Symbol

    # -- scalar arithmetic and functions --------------------------------------
    def _print_Pow(self, expr, rational=False):
        base, exp = expr.args
        if exp == S.Half:
            return f"torch.sqrt({self._print(base)})"
        if exp == -S.Half:
            return f"(1/torch.sqrt({self._print(base)}))"
        if exp == S.NegativeOne:
            return f"(1/{self.parenthesize(base, PRECEDENCE['Mul'], strict=False)})"
        return "{}**{}".format(
            self.parenthesize(base, PRECEDENCE["Pow"], strict=False),
            self.parenthesize(exp, PRECEDENCE["Pow"], strict=False),
        )

    def _print_Function(self, expr):
        template = TORCH_FUNCTIONS.get(type(expr).__name__)
        if template is None:
            return self._print_not_supported(expr)
        if len(expr.args) > 1:  # torch's binary functions want tensors on both sides
            args = [self._tensor_constant(a) if self._is_constant(a) else self._print(a)
                    for a in expr.args]
        else:
            args = [self._print(a) for a in expr.args]
        return template.format(*args)

    _print_Expr = _print_not_supported
    _print_Application = _print_Function

    def _extremum(self, expr, fold, clamp_bound):
        tensors = [a for a in expr.args if not self._is_constant(a)]
        constants = [a for a in expr.args if self._is_constant(a)]
        text = self._print(tensors[0])
        for arg in tensors[1:]:
            text = f"{fold}({text}, {self._print(arg)})"
        if constants:
            bound = type(expr)(*constants)
            text = f"torch.clamp({text}, {clamp_bound}={self._print_constant(bound)})"
        return text

    def _print_Max(self, expr):
        return self._extremum(expr, "torch.maximum", "min")

    def _print_Min(self, expr):
        return self._extremum(expr, "torch.minimum", "max")

    def _print_Heaviside(self, expr):
        x = expr.args[0]
        at_zero = expr.args[1] if len(expr.args) > 1 else S.Half
        value = (self._tensor_constant(at_zero) if self._is_constant(at_zero)
                 else self._print(at_zero))
        return f"torch.heaviside({self._print(x)}, {value})"

    def _print_Piecewise(self, expr):
        pieces = list(expr.args)
        if pieces[-1].cond == S.true:
            tail = pieces.pop().expr
        else:  # SymPy's Piecewise is undefined (nan) outside every condition
            tail = S.NaN
        text, tail_constant = self._print(tail), self._is_constant(tail)
        for value, cond in reversed(pieces):
            # torch.where of two Python scalars would return the default dtype
            value_text = (self._tensor_constant(value)
                          if tail_constant and self._is_constant(value) else self._print(value))
            text = f"torch.where({self._print(cond)}, {value_text}, {text})"
            tail_constant = False
        return text

    def _print_Relational(self, expr):
        if expr.rel_op not in _RELATIONS:
            return self._print_not_supported(expr)
        level = PRECEDENCE["Relational"]
        lhs, rhs = self.parenthesize(expr.lhs, level), self.parenthesize(expr.rhs, level)
        return f"{lhs} {expr.rel_op} {rhs}"

    def _print_boolean_fold(self, expr, fn):
        text = self._print(expr.args[0])
        for arg in expr.args[1:]:
            text = f"{fn}({text}, {self._print(arg)})"
        return text

    def _print_And(self, expr):
        return self._print_boolean_fold(expr, "torch.logical_and")

    def _print_Or(self, expr):
        return self._print_boolean_fold(expr, "torch.logical_or")

    def _print_Not(self, expr):
        return f"torch.logical_not({self._print(expr.args[0])})"

    # Inherited printers with no batched meaning here (SymPy's array einsums lack `...`).
    _print_ArrayTensorProduct = _print_ArrayContraction = _print_not_supported
    _print_ArrayDiagonal = _print_ArrayAdd = _print_not_supported
    _print_OneArray = _print_ZeroArray = _print_not_supported
    _print_Assignment = _print_IndexedBase = _print_not_supported
    _print_MatrixExpr = _print_not_supported
    _print_Derivative = _print_not_supported
    _print_PermuteDims = _print_not_supported
    _print_ImaginaryUnit = _print_not_supported
    _print_conjugate = _print_not_supported
    _print_gamma = _print_not_supported
    _print_polygamma = _print_not_supported
    _print_isnan = _print_not_supported
    _print_isinf = _print_not_supported
