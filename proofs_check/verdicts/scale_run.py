"""The stacks the claims' matrix-free forms run on, at any size: :class:`ScaleRun`.

A claim's matrix-free form (registered with ``proofs_check.verdicts.registry.matrix_free``, beside its dense
form) runs on the preset's stack (``numerics.stacks.presets``), on a trained checkpoint's or on any spec, or on a
stack variant derived from it with ``spec.with_`` (another kernel, a slow path, a knob: :data:`VARIANTS`) at
the same T, d, L and heads.  Each form has its negative control at the same size.  Nothing forms a (Td)²
Jacobian: the predictions are the matrix-free actions of ``numerics.linearised.matrix_free`` (J = Σ_m A^m ⊗ K_m at the
token-homogeneous reference 1x̄ᵀ, whose trajectory costs O(L d²)); the measurements are ``torch.func.jvp``
of the real stack on a few random probes, batched so that one primal pass serves several tangents, and
shared between the claims that read the same derivative (:meth:`ScaleRun.get`).

The tolerance of every J·V comparison is ``matrix_free.rounding_tolerance`` (L·(2T + 11d)·u, the
dot-product rounding bound of both routes) times the cancellation factor Σ_m‖term_m‖/‖J·V‖ of the
polynomial; slopes use ±0.1 as the ledger does (docs/theory.md §1, §2, §4).
"""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass, field

import torch

from numerics.stacks import kernels as K
from numerics.linearised import matrix_free as mf
from numerics.families.factorisation import affine_parts, layer_blocks
from numerics.storage.checkpoint import CheckpointError
from numerics.precision import SLOPE_TOL
from numerics.stacks.presets import check_preset, preset
from numerics.stacks.spec import DTYPES, StackSpec
from proofs_check.verdicts.evidence import ControlResult, Derivation, NumericResult

TAU = 0.5                 # Claim 3.1's tolerance τ
#: inhomogeneity / violation amplitude δ of the first-order controls, per dtype: the departure e(δ) must
#: dwarf the rounding tolerance (float32: γ ≈ 1e-5 at the toy size) while the O(δ) second-order term stays small
DELTAS = {"float64": 1e-3, "float32": 1e-2}
CONTRACTIVE = dict(decay=2.0, ln_gain=0.2, weight_scale=0.5)   # contractive stacks (Claim 5.1)

#: The stack variants a scale form may build from the preset, beyond the preset itself.
VARIANTS = {"full-slow": "the full kernel with a slow path", "causal-slow": "a slow path",
            "saturating": "value_scale = 20 weights, past the saturation depth",
            "contractive": "a slow path and contractive weights",
            "smooth-path": "a smooth weight path θ(t), sampled at other depths"}


