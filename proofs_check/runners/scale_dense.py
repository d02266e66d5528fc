"""A claim's matrix-free form against the dense form, number by number, on the same toy stacks.

The ledger runs every matrix-free form at the toy preset (``cross_checks.toy_scale_form``), where the dense
Jacobian is small (T·d = 24).  A verdict of *verified* there says only that the form agrees with itself: a
mistake shared by a form's prediction and its own guard (a wrong scaling of a reported number, a certificate
computed with the wrong step) keeps it verified.  So each number the form reports, or derives its verdict
from, is recomputed here by a dense route that shares no matrix-free code with it:

- **Derivatives the forms share** (``ScaleRun``'s cache, after the form ran): every J·V by ``torch.func.jvp``
  and by the polynomial form J = Σ_m A^m ⊗ K_m, and every parameter derivative D_θX_L[δθ] (W_Q, W_K; the
  gates), against the dense Jacobian by reverse-mode autograd (``torch.autograd.functional.jacobian``) at
  a reference state 1x̄ᵀ built here, with the slow path's projection Q built here from its definition
  (block means); ‖J‖₂ by power iteration against the dense SVD (the iteration's value is a lower bound:
  it may not exceed the dense norm); the matrix-free Jᵀ against the dense transpose.
- **Numbers a form reports in its table** (``NumericResult.table`` rows ``{"quantity", "value", ...}``):
  Claim 5.1's stability margin μ and gate bound g* against the dense form's certificate on the same
  contractive stack; each is an enclosure, and two enclosures of one number must overlap.

Tolerances (float64 rounding × condition number): two routes to one derivative, each accurate to γ
(``matrix_free.rounding_tolerance``, the J·V dot-product bound) relative to the magnitude ‖|J|·|v|‖ of the
terms summed, and the dense product's own T·d-term sums: ‖scale − dense‖ ≤ (2γ + T·d·u)·‖|J|·|v|‖.  This
form is absolute, so a derivative that is zero by the claim (D_(W_Q,W_K)X_L at 1x̄ᵀ) is compared too.
"""

from __future__ import annotations

import math

import torch

from numerics.linearised import matrix_free as mf
from proofs_check.verdicts.run_scope import shared


def _flat_jacobian(f, x: torch.Tensor) -> torch.Tensor:
    """(outputs, inputs) Jacobian of f at x by reverse-mode autograd, one row per output entry."""
    J = torch.autograd.functional.jacobian(f, x.detach())
    return J.reshape(-1, x.numel()).detach()


def _input_jacobian(stack, X: torch.Tensor) -> torch.Tensor:
    with torch.enable_grad():
        return _flat_jacobian(lambda x: stack(x), X)


def _param_jacobian(stack, X: torch.Tensor, names: list[str]) -> torch.Tensor:
    """∂X_L/∂θ for the named parameters, (T·d, Σ sizes), reverse mode."""
    params = dict(stack.named_parameters())
    base = {n: p.detach() for n, p in params.items()}
    flat = torch.cat([base[n].reshape(-1) for n in names])
    sizes = [base[n].numel() for n in names]

    def f(theta):
        parts = dict(zip(names, torch.split(theta, sizes)))
        values = {**base, **{n: parts[n].reshape(base[n].shape) for n in names}}
        return torch.func.functional_call(stack, values, (X.detach(),))

    with torch.enable_grad():
        return _flat_jacobian(f, flat)


def _reference(stack, xbar: torch.Tensor) -> torch.Tensor:
    """1x̄ᵀ (T, d), built from its definition."""
    p = next(stack.parameters())
    return torch.ones(stack.config.T, 1, dtype=p.dtype, device=p.device) * xbar.to(p.dtype)[None, :]


def _block_projection(T: int, P: int, dtype, device) -> torch.Tensor:
    """Q = lift·pool: each token replaced by its block's mean, Q[i, j] = 1/P when i, j share a block."""
    idx = torch.arange(T, device=device) // P
    return (idx[:, None] == idx[None, :]).to(dtype) / P


