"""Passages of docs/trained.md tied to the records that produced their numbers (``tests/test_docs_numbers.py``'s
``QUOTES``, same shape: doc, passage name, the function that regenerates the values, the pattern)."""

from __future__ import annotations

import statistics

import docs_ties as D
from docs_ties import passage

TRAINED = "docs/trained.md"


def corpus_split() -> dict:
    """The corpus's vocabulary and held-out fraction: the corpus module's constants, and the split the loaded
    corpus actually makes (its validation bytes over all bytes)."""
    from numerics.text.corpus import VALIDATION_FRACTION, VOCAB, ByteCorpus

    corpus = ByteCorpus.load()
    held = len(corpus.validation) / (len(corpus.train) + len(corpus.validation))
    assert abs(held - VALIDATION_FRACTION) < 1e-5, held       # the split is the constant (one byte of rounding)
    return {"vocab": VOCAB, "held": 100 * held}


def check_stack_grid() -> dict:
    """2.2's δ grid on a checkpoint: the linear limit of the off-block mass, the commutator's δ range (the row it
    measures on the paper's violation stack, rerun here), its rounding threshold at δ = 0; 2.4's number of Q/K
    directions."""
    from proofs_check.claims.factorisation import conditions as C
    from proofs_check.claims.factorisation.qk_invisibility import QK_DIRECTIONS

    row = C.commutator_row("alibi-slopes", C.VIOLATION_SPEC, 2)
    return {"mass": C.LINEAR_MASS, "lo": row["δ from"], "hi": row["δ to"], "zero": C.EXACT, "zero2": C.EXACT,
            "dirs": QK_DIRECTIONS}


def _entropy() -> float:
    """The validation text's unigram entropy in nats/byte, counted here from its bytes."""
    import numpy as np

    from numerics.text.corpus import ByteCorpus

    counts = np.bincount(ByteCorpus.load().validation.numpy().astype(np.int64), minlength=256)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def figure_stack() -> dict:
    """`FIGURE`'s validation loss: depth_smoothness.json's L = 4 run, which trains `FIGURE`'s configuration
    (checked here) at that depth."""
    from proofs_check.experiments.train import FIGURE

    ds = D._record("docs/trained/depth_smoothness.json")
    cfg = {**ds["config"], "layers": 4}
    assert cfg == FIGURE.as_dict(), "depth_smoothness.json no longer trains FIGURE's stack"
    return {"loss": ds["runs"]["4"]["validation_loss"]}


_CACHE: list = []


def _small_checkpoint():
    """`SMALL` trained here once per process (one thread, bit-reproducible on the CPU) into a temporary folder;
    its final validation loss must be the one reach-small.json records for that checkpoint."""
    import tempfile

    from numerics.storage import checkpoint as ckpt
    from proofs_check.experiments.train import SMALL, default_checkpoint

    if not _CACHE:
        _CACHE.append(tempfile.TemporaryDirectory())
        path = default_checkpoint(_CACHE[0].name, cfg=SMALL)
        recorded = next(s for s in D._record("docs/reach/reach-small.json")["stacks"] if s["stack"] == "trained")
        assert ckpt.read_manifest(path)["curves"]["eval_loss"][-1] == recorded["provenance"]["validation_loss"]
        _CACHE.append(path)
    return _CACHE[1]


def grid_trained_column() -> dict:
    """The grid's `trained` column, rerun here on `SMALL` (the grid's route: each claim's on-stack evaluation on
    the checkpoint's spec, in float64): the text's mean token spread, 3.1's ρ̃ and ℓ*(τ) along the text, 3.2's
    largest pooled-flow residual, 1.1's roughness range and step, 5.1's μ⁺."""
    from numerics.storage import checkpoint as ckpt
    from numerics.stacks.spec import StackSpec
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.verdicts.registry import get, load_checks

    path = _small_checkpoint()
    spec = StackSpec.from_dict({**ckpt.read_manifest(path)["spec"], "dtype": "float64", "checkpoint": str(path)})
    load_checks()
    v = {c: get(c).evaluate(spec, CheckContext()) for c in ("1.1", "3.1", "3.2", "5.1")}
    assert [v[c].status for c in v] == ["conditional"] * 4, {c: v[c].status for c in v}
    rough = v["1.1"].measured["roughness"].values()
    (rho,) = D._parse(v["3.1"].condition, r"ρ̃ = ([0-9.]+) ≥ 1")
    return {"spread": v["3.1"].measured["text"]["spread_mean"], "rho": rho, "ell": v["3.1"].measured["saturation_depth"],
            "r32": max(v["3.2"].measured["residuals"]), "r_lo": min(rough), "r_hi": max(rough),
            "h": v["1.1"].measured["step"], "mu": v["5.1"].measured["mu_upper"]}


