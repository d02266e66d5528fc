"""The depth study (docs/depth_study.md): GPT-2 blocks trained at several depths (``training``) and the
measures taken along held-out text (``measures``, ``spectrum``)."""