@dataclass
class ScaleRun:
    """The preset's stacks, reference and shared derivatives, built once and reused by the claims."""

    name: str
    dtype: str = "float64"
    device: str = "cpu"
    seed: int = 0
    sizes: tuple | None = None     # (T, d, layers, heads) instead of the preset's (name "custom")
    source: StackSpec | None = None   # a spec (a trained checkpoint's) instead of the preset's
    cache: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.source is not None:
            self.spec = self.source.with_(dtype=self.dtype, device=self.device)
        elif self.sizes is None:
            check_preset(self.name)
            self.spec = preset(self.name, dtype=self.dtype, device=self.device, seed=self.seed)
        else:
            T, d, layers, heads = self.sizes
            self.spec = preset("toy", dtype=self.dtype, device=self.device, seed=self.seed).with_(
                T=T, d=d, layers=layers, heads=heads)
        self.tdtype = DTYPES[self.dtype]
        T, d, L = self.spec.T, self.spec.d, self.spec.layers
        # float64: the worst-case dot-product bound; float32: the probabilistic one (numerics.linearised.matrix_free)
        self.gamma = mf.rounding_tolerance(T, d, L, self.tdtype,
                                           model="worst" if self.dtype == "float64" else "probabilistic")
        self.delta = DELTAS[self.dtype]

    def rounding(self, extra: int = 0) -> float:
        """γ for dot products of summed length n + ``extra`` (n = ``matrix_free.dot_product_length``)."""
        s = self.spec
        n = mf.dot_product_length(s.T, s.d, s.layers) + extra
        u = mf.unit_roundoff(self.tdtype)
        return n * u if self.dtype == "float64" else 4.0 * math.sqrt(n) * u

    def derive(self, name: str, value: float, *, kappa: float = 1.0, margin: float = 1.0, extra: int = 0,
               n: float | None = None) -> Derivation:
        """The stated derivation of tolerance ``value``: margin·κ·γ over the J·V dot-product length
        (+ ``extra``), or margin·κ·n·u for an explicit ``n`` (worst case), in this run's dtype."""
        s = self.spec
        model = "worst" if self.dtype == "float64" or n is not None else "probabilistic"
        length = n if n is not None else mf.dot_product_length(s.T, s.d, s.layers) + extra
        return Derivation(name, float(value), mf.unit_roundoff(self.tdtype), float(length), float(kappa),
                          float(margin), model)

    def size(self) -> dict:
        s = self.spec
        return {"preset": self.name, "T": s.T, "d": s.d, "layers": s.layers, "heads": s.heads,
                "dtype": self.dtype, "device": self.device}

    def get(self, key, build):
        if key not in self.cache:
            self.cache[key] = build()
        return self.cache[key]

    def release(self, keep: set[str]) -> None:
        """Drop every cached stack and derivative of a variant not in ``keep`` (a later use rebuilds
        it): a gpt2-small stack is 0.7 GiB in float64, and five variants would not fit beside 5.1."""
        for key in list(self.cache):
            variant = key[1] if isinstance(key, tuple) and key[1] in VARIANTS else "preset"
            if variant not in keep:
                del self.cache[key]
        gc.collect()

    # -- the preset's (causal) stack, its reference and its action --------------------------
    def stack(self, variant: str = "preset"):
        if variant != "preset" and self.spec.checkpoint is not None:
            raise CheckpointError(f"needs the stack variant {variant!r} ({VARIANTS[variant]}), which the "
                                  "checkpoint does not hold")
        specs = {
            "preset": self.spec,
            "full-slow": self.spec.with_(kernel="full", P=self._block(), knobs={"value_scale": 1.0}),
            "causal-slow": self.spec.with_(P=self._block(), knobs={"value_scale": 1.0}),
            "saturating": self.spec.with_(knobs={"value_scale": 20.0}),
            "contractive": self.spec.with_(P=self.spec.T // 2, knobs=CONTRACTIVE),
            # one token: 1x̄ᵀ at T = 1, where a slow path has no block to pool (P unset)
            "smooth-path": self.spec.with_(T=1, layers=1, P=None, dtype="float64", device="cpu",
                                           knobs={"weight_path": "smooth"}),
        }
        return self.get(("stack", variant), lambda: specs[variant].build())

    def _block(self) -> int:
        """P for the slow-path stacks: 16 blocks where T allows."""
        T = self.spec.T
        return T // 16 if T % 16 == 0 and T >= 32 else max(1, T // 2)

    def xbar(self) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed + 1)
        x = torch.randn(self.spec.d, generator=g, dtype=torch.float64, device="cpu")  # seeded on the host
        return x.to(dtype=self.tdtype, device=self.device)

    def action(self, variant: str = "preset") -> mf.JacobianAction:
        return self.get(("action", variant), lambda: mf.JacobianAction(self.stack(variant), self.xbar()))

    def X0(self) -> torch.Tensor:
        return mf.reference_state(self.stack(), self.xbar())

    def probe(self, k: int = 1, seed: int = 0) -> torch.Tensor:
        s = self.spec
        return mf.probes(k, s.T, s.d, seed=self.seed + 100 + seed, dtype=self.tdtype, device=self.device)

    def inhomogeneity(self) -> torch.Tensor:
        """N (T, d) with unit-rms entries: the control's departure from 1x̄ᵀ."""
        return self.probe(1, seed=7)[0]

    def mode_probe(self):
        """(V, λ, right vectors, feature vectors): V = Σ_k s_k v_kᵀ over 16 representable causal modes."""
        T, d = self.spec.T, self.spec.d
        ks = mf.representable_causal_modes(T, 16)
        S = torch.stack([mf.causal_eigenvector(T, k, self.tdtype, self.device) for k in ks])
        g = torch.Generator().manual_seed(self.seed + 5)
        v = torch.randn(len(ks), d, generator=g, dtype=torch.float64, device="cpu").to(self.tdtype).to(self.device)
        v = v / v.norm(dim=1, keepdim=True)
        V = torch.einsum("kt,kd->td", S, v)
        return V, torch.tensor([1.0 / k for k in ks], dtype=self.tdtype, device=self.device), S, v

    def qk_tangent(self, stack) -> dict:
        """A random direction in every layer's (W_Q, W_K), unit-rms entries, scaled like the weights."""
        g = torch.Generator().manual_seed(self.seed + 9)
        out = {}
        for n, p in stack.named_parameters():
            if n.endswith("attn.W_Q") or n.endswith("attn.W_K"):
                out[n] = (torch.randn(p.shape, generator=g, dtype=torch.float64, device="cpu")  # seeded on the host
                          / math.sqrt(p.shape[1])
                          ).to(dtype=p.dtype, device=p.device)
        return out

    def reference_jvps(self) -> dict:
        """At 1x̄ᵀ, one primal pass: J·V (random probe), J·V_mode and D_θX_L[δθ_QK]."""
        def build():
            stack, X0 = self.stack(), self.X0()
            V = self.probe()[0]
            Vm = self.mode_probe()[0]
            qk = self.qk_tangent(stack)
            tangents = {n: torch.stack([torch.zeros_like(t), torch.zeros_like(t), t]) for n, t in qk.items()}
            out = mf.stack_jvp(stack, X0, torch.stack([V, Vm, torch.zeros_like(V)]), param_tangents=tangents,
                               chunk=2)   # two tangents per primal pass: peak memory ~3 GiB at gpt2-small
            return {"V": out[0], "mode": out[1], "qk": out[2]}
        return self.get("reference_jvps", build)

    def slow_jvps(self, variant: str) -> dict:
        """On a slow-path stack at its 1x̄ᵀ (gate 0): J·((I − Q)V) and ∂X_L/∂g·γ (γ random over the layers)."""
        def build():
            st = self.stack(variant)
            X0 = mf.reference_state(st, self.xbar())
            V = self.probe()[0]
            Vperp = V - self._Q() @ V
            gam = self.gate_direction()
            tangents = {f"layers.{i}.gate": torch.stack([torch.zeros((), dtype=gam.dtype, device=gam.device), gam[i]])
                        for i in range(len(gam))}
            out = mf.stack_jvp(st, X0, torch.stack([Vperp, torch.zeros_like(V)]), param_tangents=tangents)
            return {"perp": out[0], "gate": out[1]}
        return self.get(("slow_jvps", variant), build)

    def gate_direction(self) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed + 13)
        return torch.randn(self.spec.layers, generator=g, dtype=torch.float64, device="cpu").to(self.tdtype).to(self.device)

    def inhomogeneous_jvps(self, delta: float) -> dict:
        """At 1x̄ᵀ + δN: J(X)·V and D_θX_L[δθ_QK] (one primal pass)."""
        def build():
            stack = self.stack()
            X = self.X0() + delta * self.inhomogeneity()
            V = self.probe()[0]
            qk = self.qk_tangent(stack)
            tangents = {n: torch.stack([torch.zeros_like(t), t]) for n, t in qk.items()}
            out = mf.stack_jvp(stack, X, torch.stack([V, torch.zeros_like(V)]), param_tangents=tangents, chunk=2)
            return {"V": out[0], "qk": out[1]}
        return self.get(("inhomogeneous_jvps", delta), build)

    def _Q(self) -> torch.Tensor:
        T, P = self.spec.T, self._block()
        return (K.lift_matrix(T, P, self.tdtype, self.device) @ K.pool_matrix(T, P, self.tdtype, self.device))

    def predicted_V(self):
        """(J·V by the polynomial form, its cancellation factor)."""
        return self.get("predicted_V", lambda: tuple(t[0] for t in self.action().apply(self.probe())))


