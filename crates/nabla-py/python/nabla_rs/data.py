"""``nabla_rs.data``: datasets and batches, as ``torch.utils.data``.

``Dataset``, ``TensorDataset``, ``Subset``, ``ConcatDataset`` and ``random_split`` have PyTorch's
behaviour; ``DataLoader(dataset, batch_size=, shuffle=, drop_last=, collate_fn=)`` batches a dataset
with :func:`default_collate` (PyTorch's stacking rules). ``DataLoader(*arrays, ...)`` batches NumPy
arrays directly, as tensors that share each batch's memory (no copy beyond NumPy's gather of the
batch rows). Shuffling draws a new order each epoch from ``seed`` (or a NumPy ``generator``), so runs
repeat.
"""

from __future__ import annotations

import bisect
import collections.abc
import copy
import itertools
import math
import warnings
from typing import Any, Callable, Iterator, List, Optional, Sequence

import numpy as np

from . import _nabla

__all__ = ["ConcatDataset", "DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate", "load_digits",
           "random_split"]


class Dataset:
    """A map-style dataset, as ``torch.utils.data.Dataset``: subclasses define ``__getitem__(i)``
    (the ``i``-th sample) and ``__len__``. ``a + b`` is their :class:`ConcatDataset`."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} has no __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Samples ``(t[i] for t in tensors)`` of tensors (or arrays) of the same length along their
    first axis, as ``torch.utils.data.TensorDataset``."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        lengths = [_length(t, "TensorDataset") for t in tensors]
        if any(n != lengths[0] for n in lengths):
            raise ValueError(f"TensorDataset: tensors of different lengths along the first axis: {lengths}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return _length(self.tensors[0], "TensorDataset")


def _length(t, owner: str) -> int:
    """The length of ``t`` along its first axis; a 0-d tensor has none."""
    shape = tuple(getattr(t, "shape", ()))
    if not shape:
        raise ValueError(f"{owner}: a 0-d tensor has no first axis to index samples along")
    return int(shape[0])


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order, as ``torch.utils.data.Subset``."""

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several datasets one after the other, as ``torch.utils.data.ConcatDataset``."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: needs at least one dataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int):
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"ConcatDataset: index {index} is out of range for {n} samples")
        index = index + n if index < 0 else index
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def _split_lengths(lengths: Sequence, total: int) -> List[int]:
    """Integer lengths from ``lengths``: fractions summing to 1 become ``floor(total * fraction)``,
    with the remainder handed out one at a time round-robin from the first (PyTorch's rule)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"random_split: the fraction at index {i} ({fraction}) is not between 0 and 1")
            counts.append(math.floor(total * fraction))
        for i in range(total - sum(counts)):
            counts[i % len(counts)] += 1
        for i, n in enumerate(counts):
            if n == 0:
                warnings.warn(f"random_split: the split at index {i} is empty", stacklevel=3)
        lengths = counts
    if any(int(n) != n or n < 0 for n in lengths):
        raise ValueError(f"random_split: lengths must be non-negative integers or fractions summing to 1, got {list(lengths)}")
    if sum(lengths) != total:
        raise ValueError(f"random_split: the lengths {list(lengths)} sum to {sum(lengths)}, not the dataset's length {total}")
    return [int(n) for n in lengths]


def _permutation(n: int, generator: Optional[np.random.Generator], seed: Optional[int]) -> np.ndarray:
    """A random order of ``range(n)``: from ``generator``, else from ``seed``, else from nabla's
    global generator (so ``manual_seed`` repeats it, as PyTorch's global generator does)."""
    if generator is not None:
        return generator.permutation(n)
    if seed is not None:
        return np.random.default_rng(seed).permutation(n)
    keys = _nabla.rand(n, dtype=_nabla.float64).numpy()
    return np.argsort(keys, kind="stable")


def random_split(dataset, lengths: Sequence, generator: Optional[np.random.Generator] = None,
                 seed: Optional[int] = None) -> List[Subset]:
    """``dataset`` split at random into non-overlapping :class:`Subset`\\ s of ``lengths``, as
    ``torch.utils.data.random_split``.

    ``lengths`` are counts summing to ``len(dataset)`` or fractions summing to 1 (each split gets
    ``floor(len * fraction)``, and the remainder goes one by one to the splits in order). The order
    is drawn from ``generator`` (a NumPy ``Generator``), else from ``seed``, else from nabla's global
    generator (``manual_seed``).
    """
    counts = _split_lengths(lengths, len(dataset))
    order = _permutation(len(dataset), generator, seed).tolist()
    return [Subset(dataset, order[end - n:end]) for end, n in zip(itertools.accumulate(counts), counts)]


def _collate_sequence(batch: list, first) -> Any:
    """Collation of sequence samples, position by position: a list for tuples (as PyTorch), the
    samples' own type for other sequences."""
    if any(len(sample) != len(first) for sample in batch):
        raise ValueError(f"default_collate: samples of different lengths: {sorted({len(s) for s in batch})}")
    columns = [default_collate(list(column)) for column in zip(*batch)]
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*columns)
    if isinstance(first, tuple):
        return columns
    try:
        return type(first)(columns)
    except TypeError:
        return columns


