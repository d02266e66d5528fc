"""Benchmarks behind `fastslow bench`: each number is a ratio against a baseline timed in the same run."""
