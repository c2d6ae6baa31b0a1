"""PyTorch's method spellings (dim=/keepdim=, max(dim) pairs, sort, var(unbiased)), the in-place
methods and gradient hooks, each against PyTorch on the same inputs: values and gradients."""

import numpy as np
import pytest

import nabla_rs as nb

try:
    import torch
except ImportError:  # the PyTorch comparisons skip; tests/test_methods_numpy.py checks the same
    torch = None  # behaviour against NumPy and finite differences

pytestmark = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def pair(a):
    """The same float64 values as a nabla leaf and a torch leaf, both requiring grad."""
    return nb.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def same(x, t, tol=1e-12):
    expected = np.asarray(t) if isinstance(t, (np.ndarray, list, float)) else t.detach().numpy()
    np.testing.assert_allclose(np.asarray(x), expected, rtol=tol, atol=tol)


A = np.array([[1.0, 5.0, -2.0, 5.0], [3.0, 0.5, 7.0, -1.0], [2.0, 2.0, 2.0, 9.0]])


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "logsumexp", "argmax", "argmin", "softmax", "log_softmax", "cumsum"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_dim_keywords_match_torch(name, dim):
    x, t = nb.tensor(A), torch.tensor(A)
    if name in ("softmax", "log_softmax", "cumsum"):
        same(getattr(x, name)(dim=dim), getattr(t, name)(dim=dim))
        return
    for keepdim in (False, True):
        same(getattr(x, name)(dim=dim, keepdim=keepdim), getattr(t, name)(dim=dim, keepdim=keepdim))
    with pytest.raises(TypeError, match="both dim= and axis="):
        getattr(x, name)(dim=dim, axis=dim)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_dim_give_values_and_indices(name):
    x, t = pair(A)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            ours = getattr(x, name)(dim, keepdim)
            theirs = getattr(t, name)(dim, keepdim)
            same(ours.values, theirs.values)
            assert ours.indices.tolist() == theirs.indices.tolist()
            values, indices = getattr(x, name)(dim=dim, keepdim=keepdim)
            same(values, theirs.values)
    getattr(x, name)(1).values.sum().backward()
    getattr(t, name)(1).values.sum().backward()
    same(x.grad, t.grad)
    # Without an int dim: the reduction (NumPy's axis= too); with a tensor: elementwise.
    same(getattr(x, name)(), getattr(t, name)())
    same(getattr(x, name)(axis=(0, 1)), getattr(t, "a" + name)(dim=(0, 1)))
    other = np.flip(A, 1).copy()
    same(getattr(x, name)(nb.tensor(other)), getattr(t, name)(torch.tensor(other)))
    same(getattr(nb, name)(x, 1).values, getattr(torch, name)(t, 1).values)


def test_sort_and_topk_return_values_and_indices_as_torch():
    a = np.array([[3.0, 1.0, 2.0, 1.0], [0.0, -1.0, 5.0, 4.0]])
    x, t = pair(a)
    for descending in (False, True):
        ours, theirs = x.sort(dim=1, descending=descending), t.sort(dim=1, descending=descending, stable=True)
        same(ours.values, theirs.values)
        assert ours.indices.tolist() == theirs.indices.tolist()
    (x.sort(0).values * nb.tensor([[1.0], [2.0]])).sum().backward()
    (t.sort(0).values * torch.tensor([[1.0], [2.0]], dtype=torch.float64)).sum().backward()
    same(x.grad, t.grad)
    values, indices = x.topk(2, dim=1)
    theirs = t.topk(2, dim=1)
    same(values, theirs.values)
    assert indices.tolist() == theirs.indices.tolist()
    same(nb.sort(nb.tensor(a), axis=1), np.sort(a, 1))  # the Array API's sort: values only


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_take_unbiased_and_correction(name):
    x, t = nb.tensor(A), torch.tensor(A)
    same(getattr(x, name)(1, True), getattr(t, name)(1, True))
    same(getattr(x, name)(dim=0, unbiased=False, keepdim=True), getattr(t, name)(dim=0, unbiased=False, keepdim=True))
    same(getattr(x, name)(dim=1, correction=2), getattr(t, name)(dim=1, correction=2))
    same(getattr(x, name)(axis=1, ddof=1), getattr(np, name)(A, axis=1, ddof=1))
    same(getattr(x, name)(), getattr(t, name)(unbiased=False))  # NumPy's and JAX's default


