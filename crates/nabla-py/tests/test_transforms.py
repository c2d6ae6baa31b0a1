"""JAX-style transforms against JAX itself: values and derivatives, pytrees, nesting, vmap, jit."""

import numpy as np
import pytest

import nabla_rs as nb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def f_nb(w, x):
    return (nb.tanh(x @ w) ** 2).sum() + (w * w).sum()


def f_jax(w, x):
    return (jnp.tanh(x @ w) ** 2).sum() + (w * w).sum()


@pytest.fixture
def data():
    r = np.random.default_rng(1)
    return r.normal(size=(3, 2)), r.normal(size=(4, 3))


def test_grad_argnums_and_value(data):
    w, x = data
    close(nb.grad(f_nb)(nb.tensor(w), nb.tensor(x)), jax.grad(f_jax)(w, x))
    gw, gx = nb.grad(f_nb, argnums=(0, 1))(nb.tensor(w), nb.tensor(x))
    jw, jx = jax.grad(f_jax, argnums=(0, 1))(w, x)
    close(gw, jw)
    close(gx, jx)
    v, g = nb.value_and_grad(f_nb)(nb.tensor(w), nb.tensor(x))
    close(v, f_jax(w, x))
    close(g, jw)


def test_grad_of_pytrees_and_aux(data):
    w, x = data
    params = {"w": nb.tensor(w), "b": [nb.tensor(np.ones(2))]}

    def loss(p, x):
        out = x @ p["w"] + p["b"][0]
        return (out**2).sum(), out.shape

    g, aux = nb.grad(loss, has_aux=True)(params, nb.tensor(x))
    jg = jax.grad(lambda p, x: ((x @ p["w"] + p["b"][0]) ** 2).sum())({"w": w, "b": [np.ones(2)]}, x)
    close(g["w"], jg["w"])
    close(g["b"][0], jg["b"][0])
    assert aux == (4, 2)


def test_higher_order_grads(data):
    f = lambda x: nb.sin(x) * x**3
    fj = lambda x: jnp.sin(x) * x**3
    x = 0.7
    d = nb.tensor(x, dtype=nb.float64)
    for order in range(1, 5):
        g, gj = f, fj
        for _ in range(order):
            g, gj = nb.grad(g), jax.grad(gj)
        close(g(d), gj(x))


def test_vjp_and_jvp_with_several_outputs(data):
    w, x = data
    f = lambda w, x: (nb.tanh(x @ w), (w**2).sum())
    fj = lambda w, x: (jnp.tanh(x @ w), (w**2).sum())
    out, vjp_fn = nb.vjp(f, nb.tensor(w), nb.tensor(x))
    jout, jvp_fn = jax.vjp(fj, w, x)
    close(out[0], jout[0])
    ct = (np.ones((4, 2)) * 0.5, 2.0)
    for a, b in zip(vjp_fn((nb.tensor(ct[0]), nb.tensor(ct[1], dtype=nb.float64))), jvp_fn(ct)):
        close(a, b)
    tw, tx = np.ones_like(w), np.zeros_like(x)
    (y, dy) = nb.jvp(f, (nb.tensor(w), nb.tensor(x)), (nb.tensor(tw), nb.tensor(tx)))
    (jy, jdy) = jax.jvp(fj, (w, x), (tw, tx))
    close(dy[0], jdy[0])
    close(dy[1], jdy[1])


def test_jacobians_hessian_and_hvp(data):
    w, x = data
    g = lambda w: nb.tanh(x @ w)
    gj = lambda w: jnp.tanh(x @ w)
    close(nb.jacfwd(g)(nb.tensor(w)), jax.jacfwd(gj)(w))
    close(nb.jacrev(g)(nb.tensor(w)), jax.jacrev(gj)(w))
    h = nb.hessian(lambda w: f_nb(w, nb.tensor(x)))(nb.tensor(w))
    close(h, jax.hessian(lambda w: f_jax(w, x))(w))
    v = np.arange(6.0).reshape(3, 2)
    hv = nb.hvp(lambda w: f_nb(w, nb.tensor(x)), (nb.tensor(w),), (nb.tensor(v),))
    close(hv, jax.jvp(jax.grad(lambda w: f_jax(w, x)), (w,), (v,))[1])


