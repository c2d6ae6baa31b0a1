//! JVP rules of the elementwise primitives: every differentiable unary and binary op (with
//! broadcasting both ways and the same tensor on both sides), `where`, casts and contiguous copies.

use super::helpers::*;
use super::support::*;
use nabla_core::{BinaryOp, DType, UnaryOp};
use nabla_tensor::{Tensor, jvp};

#[test]
fn unary_ops_adjoint_identity() {
    for (k, (op, dom)) in unary_cases().into_iter().enumerate() {
        let s = 100 + 10 * k as u64;
        let name = op.name();
        let f = |v: &[T]| v[0].unary(op);
        adjoint(&format!("{name} [2,3]"), f, &[rand(&[2, 3], s, dom)], s);
        adjoint(
            &format!("{name} rank 0"),
            f,
            &[rand(&[], s + 1, dom)],
            s + 1,
        );
        adjoint(
            &format!("{name} transposed input"),
            f,
            &[transposed(3, 2, s + 2, dom)],
            s + 2,
        );
        adjoint(
            &format!("{name} step -2 input"),
            f,
            &[stepped_back(&[3, 2], s + 3, dom)],
            s + 3,
        );
        // Composed with a nonlinear use of the input, so the tangent meets a non-trivial product.
        adjoint(
            &format!("{name} times x"),
            |v: &[T]| v[0].unary(op)?.mul(&v[0]),
            &[rand(&[4], s + 4, dom)],
            s + 4,
        );
    }
}

#[test]
fn piecewise_constant_ops_have_zero_tangents() {
    let x = rand(&[5], 7, Dom::OffInteger);
    let v = randn(&[5], 8);
    for op in [
        UnaryOp::Sign,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Trunc,
    ] {
        let (y, jv) = jvp(|x: &T| x.unary(op), &x, &v).unwrap();
        assert_eq!(vals(&y), vals(&x.unary(op).unwrap()), "{}", op.name());
        assert_eq!(vals(&jv), vec![0.0; 5], "{}", op.name());
    }
}

#[test]
fn unary_ops_exact_tangents() {
    // J v = f'(x) v elementwise, against the analytic derivative.
    let x = rand(&[4], 20, Dom::In(0.3, 0.9));
    let v = randn(&[4], 21);
    let xv = vals(&x);
    let vv = vals(&v);
    type D = fn(f64) -> f64;
    let cases: [(UnaryOp, D); 8] = [
        (UnaryOp::Exp, f64::exp),
        (UnaryOp::Log, |x| 1.0 / x),
        (UnaryOp::Sin, f64::cos),
        (UnaryOp::Tanh, |x| 1.0 - x.tanh().powi(2)),
        (UnaryOp::Sqrt, |x| 0.5 / x.sqrt()),
        (UnaryOp::Asin, |x| 1.0 / (1.0 - x * x).sqrt()),
        (UnaryOp::Sigmoid, |x| {
            let s = 1.0 / (1.0 + (-x).exp());
            s * (1.0 - s)
        }),
        (UnaryOp::Erf, |x| {
            2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp()
        }),
    ];
    for (op, d) in cases {
        let (_, jv) = jvp(|x: &T| x.unary(op), &x, &v).unwrap();
        let want: Vec<f64> = xv.iter().zip(&vv).map(|(&x, &v)| d(x) * v).collect();
        assert_near(&vals(&jv), &want, 1e-13);
    }
}

