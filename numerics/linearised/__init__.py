"""The linearised stack: Jacobians, matrix-free actions, finite differences, mode blocks."""
