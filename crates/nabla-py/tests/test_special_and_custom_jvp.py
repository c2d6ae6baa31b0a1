"""``nabla_rs.special`` against ``torch.special`` (values and gradients) and central finite
differences, and ``custom_jvp`` against ``jax.custom_jvp``."""

import numpy as np
import pytest

import nabla_rs as nb
from finite_differences import central_differences

X = np.array([0.3, 1.0, 2.5, 7.0])
Y = np.array([0.2, 0.9, 3.0, 0.5])
P = np.array([0.05, 0.3, 0.5, 0.9])

# (nabla function, torch.special name, input, differentiable)
UNARY = [
    ("gammaln", "gammaln", X),
    ("digamma", "digamma", X),  # its derivative at 1 is pi^2 / 6 (checked below)
    ("erfinv", "erfinv", P * 2 - 1),
    ("i0", "i0", X - 3),
    ("i0e", "i0e", X - 3),
    ("i1", "i1", X - 3),
    ("i1e", "i1e", X - 3),
    ("expit", "expit", X - 3),
    ("log_expit", "log_expit", np.array([-40.0, -1.0, 0.5, 30.0])),
    ("logit", "logit", P),
    ("entr", "entr", P),
    ("sinc", "sinc", np.array([-1.5, -0.2, 0.3, 2.5])),
    ("exp2", "exp2", X - 3),
    ("erf", "erf", X - 3),
    ("expm1", "expm1", X - 3),
    ("log1p", "log1p", X),
    ("erfc", "erfc", X - 3),
    ("ndtr", "ndtr", X - 3),
    ("ndtri", "ndtri", P),
    ("log_ndtr", "log_ndtr", np.array([-4.0, -2.0, 0.5, 3.0])),  # the far tails: Rust fixtures
]


SCIPY = {"expit": "expit", "exp2": "exp2", "erf": "erf", "expm1": "expm1", "log1p": "log1p", "sinc": None}


