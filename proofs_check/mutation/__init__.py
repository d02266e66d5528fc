"""Mutation testing: hand-written theory and source mutants, mutmut code mutants, equivalence rules."""
