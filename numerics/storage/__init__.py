"""Files: atomic writes, output folders, source keys, checkpoints and the Hugging Face GPT-2 mapping."""