def test_small_methods_match_torch():
    x, t = nb.tensor(A), torch.tensor(A)
    same(x.cumprod(1), t.cumprod(1))
    same(nb.cumprod(x, dim=0), torch.cumprod(t, 0))
    assert x.new_zeros(2, 3).dtype == nb.float64 and tuple(x.new_ones((4,)).shape) == (4,)
    same(x.new_full((2,), 7.0), t.new_full((2,), 7.0))
    same(x.new_tensor([1, 2]), t.new_tensor([1, 2]))
    same(nb.tensor([1.0, 2.0, 3.0]).expand_as(x[:2, :3]), torch.tensor([1.0, 2.0, 3.0]).expand_as(t[:2, :3]))
    same(x.reshape_as(nb.zeros(4, 3)), t.reshape_as(torch.zeros(4, 3)))
    assert nb.tensor([1, 2]).type_as(x).dtype == nb.float64
    same(x.t(), t.t())
    same(x.narrow(1, 1, 2), t.narrow(1, 1, 2))
    same(x.narrow(0, -2, 2), t.narrow(0, -2, 2))
    with pytest.raises(IndexError, match="narrow"):
        x.narrow(1, 3, 2)
    with pytest.raises(ValueError, match="at most 2"):
        nb.zeros(2, 2, 2).t()


def test_top_level_functions_for_methods():
    x, t = nb.tensor(A), torch.tensor(A)
    same(nb.softmax(x, 1), torch.softmax(t, 1))
    same(nb.log_softmax(x, dim=0), torch.log_softmax(t, dim=0))
    index = np.array([[0, 1], [2, 0], [1, 1]])
    same(nb.gather(x, 1, nb.tensor(index)), torch.gather(t, 1, torch.tensor(index)))
    same(nb.logsumexp(x, dim=1), torch.logsumexp(t, dim=1))
    same(nb.cumsum(x, dim=1), torch.cumsum(t, dim=1))
    assert nb.numel(x) == t.numel()
    same(nb.narrow(x, 0, 1, 1), torch.narrow(t, 0, 1, 1))


# ---- in-place methods -------------------------------------------------------------------------


INPLACE = [
    ("add_", (2.0,), {}),
    ("add_", (np.array([1.0, 2.0, 3.0, 4.0]),), {"alpha": 0.5}),
    ("sub_", (np.array([1.0, 2.0, 3.0, 4.0]),), {"alpha": 2}),
    ("mul_", (np.array([2.0, -1.0, 0.5, 3.0]),), {}),
    ("div_", (4.0,), {}),
    ("div_", (-3.0,), {"rounding_mode": "floor"}),
    ("div_", (-3.0,), {"rounding_mode": "trunc"}),
    ("pow_", (2.0,), {}),
    ("clamp_", (), {"min": 0.5, "max": 4.0}),
    ("clip_", (1.0,), {}),
    ("neg_", (), {}),
    ("exp_", (), {}),
    ("tanh_", (), {}),
    ("sigmoid_", (), {}),
    ("abs_", (), {}),
    ("relu_", (), {}),
    ("reciprocal_", (), {}),
    ("addcmul_", (np.full(4, 2.0), np.arange(4.0)), {"value": 0.5}),
    ("addcdiv_", (np.full(4, 2.0), np.arange(1.0, 5.0)), {"value": -1}),
    ("lerp_", (np.zeros(4), 0.25), {}),
    ("fill_", (3.5,), {}),
    ("zero_", (), {}),
    ("copy_", (np.array([9.0, 8.0, 7.0, 6.0]),), {}),
    ("masked_fill_", (np.array([True, False, True, False]), -1.0), {}),
    ("remainder_", (1.5,), {}),
    ("maximum_", (np.array([0.0, 4.0, 0.0, 4.0]),), {}),
]


def _as(module, value):
    return module.tensor(value) if isinstance(value, np.ndarray) else value


