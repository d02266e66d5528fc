"""The one dense Jacobian (numerics.linearised.jacobians.stack_jacobian) against routes that do not use it: a linear
map whose matrix is known, forward-mode autograd (torch.func.jacfwd), and torch.autograd.functional."""

import pytest
import torch

from numerics.stacks.spec import StackSpec
from numerics.linearised import matrix_free as mf
from numerics.linearised.jacobians import layer_jacobians, reference_input, stack_jacobian, state_jacobian

F64 = torch.float64


@pytest.mark.parametrize("chunk_size", [None, 1, 5])
def test_linear_map_gives_its_matrix(chunk_size):
    """f(X) = reshape(M vec X): row i of the Jacobian is the VJP of eᵢ, i.e. row i of M, computed as a sum
    with a single non-zero term: exact in float64."""
    g = torch.Generator().manual_seed(0)
    M = torch.randn(12, 12, generator=g, dtype=F64)
    X = torch.randn(3, 4, generator=g, dtype=F64)
    J = stack_jacobian(lambda x: (M @ x.reshape(-1)).reshape(3, 4), X, chunk_size=chunk_size)
    assert torch.equal(J, M)
    assert not torch.equal(J, M.T)  # control: the transpose (a column-major convention) is another matrix


def test_whole_stack_agrees_with_forward_mode():
    """Reverse mode (jacrev, one VJP per row) against forward mode (jacfwd, one JVP per column): the same
    sums of products in another order, so they differ by rounding only, γ = n·u of
    ``matrix_free.rounding_tolerance`` relative to ‖J‖; the transpose (a wrong row/column convention) is
    O(1) away."""
    T, d, L = 5, 4, 3
    stack = StackSpec(T=T, d=d, layers=L, heads=2, kernel="causal", seed=3).build()
    X = reference_input(stack, 7, homogeneous=False)
    J = stack_jacobian(stack, X).detach()
    fwd = torch.func.jacfwd(stack)(X).reshape(T * d, T * d).detach()
    gamma = mf.rounding_tolerance(T, d, L, F64)
    assert float((J - fwd).norm() / fwd.norm()) <= gamma
    assert float((J.T - fwd).norm() / fwd.norm()) > 0.1  # causal mixing: J is far from symmetric


def test_row_by_row_is_autograd_functional_bit_for_bit():
    """``chunk_size=1`` takes one VJP per row, the products ``torch.autograd.functional.jacobian`` takes."""
    stack = StackSpec(T=4, d=3, layers=2, heads=1, kernel="full", seed=1).build()
    X = reference_input(stack, 2, homogeneous=False)
    expected = torch.autograd.functional.jacobian(stack, X).reshape(12, 12)
    assert torch.equal(stack_jacobian(stack, X, chunk_size=1).detach(), expected.detach())


def test_state_jacobian_of_a_variant_and_layer_product():
    """An architecture variant's state map against forward mode; and the base stack's layer Jacobians
    multiplied in depth order against the whole stack (chain rule), both to rounding γ."""
    s = StackSpec(arch="looped", T=4, d=4, layers=2, heads=2, kernel="causal", seed=0).build()
    X = reference_input(s, 1)
    s0 = s.embed(X).detach()

    def run(z):
        for i in range(s.n_steps):
            z = s.step(i, z)
        return z

    fwd = torch.func.jacfwd(run)(s0).reshape(s0.numel(), s0.numel()).detach()
    gamma = mf.rounding_tolerance(4, s0.shape[-1], s.n_steps, F64)
    assert float((state_jacobian(s, X).detach() - fwd).norm() / fwd.norm()) <= gamma

    stack = StackSpec(T=4, d=3, layers=3, heads=1, kernel="causal", seed=2).build()
    X = reference_input(stack, 5, homogeneous=False)
    Js = layer_jacobians(stack, X)
    prod = Js[2] @ Js[1] @ Js[0]
    J = stack_jacobian(stack, X).detach()
    assert float((prod - J).norm() / J.norm()) <= mf.rounding_tolerance(4, 3, 3, F64)
    wrong = Js[0] @ Js[1] @ Js[2]  # control: the reversed order is not the stack's Jacobian
    assert float((wrong - J).norm() / J.norm()) > 1e3 * mf.rounding_tolerance(4, 3, 3, F64)


def test_result_is_detached_unless_a_graph_is_asked_for():
    """Like ``torch.autograd.functional.jacobian``: no graph to the weights by default (a float() of it raises no
    warning and frees the graph); ``create_graph=True`` keeps one, and its weight gradient is the one of the
    same entry taken row by row."""
    stack = StackSpec(T=3, d=2, layers=1, heads=1, kernel="causal", seed=4).build()
    X = reference_input(stack, 1, homogeneous=False)
    assert not stack_jacobian(stack, X).requires_grad
    J = stack_jacobian(stack, X, create_graph=True)
    assert J.requires_grad
    W = stack.layers[0].mlp.W1
    (g_rev,) = torch.autograd.grad(J[1, 2], W)
    row = torch.autograd.functional.jacobian(stack, X, create_graph=True).reshape(6, 6)[1, 2]
    (g_ref,) = torch.autograd.grad(row, W)
    assert torch.allclose(g_rev, g_ref, rtol=1e-12, atol=1e-14)  # two orders of the same few products
