"""One module per claim family; each registers its claims with ``proofs_check.verdicts.registry.claim``."""
