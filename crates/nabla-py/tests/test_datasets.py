"""``Dataset``, ``TensorDataset``, ``Subset``, ``ConcatDataset``, ``random_split``, ``default_collate``
and ``DataLoader`` over a dataset, against ``torch.utils.data`` on the same data."""

import collections
import contextlib
import warnings

import numpy as np
import pytest

import nabla_rs as nb
from nabla_rs import data

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10, dtype=np.int64) * 2


def as_numpy(value):
    """Batches as nested lists of NumPy arrays, for nabla's and torch's alike."""
    if isinstance(value, (list, tuple)):
        return [as_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: as_numpy(v) for k, v in value.items()}
    return np.asarray(value.detach().numpy() if hasattr(value, "detach") else value)


def assert_same(a, b):
    a, b = as_numpy(a), as_numpy(b)
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for u, v in zip(a, b):
            assert_same(u, v)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    else:
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_array_equal(a, b)


@pytest.fixture
def torch_data():
    torch = pytest.importorskip("torch")
    return torch, torch.utils.data


def test_tensor_dataset_indexes_as_torchs(torch_data):
    torch, td = torch_data
    ours = data.TensorDataset(nb.tensor(X), nb.tensor(Y))
    theirs = td.TensorDataset(torch.tensor(X), torch.tensor(Y))
    assert len(ours) == len(theirs) == 10
    for i in [0, 3, 9, -1, -10]:
        assert isinstance(ours[i], tuple)
        assert_same(list(ours[i]), list(theirs[i]))
    assert_same(list(ours[2:5]), list(theirs[2:5]))
    with pytest.raises(IndexError):
        ours[10]


def test_tensor_dataset_refuses_mismatched_lengths():
    with pytest.raises(ValueError, match=r"TensorDataset.*different lengths.*\[10, 3\]"):
        data.TensorDataset(nb.tensor(X), nb.tensor(Y[:3]))
    with pytest.raises(ValueError, match="at least one"):
        data.TensorDataset()
    with pytest.raises(ValueError, match="0-d"):
        data.TensorDataset(nb.tensor(1.0))


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.3, 0.4], [0.1] * 10, [0.33, 0.33, 0.34], [0.5, 0.5], [1.0],
                                     [0.25, 0.75], [1 / 3] * 3])
@pytest.mark.parametrize("n", [1, 7, 10, 101])
def test_random_split_sizes_are_torchs(lengths, n, torch_data):
    torch, td = torch_data
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = [len(s) for s in td.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))]
    except ValueError:
        with pytest.raises(ValueError, match="random_split"):
            data.random_split(range(n), lengths, seed=0)
        return
    with pytest.warns(UserWarning, match="empty") if 0 in expected else contextlib.nullcontext():
        splits = data.random_split(range(n), lengths, seed=0)
    assert [len(s) for s in splits] == expected
    assert sorted(i for s in splits for i in (s[j] for j in range(len(s)))) == list(range(n))


def test_random_split_errors_and_seeds():
    with pytest.raises(ValueError, match="sum to 9, not the dataset's length 10"):
        data.random_split(range(10), [4, 5])
    with pytest.raises(ValueError, match="between 0 and 1"):
        data.random_split(range(10), [1.5, -0.5])
    with pytest.raises(ValueError, match="non-negative integers"):
        data.random_split(range(10), [0.5, 9.5])
    first = [s.indices for s in data.random_split(range(20), [5, 15], seed=3)]
    assert first == [s.indices for s in data.random_split(range(20), [5, 15], seed=3)]
    assert first == [s.indices for s in data.random_split(range(20), [5, 15], generator=np.random.default_rng(3))]
    nb.manual_seed(7)
    global_first = [s.indices for s in data.random_split(range(20), [5, 15])]
    nb.manual_seed(7)
    assert global_first == [s.indices for s in data.random_split(range(20), [5, 15])]


