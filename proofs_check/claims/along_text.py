"""The claims stated at 1x̄ᵀ, measured on a checkpoint's weights at the states its held-out text visits.

A trained or imported checkpoint (``fastslow check --stack``) is judged where a language model runs: on
windows of the corpus's validation split (``numerics.text.held_out``), not at the token-homogeneous reference,
where Claims 2.1–4.1 are identities that hold for any weights.  Each measurement has an independent route
and a threshold from the claim's own statement (docs/reach.md, "On a checkpoint"):

* **1.1** (an Euler scheme): the weights' depth roughness against the step h (no text needed).
* **2.1** (every layer factorises along its kernel): per layer, the visited factorised form
  (``numerics.text.visited``: the kernels the text visits, the token-wise maps at the token mean) against the
  layer's jvp; exact at 1x̄ᵀ, so the tolerance is float64 rounding of one layer.
* **2.2** (the factorisation's conditions): the text's spread and the visited kernels' commutators.
* **2.3** (J = the product of the factorised layers): the same for the whole stack against its jvp.
* **2.4** (W_Q, W_K invisible): the Q/K weights' share of the output's parameter derivative (forward mode).
* **3.1** (saturation depth and its bound): the decaying bundle's size along the visited trajectory
  against the reference bound.
* **3.2** (coarse-graining): ‖ΠJ(I − Q)V‖/‖JV‖ by jvp at the text's states.
* **4.1** (W_Q, W_K invisible): their share of the per-token held-out loss's change, finite differences
  against forward mode.
* **4.2** (the cross-block coupling is visible): ∂ℓ_t/∂g_ℓ of the per-token held-out loss by autograd
  with the checkpoint's own readout, visible when the mean loss's derivative exceeds its rounding floor;
  block 0's tokens, which the shifted slow path never reaches, are the control (0 to rounding).
* **5.1, 5.3** (the gate bound and the bracket above it): the stability margin μ they need, through its upper
  bound μ⁺ over the homogeneous modes at the text's token mean, and the mean direction's gain 1 − hα along the
  visited states (``numerics.families.trained_margin``); vacuous where μ⁺ ≤ 0.

Where the text misses an exact statement by more than rounding the verdict is *conditional*: the claim
holds on these weights only at the reference where it is exact, a condition held-out text does not meet,
and the condition names the number by which the text misses.  Nothing here is evidence against the
identity at 1x̄ᵀ, which ``check`` verifies.
"""

from __future__ import annotations


import torch

from numerics.text import held_out
from numerics.families.qk_loss_share import FD_STEP, loss_qk_shares
from numerics.linearised import matrix_free as mf
from numerics.text import reach as R
from numerics.text import visited as VI
from proofs_check.verdicts.on_stack import Verdict
from proofs_check.verdicts.run_scope import per_run

PROBES = 2          # Gaussian probes V per J·V
PROBE_SEED = 7


def windows_for(spec) -> int:
    """Held-out windows measured: 4, or 1 above T·d = 65536 (GPT-2-small's 1024 × 768 is 786432)."""
    return held_out.WINDOWS if spec.T * spec.d <= 65536 else 1


@per_run(maxsize=2)
def text(spec) -> held_out.HeldOut:
    return held_out.load(spec, windows_for(spec))


def _describe(h: held_out.HeldOut, states: torch.Tensor) -> dict:
    spreads = R.token_spread(states)                 # (L+1, windows)
    return {"windows": int(h.tokens.shape[0]), "T": int(h.tokens.shape[1]), "tokenisation": h.tokenisation,
            "spread_by_layer": [float(s) for s in spreads.mean(-1)], "spread_mean": float(spreads.mean())}


def _rounding(spec, layers: int) -> float:
    return mf.rounding_tolerance(spec.T, spec.d, layers, torch.float64, spec.knob("mlp_ratio", 4))


