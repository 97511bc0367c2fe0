"""The model: attention, layers, the Transformer, decoding, and the inference optimisation."""