def test_subset_and_concat_index_as_torchs(torch_data):
    torch, td = torch_data
    ours = data.TensorDataset(nb.tensor(X), nb.tensor(Y))
    theirs = td.TensorDataset(torch.tensor(X), torch.tensor(Y))
    indices = [4, 0, 7]
    sub, tsub = data.Subset(ours, indices), td.Subset(theirs, indices)
    assert len(sub) == len(tsub) == 3
    for i in range(3):
        assert_same(list(sub[i]), list(tsub[i]))
    cat, tcat = data.ConcatDataset([ours, sub]), td.ConcatDataset([theirs, tsub])
    assert len(cat) == len(tcat) == 13 and cat.cumulative_sizes == tcat.cumulative_sizes
    for i in [0, 9, 10, 12, -1, -13]:
        assert_same(list(cat[i]), list(tcat[i]))
    with pytest.raises(IndexError, match="out of range"):
        cat[13]
    assert len(ours + sub) == 13
    with pytest.raises(ValueError, match="at least one"):
        data.ConcatDataset([])


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (4, True), (10, False), (32, False)])
def test_loader_batches_equal_torchs(batch_size, drop_last, torch_data):
    torch, td = torch_data
    ours = data.DataLoader(data.TensorDataset(nb.tensor(X), nb.tensor(Y)), batch_size=batch_size, drop_last=drop_last)
    theirs = td.DataLoader(td.TensorDataset(torch.tensor(X), torch.tensor(Y)), batch_size=batch_size,
                           drop_last=drop_last)
    assert len(ours) == len(theirs)
    batches, expected = list(ours), list(theirs)
    assert len(batches) == len(expected)
    for a, b in zip(batches, expected):
        assert_same(a, b)


class Records(data.Dataset):
    """Samples of mixed kinds: what default_collate batches key by key and position by position."""

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.full(2, i, dtype=np.float32), "label": i, "weight": i / 2, "flag": i % 2 == 0,
                "name": f"s{i}", "pair": (np.int32(i), float(i))}


def test_default_collate_is_torchs(torch_data):
    torch, td = torch_data
    ours = list(data.DataLoader(Records(), batch_size=2))
    theirs = list(td.DataLoader(Records(), batch_size=2))
    for a, b in zip(ours, theirs):
        assert_same(a, b)
    Point = collections.namedtuple("Point", "x y")
    batch = data.default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(batch, Point)
    assert_same(list(batch), list(td.default_collate([Point(1, 2.0), Point(3, 4.0)])))


def test_default_collate_errors():
    with pytest.raises(ValueError, match="different lengths"):
        data.default_collate([(1, 2), (3,)])
    with pytest.raises(TypeError, match="collate_fn"):
        data.default_collate([object(), object()])
    with pytest.raises(ValueError, match="empty batch"):
        data.default_collate([])


def test_shuffling_covers_every_index_once_and_repeats_for_a_seed():
    ds = data.TensorDataset(nb.arange(23))

    def epochs(loader, count=3):
        return [[int(v) for batch in loader for v in batch[0].tolist()] for _ in range(count)]

    runs = epochs(data.DataLoader(ds, batch_size=5, shuffle=True, seed=11))
    for order in runs:
        assert sorted(order) == list(range(23))
    assert runs[0] != runs[1]
    assert runs == epochs(data.DataLoader(ds, batch_size=5, shuffle=True, seed=11))
    assert runs == epochs(data.DataLoader(ds, batch_size=5, shuffle=True, generator=np.random.default_rng(11)))
    dropped = epochs(data.DataLoader(ds, batch_size=5, shuffle=True, drop_last=True, seed=1), 1)[0]
    assert len(dropped) == 20 and len(set(dropped)) == 20


def test_collate_fn_and_argument_errors():
    ds = data.TensorDataset(nb.tensor(X), nb.tensor(Y))
    sums = list(data.DataLoader(ds, batch_size=4, collate_fn=lambda samples: sum(int(y) for _, y in samples)))
    assert sums == [12, 44, 34]
    with pytest.raises(TypeError, match="by keyword"):
        data.DataLoader(ds, 4)
    with pytest.raises(ValueError, match="batch_size"):
        data.DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="collate_fn applies to a Dataset"):
        data.DataLoader(X, Y, collate_fn=list)
    with pytest.raises(ValueError, match="different lengths"):
        data.DataLoader(X, Y[:3])


def test_the_arrays_form_still_yields_tuples():
    batches = list(data.DataLoader(X, Y, batch_size=4))
    assert all(isinstance(b, tuple) for b in batches)
    assert_same(list(batches[2]), [X[8:], Y[8:]])
