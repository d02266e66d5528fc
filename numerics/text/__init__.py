"""Text: the corpus, the language model, training, held-out windows and the states they visit."""
