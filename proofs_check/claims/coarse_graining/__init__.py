"""Claims 3.1 and 3.2: saturation depth (reconstruction) and block coarse-graining (docs/theory.md §3).

One module per claim — ``saturation_depth`` (3.1), ``block_pooling`` (3.2) — each with the claim's on-stack
evaluation and the ledger's check; ``specs`` holds what they share and ``matrix_free`` their matrix-free
forms.  ``proofs_check.verdicts.registry.load_checks`` imports every module.
"""
