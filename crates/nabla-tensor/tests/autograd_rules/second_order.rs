//! Second derivatives: the gradient of a gradient (built by a reverse pass with graph creation)
//! against finite differences of the analytic gradient, for every smooth rule and for compositions,
//! through `check_second_order`, nested `grad` and `backward_opts(create_graph)`.

use super::support::*;
use nabla_core::BinaryOp;
use nabla_tensor::{BackwardOptions, GradCheckOptions, Tensor, check_gradients, grad, grad_n};

#[test]
fn smooth_unary_ops() {
    let cases = unary_cases();
    for (k, (op, dom)) in cases.into_iter().enumerate() {
        let x = rand(&[2, 3], 500 + k as u64, dom);
        check2(op.name(), |v: &[T]| v[0].unary(op), &[x]);
        // Through a view, and composed with itself-like smooth outer functions.
        let x = transposed(2, 2, 600 + k as u64, dom);
        check2(
            &format!("{} of a transpose, times x", op.name()),
            |v: &[T]| v[0].unary(op)?.mul(&v[0]),
            &[x],
        );
    }
}

#[test]
fn smooth_binary_ops() {
    use BinaryOp as O;
    let cases = [
        (O::Add, STD, STD),
        (O::Sub, STD, STD),
        (O::Mul, STD, STD),
        (O::Div, STD, Dom::Away(0.5, 2.0)),
        (O::Rem, Dom::In(-3.0, 3.0), Dom::Away(0.7, 2.0)),
        (O::Pow, Dom::In(0.5, 2.0), Dom::In(-2.0, 2.0)),
        (O::Maximum, STD, STD),
        (O::Minimum, STD, STD),
        (O::Atan2, Dom::Away(0.3, 2.0), Dom::Away(0.3, 2.0)),
    ];
    for (k, (op, da, db)) in cases.into_iter().enumerate() {
        let s = 700 + 4 * k as u64;
        let f = |v: &[T]| v[0].binary(op, &v[1]);
        check2(
            op.name(),
            f,
            &[rand(&[2, 3], s, da), rand(&[2, 3], s + 1, db)],
        );
        check2(
            &format!("{} broadcast", op.name()),
            f,
            &[rand(&[2, 1, 3], s + 2, da), rand(&[4, 3], s + 3, db)],
        );
        // A nonlinear use of both operands, so every second partial is non-zero for the smooth ones.
        let g = |v: &[T]| v[0].binary(op, &v[1])?.mul(&v[0].add(&v[1])?);
        check2(
            &format!("{} times (a + b)", op.name()),
            g,
            &[rand(&[3], s, da), rand(&[3], s + 1, db)],
        );
    }
    check2(
        "pow with a constant exponent",
        |v: &[T]| v[0].pow(3.0),
        &[randn(&[4], 730)],
    );
    check2(
        "x ^ x",
        |v: &[T]| v[0].pow(&v[0]),
        &[rand(&[4], 731, Dom::In(0.5, 2.0))],
    );
}

