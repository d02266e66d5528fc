"""The verdict machinery: the claim registry, the evidence a check returns, the claim ids, the on-stack
verdicts, the standings in the paper's setting, the matrix-free stacks, and the one vocabulary of result
words (``vocabulary``) that the ledger, the grid, ``check --stack``, sweeps and the report share."""