def trained_vs_random() -> dict:
    """The figure `trained_vs_random` remeasured on `SMALL` (:func:`_small_checkpoint`): on the
    figure's 64 validation windows, layer by layer, the mean attention weight on token 0 of every later query
    and the state's token spread, for the trained stack (its embedding) and its initialisation (the trainer's
    initial embedding); the uniform causal kernel's weight on token 0, the mean of 1/(i + 1) over i ≥ 1."""
    import torch

    from numerics.storage import checkpoint as ckpt
    from numerics.stacks.spec import StackSpec
    from numerics.text.corpus import ByteCorpus

    path = _small_checkpoint()
    tensors, manifest = ckpt.load(path)
    spec = StackSpec.from_dict({**manifest["spec"], "dtype": "float64"})
    trained = spec.with_(checkpoint=str(path)).build()
    windows = ByteCorpus.load().validation_windows(spec.T, 64)
    init = torch.randn(256, spec.d, generator=torch.Generator().manual_seed(10_007 * spec.seed + 1), dtype=torch.float64)

    def profile(stack, x):
        sink, spread = [], []
        with torch.no_grad():
            for layer in stack.layers:
                sink.append(float(layer.attn.weights(layer.ln1(x))[..., 1:, 0].mean()))
                spread.append(float((x - x.mean(-2, keepdim=True)).norm() / x.norm()))
                x = layer(x)
        return sink, spread + [float((x - x.mean(-2, keepdim=True)).norm() / x.norm())]

    (s_r, sp_r), (s_t, sp_t) = profile(spec.build(), init[windows]), profile(trained, tensors["model"]["embed"].double()[windows])
    return {"sink": ("≤", max(abs(a - b) for a, b in zip(s_r, s_t))),
            "uniform": statistics.fmean(1 / (i + 1) for i in range(1, spec.T)), "t0": sp_t[0], "tL": sp_t[-1],
            "r0": sp_r[0], "rL": sp_r[-1]}


def ci_smoke_run() -> dict:
    """The CI smoke run rerun here as tests/test_train.py runs it (the CLI's `train`, pre-LN, its SMOKE sizes,
    80k tokens, into a temporary folder): its final validation loss; the validation text's unigram entropy."""
    import json
    import tempfile
    from pathlib import Path

    from proofs_check.cli import main
    from test_train import SMOKE

    with tempfile.TemporaryDirectory() as out:
        assert main(["train", "--arch", "preln", *SMOKE, "--tokens", "80000", "--out", out, "--no-progress"]) in (0, None)
        loss = json.loads((Path(out) / "manifest.json").read_text())["curves"]["eval_loss"][-1]
    return {"loss": loss, "entropy": _entropy()}


def powered_7_3() -> dict:
    """The power analysis (D.pilot_7_3: the pilot's d_z, the seeds it asks for) and the powered rerun's record,
    docs/trained/text-7.3.json: its per-seed gaps, its paired t, and layer 0's final gates."""
    import numpy as np
    from scipy import stats

    pilot = D.pilot_7_3()
    run = D._record("docs/trained/text-7.3.json")
    gaps = np.array(run["summary"]["gap_per_seed"])
    t, p = stats.ttest_1samp(gaps, 0.0)
    pt = run["summary"]["paired_t"]
    half = stats.t.ppf(1 - pt["alpha"] / 2, len(gaps) - 1) * gaps.std(ddof=1) / np.sqrt(len(gaps))
    out = {f"g{i}": g for i, g in enumerate(gaps)}
    out.update(power=pilot["power"], dz=pilot["dz"], n=pilot["n"], gap=gaps.mean(), dz5=gaps.mean() / gaps.std(ddof=1),
               level=100 * (1 - pt["alpha"]), lo=gaps.mean() - half, hi=gaps.mean() + half, t=t, dof=len(gaps) - 1,
               p=p, g_lo=pilot["g_lo"], g_hi=pilot["g_hi"])
    return out


