"""The model's files: the SentencePiece tokenizer and checkpoint folders."""