def _collate_mapping(batch: list, first) -> Any:
    """Collation of mapping samples, key by key, in a mapping of the first sample's type."""
    columns = {key: default_collate([sample[key] for sample in batch]) for key in first}
    try:
        out = copy.copy(first)
        out.update(columns)
        return out
    except (TypeError, AttributeError):
        return columns


def default_collate(batch: list) -> Any:
    """A batch from a list of samples, as ``torch.utils.data.default_collate``: tensors and NumPy
    arrays are stacked along a new first axis, Python floats become a float64 tensor, ints an int64
    tensor, bools a bool tensor, NumPy scalars a tensor of their dtype; strings and bytes stay a
    list; tuples, lists and dicts are collated position by position or key by key (a tuple gives a
    list, as in PyTorch)."""
    if not batch:
        raise ValueError("default_collate: an empty batch")
    first = batch[0]
    if isinstance(first, _nabla.Tensor):
        return _nabla.stack(batch)
    if isinstance(first, (np.ndarray, np.generic)):
        if first.dtype.kind in "OSUV":
            raise TypeError(f"default_collate: cannot batch NumPy arrays of dtype {first.dtype}")
        return _nabla.from_numpy(np.ascontiguousarray(np.stack(batch)))
    if isinstance(first, bool):
        return _nabla.tensor(batch, dtype=getattr(_nabla, "bool"))
    if isinstance(first, int):
        return _nabla.tensor(batch, dtype=_nabla.int64)
    if isinstance(first, float):
        return _nabla.tensor(batch, dtype=_nabla.float64)
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, collections.abc.Mapping):
        return _collate_mapping(batch, first)
    if isinstance(first, collections.abc.Sequence):
        return _collate_sequence(batch, first)
    raise TypeError(f"default_collate: samples of type {type(first).__name__} cannot be batched; "
                    "give DataLoader a collate_fn")


class DataLoader:
    """Batches of a :class:`Dataset`, or of equally long NumPy arrays, as tensors.

    ``DataLoader(dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None)`` is
    PyTorch's: each batch is ``collate_fn([dataset[i] for i in batch_indices])`` (by default
    :func:`default_collate`). ``DataLoader(*arrays, ...)`` yields tuples ``(x[i:i+b], y[i:i+b], ...)``
    of tensors sharing the batch rows' memory. ``shuffle`` draws a new order each epoch from ``seed``
    (or ``generator``, a NumPy ``Generator``), so runs repeat; ``drop_last`` skips a final short
    batch.
    """

    def __init__(self, *arrays, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False, seed: int = 0,
                 collate_fn: Optional[Callable] = None, generator: Optional[np.random.Generator] = None):
        if not arrays:
            raise ValueError("DataLoader needs a dataset or at least one array")
        if batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be at least 1, got {batch_size}")
        if isinstance(arrays[0], Dataset):
            if len(arrays) > 1:
                raise TypeError("DataLoader: after a dataset, pass batch_size, shuffle, ... by keyword")
            self.dataset, self.arrays = arrays[0], None
        else:
            if collate_fn is not None:
                raise ValueError("DataLoader: collate_fn applies to a Dataset; wrap the arrays in a TensorDataset")
            self.dataset, self.arrays = None, [np.asarray(a) for a in arrays]
            lengths = [len(a) for a in self.arrays]
            if any(n != lengths[0] for n in lengths):
                raise ValueError(f"DataLoader: arrays of different lengths: {lengths}")
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last
        self.collate_fn = collate_fn or default_collate
        self._rng = generator if generator is not None else np.random.default_rng(seed)

    def _size(self) -> int:
        return len(self.dataset) if self.arrays is None else len(self.arrays[0])

    def __len__(self) -> int:
        n = self._size()
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _batches(self) -> Iterator:
        """The rows of each batch of an epoch: slices in order, or index arrays when shuffled."""
        n = self._size()
        order = self._rng.permutation(n) if self.shuffle else None
        for start in range(0, n, self.batch_size):
            stop = min(start + self.batch_size, n)
            if self.drop_last and stop - start < self.batch_size:
                break
            yield slice(start, stop) if order is None else order[start:stop]

    def __iter__(self) -> Iterator:
        if self.arrays is not None:
            for rows in self._batches():
                yield tuple(_nabla.from_numpy(np.ascontiguousarray(a[rows])) for a in self.arrays)
            return
        for rows in self._batches():
            indices = range(rows.start, rows.stop) if isinstance(rows, slice) else rows.tolist()
            yield self.collate_fn([self.dataset[i] for i in indices])


def load_digits():
    """The 1,797 8x8 handwritten digits embedded in nabla (scikit-learn's set), as NumPy arrays:
    images ``[1797, 1, 8, 8]`` float32 in [0, 1] and labels int64."""
    images, labels = _nabla.nn.load_digits()
    return images.numpy(), labels.numpy()
