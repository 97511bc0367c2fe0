"""Command lines: ``python -m transformer.cli.translate``, ``.evaluate``, ``.export``, ``.train``."""
