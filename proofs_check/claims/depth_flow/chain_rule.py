"""Claim 1.2: the stack's Jacobian is the depth-ordered product of its layer Jacobians.

The claim is one ``@on_stack`` function of a :class:`numerics.stacks.spec.StackSpec` (docs/theory.md §1); the ledger's
``@claim`` check runs it on the preln specs and adds the symbolic steps and the negative control, the claims ×
architectures grid runs it on every variant's specs; its matrix-free form is in ``matrix_free``.
"""

from __future__ import annotations

import torch

from numerics.stacks.architectures.capabilities import has
from numerics.families import depth_flow as nd
from numerics.linearised.jacobians import layer_jacobians, reference_input, stack_jacobian, step_jacobians
from numerics.stacks.spec import StackSpec
from proofs_check.verdicts.standing import HOLDS, PAPER
from proofs_check.verdicts.evidence import ClaimResult, ControlResult, NumericResult, symbolic_steps
from proofs_check.verdicts.registry import claim, evaluate, on_stack
from proofs_check.verdicts.on_stack import EXACT, Verdict, matrix_spec
from theory import depth_flow as th


# ----------------------------------------------------------------------------- 1.2
CASES_1_2 = [(6, 8, 4, 2, "causal", 0), (5, 4, 3, 1, "full", 1), (8, 8, 8, 2, "block", 2)]


def _chain_specs(arch, ctx):
    if has(arch, "paper_stack"):
        cases = CASES_1_2[:2] if ctx.quick else CASES_1_2
        return [StackSpec(T=T, d=d, layers=L, heads=H, kernel=k, seed=ctx.seed + seed,
                          knobs={"block_size": 2} if k == "block" else {}) for T, d, L, H, k, seed in cases]
    return [matrix_spec(arch, ctx)]


@on_stack("1.2", specs=_chain_specs)
def evaluate_1_2(spec: StackSpec, ctx) -> Verdict:
    """Chain rule: ∂out/∂X = J_readout · J_{n−1} ⋯ J_0 · J_embed (preln: J = J_{L−1} ⋯ J_0), and on
    preln the reversed product, off by the predicted h² Σ_{i<j} [M_i, M_j] + O(h³)."""
    if has(spec.arch, "paper_stack"):
        st = spec.build()
        X = torch.randn(spec.T, spec.d, dtype=torch.float64, generator=torch.Generator().manual_seed(spec.seed + 10),
                        device="cpu").to(spec.device)
        J = stack_jacobian(st, X).detach()
        Js = layer_jacobians(st, X)
        err = nd.relative(nd.depth_ordered_product(Js), J)
        reversed_err = nd.relative(nd.depth_ordered_product(Js, reverse=True), J)
        predicted = float((nd.commutator_prediction(Js, st.h).norm() / J.norm()).detach())
        measured = {"rel_error": err, "reversed_rel_error": reversed_err}
        status = "holds" if err <= EXACT else "fails"
        return Verdict("1.2", status, measured=measured, predicted={"reversed_rel_error": predicted},
                       error=err, tolerance=EXACT,
                       counterexample=None if status == "holds" else {"spec": spec.as_dict()})
    s = spec.build_arch()
    X = reference_input(s, spec.seed, homogeneous=False)
    full = stack_jacobian(lambda x: s(x), X, chunk_size=1)
    prod = stack_jacobian(lambda x: s.embed(x), X, chunk_size=1)
    for Jl in step_jacobians(s, X):
        prod = Jl @ prod
    with torch.no_grad():
        sn = s.trajectory(X)[-1]
    prod = stack_jacobian(lambda z: s.readout(z), sn, chunk_size=1) @ prod
    err = float(torch.linalg.norm(full - prod) / torch.linalg.norm(full))
    ev = {"rel_error": err, "tolerance": EXACT, "steps": s.n_steps}
    cond = None
    if has(spec.arch, "kink_set"):
        with torch.no_grad():
            ev["kink_distance"] = float(s.kink_distance(X.detach()))
        cond = ("almost everywhere: off the kink set (a pre-activation exactly 0); here min |pre-activation| = "
                f"{ev['kink_distance']:.2e}")
    if err <= EXACT:
        return Verdict("1.2", "conditional" if cond else "holds", measured=ev, error=err, tolerance=EXACT,
                       condition=cond)
    return Verdict("1.2", "fails", measured=ev, error=err, tolerance=EXACT, condition=cond,
                   counterexample={"spec": spec.as_dict()})