def test_vmap_per_example_gradients(data):
    w, x = data
    per_example = nb.vmap(nb.grad(lambda w, xi: (nb.tanh(xi @ w) ** 2).sum()), in_axes=(None, 0))
    ref = jax.vmap(jax.grad(lambda w, xi: (jnp.tanh(xi @ w) ** 2).sum()), in_axes=(None, 0))
    close(per_example(nb.tensor(w), nb.tensor(x)), ref(w, x))
    # Out axes and several outputs.
    g = nb.vmap(lambda a, w: (a * w, w * 2.0), in_axes=(0, None), out_axes=(0, None))
    batched, shared = g(nb.tensor(x), nb.tensor(2.0, dtype=nb.float64))
    assert tuple(batched.shape) == x.shape and tuple(shared.shape) == ()
    f = nb.vmap(lambda a: (a * 2, a.sum()), in_axes=1, out_axes=0)
    a, s = f(nb.tensor(x))
    close(a, (x * 2).T)
    close(s, x.sum(0))


def test_jit_compiles_once_and_matches_eager(data):
    w, x = data
    step = nb.jit(nb.grad(f_nb))
    for _ in range(3):
        close(step(nb.tensor(w), nb.tensor(x)), jax.grad(f_jax)(w, x))
    assert len(step._cache) == 1
    step(nb.tensor(w[:2]), nb.tensor(x[:, :2]))
    assert len(step._cache) == 2
    program = step.lower(nb.tensor(w), nb.tensor(x))
    assert program.nodes[1] <= program.nodes[0] and "tanh" in str(program)
    # Gradients flow through jit when an argument requires them.
    wt = nb.tensor(w, requires_grad=True)
    nb.jit(f_nb)(wt, nb.tensor(x)).backward()
    close(wt.grad, jax.grad(f_jax)(w, x))


def test_jit_of_vmap_and_vmap_of_jit(data):
    w, x = data
    per = lambda w, xi: (nb.tanh(xi @ w) ** 2).sum()
    ref = jax.vmap(jax.grad(lambda w, xi: (jnp.tanh(xi @ w) ** 2).sum()), in_axes=(None, 0))(w, x)
    close(nb.jit(nb.vmap(nb.grad(per), in_axes=(None, 0)))(nb.tensor(w), nb.tensor(x)), ref)
    close(nb.vmap(nb.jit(nb.grad(per)), in_axes=(None, 0))(nb.tensor(w), nb.tensor(x)), ref)


def test_python_exceptions_pass_through_transforms():
    class Boom(Exception):
        pass

    def bad(x):
        raise Boom("inside")

    with pytest.raises(Boom, match="inside"):
        nb.grad(bad)(nb.tensor(1.0))
    with pytest.raises(Boom):
        nb.vmap(bad)(nb.tensor([1.0, 2.0]))
    with pytest.raises(Boom):
        nb.jit(bad)(nb.tensor([1.0]))
    with pytest.raises(RuntimeError, match="one element"):
        nb.grad(lambda x: x * 2)(nb.tensor([1.0, 2.0]))  # not a scalar, as PyTorch's RuntimeError


def test_custom_vjp_rule_is_used_everywhere():
    @nb.custom_vjp
    def clip_gradient(x):
        return x * 1.0

    def fwd(x):
        return x * 1.0, None

    def bwd(_, g):
        return (nb.where(g > 1.0, 1.0, g),)

    clip_gradient.defvjp(fwd, bwd)

    @jax.custom_vjp
    def clip_j(x):
        return x

    clip_j.defvjp(lambda x: (x, None), lambda _, g: (jnp.minimum(g, 1.0),))

    x = np.array([0.5, 2.0, -1.0])
    f = lambda x: (clip_gradient(x) * 3.0).sum()
    fj = lambda x: (clip_j(x) * 3.0).sum()
    close(nb.grad(f)(nb.tensor(x)), jax.grad(fj)(x))
    close(nb.vmap(nb.grad(lambda v: (clip_gradient(v) * 3.0).sum()))(nb.tensor(x)), jax.vmap(jax.grad(lambda v: (clip_j(v) * 3.0).sum()))(x))
    close(nb.jit(nb.grad(f))(nb.tensor(x)), jax.grad(fj)(x))
    t = nb.tensor(x, requires_grad=True)
    f(t).backward()
    close(t.grad, [1.0, 1.0, 1.0])