# ---- shared by the claims' matrix-free forms ---------------------------------------------
def numeric_result(cases, error, tol, detail, table=(), derivations=()) -> NumericResult:
    return NumericResult(cases=cases, max_error=float(error), tolerance=float(tol), detail=detail, table=list(table),
                         derivations=list(derivations))


def adjoint_check(run: ScaleRun) -> tuple[float, list[Derivation], str]:
    """The matrix-free Jᵀ that the power iterations use, checked where it is used: (the larger of its
    two errors over its tolerance, their derivations, a sentence).  One probe pair at 1x̄ᵀ: Jᵀ·U against
    ``torch.func.vjp`` (tolerance γ) and ⟨U, J·V⟩ = ⟨Jᵀ·U, V⟩ (tolerance γ + T·d·u: the two inner products)."""
    def build():
        s = run.spec
        err = mf.adjoint_errors(run.action(), run.stack(), run.X0(), run.probe(1, seed=21), run.probe(1, seed=22))
        tols = [run.derive("Jᵀ vs vjp", run.gamma),
                run.derive("⟨U, JV⟩ = ⟨JᵀU, V⟩", run.rounding(extra=s.T * s.d), extra=s.T * s.d)]
        ratio = max(err["vjp"] / tols[0].value, err["adjoint"] / tols[1].value)
        return ratio, tols, (f"matrix-free Jᵀ: vs vjp {err['vjp']:.1e} ≤ γ = {tols[0].value:.1e}, adjoint identity "
                             f"{err['adjoint']:.1e} ≤ {tols[1].value:.1e} (per cancellation factor κ ≤ {err['kappa']:.2f})")
    return run.get("adjoint", build)


