"""The claims of docs/theory.md, each with its family (the stem of its theory, numerics and check modules).

A table of its own so that the input validation can name unknown ids without importing the ledger."""

#: every claim id of docs/theory.md, in order, with its family (docs/ARCHITECTURE.md)
CLAIM_IDS: dict[str, str] = {
    "1.1": "depth_flow", "1.2": "depth_flow",
    "2.1": "factorisation", "2.2": "factorisation", "2.3": "factorisation", "2.4": "factorisation",
    "3.1": "coarse_graining", "3.2": "coarse_graining",
    "4.1": "visibility", "4.2": "visibility",
    "5.1": "stability", "5.2": "stability", "5.3": "gate_bounds",
    "6.1": "slow_manifold", "6.2": "slow_manifold", "6.3": "slow_manifold",
    "6.4": "depth_slow_manifold",
    "7.1": "emissions", "7.2": "emissions", "7.3": "emissions",
    "8.1": "depth_study",
}
