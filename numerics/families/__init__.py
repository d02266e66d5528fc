"""Each claim family's numerics (one module a family or measurement)."""
