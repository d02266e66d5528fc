"""One module per claim family; each registers its claims with ``proofs_check.claims.registry.claim``."""
