"""Claims 5.1 and 5.2: the stability margin μ and the gate bound g* (docs/theory.md §5, reconstruction).

One module per claim — ``gate_bound`` (5.1), ``tightness`` (5.2) — each with the claim's evaluation and the
ledger's check; ``matrix_free`` holds 5.1's matrix-free form.  ``proofs_check.verdicts.registry.load_checks``
imports every module.
"""