@pytest.mark.parametrize("name, torch_name, x", UNARY, ids=[u[0] for u in UNARY])
def test_unary_special_functions(name, torch_name, x):
    """Values against SciPy (and PyTorch when installed), gradients against finite differences."""
    f = getattr(nb.special, name)
    value = f(nb.tensor(x))
    assert value.dtype == nb.float64
    grad = nb.grad(lambda t: f(t).sum())(nb.tensor(x))
    np.testing.assert_allclose(grad.numpy(), central_differences(lambda v: float(f(nb.tensor(v)).sum()), x), rtol=1e-6, atol=1e-8)
    scipy_special = pytest.importorskip("scipy.special")
    reference = np.sinc(x) if name == "sinc" else getattr(scipy_special, SCIPY.get(name, name))(x)
    np.testing.assert_allclose(value.numpy(), reference, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, torch_name, x", UNARY, ids=[u[0] for u in UNARY])
def test_unary_special_functions_match_torch(name, torch_name, x):
    torch = pytest.importorskip("torch")
    f = getattr(nb.special, name)
    value = f(nb.tensor(x))
    grad = nb.grad(lambda t: f(t).sum())(nb.tensor(x))
    t = torch.tensor(x, requires_grad=True)
    reference = torch.nn.functional.logsigmoid if torch_name == "log_expit" else getattr(torch.special, torch_name)
    ref = reference(t)
    np.testing.assert_allclose(value.numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-14)
    ref.sum().backward()
    # PyTorch's trigamma (digamma's derivative) is good to about 5e-10; nabla's gives pi^2/6 at 1.
    np.testing.assert_allclose(grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_trigamma_at_one_is_pi_squared_over_six():
    d = nb.grad(lambda x: nb.special.digamma(x).sum())(nb.tensor([1.0], dtype=nb.float64))
    assert abs(d.item() - np.pi**2 / 6) < 1e-15


def test_binary_and_parametrised_special_functions():
    sp = pytest.importorskip("scipy.special")
    cases = [
        (nb.special.xlogy(nb.tensor(X), nb.tensor(Y)), sp.xlogy(X, Y)),
        (nb.special.xlog1py(nb.tensor(X), nb.tensor(Y)), sp.xlog1py(X, Y)),
        (nb.special.polygamma(2, nb.tensor(X)), sp.polygamma(2, X)),
        (nb.special.multigammaln(nb.tensor(X + 2), 3), np.array([sp.multigammaln(v, 3) for v in X + 2])),
        (nb.special.logit(nb.tensor(P), eps=0.1), sp.logit(np.clip(P, 0.1, 0.9))),
        (nb.special.logsumexp(nb.tensor(X), 0), sp.logsumexp(X, 0)),
        (nb.special.softmax(nb.tensor(X), 0), sp.softmax(X, 0)),
        (nb.special.round(nb.tensor(X * 1.234), decimals=1), np.round(X * 1.234, 1)),
    ]
    for ours, theirs in cases:
        np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-12, atol=1e-14)
    zero = nb.special.xlogy(nb.tensor([0.0, 0.0]), nb.tensor([0.0, np.inf]))
    assert zero.tolist() == [0.0, 0.0]
    a, b = nb.tensor([2.0, 50.0], dtype=nb.float64), nb.tensor([3.0, 60.0], dtype=nb.float64)
    beta = nb.special.betaln(a, b).numpy()
    from math import lgamma

    np.testing.assert_allclose(beta, [lgamma(2) + lgamma(3) - lgamma(5), lgamma(50) + lgamma(60) - lgamma(110)], rtol=1e-12)


def test_special_functions_under_jit_and_vmap_and_errors():
    f = nb.jit(lambda x: nb.special.gammaln(x) + nb.special.i0e(x))
    x = nb.tensor(X)
    np.testing.assert_allclose(f(x).numpy(), (nb.special.gammaln(x) + nb.special.i0e(x)).numpy(), rtol=1e-14)
    batched = nb.vmap(nb.special.digamma)(nb.tensor(np.stack([X, X + 1])))
    np.testing.assert_allclose(batched.numpy()[1] - batched.numpy()[0], 1 / X, rtol=1e-12)
    assert nb.special.gammaln(nb.tensor([1, 2, 3])).dtype == nb.float32
    with pytest.raises(TypeError, match="real"):
        nb.special.gammaln(nb.tensor([1j]))
    with pytest.raises(ValueError, match="p must be at least 1"):
        nb.special.multigammaln(x, 0)


# ---- custom_jvp -------------------------------------------------------------------------------


@nb.custom_jvp
def log1pexp(x):
    return nb.log(1.0 + nb.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * nb.sigmoid(x)


def test_custom_jvp_forward_and_reverse_use_the_rule():
    x = nb.tensor([-2.0, 0.0, 100.0])
    # The plain function's derivative is NaN at 100 (inf / inf); the rule's is 1.
    out, tangent = nb.jvp(log1pexp, (x,), (nb.ones(3, dtype=nb.float32),))
    np.testing.assert_allclose(tangent.numpy(), 1 / (1 + np.exp(-np.array([-2.0, 0.0, 100.0]))), rtol=1e-6)
    g = nb.grad(lambda x: log1pexp(x).sum())(x)
    np.testing.assert_allclose(g.numpy(), tangent.numpy(), rtol=1e-6)
    h = nb.grad(lambda x: nb.grad(lambda y: log1pexp(y).sum())(x).sum())(nb.tensor([0.0, 1.0], dtype=nb.float64))
    s = 1 / (1 + np.exp(-np.array([0.0, 1.0])))
    np.testing.assert_allclose(h.numpy(), s * (1 - s), rtol=1e-12)
    xs = nb.tensor([[0.0, 1.0], [2.0, -1.0]], dtype=nb.float64)
    jac = nb.vmap(nb.jacrev(log1pexp))(xs)
    np.testing.assert_allclose(np.diagonal(jac.numpy(), axis1=1, axis2=2), 1 / (1 + np.exp(-xs.numpy())), rtol=1e-12)
    leaf = nb.tensor([100.0], requires_grad=True)
    log1pexp(leaf).sum().backward()
    assert leaf.grad.tolist() == [1.0]


def test_custom_jvp_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    @jax.custom_jvp
    def f_jax(x, y):
        return jnp.sin(x) * y

    @f_jax.defjvp
    def f_jax_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f_jax(x, y), 2.0 * jnp.cos(x) * y * tx + jnp.sin(x) * ty  # a deliberately "wrong" rule

    @nb.custom_jvp
    def f(x, y):
        return nb.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), 2.0 * nb.cos(x) * y * tx + nb.sin(x) * ty

    x, y = np.array([0.3, 1.2]), np.array([2.0, -0.5])
    for argnums in (0, 1, (0, 1)):
        ours = nb.grad(lambda a, b: f(a, b).sum(), argnums=argnums)(nb.tensor(x), nb.tensor(y))
        theirs = jax.grad(lambda a, b: f_jax(a, b).sum(), argnums=argnums)(x, y)
        for o, t in zip(ours if isinstance(argnums, tuple) else [ours], theirs if isinstance(argnums, tuple) else [theirs]):
            np.testing.assert_allclose(o.numpy(), np.asarray(t), rtol=1e-14)
    hess = nb.hessian(lambda a: f(a, nb.tensor(y)).sum())(nb.tensor(x))
    hess_jax = jax.hessian(lambda a: f_jax(a, y).sum())(x)
    np.testing.assert_allclose(hess.numpy(), np.asarray(hess_jax), rtol=1e-14, atol=1e-15)

    @nb.custom_jvp
    def g(x, y):
        return x * y

    g.defjvps(lambda tx, out, x, y: tx * y * 3.0, lambda ty, out, x, y: x * ty)
    gj = jax.custom_jvp(lambda x, y: x * y)
    gj.defjvps(lambda tx, out, x, y: tx * y * 3.0, lambda ty, out, x, y: x * ty)
    ours = nb.grad(lambda a, b: g(a, b).sum(), argnums=(0, 1))(nb.tensor(x), nb.tensor(y))
    theirs = jax.grad(lambda a, b: gj(a, b).sum(), argnums=(0, 1))(x, y)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), np.asarray(t), rtol=1e-14)


def test_custom_jvp_nondiff_argnums_and_errors():
    @nb.custom_jvp
    def power(n, x):
        return x**n

    power.nondiff_argnums = (0,)

    @power.defjvp
    def power_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return power(n, x), n * x ** (n - 1) * t

    x = nb.tensor([2.0, 3.0], dtype=nb.float64)
    assert nb.grad(lambda x: power(3, x).sum())(x).tolist() == [12.0, 27.0]

    @nb.custom_jvp
    def no_rule(x):
        return x

    with pytest.raises(TypeError, match="defjvp"):
        no_rule(x)

    @nb.custom_jvp
    def bad(x):
        return x

    bad.defjvp(lambda primals, tangents: primals[0])
    with pytest.raises(ValueError, match="primal_out, tangent_out"):
        nb.jvp(bad, (x,), (x,))
