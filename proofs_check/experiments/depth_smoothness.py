"""Depth smoothness of trained weights: does training make the untied stack an Euler scheme?

Claim 1.1 reads an untied stack as the explicit Euler scheme of dX/dt = F(θ(t), X) when the
weights sample a smooth path, θ_ℓ = θ(ℓh), h = 1/L.  Then the layer-to-layer change is
θ_{ℓ+1} − θ_ℓ = h θ'(ℓh) + O(h²), and the **depth roughness**

    r_ℓ = ‖θ_{ℓ+1} − θ_ℓ‖_F / ‖θ_ℓ‖_F

falls like 1/L (log–log slope −1 in L).  Weights drawn i.i.d. per layer with mean zero (every
matrix of the initialisation) give r ≈ √2 at every depth (slope 0); the LayerNorm gains,
drawn as 1 + 0.1·noise, give r ≈ 0.1√2.

:func:`roughness` measures r per parameter group on a stack; :func:`measure` trains tiny
pre-LN stacks on the shipped text with the project's trainer (``proofs_check.experiments.train``) at
several depths and sets their roughness beside their initialisation's and beside the roughness
of the training *updates* Δ_ℓ = θ_ℓ − θ_ℓ(init) (smooth updates on rough weights would show
there).  The random smooth-path stack (``weight_path="smooth"``, slope −1) and the i.i.d. stack
(√2, slope 0) are the known answers that calibrate the estimator.

Run: ``python -m proofs_check.experiments.depth_smoothness --json docs/trained/depth_smoothness.json
--figure docs/trained/depth_smoothness.png`` (trains into the cache, ``$FASTSLOW_CACHE``).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path

import torch

from numerics.fitting import loglog_fit
from numerics.stacks.spec import StackSpec

#: parameter groups: name -> function of a layer returning the tensor (products are head-invariant)
GROUPS = {
    "W_QK": lambda l: torch.einsum("hdk,hek->de", l.attn.W_Q, l.attn.W_K),
    "W_VO": lambda l: l.attn.value_output(),
    "W_Q": lambda l: l.attn.W_Q,
    "W_K": lambda l: l.attn.W_K,
    "W_V": lambda l: l.attn.W_V,
    "W_O": lambda l: l.attn.W_O,
    "W1": lambda l: l.mlp.W1,
    "W2": lambda l: l.mlp.W2,
    "b1": lambda l: l.mlp.b1,
    "b2": lambda l: l.mlp.b2,
    "ln1.gamma": lambda l: l.ln1.gamma,
    "ln2.gamma": lambda l: l.ln2.gamma,
}
DEPTHS = (2, 4, 8, 16)
IID_RATIO = math.sqrt(2.0)


def group_tensors(stack) -> dict[str, list[torch.Tensor]]:
    """Every group's tensor per layer (float64, detached)."""
    with torch.no_grad():
        return {g: [fn(layer).detach().double() for layer in stack.layers] for g, fn in GROUPS.items()}


def roughness(tensors: list[torch.Tensor]) -> list[float]:
    """r_ℓ = ‖θ_{ℓ+1} − θ_ℓ‖/‖θ_ℓ‖ for ℓ = 0..L−2."""
    return [float((b - a).norm() / a.norm().clamp_min(1e-300)) for a, b in zip(tensors, tensors[1:])]


def stack_roughness(stack, reference=None) -> dict[str, float]:
    """Mean r over depth per group; with ``reference`` (the initialisation) the roughness of the update
    Δ_ℓ = θ_ℓ − θ_ℓ(reference) instead."""
    own = group_tensors(stack)
    if reference is not None:
        ref = group_tensors(reference)
        own = {g: [a - b for a, b in zip(own[g], ref[g])] for g in own}
    return {g: sum(r) / len(r) for g, ts in own.items() for r in [roughness(ts)]}


def calibration(depths=DEPTHS, d: int = 16, seed: int = 0) -> dict:
    """The estimator on stacks with a known answer: the smooth weight path (r ∝ 1/L, slope −1) and
    i.i.d. layers (r ≈ √2 for the zero-mean matrices, slope 0), at the trained stacks' width."""

    out = {}
    for path in ("smooth", None):
        rows = {L: stack_roughness(StackSpec(T=8, d=d, layers=L, heads=2, kernel="causal", seed=seed, knobs={"weight_path": path}).build()) for L in depths}
        out["smooth" if path else "iid"] = {
            "by_depth": {str(L): rows[L] for L in depths},
            "slope": {g: loglog_fit(depths, [rows[L][g] for L in depths]).slope for g in GROUPS}}
    return out