def pilot_7_3() -> dict:
    """The 3-seed pilot's record (docs/trained/text-7.3-pilot.json): its gap, interval and per-seed gaps, the t
    quantile of its interval (the record's, and the level it gives with 2 dof), layer 0's final gates and the
    opening threshold, a tenth of Σ lr_t summed here from a run's learning-rate schedule."""
    from scipy import stats

    rec = D._record("docs/trained/text-7.3-pilot.json")
    s = rec["summary"]
    dof = len(rec["seeds"]) - 1
    out = {f"s{i}": g for i, g in enumerate(s["gap_per_seed"])}
    out.update({f"g{i}": g[0] for i, g in enumerate(s["gates"])})
    out.update(gap=s["gap"], lo=s["interval"][0], hi=s["interval"][1], tq=s["t"],
               level=100 * (1 - 2 * stats.t.sf(s["t"], dof)), thr=sum(rec["runs"][0]["lr"]) / 10)
    return out


def visibility_spectrum() -> dict:
    """The figure `visibility_trained_vs_random` remeasured: `VISIBILITY` trained here (one thread, into a temporary
    folder; its final validation loss), its parameter directions (the stack's parameters plus the T·d entries of
    the input offset the visibility Jacobian also differentiates), and the visible singular values of the trained
    stack and of its initialisation by an independent route: at 1x̄ᵀ the causal kernels' entries do not move
    with θ, so the visible spectrum is that of ∂(e₁ᵀX_L)/∂(θ, offset) alone (d rows, jacrev of the stack)."""
    import tempfile

    import torch
    from torch.func import functional_call, jacrev

    from numerics.storage import checkpoint as ckpt
    from numerics.stacks.spec import StackSpec
    from numerics.stacks.stack import random_xbar
    from proofs_check.experiments.train import default_checkpoint
    from proofs_check.report.figures.trained import VISIBILITY

    with tempfile.TemporaryDirectory() as cache:
        path = default_checkpoint(cache, cfg=VISIBILITY)
        manifest = ckpt.read_manifest(path)
        spec = StackSpec.from_dict({**manifest["spec"], "dtype": "float64"})
        stacks = {"random": spec.build(), "trained": spec.with_(checkpoint=str(path)).build()}
    X0 = torch.ones(spec.T, 1, dtype=torch.float64) * random_xbar(spec.d)    # the figure's reference 1x̄ᵀ
    out = {"loss": manifest["curves"]["eval_loss"][-1],
           "N": sum(p.numel() for p in stacks["random"].parameters()) + spec.T * spec.d}
    for name, stack in stacks.items():
        params = {k: v.detach() for k, v in stack.named_parameters()}
        jp, jo = jacrev(lambda p, off: functional_call(stack, p, (X0 + off,))[0], argnums=(0, 1))(
            params, torch.zeros_like(X0))
        sv = torch.linalg.svdvals(torch.cat([v.reshape(spec.d, -1) for v in [*jp.values(), jo]], dim=1))
        out[f"{name}_max"], out[f"{name}_min"] = float(sv[0]), float(sv[-1])
    return out


def gate_margin() -> dict:
    """The figure `gate_margin_over_training` remeasured: its run (`MARGIN`, one thread, into a temporary folder)
    with 5.1's certificate monitored at every validation step; μ at the first and last step, the largest learnt
    gate's peak and final value; no step may be certified (the doc says so)."""
    import tempfile

    from proofs_check.report.figures.trained import margin_run

    with tempfile.TemporaryDirectory() as cache:
        mon = margin_run(cache)["curves"]["monitor"]
    assert not any(m["status"] == "certified" for m in mon)
    return {"mu0": mon[0]["mu"], "muL": mon[-1]["mu"], "peak": max(m["gate_max"] for m in mon),
            "final": mon[-1]["gate_max"]}


