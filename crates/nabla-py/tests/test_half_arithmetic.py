"""float16 and bfloat16 arithmetic from Python, against PyTorch's CPU ops on the same values: each
op computes in float32 and rounds once to the half dtype, as PyTorch's do."""

import numpy as np
import pytest

import nabla_rs as nb

try:
    import torch
except ImportError:  # the tests below that compare with PyTorch skip; the NumPy ones run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

VALUES = np.array([[0.3, -1.7, 2.5, 0.0], [7.25, -0.01, 3.0, 1.1]], dtype=np.float32)
PAIRS = [(nb.float16, "float16"), (nb.bfloat16, "bfloat16")]


def both(dtype, torch_dtype):
    return nb.tensor(VALUES).astype(dtype), torch.tensor(VALUES).to(getattr(torch, torch_dtype))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ops_match_numpy_half_arithmetic(dtype):
    """NumPy's float16 and ml_dtypes' bfloat16 (installed with JAX) compute each op in float32 and
    round once, as nabla does."""
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        np_dtype = ml_dtypes.bfloat16
    else:
        np_dtype = np.float16
    a = VALUES.astype(np_dtype)
    x = nb.tensor(VALUES).astype(getattr(nb, dtype))

    def check(ours, theirs):
        assert ours.dtype == x.dtype
        np.testing.assert_array_equal(ours.astype(nb.float32).numpy(), np.asarray(theirs, dtype=np.float32))

    check(x + x, a + a)
    check(x * 2.5, a * np_dtype(2.5))
    check(x - x.flip(1), a - a[:, ::-1])
    check(x / x.flip(1), a / a[:, ::-1])
    check(abs(x).sqrt(), np.sqrt(np.abs(a)))
    check(nb.maximum(x, -x), np.maximum(a, -a))
    np.testing.assert_array_equal((x > 0.5).numpy(), a > np_dtype(0.5))
    h = nb.tensor([0.5, 2.0], dtype=getattr(nb, dtype), requires_grad=True)
    (h * h).sum().backward()
    assert h.grad.dtype == h.dtype and h.grad.astype(nb.float32).tolist() == [1.0, 4.0]


def test_module_conversion_keeps_the_parameters_and_trains():
    model = nb.nn.Sequential(nb.nn.Linear(4, 8), nb.nn.ReLU(), nb.nn.LayerNorm(8), nb.nn.Linear(8, 3))
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    full = model(nb.tensor(x)).numpy()
    weight = model[0].weight
    assert model.bfloat16() is model and model[0].weight is weight and weight.dtype == nb.bfloat16
    out = model(nb.tensor(x).astype(nb.bfloat16))
    assert out.dtype == nb.bfloat16
    np.testing.assert_allclose(out.astype(nb.float32).numpy(), full, rtol=0.05, atol=0.05)
    opt = nb.optim.SGD(model.parameters(), lr=0.1)
    out.astype(nb.float32).sum().backward()
    before = weight.astype(nb.float32).numpy().copy()
    opt.step()
    assert weight.grad.dtype == nb.bfloat16 and not np.array_equal(weight.astype(nb.float32).numpy(), before)


def same(ours, theirs, ulps=0):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    a = ours.astype(nb.float64).numpy() if ours.dtype.is_floating_point else ours.numpy()
    b = theirs.double().numpy() if theirs.dtype.is_floating_point else theirs.numpy()
    if ulps == 0:
        np.testing.assert_array_equal(a, b)
    else:
        spacing = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(b), 1e-30))) - (10 if theirs.dtype == torch.float16 else 7))
        assert np.all((np.abs(a - b) <= ulps * spacing) | (a == b)), (a, b)


@needs_torch
@pytest.mark.parametrize("dtype, torch_dtype", PAIRS, ids=["float16", "bfloat16"])
def test_exact_ops_match_torch_bit_for_bit(dtype, torch_dtype):
    x, t = both(dtype, torch_dtype)
    same(x + x, t + t)
    same(x * 2.5, t * 2.5)
    same(x - x.flip(1), t - t.flip(1))
    same(x / 3.0, t / 3.0)
    same(abs(x).sqrt(), t.abs().sqrt())
    same(x.sum(1), t.sum(1))
    same(x.max(dim=1).values, t.max(dim=1).values)
    same(x > 0.5, t > 0.5)
    same(x @ x.T, t @ t.T, ulps=1)


