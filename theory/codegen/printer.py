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
from sympy.core.function import Lambda
from sympy.matrices.expressions import (
    DiagMatrix,
    DiagonalMatrix,
    DiagonalOf,
    Identity,
    Inverse,
    KroneckerProduct,
    MatMul,
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


class TorchPrinter(SymPyTorchPrinter):
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

    # -- matrix expressions ---------------------------------------------------
    def _matmul(self, coeff, matrices) -> str:
        product = self._product(matrices)
        if coeff == S.One:
            return product
        if coeff == S.NegativeOne:
            return f"-{product}"
        return f"{self._scalar_as_matrix(coeff)} * {product}"

    def _product(self, matrices) -> str:
        """A matrix product without dense diagonal matrices or dense outer products.

        diag(v) factors become broadcasts (diag(v) M = v * M, M diag(v) = M * vᵀ), each put
        on whichever neighbour (a factor, or the whole product at either end) has fewer
        entries; the remaining chain is parenthesised by the matrix-chain rule at
        representative sizes (``sizes``, else 64), so rank-one factors such as u uᵀ are
        applied to vectors first; a product whose inner dimension is the literal 1 (an outer
        product) is printed as a broadcast ``a * b``.
        """
        factors, gaps = [], [[]]  # gaps[i]: diag vectors just before factors[i] (last: after all)
        for m in matrices:
            if isinstance(m, DiagMatrix) and m.args[0].shape[1] == 1:
                gaps[-1].append(self._operand(m.args[0]))
            else:
                factors.append([self._operand(m), m.shape])
                gaps.append([])
        if not factors:
            return f"torch.diag_embed({self._hadamard(gaps[0])}[..., 0])"
        size = lambda shape: self._size(shape[0]) * self._size(shape[1])  # noqa: E731
        first, last = factors[0][1], factors[-1][1]
        whole = (first[0], last[1])
        left_of_all = right_of_all = None
        for i, vectors in enumerate(gaps):
            if not vectors:
                continue
            v = self._hadamard(vectors)
            if i == 0:  # leading: scale the rows of the first factor or of the result
                if len(factors) > 1 and size(whole) < size(first):
                    left_of_all = v
                else:
                    factors[0][0] = f"({v} * {factors[0][0]})"
            elif i == len(factors):  # trailing: scale the columns of the last factor or the result
                if len(factors) > 1 and size(whole) < size(last):
                    right_of_all = v
                else:
                    factors[-1][0] = f"({factors[-1][0]} * {v}.transpose(-1, -2))"
            elif size(factors[i - 1][1]) <= size(factors[i][1]):
                factors[i - 1][0] = f"({factors[i - 1][0]} * {v}.transpose(-1, -2))"
            else:
                factors[i][0] = f"({v} * {factors[i][0]})"
        dims = [self._size(shape[0]) for _, shape in factors] + [self._size(last[1])]
        literal_one = [shape[0] == 1 for _, shape in factors] + [last[1] == 1]
        text = self._chain([t for t, _ in factors], dims, literal_one)
        if left_of_all is not None:
            text = f"{left_of_all} * ({text})"
        if right_of_all is not None:
            text = f"({text}) * {right_of_all}.transpose(-1, -2)"
        return text

    @staticmethod
    def _hadamard(vectors) -> str:
        return vectors[0] if len(vectors) == 1 else "(" + " * ".join(vectors) + ")"

    def _size(self, dim) -> int:
        """Representative size of a dimension: its value, else ``sizes`` (substituted), else 64."""
        dim = sympy.sympify(dim).xreplace(self._sizes)
        return int(dim) if dim.is_Integer else 64

    @staticmethod
    def _chain(texts, dims, literal_one) -> str:
        """Cheapest parenthesisation of texts[0] @ ... @ texts[-1] with sizes dims (classic DP);
        a split whose inner dimension is the literal 1 is an outer product, printed ``a * b``."""
        n = len(texts)
        cost = [[0] * n for _ in range(n)]
        split = [[0] * n for _ in range(n)]
        for length in range(2, n + 1):
            for i in range(n - length + 1):
                j = i + length - 1
                cost[i][j], split[i][j] = min(
                    (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k) for k in range(i, j))

        def build(i, j, outer):
            if i == j:
                return texts[i]
            k = split[i][j]
            op = "*" if literal_one[k + 1] else "@"
            text = f"{build(i, k, False)} {op} {build(k + 1, j, False)}"
            return text if outer else f"({text})"

        return build(0, n - 1, True)

    @staticmethod
    def _split_matmul(expr):
        scalars = [a for a in expr.args if not a.is_Matrix]
        return sympy.Mul(*scalars), [a for a in expr.args if a.is_Matrix]

    def _print_MatMul(self, expr):
        return self._matmul(*self._split_matmul(expr))

    def _print_MatAdd(self, expr):
        terms = []
        for term in expr.args:
            coeff, matrices = (self._split_matmul(term) if isinstance(term, MatMul)
                               else (S.One, [term]))
            negative = coeff.could_extract_minus_sign()
            text = self._matmul(-coeff if negative else coeff, matrices)
            terms.append(("- " if negative else "+ ") + text)
        text = " ".join(terms)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    def _print_HadamardProduct(self, expr):
        return " * ".join(self._operand(a) for a in expr.args)

    def _print_HadamardPower(self, expr):
        base, exp = expr.args
        exp_text = (self._operand(exp) if exp.is_Matrix else
                    self.parenthesize(exp, PRECEDENCE["Pow"], strict=False)
                    if self._is_constant(exp) else self._scalar_as_matrix(exp))
        return f"{self._operand(base)}**{exp_text}"

    def _print_Transpose(self, expr):
        return f"{self._operand(expr.arg)}.transpose(-1, -2)"

    def _print_Inverse(self, expr):
        return f"torch.linalg.inv({self._print(expr.arg)})"

    def _print_MatPow(self, expr):
        if not expr.exp.is_Integer:
            raise CodegenError(
                f"MatPow with non-integer exponent {expr.exp} in function {self._function!r}"
            )
        return f"torch.linalg.matrix_power({self._print(expr.base)}, {int(expr.exp)})"

    def _print_Trace(self, expr):
        """tr(A₁⋯Aₖ) with a column factor Aᵢ is the 1×1 product A_{i+1}⋯Aₖ A₁⋯Aᵢ (trace is
        cyclic): no k×k matrix is formed; otherwise the sum of the diagonal."""
        if isinstance(expr.arg, MatMul):
            coeff, matrices = self._split_matmul(expr.arg)
            column = next((i for i, m in enumerate(matrices) if m.shape[1] == 1), None)
            if column is not None:
                rotated = matrices[column + 1:] + matrices[:column + 1]
                return self._broadcast(f"({self._matmul(coeff, rotated)})[..., 0, 0]")
        return self._broadcast(
            f"torch.diagonal({self._print(expr.arg)}, dim1=-2, dim2=-1).sum(-1)")

    def _print_Determinant(self, expr):
        return self._broadcast(f"torch.linalg.det({self._print(expr.arg)})")

    def _new_matrix(self, fn, *shape) -> str:
        dims = ", ".join(self._print(n) for n in shape)
        ref = self._dtype_ref
        return f"torch.{fn}({dims}, dtype={ref}.dtype, device={ref}.device)"

    def _print_Identity(self, expr):
        return self._new_matrix("eye", expr.rows)

    def _print_ZeroMatrix(self, expr):
        return self._new_matrix("zeros", *expr.shape)

    def _print_OneMatrix(self, expr):
        return self._new_matrix("ones", *expr.shape)

    def _print_MatrixElement(self, expr):
        i, j = expr.i, expr.j
        if not (i.is_Integer and j.is_Integer):
            raise CodegenError(
                f"symbolic matrix index {expr} in function {self._function!r}"
            )
        return self._broadcast(f"{self._operand(expr.parent)}[..., {int(i)}, {int(j)}]")

    def _print_DiagMatrix(self, expr):
        vector = expr.args[0]
        if vector.shape[1] == 1:
            return f"torch.diag_embed({self._operand(vector)}[..., 0])"
        if vector.shape[0] == 1:
            return f"torch.diag_embed({self._operand(vector)}[..., 0, :])"
        raise CodegenError(f"DiagMatrix of a non-vector in function {self._function!r}")

    def _print_DiagonalOf(self, expr):
        return f"torch.diagonal({self._print(expr.args[0])}, dim1=-2, dim2=-1)[..., None]"

    def _print_DiagonalMatrix(self, expr):
        return f"torch.diag_embed(torch.diagonal({self._print(expr.args[0])}, dim1=-2, dim2=-1))"

    def _print_KroneckerProduct(self, expr):
        text = self._print(expr.args[0])
        for factor in expr.args[1:]:
            text = (f"torch.einsum('...ij,...kl->...ikjl', {text}, {self._print(factor)})"
                    ".flatten(-4, -3).flatten(-2, -1)")
        return text

    def _print_ElementwiseApplyFunction(self, expr):
        fn, matrix = expr.function, self._operand(expr.expr)
        if isinstance(fn, Lambda):
            (var,), body = fn.variables, fn.expr
        else:
            var = sympy.Dummy("t")
            body = fn(var)
        if self._is_constant(body):
            return f"torch.full_like({matrix}, {self._print_constant(body)})"
        # In the body the bound variable is the matrix itself; every other scalar
        # is unsqueezed to broadcast against it.
        saved = self._names.get(var), self._broadcast_scalars
        self._names[var], self._broadcast_scalars = matrix, True
        self._elementwise_vars.add(var)
        try:
            return self._print(body)
        finally:
            self._names[var], self._broadcast_scalars = saved
            self._elementwise_vars.discard(var)

    def _print_MatrixBase(self, expr):
        m, n = expr.shape
        entries = list(expr)
        if all(self._is_constant(e) for e in entries):
            rows = ", ".join(
                "[" + ", ".join(self._print_constant(e) for e in expr.row(i)) + "]"
                for i in range(m)
            )
            ref = self._dtype_ref
            return f"torch.tensor([{rows}], dtype={ref}.dtype, device={ref}.device)"
        parts = [self._tensor_constant(e) if self._is_constant(e) else self._print(e)
                 for e in entries]
        return (f"torch.stack(torch.broadcast_tensors({', '.join(parts)}), -1)"
                f".unflatten(-1, ({m}, {n}))")

    _print_ImmutableDenseMatrix = _print_MutableDenseMatrix = _print_MatrixBase
    _print_ImmutableMatrix = _print_Matrix = _print_DenseMatrix = _print_MatrixBase

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
