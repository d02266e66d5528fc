"""Experiments: training runs and measurements on trained weights."""