def measure(base=None, depths=DEPTHS, cache_dir=None, progress: bool = False) -> dict:
    """Train ``base`` (default ``proofs_check.experiments.train.FIGURE``) at each depth (cached checkpoints) and return
    the roughness of the trained weights, their initialisation and the updates, per group and depth."""
    from numerics.storage import checkpoint as ckpt
    from numerics.stacks.spec import StackSpec
    from numerics.text.training import default_cache_dir
    from proofs_check.experiments.train import FIGURE, default_checkpoint

    base = base or FIGURE
    cache_dir = Path(cache_dir or default_cache_dir())
    runs = {}
    for L in depths:
        cfg = replace(base, layers=L)
        path = default_checkpoint(cache_dir, progress=progress, cfg=cfg)
        manifest = ckpt.read_manifest(path)
        spec = StackSpec.from_dict({**manifest["spec"], "dtype": "float64"})
        init = spec.build()
        trained = spec.with_(checkpoint=str(path)).build()
        runs[str(L)] = {"checkpoint": path.name, "steps": manifest["step"],
                        "validation_loss": manifest["curves"]["eval_loss"][-1],
                        "trained": stack_roughness(trained), "init": stack_roughness(init),
                        "update": stack_roughness(trained, init)}
    slopes = {kind: {g: loglog_fit(depths, [runs[str(L)][kind][g] for L in depths]).slope for g in GROUPS}
              for kind in ("trained", "init", "update")}
    return {"config": {**base.as_dict(), "layers": list(depths)}, "depths": list(depths), "runs": runs,
            "slopes": slopes, "calibration": calibration(depths, base.d),
            "predictions": {"euler": "r ∝ 1/L (slope −1)", "iid": f"r ≈ √2 = {IID_RATIO:.3f} (slope 0)"},
            "statement": statement(runs, slopes, depths)}


def statement(runs: dict, slopes: dict, depths) -> str:
    """One sentence: the matrices' roughness after training against √2 and against 1/L."""
    mats = ("W_QK", "W_VO", "W1", "W2")
    deep = str(depths[-1])
    trained = ", ".join(f"{g} {runs[deep]['trained'][g]:.2f}" for g in mats)
    upd = ", ".join(f"{g} {slopes['update'][g]:+.2f}" for g in mats)
    tr = ", ".join(f"{g} {slopes['trained'][g]:+.2f}" for g in mats)
    return (f"At L = {deep} the trained layer-to-layer change ‖θ_ℓ+1 − θ_ℓ‖/‖θ_ℓ‖ is {trained} (i.i.d. "
            f"√2 = {IID_RATIO:.2f}; an Euler scheme needs it ∝ 1/L); depth slopes of the trained weights {tr} "
            f"(Euler −1, i.i.d. 0); of the training updates alone {upd}.")


def draw(result: dict):
    """The figure: r against L per group (trained, initialisation, updates, the smooth-path calibration),
    with the i.i.d. level √2; returns the matplotlib Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    depths = result["depths"]
    groups = ("W_QK", "W_VO", "W1", "W2")
    fig, axes = plt.subplots(1, len(groups), figsize=(3.2 * len(groups), 3.2), sharey=True)
    for ax, g in zip(axes, groups):
        for kind, style in (("trained", "o-"), ("init", "s--"), ("update", "^-")):
            ax.loglog(depths, [result["runs"][str(L)][kind][g] for L in depths], style, label=kind)
        smooth = [result["calibration"]["smooth"]["by_depth"][str(L)][g] for L in depths]
        ax.loglog(depths, smooth, "k:", label="smooth path (calibration)")
        ax.axhline(IID_RATIO, color="grey", lw=0.8)
        ax.set_title(g)
        ax.set_xticks(depths, [str(L) for L in depths])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("depth L")
    axes[0].set_ylabel("‖θ_ℓ+1 − θ_ℓ‖ / ‖θ_ℓ‖ (mean over ℓ)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Depth roughness of trained weights (grey: i.i.d. √2; Euler scheme: slope −1)", fontsize=9)
    fig.tight_layout()
    return fig


def plot(result: dict, out: Path) -> Path:
    """:func:`draw` written to ``out`` (PNG) atomically."""
    import matplotlib.pyplot as plt

    from numerics.storage.io import atomic_path

    fig = draw(result)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format=out.suffix.lstrip(".") or "png", dpi=120)
    plt.close(fig)
    return out


RECORDED = Path(__file__).resolve().parents[2] / "docs" / "trained" / "depth_smoothness.json"


def recorded() -> dict | None:
    """The committed run (``docs/trained/depth_smoothness.json``), or None."""
    import json

    return json.loads(RECORDED.read_text()) if RECORDED.exists() else None


def ledger_entry() -> dict | None:
    """The recorded run's sentence, depth slopes and provenance for the ledger's ``recorded`` section."""
    r = recorded()
    if r is None:
        return None
    return {"statement": r["statement"], "depths": r["depths"], "slopes": r["slopes"],
            "calibration_slopes": {k: v["slope"] for k, v in r["calibration"].items()},
            "recorded": r.get("recorded"), "file": "docs/trained/depth_smoothness.json"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True, help="where to write the numbers")
    p.add_argument("--figure", help="where to write the figure (PNG)")
    p.add_argument("--cache", help="checkpoint cache (default $FASTSLOW_CACHE or out/cache)")
    args = p.parse_args(argv)
    from numerics.storage.io import write_json

    import datetime

    from proofs_check.experiments.train import git_hash

    result = measure(cache_dir=args.cache, progress=True)
    result["recorded"] = {"git": git_hash(), "torch": torch.__version__,
                          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    write_json(Path(args.json), result)
    if args.figure:
        plot(result, Path(args.figure))
    print(result["statement"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