QUOTES: list = [
    (TRAINED, "the corpus", corpus_split,
     passage("as bytes (vocabulary {vocab}), the last {held} % held out for validation")),
    (TRAINED, "check --stack's δ grid and forms", check_stack_grid,
     passage("its upper end keeps the off-block mass at 1 % (c·δ ≤ {mass}, with c the first-order coefficient).")
     + r"[\s\S]*?" + passage("Its slope over δ ∈ [{lo}, {hi}] must be 1 ± 0.1, and its value at δ = 0 at most {zero}.")
     + r"[\s\S]*?" + passage("or a commutator above {zero2} at δ = 0, is a failure")
     + r"[\s\S]*?" + passage("takes the Q/K derivative along {dirs} Gaussian directions")),
    (TRAINED, "the figure's stack", figure_stack,
     passage("400k bytes: validation {loss} nats/byte at 4 layers) is the stack")),
    (TRAINED, "the grid's trained column", grid_trained_column,
     passage("whose token spread averages {spread} over the stack's states") + r"[\s\S]*?"
     + passage("The trained weights give ρ̃ = {rho} ≥ 1, so the saturation bound is vacuous (along the text the decaying "
               "bundle falls below half its size after layer {ell}); the pooled flow leaks ‖ΠJ(I − Q)V‖/‖JV‖ = {r32} from")
     + r"[\s\S]*?" + passage("W_QK, W_VO, W1, W2 change by {r_lo}–{r_hi} per layer, against the step h = {h} of a "
                              "smooth depth path. 5.1 and 5.3 are conditional: μ ≤ μ⁺ = {mu} < 0")),
    (TRAINED, "trained_vs_random", trained_vs_random,
     passage("The attention on token 0 differs from the random stack's by ≤ {sink} in every layer, about the uniform "
             "causal kernel's {uniform}.") + r"\s*"
     + passage("- The token spread ‖X_ℓ − 1x̄ᵀ‖/‖X_ℓ‖ decays from {t0} to {tL} over 3 layers after training, against "
               "{r0} → {rL} at initialisation.")),
    (TRAINED, "the CI smoke run", ci_smoke_run,
     passage("reaches a validation loss of {loss} nats/byte against the validation text's unigram entropy of {entropy} in")),
    (TRAINED, "7.3 powered rerun", powered_7_3,
     passage("power {power}, d_z = {dz} ⇒ n = {n})") + r"[\s\S]*?"
     + passage("loss(frozen) − loss(coupled) = +{g0}, +{g1}, +{g2}, +{g3}, +{g4}; mean **+{gap} nats/byte, d_z = "
               "{dz5}, {level} % interval [+{lo}, +{hi}], t = {t} on {dof} dof, p = {p}: the coupled arm helps**")
     + r"[\s\S]*?" + passage("Layer 0's gate moves (|g₀| ≈ {g_lo}–{g_hi})")),
    (TRAINED, "7.3 pilot", pilot_7_3,
     passage("loss(frozen) − loss(coupled) = **+{gap} nats/byte, {level} % interval [{lo}, +{hi}]: neutral**, as in "
             "the paper, though the coupled arm is lower in every seed (+{s0}, +{s1}, +{s2}; with 3 seeds the t "
             "quantile is {tq}); **the gate opens**: layer 0's gate ends at +{g0}, +{g1}, +{g2} (one sign in every "
             "seed, above a tenth of Σ lr_t = {thr})")),
    (TRAINED, "the visibility figure", visibility_spectrum,
     passage("stack trained on 200k bytes (validation {loss} nats/byte), against its initialisation:") + r"\s*"
     + passage("- The visible dimension stays d = 8 of {N} parameter directions") + r"[\s\S]*?"
     + passage("The eight visible singular values grow: {random_max} → {trained_max} for the largest, {random_min} → "
               "{trained_min} for the smallest.")),
    (TRAINED, "the gate margin figure", gate_margin,
     passage("The stability margin μ of the slow modes is negative from initialisation ({mu0}) and becomes more "
             "negative with training ({muL}): there is no certified margin at any step, so training is never inside "
             "a certified g*, while the largest learnt gate rises to {peak} and settles at {final}.")),
]