def test_custom_vjp_with_residuals_and_two_arguments():
    @nb.custom_vjp
    def mul(a, b):
        return a * b

    mul.defvjp(lambda a, b: (a * b, (a, b)), lambda res, g: (g * res[1] * 2.0, None))
    ga, gb = nb.grad(lambda a, b: mul(a, b).sum(), argnums=(0, 1))(nb.tensor([1.0, 2.0]), nb.tensor([3.0, 4.0]))
    close(ga, [6.0, 8.0])  # the rule's (doubled) value, not the true derivative
    close(gb, [0.0, 0.0])


def test_custom_vjp_differentiates_to_higher_orders_as_jax():
    # Second and third derivatives run through the rule, whose residuals must depend on the inputs
    # the differentiated backward receives (they were the untracked forward's, giving zeros).
    @nb.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: (3.0 * x**2 * g,))

    @jax.custom_vjp
    def cube_j(x):
        return x**3

    cube_j.defvjp(lambda x: (x**3, x), lambda x, g: (3.0 * x**2 * g,))
    f, fj = (lambda x: cube(x).sum()), (lambda x: cube_j(x).sum())
    x = np.array([1.0, -2.0, 0.5])
    close(nb.grad(f)(nb.tensor(x)), jax.grad(fj)(x))
    close(nb.hessian(f)(nb.tensor(x)), jax.hessian(fj)(x))
    s = nb.tensor(2.0, dtype=nb.float64)
    close(nb.grad(nb.grad(f))(s), jax.grad(jax.grad(fj))(2.0))
    close(nb.grad(nb.grad(nb.grad(f)))(s), jax.grad(jax.grad(jax.grad(fj)))(2.0))
    close(nb.jit(nb.hessian(f))(nb.tensor(x)), jax.hessian(fj)(x))


def test_checkpoint_gives_the_same_gradients(data):
    w, x = data
    layer = nb.nn.Linear(3, 3, dtype=nb.float64)
    block = lambda h: nb.tanh(layer(h)) * 2.0
    loss_plain = lambda w: (block(nb.tensor(x) @ nb.eye(3, dtype=nb.float64) * w[0, 0]) ** 2).sum()
    loss_ckpt = lambda w: (nb.checkpoint(block, captured=list(layer.parameters()))(nb.tensor(x) @ nb.eye(3, dtype=nb.float64) * w[0, 0]) ** 2).sum()
    close(nb.grad(loss_ckpt)(nb.tensor(w)), nb.grad(loss_plain)(nb.tensor(w)), tol=0)
    for p in layer.parameters():
        p.grad = None
    loss_ckpt(nb.tensor(w)).backward()
    ckpt_grads = [p.grad.numpy().copy() for p in layer.parameters()]
    for p in layer.parameters():
        p.grad = None
    loss_plain(nb.tensor(w)).backward()
    for a, p in zip(ckpt_grads, layer.parameters()):
        close(a, p.grad, tol=0)


def test_jit_static_arguments_and_keywords_as_jax():
    traces = []

    def f(x, n, *, mode="sum", scale=1.0):
        traces.append((n, mode))
        y = x * scale
        for _ in range(n):
            y = nb.tanh(y) * 2.0 if isinstance(y, nb.Tensor) else jnp.tanh(y) * 2.0
        return y.sum() if mode == "sum" else y.mean()

    x = np.linspace(-1.0, 1.0, 5)
    g = nb.jit(f, static_argnums=1, static_argnames="mode")
    jg = jax.jit(f, static_argnums=1, static_argnames="mode")
    for n, mode, scale in [(2, "sum", 1.0), (2, "sum", 1.0), (3, "sum", 0.5), (2, "mean", 2.0)]:
        got = g(nb.tensor(x), n, mode=mode, scale=nb.tensor(scale))
        close(got, jg(jnp.asarray(x), n, mode=mode, scale=scale))
    nabla_traces = [t for t in traces if isinstance(t, tuple)]
    assert len(nabla_traces) >= 3  # one trace per static signature, shared by the repeated call
    before = len(traces)
    g(nb.tensor(x), 2, mode="sum", scale=nb.tensor(3.0))  # same signature: no new trace
    assert len(traces) == before
    with pytest.raises(ValueError, match="hashable"):
        g(nb.tensor(x), [2])
    with pytest.raises(ValueError, match="static_argnums"):
        nb.jit(f, static_argnums=5)(nb.tensor(x), 2)