@pytest.mark.parametrize("name, args, kwargs", INPLACE, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(INPLACE)])
def test_in_place_values_and_gradients_match_torch(name, args, kwargs):
    base = np.array([1.5, -2.0, 3.0, 0.25])
    x, t = pair(base)
    y, u = x * 1.0, t * 1.0
    out = getattr(y, name)(*[_as(nb, a) for a in args], **kwargs)
    torch_name = {"maximum_": "maximum"}.get(name, name)
    theirs = getattr(u, torch_name)(*[_as(torch, a) for a in args], **kwargs)
    if torch_name == "maximum":
        u = theirs
    assert out is y  # returns the tensor itself
    same(y, u)
    (y * nb.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    (u * torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)).sum().backward()
    same(x.grad, t.grad)


def test_every_reference_sees_an_in_place_write():
    a = nb.tensor([1.0, 2.0])
    b = a
    a += 1
    a.mul_(2)
    assert b is a and b.tolist() == [4.0, 6.0]
    a[0] = 0.0
    assert b.tolist() == [0.0, 6.0]
    i = nb.tensor([1, 2])
    i <<= 1
    i |= nb.tensor([1, 0])
    assert i.tolist() == [3, 4]


def test_in_place_dtype_and_shape_rules_match_torch():
    i = nb.tensor([1, 2])
    with pytest.raises(RuntimeError, match="float.* cannot be written into a int64"):
        i += 0.5
    with pytest.raises(RuntimeError, match="cannot be written into a bool"):
        nb.tensor([True]).add_(1)
    f = nb.tensor([1.0, 2.0], dtype=nb.float32)
    f.add_(nb.tensor([1.0, 1.0], dtype=nb.float64))  # float64 into float32: cast, as PyTorch
    assert f.dtype == nb.float32 and f.tolist() == [2.0, 3.0]
    with pytest.raises(RuntimeError, match="shape"):
        nb.zeros(2).add_(nb.ones(3, 2))
    with pytest.raises(RuntimeError, match="complex"):
        nb.zeros(2).add_(nb.tensor([1j, 2j]))


