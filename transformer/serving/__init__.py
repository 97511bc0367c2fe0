"""Serving the model to many users: the Translator (the one interface the app and the command line use: input
cleaning, limits, caching, batching, attribution and the probes), the micro-batcher, the byte-bounded trace
cache, and the decoding processes. The model and the probes never import it."""