#[test]
fn movement_reduction_and_index_compositions() {
    let x = randn(&[3, 4], 800);
    let xs = std::slice::from_ref(&x);
    check2(
        "softmax",
        |v: &[T]| {
            let e = v[0].sub(&v[0].max(&[-1], true)?)?.exp()?;
            e.div(&e.sum(&[-1], true)?)
        },
        xs,
    );
    check2(
        "logsumexp",
        |v: &[T]| {
            let m = v[0].max(&[1], true)?.detach();
            v[0].sub(&m)?.exp()?.sum(&[1], true)?.log()?.add(&m)
        },
        xs,
    );
    check2(
        "layer norm",
        |v: &[T]| {
            let c = v[0].sub(&v[0].mean(&[-1], true)?)?;
            c.div(&c.square()?.mean(&[-1], true)?.add(1e-5)?.sqrt()?)
        },
        xs,
    );
    check2(
        "prod",
        |v: &[T]| v[0].prod(&[1], false),
        &[rand(&[3, 4], 801, Dom::Away(0.5, 1.5))],
    );
    check2("cumsum squared", |v: &[T]| v[0].cumsum(1)?.square(), xs);
    check2(
        "slices with steps",
        |v: &[T]| {
            v[0].slice(1, None, None, -2)?
                .mul(&v[0].slice(1, Some(0), None, 2)?)
        },
        xs,
    );
    check2(
        "pad and flip",
        |v: &[T]| v[0].pad(&[(1, 0), (0, 2)], 0.5)?.flip(&[0, 1])?.exp(),
        xs,
    );
    check2(
        "cat",
        |v: &[T]| Tensor::cat(&[&v[0], &v[0].square()?], 0)?.sin(),
        xs,
    );
    check2(
        "stack",
        |v: &[T]| Tensor::stack(&[&v[0].exp()?, &v[0]], -1)?.sin(),
        xs,
    );
    check2(
        "reshape permute broadcast",
        |v: &[T]| {
            v[0].reshape([2, 2, 3])?
                .permute(&[2, 0, 1])?
                .broadcast_to([2, 3, 2, 2])?
                .tanh()
        },
        xs,
    );
    let i = idx(&[0, 0, 3, 1, 2, 2], &[3, 2]);
    check2("gather squared", |v: &[T]| v[0].gather(1, &i)?.square(), xs);
    let j = idx(&[2, 0, 2], &[3]);
    check2(
        "index_select times x",
        |v: &[T]| v[0].index_select(0, &j)?.mul(&v[0])?.sin(),
        xs,
    );
    check2(
        "scatter_add",
        |v: &[T]| v[0].scatter_add(1, &i, &v[1].square()?)?.exp(),
        &[x.clone(), randn(&[3, 2], 802)],
    );
    check2(
        "sort values",
        |v: &[T]| v[0].sort(1, true)?.0.exp()?.cumsum(1),
        xs,
    );
    check2(
        "where",
        |v: &[T]| v[0].gt(0.0)?.where_(&v[0].exp()?, &v[0].sin()?),
        xs,
    );
    check2(
        "max times x",
        |v: &[T]| v[0].max(&[0], true)?.mul(&v[0]),
        xs,
    );
    check2(
        "contiguous of a transpose",
        |v: &[T]| v[0].t()?.contiguous()?.sin()?.mul(&v[0].t()?),
        xs,
    );
}

#[test]
fn nested_grad_matches_finite_differences_of_grad() {
    // d/dx of grad(f) for a scalar function of a vector: the Hessian row sums (a Hessian-vector
    // product with v = 1), checked with check_gradients on the analytic gradient itself.
    let f = |x: &T| {
        x.sin()?
            .mul(&x.exp()?)?
            .sum_all()?
            .add(&x.prod(&[], false)?)
    };
    let df = |v: &[T]| grad(f)(&v[0]);
    let x = rand(&[4], 900, Dom::In(0.5, 1.5));
    check("d(grad f)", df, std::slice::from_ref(&x));
    // Third order: grad(grad(grad(g))) of a scalar against finite differences of the second derivative.
    let g = |x: &T| x.tanh()?.mul(&x.sigmoid()?);
    let d3 = grad(grad(grad(g)))(&t(&[0.4], &[]))
        .unwrap()
        .item::<f64>()
        .unwrap();
    let d2 = |x0: f64| {
        grad(grad(g))(&t(&[x0], &[]))
            .unwrap()
            .item::<f64>()
            .unwrap()
    };
    let numeric = (d2(0.4 + 1e-6) - d2(0.4 - 1e-6)) / 2e-6;
    assert!((d3 - numeric).abs() < 1e-6, "{d3} vs {numeric}");
}

#[test]
fn create_graph_backward_matches_finite_differences() {
    // The same Hessian-vector product through Tensor::backward_opts with create_graph.
    let u = randn(&[2, 3], 910);
    let hvp = |v: &[T]| {
        let x = Tensor::var("x", v[0].clone())?;
        let y = x.matmul(&x.t()?)?.tanh()?.sum_all()?;
        let opts = BackwardOptions {
            create_graph: true,
            ..Default::default()
        };
        let g = y.backward_opts(None, opts)?.get(&x).unwrap().clone();
        g.mul(&u)?
            .sum_all()?
            .backward()?
            .get(&x)
            .cloned()
            .ok_or_else(|| nabla_core::Error::invalid("test", "no gradient"))
    };
    let x = randn(&[2, 3], 911);
    // The Hessian-vector product is itself the gradient of x -> <grad y(x), u>, so check it against
    // finite differences of that function.
    let dot = |v: &[T]| {
        let x = Tensor::var("x", v[0].clone())?;
        let y = x.matmul(&x.t()?)?.tanh()?.sum_all()?;
        y.backward()?.get(&x).unwrap().mul(&u)?.sum_all()
    };
    let report =
        check_gradients(dot, std::slice::from_ref(&x), &GradCheckOptions::default()).unwrap();
    let analytic = vals(&hvp(std::slice::from_ref(&x)).unwrap());
    let numeric: Vec<f64> = report.inputs[0]
        .elements
        .iter()
        .map(|e| e.numeric)
        .collect();
    assert_near(&analytic, &numeric, 1e-6);
}

