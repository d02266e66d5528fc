"""What to look at in each figure: the second sentence of its caption in the report.

The figure's registered title says what is drawn; this says what a reader should check in it, in the
paper's notation.  ``tests/test_figures.py`` requires one for every registered figure.
"""

LOOK = {
    "block_diagonality": "Look off the diagonal blocks: entries there at float64 rounding (about −16) mean the "
                         "Jacobian is block diagonal in the kernel's eigenbasis.",
    "bound_conservativeness": "A ratio above 1 would make the norm bound wrong; how far below 1 the ratios sit is "
                              "how conservative the bound g*_norm is.",
    "claims_matrix": "Read a row across: where a claim stops holding, the architecture is the reason; "
                     "the conditions table below says why for each cell that is not holds.",
    "coarse_graining_residual": "Compare the kernels: a residual at rounding means the block-mean description is exact; "
                                "the causal kernel's residual is what that description misses at each depth.",
    "depth_clock": "Compare each decaying mode with the clock predicted from the reference's spread, and the "
                   "gap-closing control with the order it is predicted to depart by.",
    "depth_study": "Compare each arm's slopes in L with −1 (an Euler scheme) and with the i.i.d. values (0 for "
                   "roughness, about −0.5 for the step), at initialisation and after training.",
    "depth_roughness": "Compare the trained curve with the two references: √2 (i.i.d. layers, as at initialisation) "
                       "and 1/L (an Euler path).",
    "depth_study": "The step and invariant roughness of the trained blocks against L, beside the pre-registered "
                   "decision rule's references, and the Jacobian spectrum they imply.",
    "eigenbasis_conditioning": "The eigen-coordinate error against the predicted bound (rounding × cond S) as T grows: "
                               "points above the bound would break the tolerance's derivation.",
    "euler_convergence": "The smooth weight path's error against slope −1 in L (first order); the i.i.d. drift "
                         "shows what happens without a path.",
    "factorisation_controls": "The off-block mass against the violation δ: slope 1 is the predicted failure of the "
                              "factorisation when its condition breaks.",
    "gate_bounds": "Where the onset of expansion falls relative to g* and the determinant bound g⁺: the "
                   "certificate predicts it between them.",
    "gate_margin_over_training": "The learnt gate against the certified margin g* at each training step: above it the "
                                 "certificate no longer covers the stack.",
    "looped_margin": "Where the stability margin turns positive, against the critical decay Δ* the bound "
                     "predicts.",
    "mhc_composite_gain": "The composite gain in depth with Sinkhorn-constrained streams against unconstrained "
                          "ones.",
    "mode_products": "Each decaying mode's ratio r_ℓ(λ) in depth, and the measured saturation depth ℓ* against "
                     "the computable bound. Eigenvalues within rounding of zero are shown as 0.",
    "posterior_sufficiency": "The posterior from the whole block against the one from its mean (sufficiency: they "
                             "coincide) and the one from the block maximum (not sufficient).",
    "reach_factorised": "The factorised J·V's error as the token spread grows from the reference (where it is "
                        "exact); the marked text spreads show where real text sits.",
    "response_slopes": "The fitted slopes against the predicted ones: 1 for the persistent component's first-order "
                       "response, 2 for the decaying one.",
    "risk_vs_rho": "Theory against Monte Carlo over ρ, and the slope dR/dg at g = 0, which the theory "
                   "predicts vanishes at ρ = 0 (no shared structure, an invisible gate).",
    "scale_error_vs_size": "Error over tolerance as T·d grows to GPT-2 sizes: a point above 1 is a failure at that "
                           "size.",
    "slow_manifold_convergence": "dist(x, φ^(k)(y)) against the drawn slopes: each order of the expansion should gain one "
                                 "power of ε.",
    "slow_manifold_trajectories": "The boundary layer (width about ε) and, after it, how closely each trajectory follows the "
                                  "slow manifold.",
    "slow_path_cost": "Counted FLOPs and measured timings against the model: the slow path's scores cost 1/P², "
                      "its projections 1/P.",
    "stability_region": "The norm bound's region against the exact 2×2 stability boundary: outside it the bound "
                        "would be wrong, inside it conservative.",
    "stationary_distribution": "The 3-state chain's slow manifold drawn as its stationary distribution p_st(y) over "
                               "the slow variable y.",
    "trained_vs_random": "The trained stack against its random initialisation: the difference is what "
                         "training did.",
    "training_curves": "Coupled against frozen gate on each data set, and the gate's trajectory: the theory "
                       "predicts a gain on AR(1) block data and none on i.i.d. data.",
    "visibility_spectrum": "The spectral gap between the few visible directions and the invisible ones.",
    "visibility_trained_vs_random": "The visibility spectrum of the trained stack against its random "
                                    "initialisation: compare the gap's position.",
}
