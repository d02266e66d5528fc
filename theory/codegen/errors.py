"""Errors raised by the code generator."""


class CodegenError(ValueError):
    """An expression or signature the torch code generator cannot translate."""