#[test]
fn prod_second_order_at_zeros() {
    // prod is multilinear: d2 prod / dx_i dx_j is the product of the others, non-zero even when
    // x_i or x_j is zero, so the Hessian must see through the zero handling of the first derivative.
    let rows = t(
        &[2.0, 3.0, 0.5, 4.0, 0.0, 5.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0],
        &[4, 3],
    );
    check2(
        "prod rows with 0, 1, 2, 3 zeros",
        |v: &[T]| v[0].prod(&[1], false),
        &[rows],
    );
    check2(
        "prod with one zero",
        |v: &[T]| v[0].prod(&[], false),
        &[t(&[1.5, 0.0, -2.0, 0.5], &[4])],
    );
    check2(
        "prod with two zeros",
        |v: &[T]| v[0].prod(&[], false),
        &[t(&[1.5, 0.0, -2.0, 0.0], &[4])],
    );
    // Exact Hessian of x0 x1 x2 at (0, 0, 3): [[0, 3, 0], [3, 0, 0], [0, 0, 0]].
    let x = t(&[0.0, 0.0, 3.0], &[3]);
    for (i, want) in [[0.0, 3.0, 0.0], [3.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
        .iter()
        .enumerate()
    {
        let row =
            grad(|x: &T| grad(|x: &T| x.prod(&[], false))(x)?.select_index(0, i as isize))(&x)
                .unwrap();
        assert_eq!(vals(&row), want.to_vec(), "row {i}");
    }
}

#[test]
fn pow_second_order_at_a_zero_exponent() {
    // d/db (d/da a^b) = a^(b-1) (1 + b ln a), which is 1/a at b = 0 even though d/da a^b is 0 there.
    let a = rand(&[3], 950, Dom::In(0.5, 2.0));
    let b = t(&[0.0, 0.0, 1.0], &[3]);
    check(
        "pow at b = 0",
        |v: &[T]| v[0].pow(&v[1]),
        &[a.clone(), b.clone()],
    );
    check2("pow at b = 0", |v: &[T]| v[0].pow(&v[1]), &[a, b]);
    // At 0^0 the first derivatives are 0 by convention; the second ones must not be NaN.
    let zeros = [t(&[0.0], &[1]), t(&[0.0], &[1])];
    let h = grad_n(|v: &[T]| {
        let g = grad_n(|w: &[T]| w[0].pow(&w[1])?.sum_all())(v)?;
        g[0].add(&g[1])?.sum_all()
    })(&zeros)
    .unwrap();
    assert!(
        h.iter().all(|g| vals(g)[0].is_finite()),
        "{:?}",
        h.iter().map(vals).collect::<Vec<_>>()
    );
}

#[test]
fn identity_and_linear_functions() {
    // f returning its input unchanged: the input node is also the output node.
    let x = randn(&[2, 3], 960);
    check(
        "identity function",
        |v: &[T]| Ok(v[0].clone()),
        std::slice::from_ref(&x),
    );
    check2(
        "identity function",
        |v: &[T]| Ok(v[0].clone()),
        std::slice::from_ref(&x),
    );
    // Linear functions have a constant gradient: the nested reverse pass yields an untracked result.
    check2(
        "linear",
        |v: &[T]| v[0].mul(3.0)?.sub(&v[1]),
        &[x.clone(), randn(&[3], 961)],
    );
    // Inputs that the function ignores, and a function of one input used twice.
    check2(
        "ignores its second input",
        |v: &[T]| v[0].exp(),
        &[x.clone(), randn(&[2], 962)],
    );
    check2(
        "same tensor as two inputs",
        |v: &[T]| v[0].mul(&v[1])?.sin(),
        &[x.clone(), x],
    );
}