def _row(name: str, scale: torch.Tensor, J: torch.Tensor, v: torch.Tensor, gamma: float, u: float,
         floor: float = 0.0) -> dict:
    """scale ≈ J·v: the dense value, the error and the tolerance (2γ + n·u)·max(‖|J|·|v|‖, floor)
    (n = J's row length; ``floor``: the size of terms that cancel inside the derivative)."""
    v = v.reshape(-1).to(J.dtype)
    dense = J @ v
    magnitude = max(float(torch.linalg.vector_norm(J.abs() @ v.abs())), floor)
    tol = (2 * gamma + J.shape[1] * u) * magnitude
    err = float(torch.linalg.vector_norm(scale.reshape(-1).to(J.dtype) - dense))
    return {"quantity": name, "scale": float(torch.linalg.vector_norm(scale)), "dense": float(torch.linalg.vector_norm(dense)),
            "error": err, "tolerance": tol}


def _qk_names(stack) -> list[str]:
    return [n for n, _ in stack.named_parameters() if n.endswith("attn.W_Q") or n.endswith("attn.W_K")]




def _derivative_rows(run) -> list[dict]:
    """Every cached derivative of ``run`` against its dense twin."""
    s, cache = run.spec, run.cache
    jacobians = shared("scale_dense.jacobians")   # dense Jacobians of the toy stacks, shared inside one run
    u = mf.unit_roundoff(run.tdtype)
    rows = []

    def dense(variant: str, delta: float = 0.0):
        key = (repr(s), variant, delta)
        if key not in jacobians:
            st = run.stack(variant)
            X = _reference(st, run.xbar())
            X = X + delta * run.inhomogeneity() if delta else X
            jacobians[key] = (st, X, _input_jacobian(st, X))
        return jacobians[key]

    def dense_params(variant: str, delta: float, names: list[str]):
        key = (repr(s), variant, delta, tuple(names))
        if key not in jacobians:
            st, X, _ = dense(variant, delta)
            jacobians[key] = _param_jacobian(st, X, names)
        return jacobians[key]

    def qk_row(name, value, delta):
        # D_(W_Q,W_K)X_L cancels to O(δ²) (δA·1 = 0 on equal value rows): its rounding floor is that of the
        # cancelling terms, the size of J·V for unit-rms tangents (2.4's own tolerance is γ·‖J·V‖)
        st, _, J = dense("preset", delta)
        names = _qk_names(st)
        tangent = run.qk_tangent(st)
        floor = float(torch.linalg.vector_norm(J @ run.probe()[0].reshape(-1)))
        return _row(name, value, dense_params("preset", delta, names), torch.cat([tangent[n].reshape(-1) for n in names]),
                    run.gamma, u, floor=floor)

    if "reference_jvps" in cache:
        _, _, J = dense("preset")
        jv = cache["reference_jvps"]
        rows.append(_row("J·V at 1x̄ᵀ (jvp)", jv["V"], J, run.probe()[0], run.gamma, u))
        rows.append(_row("J·V_mode at 1x̄ᵀ (jvp)", jv["mode"], J, run.mode_probe()[0], run.gamma, u))
        rows.append(qk_row("D_(W_Q,W_K)X_L at 1x̄ᵀ (jvp)", jv["qk"], 0.0))
    if "predicted_V" in cache:
        _, _, J = dense("preset")
        rows.append(_row("J·V by Σ_m A^m V K_mᵀ", cache["predicted_V"][0], J, run.probe()[0], run.gamma, u))
    for key, value in cache.items():
        if isinstance(key, tuple) and key[0] == "inhomogeneous_jvps":
            _, _, J = dense("preset", key[1])
            rows.append(_row(f"J·V at 1x̄ᵀ + {key[1]:g}N (jvp)", value["V"], J, run.probe()[0], run.gamma, u))
            rows.append(qk_row(f"D_(W_Q,W_K)X_L at 1x̄ᵀ + {key[1]:g}N (jvp)", value["qk"], key[1]))
        if isinstance(key, tuple) and key[0] == "slow_jvps":
            st, X, J = dense(key[1])
            V = run.probe()[0]
            Q = _block_projection(s.T, st.config.P, V.dtype, V.device)
            rows.append(_row(f"J·(I − Q)V, {key[1]} (jvp)", value["perp"], J, V - Q @ V, run.gamma, u))
            gates = [f"layers.{i}.gate" for i in range(st.config.layers)]
            rows.append(_row(f"∂X_L/∂g·γ, {key[1]} (jvp)", value["gate"], dense_params(key[1], 0.0, gates),
                             run.gate_direction(), run.gamma, u))
    if "norm_J" in cache:
        _, _, J = dense("preset")
        sigma = cache["norm_J"][0]
        dense_sigma = float(torch.linalg.matrix_norm(J, ord=2))
        tol = (2 * run.gamma + J.shape[1] * u) * float(torch.linalg.matrix_norm(J.abs(), ord=2))
        # a power iteration's value is a lower bound: only an excess over the dense norm is an error
        rows.append({"quantity": "‖J‖₂ (power iteration, a lower bound)", "scale": sigma, "dense": dense_sigma,
                     "error": max(sigma - dense_sigma, 0.0), "tolerance": tol})
    if "adjoint" in cache:
        _, _, J = dense("preset")
        U = run.probe(1, seed=21)
        rows.append(_row("Jᵀ·U (matrix-free)", run.action()(U, transpose=True)[0], J.mT, U[0], run.gamma, u))
    return rows


