"""Simulations of the fast–slow systems of docs/theory.md §6 and their slow-manifold errors.

Every formula comes from ``numerics.generated.slow_manifold`` (derived in
``theory/slow_manifold.py``): the vector fields [f/ε; g] and their Jacobians, the
truncated manifolds φ^{(k)}(y), the reduced flows g(φ₀(y), y), p_st(y).

Two integrators: scipy's Radau (rtol 1e-10, atol 1e-12, the generated Jacobian) and,
for the linear systems, the discrete token recurrence z_{i+1} = E z_i with
E = exp(δ M) the exact one-token propagator (token step δ = ε·BLOCK_TIME in slow
time, a block of P tokens spanning BLOCK_TIME); the slow variable is read once per
block, at block ends.

Error estimates behind the measurement window (``SPECS``): after the boundary layer
the distance is |φ − φ^{(k)}| ≈ C_k ε^{k+1} plus the layer's remnant ≈ e^{−μ t/ε}
(μ = the fast subsystem's decay rate, ≥ 1 for every system here), so on t ≥ 1 the
remnant is e^{−P} ≤ 1.1e−7 · (ε³) already at P = 16 and below the smallest measured
distance (≈ 1e−8 at k = 2, P = 256), while Radau's global error ≈ 1e−10 stays two
decades under it.  The fit uses P = 16 … 256; P = 4, 8 are reported as pre-asymptotic
(the remnant e^{−4}, e^{−8} is comparable to ε^{k+1} there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.integrate import solve_ivp

from numerics.fitting import loglog_fit
from numerics.generated import slow_manifold as gen

RTOL, ATOL = 1e-10, 1e-12
FIT_PS = (16, 32, 64, 128, 256)
ALL_PS = (4, 8) + FIT_PS
BLOCK_TIME = 1.0 / 16  # slow time spanned by one block in the token recurrence
LINEAR_SYSTEMS = ("linear", "block")


@dataclass(frozen=True)
class Spec:
    """Initial state, horizon and measurement window [t_lo, t_hi] of a test system."""

    x0: tuple
    y0: tuple
    t_end: float = 2.0
    t_lo: float = 1.0


SPECS = {
    "linear": Spec((0.0,), (1.0,)),
    "michaelis_menten": Spec((0.0,), (1.0,)),
    "block": Spec((0.0, 0.0), (1.0, -0.5)),
    "control": Spec((1.01,), (1.0,)),  # starts 0.01 off the repelling branch x = y
    "chain3": Spec((1.0, 0.0, 0.0), (0.5, -0.5), t_end=1.5),
    "chain3_reducible": Spec((1.0, 0.0, 0.0), (0.5, -0.5), t_end=1.0),
}


def _fn(name: str):
    if not hasattr(gen, name):
        raise ValueError(f"no generated function {name!r} in numerics.generated.slow_manifold")
    return getattr(gen, name)


def _check_system(system: str) -> Spec:
    if system not in SPECS:
        raise ValueError(f"system={system!r} is not one of {', '.join(SPECS)}")
    return SPECS[system]


def _check_eps(eps: float) -> float:
    if not (isinstance(eps, (int, float)) and 0 < eps < 1):
        raise ValueError(f"eps={eps!r} must lie in (0, 1) (ε = 1/P)")
    return float(eps)


def _t(values) -> list[torch.Tensor]:
    return [torch.as_tensor(v, dtype=torch.float64, device="cpu") for v in values]  # host: solve_ivp's numpy values


def vector_field(system: str, eps: float):
    """(fun, jac) for solve_ivp from the generated [f/ε; g] and its Jacobian."""
    _check_system(system)
    rhs, jac = _fn(f"{system}_rhs"), _fn(f"{system}_jac")
    e = torch.tensor(_check_eps(eps), dtype=torch.float64, device="cpu")  # host: solve_ivp's numpy values

    def fun(t, z):
        with torch.inference_mode():  # one call per Radau stage: keep torch's per-op overhead low
            return rhs(*torch.from_numpy(np.asarray(z, dtype=np.float64)).unbind(), e).reshape(-1).numpy()

    def jacobian(t, z):
        with torch.inference_mode():
            return jac(*torch.from_numpy(np.asarray(z, dtype=np.float64)).unbind(), e).numpy()

    return fun, jacobian


@dataclass
class Trajectory:
    t: np.ndarray        # (n_t,)
    x: np.ndarray        # (n_t, m)
    y: np.ndarray        # (n_t, n)
    eps: float
    system: str


def simulate(system: str, eps: float, t_eval: np.ndarray | None = None, x0=None, y0=None,
             rtol: float = RTOL, atol: float = ATOL) -> Trajectory:
    """Integrate ε ẋ = f, ẏ = g with scipy Radau and the generated Jacobian."""
    spec = _check_system(system)
    x0 = spec.x0 if x0 is None else tuple(x0)
    y0 = spec.y0 if y0 is None else tuple(y0)
    if t_eval is None:
        t_eval = np.linspace(0.0, spec.t_end, 401)
    fun, jac = vector_field(system, eps)
    sol = solve_ivp(fun, (0.0, float(t_eval[-1])), np.array(x0 + y0, dtype=float), method="Radau",
                    t_eval=t_eval, jac=jac, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"Radau failed on {system} at eps={eps}: {sol.message}")
    m = len(x0)
    return Trajectory(sol.t, sol.y[:m].T, sol.y[m:].T, eps, system)


def token_recurrence(system: str, P: int, t_end: float | None = None) -> Trajectory:
    """The discrete token/block recurrence of a linear system at ε = 1/P, read at block ends.

    z_{i+1} = E z_i, E = exp(δ M), M = the generated (constant) Jacobian of [f/ε; g],
    δ = BLOCK_TIME/P the token step; n = t_end/BLOCK_TIME blocks of P tokens.
    """
    spec = _check_system(system)
    if system not in LINEAR_SYSTEMS:
        raise ValueError(f"system={system!r}: the exact token propagator needs a linear system "
                         f"({', '.join(LINEAR_SYSTEMS)})")
    if isinstance(P, bool) or not isinstance(P, int) or P < 2:
        raise ValueError(f"P={P!r} must be an integer ≥ 2")
    t_end = spec.t_end if t_end is None else t_end
    eps = 1.0 / P
    z = torch.tensor(spec.x0 + spec.y0, dtype=torch.float64, device="cpu")  # host: solve_ivp's numpy values
    M = _fn(f"{system}_jac")(*_t(z), torch.tensor(eps, dtype=torch.float64, device="cpu"))  # host: solve_ivp's numpy values
    E = torch.linalg.matrix_exp(M * (BLOCK_TIME / P))
    n_blocks = int(round(t_end / BLOCK_TIME))
    states = [z]
    for _ in range(n_blocks):
        for _ in range(P):  # one token at a time
            z = E @ z
        states.append(z)
    Z = torch.stack(states).numpy()
    m = len(spec.x0)
    return Trajectory(np.arange(n_blocks + 1) * BLOCK_TIME, Z[:, :m], Z[:, m:], eps, system)


def manifold(system: str, k: int, y: np.ndarray, eps: float) -> np.ndarray:
    """φ^{(k)}(y) at every row of y (n_t, n) -> (n_t, m)."""
    out = _fn(f"{system}_phi{k}")(*_t(y.T), torch.tensor(eps, dtype=torch.float64, device="cpu"))  # host: returns numpy
    return out[..., 0].numpy()


def manifold_distance(traj: Trajectory, k: int, t_lo: float | None = None) -> float:
    """max over t ≥ t_lo of ‖x(t) − φ^{(k)}(y(t))‖₂ (past the boundary layer)."""
    t_lo = SPECS[traj.system].t_lo if t_lo is None else t_lo
    sel = traj.t >= t_lo - 1e-12
    gap = traj.x[sel] - manifold(traj.system, k, traj.y[sel], traj.eps)
    return float(np.linalg.norm(gap, axis=1).max())


def reduced_error(traj: Trajectory) -> float:
    """max_t ‖y(t) − Y(t)‖₂ with Ẏ = g(φ₀(Y), Y), Y(0) = y(0) (Tikhonov's reduced flow)."""
    red = _fn(f"{traj.system}_reduced")
    n = traj.y.shape[1]

    def fun(t, Y):
        with torch.inference_mode():
            return red(*torch.from_numpy(np.asarray(Y, dtype=np.float64)).unbind()).reshape(-1).numpy()

    sol = solve_ivp(fun, (0.0, float(traj.t[-1])), traj.y[0], method="Radau", t_eval=traj.t,
                    rtol=RTOL, atol=ATOL)
    return float(np.linalg.norm(sol.y[:n].T - traj.y, axis=1).max())


def radau_vs_recurrence(system: str, P: int) -> float:
    """max over block ends of ‖z_Radau − z_recurrence‖₂: the two integrators agree."""
    rec = token_recurrence(system, P)
    rad = simulate(system, 1.0 / P, t_eval=rec.t)
    return float(np.linalg.norm(np.hstack([rad.x - rec.x, rad.y - rec.y]), axis=1).max())


def stationary_distance(traj: Trajectory, t_lo: float | None = None) -> float:
    """max over t ≥ t_lo of ‖x(t) − p_st(y(t))‖₂ for the 3-state chain."""
    t_lo = SPECS[traj.system].t_lo if t_lo is None else t_lo
    sel = traj.t >= t_lo - 1e-12
    return float(np.linalg.norm(traj.x[sel] - stationary(traj.y[sel]), axis=1).max())


def stationary(y: np.ndarray) -> np.ndarray:
    """p_st(y) of the 3-state chain at every row of y (n_t, 2) -> (n_t, 3)."""
    return _fn("chain3_stationary")(*_t(y.T))[..., 0].numpy()


def convergence(system: str, Ps=ALL_PS, fit_Ps=FIT_PS, orders=(0, 1, 2), recurrence: bool = False) -> dict:
    """dist(x, φ^{(k)}(y)) and the reduced-flow error at ε = 1/P, with slopes fitted over fit_Ps.

    ``recurrence`` uses the discrete token recurrence instead of Radau (linear systems).
    """
    rows = []
    for P in Ps:
        traj = token_recurrence(system, P) if recurrence else simulate(system, 1.0 / P)
        row = {"P": P, "eps": 1.0 / P}
        for k in orders:
            row[f"dist_k{k}"] = manifold_distance(traj, k)
        row["reduced"] = reduced_error(traj)
        rows.append(row)
    fit = [r for r in rows if r["P"] in fit_Ps]
    slopes = {key: loglog_fit([r["eps"] for r in fit], [r[key] for r in fit]).slope
              for key in [f"dist_k{k}" for k in orders] + ["reduced"]}
    return {"system": system, "integrator": "token recurrence" if recurrence else "Radau",
            "rows": rows, "slopes": slopes, "fit_Ps": list(fit_Ps)}
