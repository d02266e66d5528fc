"""Runners: the ledger, the claims × architectures grid, the scale forms, reach, trained checkpoints."""
