"""Passages of docs/real_models.md tied to the records that produced their numbers (``tests/test_docs_numbers.py``'s
``QUOTES``, same shape: doc, passage name, the function that regenerates the values, the pattern)."""

from __future__ import annotations

import docs_ties_real_models as R
from docs_ties import passage

MODELS = "docs/real_models.md"
ANY = r"[\s\S]*?"

QUOTES: list = [
    (MODELS, "import bound and GELU", R.import_bound_and_gelu,
     passage("2n·u, n = L(2T + ({three} + 2·mlp_ratio)d) the summed dot-product lengths") + ANY
     + passage("exact GELU and gelu_new differ by up to {gelu}, so the factorisation")),
    (MODELS, "claim table settings", R.claim_table,
     passage("| 3.2 block coarse-graining | along text: ‖ΠJ(I − Q)V‖/‖JV‖ (blocks of {P}) |") + ANY
     + passage("and of the distance of {windows} embedded text windows") + ANY
     + passage("every decaying mode of the causal kernel is evaluated; above it {modes} of them")),
    (MODELS, "byte GPT-2 along text, settings", R.bytes_along_text,
     passage("4 heads, validation loss {loss} nats/byte)") + ANY
     + passage("`, {windows} validation windows of 64 bytes, {probes} Gaussian probes:") + ANY
     + passage("(layers 0–{last}, worst window)") + ANY + passage("no ℓ*({tau}); at 1x̄ᵀ") + ANY
     + passage("the frozen causal kernel misses by {miss} % at the text's spread")),
    (MODELS, "GPT-2-small along text, layers", R.small_along_text,
     passage("to {sp} (layer {sp_layer}).") + ANY + passage("falling to {eL} % at layer {e_layer} |") + ANY
     + passage("{qL} after layer {q_layer}: ℓ*({tau}) = 0 along the text")),
    (MODELS, "trained hierarchical stack along text", R.hierarchical_along_text,
     passage("gates {g0} and {g1}; a smoke-size checkpoint)") + ANY
     + passage("derivative of the mean held-out loss is {floor} times its rounding floor") + ANY
     + passage("miss by {e21} %, {e23} %, {e24} %, {e32} % and {e41} % (spread {spread}).")),
    (MODELS, "byte GPT-2 training settings", R.bytes_trained,
     passage("`GPT2LMHeadModel(GPT2Config(vocab_size={vocab}, n_positions={pos}, n_embd={embd}, n_layer={layer}, "
             "n_head={head}))`") + ANY
     + passage("(lr {lr}, {warmup} warm-up steps, cosine, clipping 1, weight decay {wd})") + ANY
     + passage("**1.474 nats/byte** on {eval} held-out windows") + ANY
     + passage("The checkpoint (`save_pretrained`, {mb} MB)") + ANY
     + passage("and the distance from the coarse manifold on {windows} validation windows") + ANY
     + passage("(`proofs_check.runners.reach.reach_on_stack`, {reach_windows} validation windows embedded") + ANY
     + passage("error is 6 % at spread {s001} and")),
    (MODELS, "GPT-2-small size", R.gpt2_small_size,
     passage("12 heads, vocabulary {vocab}; transformers' own initialisation, seeded, saved with `save_pretrained`, "
             "{mb} MB)") + ANY
     + passage("hidden states match transformers to 2.9e-15 (bound {bound});") + ANY
     + passage("hold (errors {e12} / {t12}, {e21} / {t21}, {e22} / {t22}, {e23} / {t23}, {e24} / {t24});") + ANY
     + passage("asked for {dense_gb} GB (every one of the {modes_T} causal modes'") + ANY
     + passage("| loaded (load {lo}–{hi}, mean {mean}), 2026-12-04 {hour}:{minute}, commit e0186ca | `check --stack` | "
               "{wall_min} min {wall_s} s | {cpu} s | **{rss} GiB** |") + ANY
     + passage("(form `mode subset`, {six_s} s of the wall): on {evaluated} of the {decaying} decaying modes the clock "
               "misses log r by up to {miss} (power law {power}); no ℓ* at τ = 0.5 (r_L(λ₂) = {r} measured, {rhat} "
               "from the clock: the reference spread grows only {growth}× over the 12 layers,") + ANY
     + passage("effective exponent {exp} against the clock's {pred}; on {windows} embedded text windows the distance "
               "from the coarse manifold is missed by up to {real} in log.")),
    (MODELS, "GPT-2-small budget and 6.4's form", R.scale_budget,
     passage("fit the budget (≤ {min} min, ≤ {gib} GiB)") + ANY + passage("the peak memory is unchanged ({rss} GiB,")
     + ANY + passage("`SCALE_MODES` ({scale_modes}) is the knob") + ANY
     + passage("(L·d² numbers, {block_mb} MB here)") + ANY
     + passage("the work, {L1} products and {L2} symmetric eigenproblems of {d1} × {d2} per mode, bounds the number of "
               "modes to {modes} of the causal kernel's {decaying},") + ANY
     + passage("would build more than {autograd} GiB of (T·d)² Jacobians") + ANY
     + passage("each command stays within {min2} min and {gib2} GiB")),
    (MODELS, "6.4's scale route against the dense one", R.clock_scale_route,
     passage("At small sizes this route equals the dense one (every block from the generated G_ℓ(λ) itself) to "
             "{ten}·L·(d + 1)·ε relative (`tests/test_depth_clock_scale.py`, measured {measured}).")),
]
