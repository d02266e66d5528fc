"""The report: its document, figures and ``fastslow reproduce``."""