#[test]
fn binary_ops_adjoint_identity_with_broadcasting() {
    let shapes: [(&[usize], &[usize]); 7] = [
        (&[2, 3], &[2, 3]),
        (&[2, 3], &[3]),
        (&[3], &[2, 3]),
        (&[2, 1, 3], &[4, 3]),
        (&[3], &[2, 1]),
        (&[2, 3], &[]),
        (&[], &[]),
    ];
    for (k, (op, da, db)) in binary_cases().into_iter().enumerate() {
        let s = 1000 + 20 * k as u64;
        let name = op.name();
        let f = |v: &[T]| v[0].binary(op, &v[1]);
        for (j, (sa, sb)) in shapes.iter().enumerate() {
            let s = s + 2 * j as u64;
            let xs = [rand(sa, s, da), rand(sb, s + 1, db)];
            adjoint(&format!("{name} {sa:?} with {sb:?}"), f, &xs, s);
        }
        let views = [
            transposed(2, 3, s + 15, da),
            stepped_back(&[2, 3], s + 16, db),
        ];
        adjoint(&format!("{name} of views"), f, &views, s + 15);
        // The same tensor on both sides (kinks of rem and atan2 along a = b are not met by f64
        // rounding of random values).
        let x = rand(&[4], s + 17, Dom::In(0.5, 2.0));
        adjoint(
            &format!("{name}(x, x)"),
            |v: &[T]| v[0].binary(op, &v[0]),
            &[x],
            s + 17,
        );
        // One operand a constant number, on either side.
        let x = rand(&[2, 2], s + 18, da);
        adjoint(
            &format!("{name}(x, 0.7)"),
            |v: &[T]| v[0].binary(op, &v[0].full_like(0.7)?),
            &[x],
            s + 18,
        );
        let x = rand(&[2, 2], s + 19, db);
        adjoint(
            &format!("{name}(1.3, x)"),
            |v: &[T]| v[0].full_like(1.3)?.binary(op, &v[0]),
            &[x],
            s + 19,
        );
    }
}

#[test]
fn maximum_and_minimum_at_ties() {
    // The forward rule must follow the same tie convention as the reverse one (an even split).
    let a = t(&[1.0, 2.0, 3.0, -1.0], &[4]);
    let b = t(&[1.0, 1.0, 5.0, -1.0], &[4]);
    for op in [BinaryOp::Maximum, BinaryOp::Minimum] {
        adjoint(
            &format!("{} with ties", op.name()),
            |v: &[T]| v[0].binary(op, &v[1]),
            &[a.clone(), b.clone()],
            1,
        );
    }
    adjoint(
        "clamp with ties at the bounds",
        |v: &[T]| v[0].clamp(-1.0, 1.0),
        &[t(&[-2.0, -1.0, 0.5, 1.0, 3.0], &[5])],
        2,
    );
}

#[test]
fn pow_at_zero_adjoint_identity() {
    let a = t(&[0.0, 0.0, 2.0, 0.0, 1.5], &[5]);
    let b = t(&[0.0, 2.0, 0.0, 1.0, 3.0], &[5]);
    adjoint("pow at zeros", |v: &[T]| v[0].pow(&v[1]), &[a, b], 3);
    adjoint(
        "x ^ 3 on negatives",
        |v: &[T]| v[0].pow(3.0),
        &[rand(&[5], 4, Dom::Away(0.3, 2.0))],
        4,
    );
}

#[test]
fn where_adjoint_identity() {
    let cond = randn(&[2, 3], 40).gt(0.0).unwrap();
    let c = cond.clone();
    adjoint(
        "where [2,3] [3] []",
        move |v: &[T]| c.where_(&v[0], &v[1]),
        &[randn(&[3], 41), randn(&[], 42)],
        40,
    );
    let c = cond.clone();
    adjoint(
        "where [2,3] [2,1] [2,3]",
        move |v: &[T]| c.where_(&v[0], &v[1]),
        &[randn(&[2, 1], 43), transposed(2, 3, 44, STD)],
        41,
    );
    let c = randn(&[3], 46).gt(0.0).unwrap();
    adjoint(
        "where [3] [2,3] [2,1]",
        move |v: &[T]| c.where_(&v[0], &v[1]),
        &[randn(&[2, 3], 47), randn(&[2, 1], 48)],
        42,
    );
    adjoint(
        "relu by where",
        |v: &[T]| v[0].gt(0.0)?.where_(&v[0].exp()?, &v[0].sin()?),
        &[rand(&[6], 49, Dom::Away(0.1, 2.0))],
        43,
    );
    adjoint(
        "where with the same input on both sides",
        move |v: &[T]| cond.where_(&v[0], &v[0].mul(3.0)?),
        &[randn(&[2, 3], 50)],
        44,
    );
}

