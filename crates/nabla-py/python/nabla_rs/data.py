"""``nabla_rs.data``: batches from NumPy arrays, shuffled per epoch from a seed, as tensors that
share the batch's memory (no copy beyond NumPy's gather of the batch rows)."""

from __future__ import annotations

from typing import Iterator, Tuple

import numpy as np

from . import _nabla


class DataLoader:
    """Iterates over ``(x[i:i+b], y[i:i+b], ...)`` batches of equally long arrays, as tensors.

    ``shuffle`` draws a new order each epoch from ``seed`` (so runs repeat); ``drop_last`` skips a
    final short batch.
    """

    def __init__(self, *arrays, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, seed: int = 0):
        if not arrays:
            raise ValueError("DataLoader needs at least one array")
        self.arrays = [np.asarray(a) for a in arrays]
        n = len(self.arrays[0])
        if any(len(a) != n for a in self.arrays):
            raise ValueError(f"arrays of different lengths: {[len(a) for a in self.arrays]}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        n = len(self.arrays[0])
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator[Tuple]:
        n = len(self.arrays[0])
        order = self._rng.permutation(n) if self.shuffle else None
        for start in range(0, n, self.batch_size):
            stop = min(start + self.batch_size, n)
            if self.drop_last and stop - start < self.batch_size:
                break
            rows = slice(start, stop) if order is None else order[start:stop]
            yield tuple(_nabla.from_numpy(np.ascontiguousarray(a[rows])) for a in self.arrays)


def load_digits():
    """The 1,797 8x8 handwritten digits embedded in nabla (scikit-learn's set), as NumPy arrays:
    images ``[1797, 1, 8, 8]`` float32 in [0, 1] and labels int64."""
    images, labels = _nabla.nn.load_digits()
    return images.numpy(), labels.numpy()
