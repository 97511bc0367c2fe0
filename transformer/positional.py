"""The sinusoidal positional encoding (paper section 3.5), in numpy: the one implementation.

The model adds it to the embeddings (``model/layers.py`` builds its buffer from this function)
and the positional-encoding view draws it (``viz/views.py``), so both show the same numbers.
"""
from __future__ import annotations

import numpy as np


def sinusoidal_encoding(max_len: int, d_model: int, positions=None) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    Returns a (max_len, d_model) float64 array: row = position, column = dimension. With `positions`,
    the rows are those positions instead (fractional ones too: the curves the view draws between pieces)."""
    pos = (np.arange(max_len, dtype=np.float64) if positions is None
           else np.asarray(positions, dtype=np.float64))[:, None]               # (T, 1)
    div = np.power(10000.0, np.arange(0, d_model, 2, dtype=np.float64) / d_model)
    pe = np.zeros((len(pos), d_model))
    pe[:, 0::2] = np.sin(pos / div)
    pe[:, 1::2] = np.cos(pos / div[: d_model // 2])
    return pe