@needs_torch
@pytest.mark.parametrize("dtype, torch_dtype", PAIRS, ids=["float16", "bfloat16"])
def test_transcendental_and_composite_ops_match_torch(dtype, torch_dtype):
    x, t = both(dtype, torch_dtype)
    same(nb.exp(x), torch.exp(t), ulps=1)
    same(nb.tanh(x), torch.tanh(t), ulps=1)
    same(x.softmax(1), t.softmax(1), ulps=1)
    same(x.mean(), t.mean(), ulps=1)
    same(nb.nn.functional.relu(x), torch.relu(t))
    assert (x * 2).dtype == dtype and (x + nb.tensor(1.0)).dtype == nb.float32  # float32 promotes


@needs_torch
def test_gradients_reach_float32_parameters_through_half_ops():
    w = nb.tensor([0.5, -1.0, 2.0], requires_grad=True)
    tw = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (w.astype(nb.bfloat16) * 3.0).exp().sum().astype(nb.float32).backward()
    (tw.bfloat16() * 3.0).exp().sum().float().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-2)
    # Half leaves take gradients in their own dtype, as PyTorch's.
    h, th = nb.tensor([0.5, 2.0], dtype=nb.bfloat16, requires_grad=True), torch.tensor([0.5, 2.0], dtype=torch.bfloat16, requires_grad=True)
    (h * h).sum().backward()
    (th * th).sum().backward()
    same(h.grad, th.grad)
    with pytest.raises(RuntimeError, match="floating-point and complex"):
        nb.tensor([1, 2], requires_grad=True)


def _pair_of_models():
    """A nabla model and a torch model with the same float32 weights."""
    model = nb.nn.Sequential(nb.nn.Linear(4, 8), nb.nn.ReLU(), nb.nn.LayerNorm(8), nb.nn.Linear(8, 3))
    reference = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for (_, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
            q.copy_(torch.tensor(p.numpy()))
    return model, reference


@needs_torch
@pytest.mark.parametrize("convert", ["bfloat16", "half", "double"])
def test_module_conversion_matches_torch(convert):
    model, reference = _pair_of_models()
    weight = model[0].weight
    assert getattr(model, convert)() is model and model[0].weight is weight  # same objects
    getattr(reference, convert)()
    dtype = {"bfloat16": torch.bfloat16, "half": torch.float16, "double": torch.float64}[convert]
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    ours = model(nb.tensor(x).astype(weight.dtype))
    theirs = reference(torch.tensor(x).to(dtype))
    assert ours.dtype == weight.dtype and weight.requires_grad and weight.is_leaf
    tol = 1e-12 if convert == "double" else 0.05
    np.testing.assert_allclose(ours.astype(nb.float64).numpy(), theirs.double().detach().numpy(), rtol=tol, atol=tol)
    opt = nb.optim.SGD(model.parameters(), lr=0.1)
    ours.astype(nb.float32).sum().backward()
    assert weight.grad.dtype == weight.dtype
    before = weight.astype(nb.float64).numpy().copy()
    opt.step()
    assert weight.dtype == ours.dtype and not np.array_equal(weight.astype(nb.float64).numpy(), before)


def test_module_to_errors_and_a_stale_optimizer():
    model = nb.nn.Sequential(nb.nn.Linear(4, 8), nb.nn.ReLU(), nb.nn.LayerNorm(8), nb.nn.Linear(8, 3))
    opt = nb.optim.Adam(model.parameters())
    model.to(nb.float64)
    model(nb.zeros(1, 4, dtype=nb.float64)).sum().backward()
    with pytest.raises(TypeError, match="make the optimizer after converting the model"):
        opt.step()
    with pytest.raises(TypeError, match="floating-point"):
        model.to(nb.int64)
    with pytest.raises(ValueError, match="CPU"):
        model.to("cuda")
    assert model.to("cpu") is model and model.to(nb.zeros(1, dtype=nb.float32))[0].weight.dtype == nb.float32