def _certificate_rows(claim_id: str, run, table: list[dict]) -> list[dict]:
    """The enclosures a form reports in its table against the dense form's on the same stack (overlap)."""
    reported = {r["quantity"]: r for r in table if "quantity" in r}
    if claim_id != "5.1" or "g*" not in reported:
        return []
    from numerics.families import stability as ns
    cert = ns.gate_certificate(ns.at_zero_gate(run.stack("contractive")))
    e = cert.enclosure
    rows = []
    for name, lo, hi in (("μ", e.mu_lo, e.mu_hi), ("g*", e.g_lo, e.g_hi)):
        r = reported[name]
        ends = [r["lo"], r["hi"], lo, hi]
        if all(math.isfinite(x) for x in ends):
            # two enclosures of the same number overlap; the distance between them is the error
            gap = max(r["lo"] - hi, lo - r["hi"], 0.0)
        else:   # no enclosure (no certified gate): both forms must say so
            gap = 0.0 if not any(math.isfinite(x) for x in ends) else math.inf
        rows.append({"quantity": f"{name} enclosure", "scale": r["value"], "dense": (lo + hi) / 2,
                     "error": gap, "tolerance": 0.0})
    return rows


def scale_vs_dense(claim_id: str, run, entry: dict) -> dict:
    """The cross-check record: every compared number, verified when each error is within its tolerance."""
    rows = _derivative_rows(run) + _certificate_rows(claim_id, run, (entry.get("numeric") or {}).get("table") or [])
    if not rows:
        return {"name": "scale form vs dense form at --scale toy", "status": "skipped", "max_error": None,
                "tolerance": None, "detail": "no number of this form has a dense twin here", "rows": []}
    ratios = [r["error"] / r["tolerance"] if r["tolerance"] > 0 else (0.0 if r["error"] == 0 else math.inf)
              for r in rows]
    worst = max(range(len(rows)), key=lambda i: ratios[i])
    bad = [r for r, q in zip(rows, ratios) if not q <= 1.0]
    detail = (f"{len(rows)} numbers against the dense Jacobian / certificate; worst {rows[worst]['quantity']}: "
              f"error {rows[worst]['error']:.2e}, tolerance {rows[worst]['tolerance']:.2e}")
    if bad:
        detail = "; ".join(f"{r['quantity']}: scale {r['scale']:.6g}, dense {r['dense']:.6g}, error {r['error']:.2e} > "
                           f"{r['tolerance']:.2e}" for r in bad)
    return {"name": "scale form vs dense form at --scale toy", "status": "failed" if bad else "verified",
            "max_error": ratios[worst], "tolerance": 1.0, "detail": detail, "rows": rows}