def control_result(ok: bool, detail: str) -> ControlResult:
    return ControlResult("fails-as-predicted" if ok else "did-not-fail", detail)


def inhomogeneous_control(run: ScaleRun, key: str = "V"):
    """e(δ) = ‖J(1x̄ᵀ + δN)V − J(1x̄ᵀ)V‖/‖J(1x̄ᵀ)V‖ at δ and δ/2 (first order: ratio 2)."""
    base = run.reference_jvps()[key] if key == "V" else None
    e = []
    for delta in (run.delta, run.delta / 2):
        e.append(float(mf.relative_errors(run.inhomogeneous_jvps(delta)[key][None], base[None])))
    return e


def affine_blocks(stack, xbar, lam):
    """(G_ℓ(0), G_ℓ(1) − G_ℓ(0)), each (L, d, d), from the generated blocks, and the relative error of
    G_ℓ(0) + λ(G_ℓ(1) − G_ℓ(0)) against the generated block at λ = ``lam[-1]``.

    G_ℓ(λ) = (I + C_ℓ)((1 − hα)I + hλB_ℓ) is affine in λ, so two generated evaluations give every
    mode (one per λ would recompute the MLP stage's d×4d products for each)."""
    G0, slope = affine_parts(stack, xbar)
    direct = layer_blocks(stack, xbar, lam[-1:]).detach()[0]
    err = float(torch.linalg.vector_norm(direct - (G0 + lam[-1] * slope)) / torch.linalg.vector_norm(direct))
    return G0, slope, err


def affine_tolerance(run) -> float:
    """G_ℓ(λ) is a product of d×m and m×d factors (m = 4d): entries carry ≤ (d + m)·u relative error, ×10."""
    d = run.spec.d
    return 10 * (d + run.stack().config.mlp_ratio * d) * mf.unit_roundoff(run.tdtype)
