"""``save``/``load`` (as ``torch.save``/``torch.load``) and pickling and ``copy.deepcopy`` of modules:
round trips of every dtype, state dicts into fresh models, atomic writes that keep an existing file
on error, links and folders refused, damaged files reported, ``weights_only`` refusing classes."""

import collections
import copy
import io
import os
import pickle

import numpy as np
import pytest

import nabla_rs as nb
from nabla_rs._serialization import UnpicklingRefused, load, save

DTYPES = [nb.float16, nb.bfloat16, nb.float32, nb.float64, nb.complex64, nb.complex128,
          nb.int32, nb.int64, nb.uint8, nb.bool_]


def values(t):
    """The tensor's values as NumPy, exactly (halves widened to float32, which holds them)."""
    if t.dtype in (nb.float16, nb.bfloat16):
        t = t.astype(nb.float32)
    return np.asarray(t.detach().numpy())


def assert_same_tensor(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    assert a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(values(a), values(b))


def round_trip(obj, tmp_path, **load_args):
    path = tmp_path / "obj.nb"
    save(obj, path)
    return load(path, **load_args)


def test_exported_from_the_package():
    if not hasattr(nb, "save"):
        pytest.skip("nabla_rs/__init__.py does not import save and load from _serialization yet")
    assert nb.save is save and nb.load is load


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_every_dtype_round_trips(dtype, tmp_path):
    raw = np.array([[0.0, 1.5, -2.25], [3.0, 250.0, 0.0]])
    t = nb.tensor(raw).astype(dtype)
    back = round_trip({"t": t, "column": t[:, 1]}, tmp_path)
    assert_same_tensor(back["t"], t)
    assert_same_tensor(back["column"], t[:, 1])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_zero_dimensional_tensors_round_trip(dtype, tmp_path):
    t = nb.tensor(1.0).astype(dtype)
    assert_same_tensor(round_trip(t, tmp_path), t)


def test_requires_grad_parameters_grads_and_plain_values_are_kept(tmp_path):
    p = nb.nn.Parameter(nb.tensor([1.0, 2.0]))
    (p * p).sum().backward()
    leaf = nb.tensor([3.0], requires_grad=True)
    frozen = nb.nn.Parameter(nb.ones(2), requires_grad=False)
    obj = {"p": p, "leaf": leaf, "frozen": frozen, "rest": [1, 2.5, 1 + 2j, "text", None, (True, b"x")]}
    back = round_trip(obj, tmp_path)
    for key in ("p", "leaf", "frozen"):
        assert_same_tensor(back[key], obj[key])
    assert isinstance(back["p"], nb.nn.Parameter) and not back["frozen"].requires_grad
    np.testing.assert_array_equal(values(back["p"].grad), [2.0, 4.0])
    assert back["rest"] == obj["rest"]


def test_file_objects(tmp_path):
    buffer = io.BytesIO()
    save([nb.arange(4)], buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(values(load(buffer)[0]), np.arange(4))
    with open(tmp_path / "f.nb", "wb") as fh:
        save({"x": 1}, fh)
    with open(tmp_path / "f.nb", "rb") as fh:
        assert load(fh) == {"x": 1}


@pytest.mark.parametrize("make", [lambda: nb.nn.Linear(4, 3),
                                  lambda: nb.nn.Sequential(nb.nn.Linear(4, 8), nb.nn.ReLU(), nb.nn.BatchNorm1d(8))])
def test_state_dict_into_a_fresh_model(make, tmp_path):
    model = make()
    x = nb.randn(5, 4)
    model(x)  # a training step moves BatchNorm's running statistics
    model.eval()
    state = round_trip(model.state_dict(), tmp_path)
    assert isinstance(state, collections.OrderedDict) and list(state) == list(model.state_dict())
    fresh = make()
    fresh.load_state_dict(state)
    fresh.eval()
    np.testing.assert_array_equal(values(fresh(x)), values(model(x)))


def test_a_state_dict_loaded_gives_torchs_output(tmp_path):
    torch = pytest.importorskip("torch")
    reference = torch.nn.Linear(4, 3)
    state = {k: nb.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()}
    model = nb.nn.Linear(4, 3)
    model.load_state_dict(round_trip(state, tmp_path))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(values(model(nb.tensor(x))), reference(torch.tensor(x)).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_a_training_checkpoint_resumes_identically(tmp_path):
    def step(model, opt, x):
        opt.zero_grad()
        (model(x) ** 2).sum().backward()
        opt.step()

    model, x = nb.nn.Linear(3, 2), nb.randn(4, 3)
    opt = nb.optim.Adam(model.parameters(), lr=1e-2)
    step(model, opt, x)
    checkpoint = round_trip({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 1}, tmp_path)
    resumed = nb.nn.Linear(3, 2)
    resumed.load_state_dict(checkpoint["model"])
    resumed_opt = nb.optim.Adam(resumed.parameters(), lr=1e-2)
    resumed_opt.load_state_dict(checkpoint["optimizer"])
    step(model, opt, x)
    step(resumed, resumed_opt, x)
    assert checkpoint["epoch"] == 1
    for a, b in zip(model.parameters(), resumed.parameters()):
        np.testing.assert_array_equal(values(a), values(b))


class Unpicklable:
    def __reduce__(self):
        raise RuntimeError("no pickling for this one")


def test_a_failed_save_keeps_the_old_file(tmp_path):
    path = tmp_path / "model.nb"
    save({"w": nb.ones(3)}, path)
    before = path.read_bytes()
    big = {"w": nb.zeros(100_000), "bad": Unpicklable()}  # fails after part of the file is written
    with pytest.raises(RuntimeError, match="no pickling"):
        save(big, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.nb"]
    np.testing.assert_array_equal(values(load(path)["w"]), np.ones(3))


def test_saving_replaces_a_file_and_keeps_its_permissions(tmp_path):
    path = tmp_path / "model.nb"
    save(1, path)
    os.chmod(path, 0o640)
    save(2, str(path))
    assert load(path) == 2 and (os.stat(path).st_mode & 0o777) == 0o640


def test_links_folders_and_missing_folders_are_refused(tmp_path):
    target = tmp_path / "target.nb"
    save("old", target)
    link = tmp_path / "link.nb"
    os.symlink(target, link)
    with pytest.raises(ValueError, match="link.nb.*symbolic link"):
        save("new", link)
    assert load(target) == "old"
    with pytest.raises(IsADirectoryError, match="directory"):
        save("new", tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        save("new", tmp_path / "no" / "such.nb")
    with pytest.raises(TypeError, match="path or a binary file"):
        save("new", 3)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write any file")
def test_a_read_only_file_is_not_replaced(tmp_path):
    path = tmp_path / "model.nb"
    save("old", path)
    os.chmod(path, 0o444)
    with pytest.raises(PermissionError, match="model.nb.*read-only"):
        save("new", path)
    assert load(path) == "old"


def test_damaged_and_foreign_files_are_reported_with_their_name(tmp_path):
    path = tmp_path / "model.nb"
    save({"w": nb.ones(10)}, path)
    data = path.read_bytes()
    cases = {"truncated.nb": data[: len(data) // 2], "empty.nb": b"", "text.nb": b"hello, not a pickle\n",
             "zip.nb": b"PK\x03\x04" + bytes(40)}
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(pickle.UnpicklingError, match=name):
            load(tmp_path / name)
    with pytest.raises(FileNotFoundError, match="missing.nb"):
        load(tmp_path / "missing.nb")
    with pytest.raises(IsADirectoryError):
        load(tmp_path)


def test_a_plain_pickle_or_another_version_is_refused(tmp_path):
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"w": 1}))
    with pytest.raises(pickle.UnpicklingError, match="plain.pkl.*not a file written by nabla_rs.save"):
        load(plain)
    newer = tmp_path / "newer.nb"
    newer.write_bytes(pickle.dumps({"nabla_save_version": 2, "obj": 1}))
    with pytest.raises(pickle.UnpicklingError, match="format version 2"):
        load(newer)


def helper_function():
    return "ran"


@pytest.mark.parametrize("obj", [collections.Counter("abc"), helper_function, {"f": [os.system]}])
def test_weights_only_refuses_other_classes_and_functions(obj, tmp_path):
    path = tmp_path / "obj.nb"
    save(obj, path)
    with pytest.raises(pickle.UnpicklingError, match="weights_only=False") as refused:
        load(path)
    assert "obj.nb" in str(refused.value) and isinstance(refused.value, UnpicklingRefused)
    assert load(path, weights_only=False) == obj


def test_weights_only_checks_what_a_tensor_is_rebuilt_as():
    from nabla_rs._torch_surface import _rebuild

    class Crafted:
        def __reduce__(self):
            return (_rebuild, (collections.OrderedDict, np.zeros(2), "float32", False))

    with pytest.raises(UnpicklingRefused, match="class"):
        load(io.BytesIO(pickle.dumps({"nabla_save_version": 1, "obj": Crafted()})))


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_every_pickle_protocol_loads_with_weights_only(protocol):
    buffer = io.BytesIO()
    obj = collections.OrderedDict(w=nb.nn.Parameter(nb.ones(2, 3)), z=nb.tensor([1 + 2j]), n=1 + 1j)
    save(obj, buffer, pickle_protocol=protocol)
    buffer.seek(0)
    back = load(buffer)
    assert_same_tensor(back["w"], obj["w"])
    assert_same_tensor(back["z"], obj["z"])
    assert back["n"] == obj["n"]


# Pickling and deep copies of modules.


class TiedNet(nb.nn.Module):
    """A user model with Rust layers inside and the output layer's weight tied to the embedding."""

    def __init__(self):
        super().__init__()
        self.embed = nb.nn.Embedding(10, 4)
        self.norm = nb.nn.BatchNorm1d(4)
        self.out = nb.nn.Linear(4, 10, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, idx):
        return self.out(self.norm(self.embed(idx)))


MODELS = {
    "Linear": (lambda: nb.nn.Linear(4, 3), lambda: nb.randn(2, 4)),
    "Conv2d": (lambda: nb.nn.Conv2d(2, 3, 3, padding=1), lambda: nb.randn(2, 2, 5, 5)),
    "LSTM": (lambda: nb.nn.LSTM(3, 5, num_layers=2, batch_first=True), lambda: nb.randn(2, 4, 3)),
    "BatchNorm2d": (lambda: nb.nn.BatchNorm2d(3), lambda: nb.randn(4, 3, 2, 2)),
    "Sequential": (lambda: nb.nn.Sequential(nb.nn.Linear(4, 6), nb.nn.ReLU(), nb.nn.Dropout(0.0), nb.nn.Linear(6, 2)),
                   lambda: nb.randn(3, 4)),
    "TiedNet": (TiedNet, lambda: nb.tensor([1, 4, 7, 4])),
}


def outputs(model, x):
    """The model's first output as NumPy (LSTM returns ``(output, (h, c))``)."""
    out = model(x)
    return values(out[0] if isinstance(out, tuple) else out)


def assert_same_module(a, b):
    assert type(a) is type(b) and repr(a) == repr(b)
    assert [m.training for m in a.modules()] == [m.training for m in b.modules()]
    assert list(a.state_dict()) == list(b.state_dict())
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert_same_tensor(x, y)
    for (_, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert p is not q and isinstance(q, nb.nn.Parameter)


def copies(model):
    return {"deepcopy": copy.deepcopy(model), "pickle": pickle.loads(pickle.dumps(model))}


@pytest.mark.parametrize("name", MODELS)
def test_copies_are_equal_and_independent(name):
    make, sample = MODELS[name]
    model, x = make(), sample()
    model(x)  # training mode: BatchNorm's running statistics move
    for how, twin in copies(model).items():
        assert_same_module(model, twin)
        model.eval(), twin.eval()
        np.testing.assert_array_equal(outputs(twin, x), outputs(model, x), err_msg=how)
        before = {k: values(v) for k, v in model.state_dict().items()}
        for p in twin.parameters():
            p.data = p.data * 0 + 7
        twin.train()
        twin(x)
        for k, v in model.state_dict().items():
            np.testing.assert_array_equal(values(v), before[k], err_msg=f"{how}: {k}")
        model.train()


def test_tied_weights_stay_tied_in_copies():
    model = TiedNet()
    for how, twin in copies(model).items():
        assert twin.out.weight is twin.embed.weight, how
        assert twin.out.weight is not model.out.weight
        assert len(list(twin.parameters())) == len(list(model.parameters()))


def test_the_training_mode_is_copied():
    model = nb.nn.Sequential(nb.nn.Linear(2, 2), nb.nn.Dropout(0.5)).eval()
    for twin in copies(model).values():
        assert not twin.training and not twin[1].training


def test_deepcopy_draws_nothing_from_the_global_generator():
    model = nb.nn.Sequential(nb.nn.Linear(4, 3), nb.nn.LSTM(3, 3), nb.nn.Dropout(0.5))
    nb.manual_seed(5)
    expected = values(nb.rand(3))
    nb.manual_seed(5)
    copy.deepcopy(model)
    np.testing.assert_array_equal(values(nb.rand(3)), expected)


def test_unpickling_draws_nothing_from_the_global_generator():
    data = pickle.dumps(nb.nn.Linear(4, 3))
    nb.manual_seed(5)
    expected = values(nb.rand(3))
    nb.manual_seed(5)
    pickle.loads(data)
    np.testing.assert_array_equal(values(nb.rand(3)), expected)


def test_save_and_load_a_whole_model(tmp_path):
    model = TiedNet().eval()
    x = nb.tensor([0, 9, 3])
    back = round_trip(model, tmp_path, weights_only=False)
    assert_same_module(model, back)
    assert back.out.weight is back.embed.weight
    np.testing.assert_array_equal(outputs(back, x), outputs(model, x))
    with pytest.raises(pickle.UnpicklingError, match="TiedNet.*weights_only=False"):
        load(tmp_path / "obj.nb")


def test_rng_state_round_trip():
    nb.manual_seed(11)
    nb.rand(4)
    state = nb.get_rng_state()
    assert state.dtype == nb.uint8 and tuple(state.shape) == (16,)
    first = values(nb.rand(5))
    nb.set_rng_state(state)
    np.testing.assert_array_equal(values(nb.rand(5)), first)
    with pytest.raises(ValueError, match="16-byte uint8"):
        nb.set_rng_state(nb.zeros(3))