def test_a_leaf_is_written_only_without_recording():
    w, v = pair(np.array([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w.add_(1.0)
    with pytest.raises(RuntimeError, match="leaf"):
        v.add_(1.0)
    (w * w).sum().backward()
    with nb.no_grad():
        w.sub_(0.1 * w.grad)
        w[0] = 5.0
    assert w.is_leaf and w.requires_grad and w.grad.tolist() == [2.0, 4.0]
    assert w.tolist() == pytest.approx([5.0, 1.6])
    (w * 3).sum().backward()
    assert w.grad.tolist() == [5.0, 7.0]
    lin = nb.nn.Linear(2, 1)
    with nb.no_grad():
        lin.weight.fill_(1.0)
        lin.bias.zero_()
    assert lin(nb.tensor([[2.0, 3.0]])).item() == 5.0


def test_writing_a_saved_tensor_keeps_gradients_right():
    # PyTorch refuses this backward ("modified by an inplace operation"); nabla's graph keeps the
    # values it saved, so the gradient is that of the computation as written.
    x, t = pair(np.array([0.5, -1.0, 2.0]))
    y = x.exp()
    z = y * y
    y.add_(1.0)
    (z.sum() + y.sum()).backward()
    u = t.exp()
    w = u * u
    (w.sum() + (u + 1.0).sum()).backward()
    same(x.grad, t.grad)


def test_in_place_inside_jit_and_grad():
    def f(x):
        y = x * 2.0
        y.add_(1.0)
        y[0] = 0.0
        y *= x
        return y.sum()

    x = nb.tensor([1.0, 2.0, 3.0])
    assert nb.jit(f)(x).item() == pytest.approx(f(x).item())
    same(nb.grad(f)(x), torch.tensor([0.0, 9.0, 13.0], dtype=torch.float64))


def test_random_in_place_fills():
    x = nb.zeros(1000, dtype=nb.float64)
    x.uniform_(-2.0, 3.0)
    assert -2.0 <= float(x.min()) and float(x.max()) < 3.0 and abs(float(x.mean()) - 0.5) < 0.2
    x.normal_(10.0, 0.1)
    assert abs(float(x.mean()) - 10.0) < 0.05
    with pytest.raises(TypeError, match="floating-point"):
        nb.zeros(3, dtype=nb.int64).uniform_()


# ---- hooks ------------------------------------------------------------------------------------


def test_leaf_hooks_match_torch():
    x, t = pair(np.array([1.0, -2.0, 3.0]))
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
    t.register_hook(lambda g: g * 2)
    (x * x).sum().backward()
    (t * t).sum().backward()
    same(x.grad, t.grad)
    assert seen == [[2.0, -4.0, 6.0]]
    handle.remove()
    (x * 1.0).sum().backward()
    assert x.grad.tolist() == [5.0, -7.0, 13.0]
    with pytest.raises(RuntimeError, match="shape"):
        x.register_hook(lambda g: nb.zeros(2))
        (x * 1.0).sum().backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        nb.zeros(2).register_hook(lambda g: g)


@pytest.mark.parametrize("retain_first", [True, False])
def test_hooks_and_retain_grad_on_computed_tensors_match_torch(retain_first):
    x, t = pair(np.array([0.5, 1.5]))
    y, u = x * x, t * t
    for tensor in (y, u):
        if retain_first:
            tensor.retain_grad()
        tensor.register_hook(lambda g: g * 10)
        tensor.register_hook(lambda g: g + 1)
        if not retain_first:
            tensor.retain_grad()
    (y.sin().sum()).backward(retain_graph=True)
    (u.sin().sum()).backward(retain_graph=True)
    same(x.grad, t.grad)
    assert y.retains_grad and u.retains_grad
    same(y.grad, u.grad)
    # The retained gradient is the one after the hooks, whatever the order (PyTorch's rule).
    same(y.grad, np.cos(np.array([0.25, 2.25])) * 10 + 1)
    (y.sin().sum()).backward()
    (u.sin().sum()).backward()
    same(y.grad, u.grad)  # accumulated over calls


def test_removed_hook_stops_running():
    x = nb.tensor([1.0], requires_grad=True)
    y = x * 2.0
    handle = y.register_hook(lambda g: g * 100)
    handle.remove()
    (y * 3.0).sum().backward()
    assert x.grad.tolist() == [6.0]


# ---- functions --------------------------------------------------------------------------------


def test_composed_functions_match_torch():
    a = np.array([[1.0, np.nan, np.inf], [-np.inf, 2.0, -3.0]])
    for kwargs in ({}, {"nan": 1.5, "posinf": 9.0, "neginf": -9.0}):
        same(nb.nan_to_num(nb.tensor(a), **kwargs), torch.nan_to_num(torch.tensor(a), **kwargs))
    c = np.array([complex(np.nan, np.inf), 1 + 2j])
    same(nb.nan_to_num(nb.tensor(c)), torch.nan_to_num(torch.tensor(c)))
    v, m = np.array([1.0, 2.0, 3.0]), np.arange(12.0).reshape(3, 4)
    for k in (-1, 0, 2):
        same(nb.diag(nb.tensor(v), k), torch.diag(torch.tensor(v), k))
        same(nb.tensor(m).diag(k), torch.tensor(m).diag(k))
    same(nb.dot(nb.tensor(v), nb.tensor(v)), torch.dot(torch.tensor(v), torch.tensor(v)))
    same(nb.outer(nb.tensor(v), nb.tensor(v[:2])), torch.outer(torch.tensor(v), torch.tensor(v[:2])))
    for sa, sb in [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (3, 2))]:
        p, q = np.arange(np.prod(sa), dtype=float).reshape(sa), np.arange(np.prod(sb), dtype=float).reshape(sb) - 3
        same(nb.kron(nb.tensor(p), nb.tensor(q)), torch.kron(torch.tensor(p), torch.tensor(q)))
    with pytest.raises(ValueError, match="two vectors"):
        nb.dot(nb.tensor(m), nb.tensor(v))


def test_scatter_matches_torch_with_gradients():
    base = np.arange(12.0).reshape(3, 4)
    index = np.array([[0, 2, 1], [2, 0, 0]])
    src = np.array([[10.0, 20.0, 30.0], [50.0, 60.0, 70.0]])
    for dim in (0, 1):
        idx = index if dim == 1 else np.array([[0, 2, 1], [1, 0, 2]])
        x, t = pair(base)
        s, r = pair(src)
        ours = nb.scatter_add(x, dim, nb.tensor(idx), s)
        theirs = torch.scatter_add(t, dim, torch.tensor(idx), r)
        same(ours, theirs)
        weights = np.arange(12.0).reshape(3, 4)
        (ours * nb.tensor(weights)).sum().backward()
        (theirs * torch.tensor(weights)).sum().backward()
        same(x.grad, t.grad)
        same(s.grad, r.grad)
    # Replacing, with indices that do not repeat along the written axis (PyTorch leaves the
    # winner of a repeated index unspecified).
    idx = np.array([[2, 0, 1], [1, 2, 0]])
    x, t = pair(base)
    s, r = pair(np.array([[10.0, 20.0, 30.0, 40.0], [50.0, 60.0, 70.0, 80.0]]))
    ours, theirs = x.scatter(1, nb.tensor(idx), s[:, :3]), t.scatter(1, torch.tensor(idx), r[:, :3])
    same(ours, theirs)
    ours.sum().backward()
    theirs.sum().backward()
    same(x.grad, t.grad)
    same(s.grad, r.grad)
    same(nb.tensor(base).scatter(0, nb.tensor([[2, 1]]), value=-1.0), torch.tensor(base).scatter(0, torch.tensor([[2, 1]]), value=-1.0))
    y = nb.tensor(base)
    y.scatter_(1, nb.tensor(idx), nb.tensor(src))  # src larger than the index: its leading block
    same(y, theirs)
    # A repeated position: the last element written wins.
    assert nb.zeros(3).scatter(0, nb.tensor([1, 1, 1]), nb.tensor([5.0, 6.0, 7.0])).tolist() == [0.0, 7.0, 0.0]
    with pytest.raises(IndexError, match="out of range"):
        nb.zeros(3).scatter(0, nb.tensor([3]), nb.tensor([1.0]))
    with pytest.raises(TypeError, match="integers"):
        nb.zeros(3).scatter_add(0, nb.tensor([0.0]), nb.tensor([1.0]))


def test_randint_and_like_draws():
    r = nb.randint(3, 7, (2000,))
    assert r.dtype == nb.int64 and set(r.tolist()) == {3, 4, 5, 6}
    assert set(nb.randint(2, (50,)).tolist()) <= {0, 1}
    assert nb.randint(0, 5, (3, 2), dtype=nb.int32).dtype == nb.int32
    with pytest.raises(ValueError, match="empty"):
        nb.randint(5, 5, (2,))
    x = nb.zeros(4, 3, dtype=nb.float64)
    assert nb.rand_like(x).dtype == nb.float64 and tuple(nb.randn_like(x).shape) == (4, 3)
    assert set(nb.randint_like(x, 2).tolist()[0]) <= {0.0, 1.0}


def test_set_default_dtype():
    assert nb.get_default_dtype() == nb.float32
    try:
        nb.set_default_dtype(nb.float64)
        assert nb.tensor([1.5]).dtype == nb.float64 and nb.tensor(1j).dtype == nb.complex128
        assert nb.zeros(2).dtype == nb.float64 and nb.randn(2).dtype == nb.float64
        assert nb.arange(0.0, 1.0, 0.5).dtype == nb.float64 and nb.tensor([1, 2]).dtype == nb.int64
        assert nb.nn.Linear(2, 2).weight.dtype == nb.float64
        with pytest.raises(TypeError, match="floating-point"):
            nb.set_default_dtype(nb.int64)
    finally:
        nb.set_default_dtype(nb.float32)
    assert nb.tensor([1.5]).dtype == nb.float32 and nb.tensor(1j).dtype == nb.complex64


def test_post_accumulate_grad_hook_matches_torch():
    x, t = pair(np.array([1.0, 2.0]))
    seen, seen_t = [], []
    handle = x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    t.register_post_accumulate_grad_hook(lambda p: seen_t.append(p.grad.tolist()))
    for _ in range(2):
        (x * x).sum().backward()
        (t * t).sum().backward()
    assert seen == seen_t == [[2.0, 4.0], [4.0, 8.0]]
    handle.remove()
    (x * x).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda p: None)
