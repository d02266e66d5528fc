"""Sweeps: a claim over a grid of stacks, run on ``dask.distributed``, stored as Parquet.

``spec`` parses and validates a TOML spec; ``grid`` turns its points × seeds into tasks, each a
``StackSpec``; ``run`` executes them on a Dask cluster (``proofs_check.verdicts.registry.evaluate`` per task);
``store`` writes the rows atomically, batch by batch; ``summary`` reports how often each claim holds;
``figures`` draws the phase diagrams; ``command`` is ``fastslow sweep``.  Shipped specs are in
``specs/``.
"""