#[test]
fn casts_adjoint_identity() {
    // The f32 stage rounds the tangent and the cotangent to about 6e-8 relative.
    adjoint_tol(
        "f64 -> f32 -> f64",
        |v: &[T]| v[0].cast(DType::F32)?.sin()?.cast(DType::F64),
        &[randn(&[2, 3], 50)],
        50,
        1e-6,
    );
    // An f32 input with f32 tangents, computed in f64.
    let x32 = randn(&[4], 51).cast(DType::F32).unwrap();
    let v32 = randn(&[4], 52).cast(DType::F32).unwrap();
    adjoint_with(
        "f32 -> f64 -> f32",
        |v: &[T]| v[0].cast(DType::F64)?.exp()?.cast(DType::F32),
        &[x32],
        &[v32],
        51,
        1e-6,
    );
    // Casting to an integer stops the tangent.
    let x = randn(&[3], 53).mul(4.0).unwrap();
    let (_, jv) = jvp(
        |x: &T| x.cast(DType::I64)?.cast(DType::F64)?.add(x),
        &x,
        &randn(&[3], 54),
    )
    .unwrap();
    assert_eq!(vals(&jv), vals(&randn(&[3], 54)));
}

#[test]
fn contiguous_copies_adjoint_identity() {
    adjoint(
        "contiguous of a transpose",
        |v: &[T]| v[0].t()?.contiguous()?.exp(),
        &[randn(&[2, 3], 60)],
        60,
    );
    adjoint(
        "contiguous of a step -2 slice",
        |v: &[T]| v[0].slice(0, None, None, -2)?.contiguous()?.sin(),
        &[randn(&[5, 2], 61)],
        61,
    );
    adjoint(
        "contiguous of a broadcast",
        |v: &[T]| v[0].broadcast_to([3, 2])?.contiguous()?.square(),
        &[randn(&[2], 62)],
        62,
    );
    adjoint(
        "contiguous of a transposed input",
        |v: &[T]| v[0].contiguous(),
        &[transposed(3, 4, 63, STD)],
        63,
    );
    adjoint(
        "identity function",
        |v: &[T]| Ok(v[0].clone()),
        &[randn(&[2, 2], 64)],
        64,
    );
}

#[test]
fn non_contiguous_tangents() {
    // Tangents given as views (transposed, step -2, broadcast) are read by element, not by memory.
    let x = randn(&[2, 3], 70);
    let views = [
        transposed(2, 3, 71, STD),
        stepped_back(&[2, 3], 72, STD),
        broadcast_view(&[3], &[2, 3], 73, STD),
    ];
    for (k, v) in views.iter().enumerate() {
        let (_, jv) = jvp(|x: &T| x.sin()?.mul(x), &x, v).unwrap();
        let (_, want) = jvp(|x: &T| x.sin()?.mul(x), &x, &v.contiguous().unwrap()).unwrap();
        assert_eq!(vals(&jv), vals(&want), "view {k}");
        adjoint_with(
            &format!("tangent view {k}"),
            |w: &[T]| w[0].sin()?.mul(&w[0]),
            std::slice::from_ref(&x),
            std::slice::from_ref(v),
            74 + k as u64,
            ADJ_TOL,
        );
    }
}

#[test]
fn elementwise_against_finite_differences() {
    finite_difference(
        "sin(x) * exp(y) / (1 + x^2)",
        |v: &[T]| {
            v[0].sin()?
                .mul(&v[1].exp()?)?
                .div(&v[0].square()?.add(1.0)?)
        },
        &[randn(&[2, 3], 80), randn(&[3], 81)],
        80,
    );
    finite_difference(
        "atan2(x, y) + pow(|x|, y)",
        |v: &[T]| v[0].atan2(&v[1])?.add(&v[0].abs()?.pow(&v[1])?),
        &[
            rand(&[4], 82, Dom::Away(0.3, 2.0)),
            rand(&[4], 83, Dom::Away(0.3, 2.0)),
        ],
        81,
    );
    finite_difference(
        "erf(tanh(x)) log1p(x^2)",
        |v: &[T]| v[0].tanh()?.erf()?.mul(&v[0].square()?.log1p()?),
        &[randn(&[5], 84)],
        82,
    );
    let cond = randn(&[4], 85).gt(0.0).unwrap();
    finite_difference(
        "where of a rsqrt and a sigmoid",
        move |v: &[T]| cond.where_(&v[0].square()?.add(0.5)?.rsqrt()?, &v[0].sigmoid()?),
        &[randn(&[4], 86)],
        83,
    );
    // A tensor made outside and captured is a constant: its tangent is zero.
    let k = Tensor::constant(randn(&[3], 87));
    finite_difference(
        "x * captured constant",
        move |v: &[T]| v[0].mul(&k)?.cos(),
        &[randn(&[3], 88)],
        84,
    );
}