def _judged(cid: str, spec, error: float, tolerance: float, measured: dict, predicted: dict, what: str,
            exact_at: str = "the token-homogeneous reference 1x̄ᵀ with the gates closed") -> Verdict:
    """*holds* when the measurement along the text is within the float64 rounding of the exact statement;
    *conditional* otherwise: the claim holds on these weights only under the condition the text does not
    meet (the token-homogeneous reference, gates closed), named with the number by which the text misses."""
    holds = error <= tolerance
    where = (f"along {measured['text']['windows']} held-out window(s) of T = {measured['text']['T']} "
             f"(mean token spread {measured['text']['spread_mean']:.3f})")
    condition = None if holds else (f"{exact_at}, where it is exact; "
                                    f"{what} {error:.3g} {where}, against {tolerance:.1e} (float64 rounding)")
    return Verdict(cid, "holds" if holds else "conditional", measured={**measured, "form": "along held-out text"},
                   predicted=predicted, error=error, tolerance=tolerance, condition=condition)


@per_run(maxsize=2)
def _factorisation(spec) -> dict:
    h = text(spec)
    base = VI.plain(h.stack)
    states = h.states()
    V = mf.probes(PROBES, spec.T, spec.d, seed=PROBE_SEED)
    layer, whole = [], []
    for w in range(h.X0.shape[0]):
        layer.append(VI.layer_errors(base, h.X0[w], V))
        whole.append(VI.stack_error(base, h.X0[w], V)["error"])
    return {"text": _describe(h, states), "layer_errors": [max(e[ell] for e in layer) for ell in range(len(layer[0]))],
            "stack_errors": whole}


def factorisation_layers(spec) -> Verdict:
    """2.1 along held-out text: max over layers and windows of ‖Ĵ_ℓ V − J_ℓ V‖/‖J_ℓ V‖."""
    f = _factorisation(spec)
    error = max(f["layer_errors"])
    measured = {"text": f["text"], "layer_errors": f["layer_errors"], "route": "jvp of each layer at its visited state"}
    return _judged("2.1", spec, error, _rounding(spec, 1), measured, {"layer_error": 0.0},
                   "the factorised form with the visited kernels misses a layer's J·V by")


def factorisation_stack(spec) -> Verdict:
    """2.3 along held-out text: max over windows of ‖Ĵ V − J V‖/‖J V‖ for the whole stack."""
    f = _factorisation(spec)
    error = max(f["stack_errors"])
    measured = {"text": f["text"], "stack_errors": f["stack_errors"], "layer_errors": f["layer_errors"],
                "route": "jvp of the stack"}
    return _judged("2.3", spec, error, _rounding(spec, spec.layers), measured, {"stack_error": 0.0},
                   "the product of the visited factorised layers misses the stack's J·V by")


def qk_invisibility(spec) -> Verdict:
    """2.4 along held-out text: the Q/K share of the output's parameter derivative, max over windows."""
    h = text(spec)
    base = VI.plain(h.stack)
    shares = [R.qk_share(base, h.X0[w], seed=PROBE_SEED) for w in range(h.X0.shape[0])]
    measured = {"text": _describe(h, h.states()), "qk_shares": shares,
                "route": "forward-mode parameter derivatives, unit relative tangents of W_Q, W_K against W_V, W_O"}
    return _judged("2.4", spec, max(shares), _rounding(spec, spec.layers), measured, {"qk_share": 0.0},
                   "W_Q, W_K move the output, relative to W_V, W_O, by")


def gate_visibility(spec) -> Verdict:
    """4.2 along held-out text: ∂ℓ_t/∂g_ℓ of the per-token held-out loss (autograd through the stack)."""
    h = text(spec)
    base = VI.plain(h.stack)
    P = base.config.P
    if P is None:
        return Verdict("4.2", "n/a", reason="this model has no slow path, so no gate g: Claim 4.2 is about the "
                       "hierarchical slow path's cross-block coupling")
    D = torch.stack([gate_loss_derivatives(h, base, w) for w in range(h.X0.shape[0])])     # (windows, T−1, L)
    mean_grad = D.mean(dim=(0, 1))                                                       # ∂(mean loss)/∂g_ℓ
    floor = _rounding(spec, spec.layers) * float(D.abs().max().clamp_min(torch.finfo(D.dtype).tiny))
    block0 = float(D[:, :P].abs().max())                 # ℓ_t for t < P reads x_{L,t}, t in block 0
    later = D[:, P:].abs()
    visible_share = float((later > floor).to(D.dtype).mean())
    error = floor / float(mean_grad.abs().max().clamp_min(torch.finfo(D.dtype).tiny))
    measured = {"text": _describe(h, h.states()), "dloss_dgate": [float(g) for g in mean_grad],
                "block0_max": block0, "later_tokens_visible_share": visible_share, "rounding_floor": floor,
                "gates": [float(lay.gate.detach()) for lay in base.layers],
                "route": "autograd (jacrev) of the per-token loss through the stack and the checkpoint's readout"}
    holds = error <= 1.0 and block0 <= floor
    reason = None if holds else (
        f"the gate's derivative of the mean held-out loss {float(mean_grad.abs().max()):.3g} is within the rounding "
        f"floor {floor:.1e}" if error > 1.0 else f"block 0's loss moves with the gate ({block0:.3g} > {floor:.1e}): "
        "the slow path's one-block shift should keep it out")
    return Verdict("4.2", "holds" if holds else "fails", measured={**measured, "form": "along held-out text"},
                   predicted={"block0": 0.0}, error=error, tolerance=1.0, reason=reason,
                   counterexample=None if holds else {"spec": spec.as_dict()})