def _finite_difference_route(spec: StackSpec) -> dict:
    """1.2 against central differences of the stack (``numerics.linearised.finite_differences``) at the check's state."""
    from numerics.linearised.finite_differences import chain_rule_against_differences

    st = spec.build()
    X = torch.randn(spec.T, spec.d, dtype=torch.float64, generator=torch.Generator().manual_seed(spec.seed + 10),
                    device="cpu").to(spec.device)
    V = torch.randn(spec.T, spec.d, dtype=torch.float64, generator=torch.Generator().manual_seed(spec.seed + 11),
                    device="cpu").to(spec.device)
    return chain_rule_against_differences(st, X, V)


@claim("1.2", title="Stack Jacobian = depth-ordered product of layer Jacobians", family="depth_flow",
       statement="J = J_{L−1} ⋯ J_0 (layer Jacobians at the visited states), float64, 1e-12 relative.",
       assumptions=["float64", "random untied stack at a random (inhomogeneous) state"],
       tests=["tests/test_depth_flow.py::test_chain_rule", "tests/test_depth_flow.py::test_reversed_order_fails"],
       control="reversed product J_0 ⋯ J_{L−1}: differs by h²Σ_{i<j}[M_i, M_j] + O(h³)", figure=None,
       kind='identity', setting=PAPER, standing=HOLDS,
       headline='the chain rule: J equals the depth-ordered product of layer Jacobians to rounding for any weights and state (checked against autograd, itself the chain rule, and against central differences of the stack within their derived O(h²) bound)')
def check_1_2(ctx) -> ClaimResult:
    specs = _chain_specs("preln", ctx)
    verdicts = [evaluate("1.2", s, ctx) for s in specs]
    rows, ctrl_rows, ctrl_ok = [], [], True
    for spec, v in zip(specs, verdicts):
        rows.append({"T": spec.T, "d": spec.d, "L": spec.layers, "kernel": spec.kernel,
                     "rel_error": v.measured.get("rel_error", float("inf"))})
        measured = v.measured.get("reversed_rel_error", 0.0)
        predicted = v.predicted.get("reversed_rel_error", float("nan"))
        # the prediction is the O(h²) term; the O(h³) remainder allows a factor ≤ 1 + O(h) ≲ 2
        ctrl_ok &= measured > 1e-6 and 0.5 <= measured / predicted <= 2.0
        ctrl_rows.append(f"{spec.kernel} L={spec.layers}: reversed rel. error {measured:.3g} vs predicted {predicted:.3g}")
    fd = [_finite_difference_route(spec) for spec in specs]
    for row, f in zip(rows, fd):
        row.update(fd_error=f["error"], fd_bound=f["bound"], fd_slope_h=f["slope_h"])
    # the product must also match forward passes alone: ‖D_h − ΠJ_ℓ V‖ ≤ (h²/6)‖D³f‖ + γ‖f‖/h, slope 2 in h
    fd_ok = all(f["ratio"] <= 1.0 and abs(f["slope_h"] - 2.0) <= 0.01 for f in fd)
    worst = max(r["rel_error"] for r in rows) if fd_ok else float("inf")
    ctrl_ok &= all(f["reversed_ratio"] > 1.0 for f in fd)
    ctrl_rows.append("reversed product against the central difference: " + ", ".join(
        f"{f['reversed_ratio']:.2g}× its bound" for f in fd))
    return ClaimResult(
        symbolic=symbolic_steps(th.prove_chain_rule()),
        numeric=NumericResult(cases=len(rows), max_error=worst, tolerance=EXACT,
                              detail="‖J_autograd − J_{L−1}⋯J_0‖/‖J‖; tolerance 1e-12 (float64, L ≤ 8 products); "
                                     "and without autograd of the stack: ‖(f(X+hV) − f(X−hV))/2h − J_{L−1}⋯J_0 V‖ "
                                     "within (h²/6)‖D³f[V,V,V]‖ + γ‖f‖/h at h = h* (" + ", ".join(
                                         f"{f['error']:.2g} ≤ {f['bound']:.2g}" for f in fd)
                                     + "), truncation slope in h " + ", ".join(f"{f['slope_h']:.4f}" for f in fd)
                                     + " (predicted 2 ± 0.01: rounding ≤ 1/500 of the h² term at h ≥ 10h*)",
                              table=rows),
        control=ControlResult("fails-as-predicted" if ctrl_ok else "did-not-fail", "; ".join(ctrl_rows)))
