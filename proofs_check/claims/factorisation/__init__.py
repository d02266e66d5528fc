"""Claims 2.1–2.4: factorisation of the linearised stack along the frozen kernel (docs/theory.md §2).

One module per claim — ``frozen_kernel`` (2.1), ``conditions`` (2.2), ``polynomial_form`` (2.3), ``qk_invisibility``
(2.4) — each with the claim's on-stack evaluation and the ledger's check; ``matrix_free`` holds their
matrix-free forms.  ``proofs_check.verdicts.registry.load_checks`` imports every module.
"""