def test_jvp_with_aux_as_jax():
    def f(x):
        return nb.sin(x) * x, {"norm": (x * x).sum()}

    def fj(x):
        return jnp.sin(x) * x, {"norm": (x * x).sum()}

    x, t = np.linspace(-1.0, 1.0, 4), np.arange(4.0)
    y, ty, aux = nb.jvp(f, (nb.tensor(x),), (nb.tensor(t),), has_aux=True)
    yj, tyj, auxj = jax.jvp(fj, (jnp.asarray(x),), (jnp.asarray(t),), has_aux=True)
    close(y, yj)
    close(ty, tyj)
    close(aux["norm"], auxj["norm"])
    assert not aux["norm"].requires_grad


def test_custom_vjp_nondiff_argnums_as_jax():
    import functools

    def make(lib, custom):
        @functools.partial(custom, nondiff_argnums=(0,))
        def power(n, x):
            return (x**n).sum()

        def fwd(n, x):
            return power(n, x), x

        def bwd(n, x, g):
            return (g * n * x ** (n - 1) * 1.5,)  # a rule of its own, so the test sees it is used

        power.defvjp(fwd, bwd)
        return power

    nb_power, jax_power = make(nb, nb.custom_vjp), make(jnp, jax.custom_vjp)
    x = np.array([0.5, 1.0, 2.0])
    close(nb.grad(nb_power, argnums=1)(3, nb.tensor(x)), jax.grad(jax_power, argnums=1)(3, jnp.asarray(x)))
    close(nb_power(2, nb.tensor(x)), jax_power(2, jnp.asarray(x)))
    with pytest.raises(ValueError, match="nondiff_argnums"):
        nb.custom_vjp(lambda x: x, nondiff_argnums=(3,)).defvjp(lambda x: (x, x), lambda r, g: (g,))(nb.tensor(x))


def test_grad_holomorphic_matches_jax_to_second_order():
    zs = np.array([1 + 2j, 0.5 - 1j, -0.3 + 0.1j])

    def f_nb(z):
        return (nb.sin(z) * z + nb.exp(z) / (z + 3.0)).sum()

    def f_jax(z):
        return (jnp.sin(z) * z + jnp.exp(z) / (z + 3.0)).sum()

    got = nb.grad(f_nb, holomorphic=True)(nb.tensor(zs))
    np.testing.assert_allclose(got.numpy(), jax.grad(f_jax, holomorphic=True)(jnp.array(zs)), rtol=1e-13)
    second = nb.grad(lambda z: nb.grad(f_nb, holomorphic=True)(z).sum(), holomorphic=True)(nb.tensor(zs))
    want = jax.grad(lambda z: jax.grad(f_jax, holomorphic=True)(z).sum(), holomorphic=True)(jnp.array(zs))
    np.testing.assert_allclose(second.numpy(), want, rtol=1e-12)
    value, g = nb.value_and_grad(f_nb, holomorphic=True)(nb.tensor(zs))
    np.testing.assert_allclose(value.item(), complex(f_jax(jnp.array(zs))), rtol=1e-14)
    with pytest.raises(TypeError, match="complex inputs"):
        nb.grad(f_nb, holomorphic=True)(nb.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="complex output"):
        nb.grad(lambda z: nb.real(z).sum(), holomorphic=True)(nb.tensor(zs))


def test_linearize_matches_jax():
    x = np.array([0.3, 1.2, -2.0])

    def f_nb(x, y):
        return nb.sin(x) * y, (x * y).sum()

    def f_jax(x, y):
        return jnp.sin(x) * y, (x * y).sum()

    out, f_jvp = nb.linearize(f_nb, nb.tensor(x), nb.tensor(x[::-1].copy()))
    jout, jf_jvp = jax.linearize(f_jax, jnp.array(x), jnp.array(x[::-1].copy()))
    for a, b in zip(out, jout):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-15)
    tangents = (np.array([1.0, 0.5, -1.0]), np.array([0.0, 2.0, 1.0]))
    for a, b in zip(f_jvp(*map(nb.tensor, tangents)), jf_jvp(*map(jnp.array, tangents))):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-14)
    # The saved primals do not move when the caller's tensor is reassigned later.
    t = nb.tensor(x)
    _, g = nb.linearize(lambda v: v * v, t)
    t[0] = 100.0
    np.testing.assert_allclose(g(nb.tensor(np.ones(3))).numpy(), 2 * x)
    with pytest.raises(TypeError, match="tangents"):
        f_jvp(nb.tensor(x))