def gate_loss_derivatives(h: held_out.HeldOut, stack, w: int) -> torch.Tensor:
    """∂ℓ_t/∂g_ℓ (T−1, L) on window ``w`` by ``torch.func.jacrev`` through the stack and the readout."""
    from torch.func import functional_call, jacrev

    names = [f"layers.{i}.gate" for i in range(len(stack.layers))]
    params = {k: v.detach() for k, v in stack.named_parameters()}
    one = h.window(w)

    def losses(*gates):
        X_L = functional_call(stack, {**params, **dict(zip(names, gates))}, (h.X0[w],))
        return one.per_token_losses(X_L[None])[0]

    jac = jacrev(losses, argnums=tuple(range(len(names))))(*(params[k] for k in names))
    return torch.stack(jac, dim=-1).detach()


BOUND_WORK = 2e9        # T·L·d³ above which 3.1's reference bound (every mode's d×d blocks) is not built


def weight_visibility(spec) -> Verdict:
    """4.1 along held-out text: W_Q, W_K's visibility in the per-token held-out loss.

    For unit relative tangents δ_QK (every W_Q, W_K) and δ_VO (every W_V, W_O), the per-token loss change
    under the finite perturbation θ ± ε δ (central difference, ε = ``FD_STEP``) against forward mode's
    directional derivative (the independent route: the two agree to O(ε²)).  The share
    ‖Δℓ[δ_QK]‖/‖Δℓ[δ_VO]‖ is 0 at 1x̄ᵀ (the claim), so its tolerance is rounding."""
    h = text(spec)
    shares = loss_qk_shares(h, seed=PROBE_SEED, step=FD_STEP)
    measured = {"text": _describe(h, h.states()), **shares, "fd_step": FD_STEP,
                "route": "central finite differences of the per-token loss against forward-mode derivatives"}
    return _judged("4.1", spec, shares["qk_loss_share"], _rounding(spec, spec.layers), measured, {"qk_loss_share": 0.0},
                   "W_Q, W_K move the per-token held-out loss, relative to W_V, W_O, by")


