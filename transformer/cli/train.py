"""Train a model: ``python -m transformer.cli.train [options]`` (see --help; the training itself is
``transformer/training/train.py``)."""
from __future__ import annotations

import sys

from ..training.train import main

if __name__ == "__main__":
    sys.exit(main())
