"""The stack: its one declaration (params), the spec and build(spec), kernels, presets, the architectures."""