def saturation(spec) -> Verdict:
    """3.1 along held-out text: the decaying bundle's size relative to the persistent one along the visited
    trajectory, q_ℓ = ‖X_ℓ − 1x̄_ℓᵀ‖/‖1x̄_ℓᵀ‖ over q_0, and its saturation depth ℓ*(τ) (the first layer from which
    every later q_ℓ/q_0 ≤ τ, worst window), against the claim's bound ⌈log(τ/κ)/log ρ̃⌉ built at the text's
    token mean with the slow-path gates closed (``numerics.families.coarse_graining.saturation_depth``)."""
    import copy

    from numerics.families import coarse_graining as ncg
    from proofs_check.claims.coarse_graining.specs import TAU

    h = text(spec)
    base = VI.plain(h.stack)
    states = h.states()                                          # (L+1, windows, T, d)
    s = R.token_spread(states)
    q = s / torch.sqrt(1 - s * s)
    ratio = (q / q[0]).max(dim=-1).values                        # worst window, ℓ = 0..L
    depth = ncg.first_saturated_layer(ratio[1:], TAU)
    L = len(base.layers)
    measured = {"text": _describe(h, states), "decaying_ratio": [float(r) for r in ratio], "saturation_depth": depth,
                "tau": TAU, "route": "the visited states' deviation from the homogeneous set (no linearisation)"}
    predicted = {}
    if spec.T * L * spec.d ** 3 <= BOUND_WORK:
        closed = copy.deepcopy(base)
        with torch.no_grad():
            for lay in closed.layers:
                if getattr(lay, "slow", None) is not None:
                    lay.gate.zero_()
        sd = ncg.saturation_depth(closed, h.X0.mean(dim=(0, 1)), TAU)
        predicted = {"rho_tilde": sd.rho, "kappa": sd.kappa, "saturation_bound": sd.bound,
                     "bound_vacuous": sd.bound_vacuous, "reference_saturation_depth": sd.measured}
    bound = predicted.get("saturation_bound")
    where = f"along the held-out text the decaying bundle ends at q_L/q_0 = {float(ratio[-1]):.3f}, ℓ*({TAU:g}) = {depth}"
    if bound is not None and bound < L:
        holds = depth is not None and depth <= bound
        return Verdict("3.1", "holds" if holds else "fails", measured={**measured, "form": "along held-out text"},
                       predicted=predicted, error=0.0 if holds else float("inf"), tolerance=1.0,
                       reason=None if holds else f"{where}, above the bound {bound}",
                       counterexample=None if holds else {"spec": spec.as_dict()})
    if not predicted:
        why = f"the bound's mode blocks are not built above T·L·d³ = {BOUND_WORK:.0e}"
    elif bound is None:
        why = f"ρ̃ = {predicted['rho_tilde']:.4f} ≥ 1 on these weights: no bound"
    else:
        why = f"ρ̃ = {predicted['rho_tilde']:.4f}, bound {bound} ≥ L = {L} on these weights: vacuous"
    return Verdict("3.1", "conditional", measured={**measured, "form": "along held-out text"}, predicted=predicted,
                   condition=f"ρ̃ < 1 and a bound below L (a contracting value path); {why}; {where}")


ROUGH_GROUPS = ("W_QK", "W_VO", "W1", "W2")   # the weight matrices (gains and biases sit near 1 or 0)
COMMUTATOR_PAIRS = 32                          # visited kernel pairs whose commutator 2.2 measures
COARSE_P = 8                                   # 3.2's block length on a model without blocks


def depth_roughness(spec) -> Verdict:
    """1.1 on a checkpoint's weights: the Euler reading needs weights sampled from a smooth depth path,
    θ_ℓ = θ(ℓh), so that θ_{ℓ+1} − θ_ℓ = h θ' + O(h²).  Measured: the depth roughness
    r = mean_ℓ ‖θ_{ℓ+1} − θ_ℓ‖/‖θ_ℓ‖ of each weight matrix (``experiments.depth_smoothness``), against the
    step h (a path of unit relative rate over the depth time) and √2 (independent draws per layer)."""
    from proofs_check.experiments.depth_smoothness import IID_RATIO, stack_roughness

    base = VI.plain(spec.with_(dtype="float64").build())
    if len(base.layers) < 2:
        return Verdict("1.1", "n/a", reason="one layer: the weights have no layer-to-layer change to measure")
    rough = stack_roughness(base)
    worst = max(rough[g] for g in ROUGH_GROUPS)
    h = float(base.config.h)
    measured = {"roughness": {g: rough[g] for g in ROUGH_GROUPS}, "step": h, "iid_roughness": IID_RATIO,
                "form": "depth roughness of the checkpoint's weights"}
    groups = ", ".join(f"{g} {rough[g]:.2f}" for g in ROUGH_GROUPS)
    condition = None if worst <= h else (
        f"weights sampled from a smooth depth path (layer-to-layer change ≤ h = {h:.3g}); these change by {groups} "
        f"per layer, against {IID_RATIO:.2f} for independent draws: they are not an Euler path")
    return Verdict("1.1", "holds" if worst <= h else "conditional", measured=measured,
                   predicted={"roughness_at_most": h}, error=worst, tolerance=h, condition=condition)


