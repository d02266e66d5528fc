"""Figures of the architecture variants: the claims matrix, mhc composite gain, looped margin."""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from numerics.linearised.jacobians import stack_jacobian
from proofs_check.report.figures import figure, save

COLOURS = {"holds": "#4caf50", "conditional": "#ffc107", "fails": "#e53935", "n/a": "#bdbdbd"}


def _matrix(ctx):
    """The matrix from ``ctx.cache_dir/matrix.json`` when reproduce wrote one, else a quick run
    of the non-ledger columns (preln comes from the ledger, which this figure does not rerun)."""
    if ctx.cache_dir and (Path(ctx.cache_dir) / "matrix.json").exists():
        return json.loads((Path(ctx.cache_dir) / "matrix.json").read_text())
    from numerics.stacks.architectures import ARCHS
    from proofs_check.runners.grid import run_matrix

    return run_matrix(quick=True, only_arch=[a for a in ARCHS if a != "preln"])


@figure("claims_matrix", claim="2.1", title="Claims × architectures: holds / conditional / fails / n/a")
def claims_matrix(ctx, out_dir):
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    m = _matrix(ctx)
    archs, ids = m["options"]["archs"], m["options"]["claims"]
    by = {(c["claim"], c["arch"]): c["status"] for c in m["cells"]}
    fig, ax = plt.subplots(figsize=(1.1 * len(archs) + 2, 0.32 * len(ids) + 1.5))
    for i, cid in enumerate(ids):
        for j, a in enumerate(archs):
            st = by.get((cid, a), "n/a")
            ax.add_patch(plt.Rectangle((j, i), 0.96, 0.92, color=COLOURS[st]))
            ax.text(j + 0.48, i + 0.46, st, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(archs)), ax.set_ylim(len(ids), 0)
    ax.set_xticks([j + 0.48 for j in range(len(archs))], archs, rotation=30)
    ax.set_yticks([i + 0.46 for i in range(len(ids))], [f"claim {c}" for c in ids])
    ax.tick_params(length=0)
    ax.legend(handles=[Patch(color=c, label=s) for s, c in COLOURS.items()], loc="upper left",
              bbox_to_anchor=(1.01, 1), fontsize=8)
    sizes = "quick (CI) sizes" if m["options"].get("quick", True) else "full sizes"
    ax.set_title(f"Claims × architectures ({sizes})")
    return save(fig, out_dir, "claims_matrix")


@figure("mhc_composite_gain", claim="2.1", title="mhc: composite gain ‖H_ℓ⋯H_1‖₂ vs depth, Sinkhorn vs unconstrained")
def mhc_composite_gain(ctx, out_dir):
    import matplotlib.pyplot as plt

    from numerics.stacks.spec import StackSpec, build

    depth = 32 if ctx.quick else 64
    seeds = range(4 if ctx.quick else 16)
    fig, ax = plt.subplots(figsize=(6, 4))
    for mixing, colour in (("sinkhorn", "C0"), ("unconstrained", "C3")):
        for k, seed in enumerate(seeds):
            s = build(StackSpec(arch="mhc", T=4, d=4, layers=depth, heads=2, kernel="causal", seed=seed,
                                arch_options={"mixing": mixing}))
            with torch.no_grad():
                g = s.composite_gain().numpy()
            ax.semilogy(range(1, depth + 1), g, color=colour, alpha=0.7,
                        label=f"{mixing} (n = 4 streams)" if k == 0 else None)
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="‖H‖₂ ≤ 1 (doubly stochastic)")
    ax.set_xlabel("depth ℓ")
    ax.set_ylabel("composite gain ‖H_ℓ ⋯ H_1‖₂")
    ax.set_title("mhc: Sinkhorn-projected vs unconstrained stream mixing")
    ax.legend(fontsize=8)
    return save(fig, out_dir, "mhc_composite_gain")


@figure("looped_margin", claim="5.1", title="Looped stacks: stability margin vs the injection decay Δ")
def looped_margin(ctx, out_dir):
    """Measured per-loop margin μ = −(1/K) Σ_k log‖M_k‖₂ of the x-part of the looped step Jacobian
    along the trajectory, against the generated lower bound −log(e^{−Δ a_min} + max‖G_k − I‖)."""
    import matplotlib.pyplot as plt

    from numerics.stacks.spec import StackSpec, build
    from numerics.generated import architectures as gen

    deltas = torch.linspace(0.05, 3.0, 10 if ctx.quick else 30, dtype=torch.float64, device="cpu")  # host: a figure's values
    loops = 6
    measured, lower = [], []
    for dl in deltas.tolist():
        s = build(StackSpec(arch="looped", T=4, d=4, layers=loops, heads=2, kernel="causal", seed=0,
                            arch_options={"injection": True, "injection_delta": dl}))
        X = torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0), device="cpu")  # seeded on the host (a CPU generator)
        with torch.no_grad():
            states = s.trajectory(X)
        logs, devs = [], []
        for i in range(loops):
            x = states[i][..., :4].detach()
            e = states[i][..., 4:].detach()
            Jx = stack_jacobian(lambda z: s.step(i, torch.cat([z, e], -1))[..., :4], x, chunk_size=1)
            Jl = stack_jacobian(s.layer, x, chunk_size=1)
            logs.append(math.log(float(torch.linalg.matrix_norm(Jx, ord=2))))
            devs.append(float(torch.linalg.matrix_norm(Jl - torch.eye(16, dtype=torch.float64, device="cpu"), ord=2)))  # host: a figure's values
        measured.append(-sum(logs) / loops)
        a_min = float(s.inj_a.detach().min())
        lower.append(float(gen.looped_margin_lower(torch.tensor(dl, device="cpu"), torch.tensor(a_min, device="cpu"), torch.tensor(max(devs), device="cpu"))))  # host: a figure's values
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(deltas, measured, "o-", label="measured μ (per loop)")
    ax.plot(deltas, lower, "s--", label="bound −log(e^{−Δ a_min} + ‖G − I‖)")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("injection decay Δ")
    ax.set_ylabel("stability margin μ")
    ax.set_title("Looped stack with Parcae decay injection")
    ax.legend(fontsize=8)
    return save(fig, out_dir, "looped_margin")
