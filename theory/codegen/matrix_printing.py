"""How :class:`theory.codegen.printer.TorchPrinter` prints matrix expressions: products without dense
diagonal matrices or outer products, sums, Hadamard products, transposes, inverses, powers, traces,
determinants, explicit matrices and elementwise functions, as batched torch code on (..., m, n)
tensors.  A mixin: the scalar rules, the constants and the names are the printer's own.
"""

from __future__ import annotations

import sympy
from sympy import S
from sympy.core.function import Lambda
from sympy.matrices.expressions import DiagMatrix, MatMul
from sympy.printing.precedence import PRECEDENCE

from .errors import CodegenError


class MatrixPrinting:
    """The matrix-expression rules of ``TorchPrinter`` (see the module docstring)."""

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