def kernel_conditions(spec) -> Verdict:
    """2.2 along held-out text: the factorisation's conditions, measured where the text runs: (a) the
    homogeneous reference (the visited states' token spread) and (c) one kernel shared by every head and
    layer (the visited kernels' relative commutators ‖A_iA_j − A_jA_i‖_F/(‖A_i‖‖A_j‖), ``COMMUTATOR_PAIRS``
    seeded pairs), beside the factorisation's residual they leave (2.3's stack error)."""
    h = text(spec)
    base = VI.plain(h.stack)
    states = h.states()
    comm = VI.kernel_commutators(base, h.X0[0], COMMUTATOR_PAIRS, PROBE_SEED)
    n = len(base.layers) * base.config.heads
    desc = _describe(h, states)
    violation = max(desc["spread_mean"], max(comm, default=0.0))
    measured = {"text": desc, "kernel_commutator_max": max(comm, default=0.0), "kernels": n,
                "stack_errors": _factorisation(spec)["stack_errors"], "route": "the visited attention matrices"}
    return _judged("2.2", spec, violation, _rounding(spec, 1), measured, {"violation": 0.0},
                   "the conditions are violated (spread, kernels' commutator) by")


def coarse_residual(spec) -> Verdict:
    """3.2(a) along held-out text: ‖Π J(X)(I − Q)V‖/‖J(X)V‖ at the text's states (J V by jvp of the stack;
    Π pooling blocks of P, Q = Π⁺Π), 0 at 1x̄ᵀ for kernels that leave ker Π invariant."""
    h = text(spec)
    base = VI.plain(h.stack)
    P = base.config.P or next(p for p in (COARSE_P, 4, 2, 1) if spec.T % p == 0)
    V = mf.probes(PROBES, spec.T, spec.d, seed=PROBE_SEED)
    res = [VI.pooled_leak(base, h.X0[w], V, P) for w in range(h.X0.shape[0])]
    measured = {"text": _describe(h, h.states()), "P": P, "residuals": res, "route": "jvp of the stack"}
    return _judged("3.2", spec, max(res), _rounding(spec, spec.layers), measured, {"residual": 0.0},
                   "the pooled flow leaks from within-block deviations, ‖ΠJ(I − Q)V‖/‖JV‖ =",
                   exact_at="1x̄ᵀ with a kernel that leaves ker Π invariant (full or block; the causal kernel "
                            "misses there too)")


def stability_margin(spec, cid: str) -> Verdict:
    """5.1 and 5.3 on a checkpoint's weights: the gate bound g* (and 5.3's bracket above it) exists only where the
    stability margin μ > 0.  Measured (``proofs_check.claims.paper_setting.margin_record``): μ⁺ ≥ μ over the
    homogeneous modes at the text's token mean (autograd, against central differences) and the mean direction's
    gain per layer, 1 − hα, at the reference and along the held-out text's visited states (jvp).  μ⁺ ≤ 0: no
    gate is certified on these weights, the bound is vacuous.  Routes that disagree raise (an error, not a
    verdict)."""
    from proofs_check.claims import paper_setting as ps

    h = text(spec)
    r = ps.margin_record(VI.plain(h.stack), h.X0)
    if not ps.margin_routes_agree(r):
        raise RuntimeError(f"the margin's routes disagree: norms vs central differences {r['norm_route_ratio']:.3g}, "
                           f"mean-direction gains vs 1 − hα {r['mean_gain_ratio']:.3g} of their tolerances")
    what = "g*" if cid == "5.1" else "the bracket g* ≤ g_on ≤ g⁺"
    gains = ", ".join(f"{g:.6g}" for g in r["visited_mean_gains"])
    if r["mu_upper"] <= 0:
        condition = (f"μ > 0 (a contractive stack: residual decay α > 0); on these weights μ ≤ μ⁺ = {r['mu_upper']:.4g} "
                     f"(h = {r['h']:g}, ‖G_ℓ‖ = {', '.join(f'{a:.3g}' for a in r['norms'])}; the mean direction keeps "
                     f"gain {gains} along the held-out text, 1 − hα = {r['predicted_mean_gain']:g}), so {what} does not "
                     f"exist: the bound is vacuous here")
    else:
        condition = (f"μ > 0 and the slow path's maps K_ℓ; μ⁺ = {r['mu_upper']:.4g} > 0 on these weights (necessary, "
                     f"not sufficient: the certificate needs a slow path)")
    measured = {**r, "form": "stability margin on the weights",
                "route": "autograd G_ℓ against central differences (Richardson-bounded); jvp along the visited states"}
    return Verdict(cid, "conditional", measured=measured, predicted={"mu_upper": r["mu_upper"], "needs": "μ > 0"},
                   error=max(r["norm_route_ratio"], r["mean_gain_ratio"]), tolerance=1.0, condition=condition)
