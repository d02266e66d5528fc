"""Claims 1.1 and 1.2: the stack as explicit Euler steps of dX/dt = F(θ(t), X); the Jacobian chain rule
(docs/theory.md §1).

One module per claim — ``euler_scheme`` (1.1), ``chain_rule`` (1.2) — each with the claim's on-stack evaluation
and the ledger's check; ``matrix_free`` holds their matrix-free forms.  ``proofs_check.verdicts.registry.load_checks``
imports every module.
"""
