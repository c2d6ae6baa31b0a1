//! Elementwise rules: every unary and binary op with a real derivative, `where`, cast and the identity
//! (contiguous copy), on broadcast shapes, non-contiguous views and rank 0.

use super::support::*;
use nabla_core::{BinaryOp, DType, UnaryOp};
use nabla_tensor::{GradCheckOptions, Tensor, grad};

#[test]
fn unary_ops_contiguous_views_and_rank_0() {
    for (k, (op, dom)) in unary_cases().into_iter().enumerate() {
        let s = 100 + 10 * k as u64;
        let f = |v: &[T]| v[0].unary(op);
        let name = op.name();
        check(&format!("{name} [2,3]"), f, &[rand(&[2, 3], s, dom)]);
        check(&format!("{name} rank 0"), f, &[rand(&[], s + 1, dom)]);
        check(
            &format!("{name} transposed"),
            f,
            &[transposed(3, 2, s + 2, dom)],
        );
        check(
            &format!("{name} step -2"),
            f,
            &[stepped_back(&[3, 2], s + 3, dom)],
        );
        check(
            &format!("{name} broadcast view"),
            f,
            &[broadcast_view(&[1, 3], &[2, 3], s + 4, dom)],
        );
        // A view made inside the function (the gradient flows back through it).
        check(
            &format!("{name} of a transpose"),
            |v: &[T]| v[0].t()?.unary(op),
            &[rand(&[2, 3], s + 5, dom)],
        );
    }
}

#[test]
fn every_float_op_of_the_catalogue_has_a_checked_rule() {
    // The cases are derived from the op catalogue (UnaryOp::ALL, BinaryOp::ALL): every op with a float
    // result on float input is checked by the tests above, in reverse and forward mode; nextafter, a
    // step to a neighbouring float, has none (see `nextafter_refuses_a_derivative`).
    let float_unary = UnaryOp::ALL
        .iter()
        .filter(|op| op.output_dtype(DType::F64) == Some(DType::F64))
        .count();
    assert_eq!(unary_cases().len(), float_unary);
    let float_binary = BinaryOp::ALL
        .iter()
        .filter(|&&op| op.supports(DType::F64) && op != BinaryOp::NextAfter)
        .count();
    assert_eq!(binary_cases().len(), float_binary);
}

#[test]
fn rounding_ops_have_zero_derivative() {
    let x = rand(&[5], 7, Dom::OffInteger);
    for op in [
        UnaryOp::Sign,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Trunc,
    ] {
        let g = grads(
            |v: &[T]| v[0].unary(op)?.sum_all(),
            std::slice::from_ref(&x),
        );
        assert_eq!(g[0], vec![0.0; 5], "{}", op.name());
    }
}

#[test]
fn bool_results_are_not_tracked() {
    let x = Tensor::var("x", randn(&[3], 1)).unwrap();
    for op in [UnaryOp::IsNan, UnaryOp::IsFinite, UnaryOp::SignBit] {
        assert!(!x.unary(op).unwrap().requires_grad(), "{}", op.name());
    }
    let b = x.gt(0.0).unwrap();
    assert!(!b.logical_not().unwrap().requires_grad());
    for op in [BinaryOp::And, BinaryOp::Or, BinaryOp::Xor] {
        assert!(!b.binary(op, &b).unwrap().requires_grad(), "{}", op.name());
    }
    assert!(!x.eq(&x).unwrap().requires_grad());
}

#[test]
fn nextafter_refuses_a_derivative() {
    let x = Tensor::var("x", randn(&[3], 2)).unwrap();
    let y = x.nextafter(1.0).unwrap().sum_all().unwrap();
    let err = y.backward().unwrap_err().to_string();
    assert!(err.contains("nextafter"), "{err}");
}

#[test]
fn binary_ops_same_shape_broadcast_views_and_rank_0() {
    for (k, (op, da, db)) in binary_cases().into_iter().enumerate() {
        let s = 1000 + 20 * k as u64;
        let f = |v: &[T]| v[0].binary(op, &v[1]);
        let name = op.name();
        let shapes: [(&[usize], &[usize]); 6] = [
            (&[2, 3], &[2, 3]),
            (&[2, 1, 3], &[4, 3]),
            (&[3], &[2, 1]),
            (&[2, 3], &[]),
            (&[], &[2, 2]),
            (&[], &[]),
        ];
        for (j, (sa, sb)) in shapes.iter().enumerate() {
            let (a, b) = (
                rand(sa, s + 2 * j as u64, da),
                rand(sb, s + 2 * j as u64 + 1, db),
            );
            check(&format!("{name} {sa:?} with {sb:?}"), f, &[a, b]);
        }
        let views = [
            transposed(2, 3, s + 15, da),
            stepped_back(&[3, 2], s + 16, db).t().unwrap(),
        ];
        check(&format!("{name} transposed with step -2"), f, &views);
        let views = [
            broadcast_view(&[3], &[2, 3], s + 17, da),
            transposed(2, 3, s + 18, db),
        ];
        check(&format!("{name} broadcast view with transposed"), f, &views);
        // The same tensor on both sides.
        if !matches!(op, BinaryOp::Rem | BinaryOp::Atan2) {
            let x = rand(&[4], s + 19, da);
            check(
                &format!("{name}(x, x)"),
                |v: &[T]| v[0].binary(op, &v[0]),
                &[x],
            );
        }
    }
}

#[test]
fn binary_ops_with_a_constant_operand() {
    let x = rand(&[2, 3], 5, Dom::In(0.5, 2.0));
    check("x + 2", |v: &[T]| v[0].add(2.0), std::slice::from_ref(&x));
    check("x / 3", |v: &[T]| v[0].div(3.0), std::slice::from_ref(&x));
    check("x ^ 2.5", |v: &[T]| v[0].pow(2.5), std::slice::from_ref(&x));
    check(
        "2 ^ x",
        |v: &[T]| v[0].full_like(2.0)?.pow(&v[0]),
        std::slice::from_ref(&x),
    );
    check(
        "atan2(1, x)",
        |v: &[T]| v[0].ones_like()?.atan2(&v[0]),
        std::slice::from_ref(&x),
    );
    check(
        "rem(x, 0.7)",
        |v: &[T]| v[0].mul(3.0)?.rem(0.7),
        &[t(&[0.5, 1.0, 1.5], &[3])],
    );
    // Integer powers of negative bases: only the base is differentiated, so no log of a negative.
    let neg = rand(&[5], 6, Dom::Away(0.3, 2.0));
    check(
        "x ^ 3 on negatives",
        |v: &[T]| v[0].pow(3.0),
        std::slice::from_ref(&neg),
    );
    check("x ^ -2 on negatives", |v: &[T]| v[0].pow(-2.0), &[neg]);
}

#[test]
fn pow_at_zero_follows_the_jax_conventions() {
    // d/da a^b = b a^(b-1) is taken as 0 at 0^0; d/db a^b = a^b ln a as 0 where a == 0.
    let a = t(&[0.0, 0.0, 2.0, 0.0], &[4]);
    let b = t(&[0.0, 2.0, 0.0, 1.0], &[4]);
    let g = grads(|v: &[T]| v[0].pow(&v[1])?.sum_all(), &[a, b]);
    assert_eq!(g[0], vec![0.0, 0.0, 0.0, 1.0]);
    assert_eq!(g[1], vec![0.0, 0.0, 2f64.ln(), 0.0]);
}

#[test]
fn maximum_and_minimum_split_ties_evenly() {
    let a = t(&[1.0, 2.0, 3.0, -1.0], &[4]);
    let b = t(&[1.0, 1.0, 5.0, -1.0], &[4]);
    let g = grads(
        |v: &[T]| v[0].maximum(&v[1])?.sum_all(),
        &[a.clone(), b.clone()],
    );
    assert_eq!(g[0], vec![0.5, 1.0, 0.0, 0.5]);
    assert_eq!(g[1], vec![0.5, 0.0, 1.0, 0.5]);
    let g = grads(
        |v: &[T]| v[0].minimum(&v[1])?.sum_all(),
        &[a.clone(), b.clone()],
    );
    assert_eq!(g[0], vec![0.5, 0.0, 1.0, 0.5]);
    assert_eq!(g[1], vec![0.5, 1.0, 0.0, 0.5]);
    // Central differences at a tie also give 1/2, so the convention passes the check as it is.
    check(
        "maximum at ties",
        |v: &[T]| v[0].maximum(&v[1]),
        &[a.clone(), b.clone()],
    );
    check("minimum at ties", |v: &[T]| v[0].minimum(&v[1]), &[a, b]);
    // clamp = maximum then minimum, with a tie at the bound.
    let x = t(&[-2.0, -1.0, 0.5, 1.0, 3.0], &[5]);
    let g = grads(|v: &[T]| v[0].clamp(-1.0, 1.0)?.sum_all(), &[x]);
    assert_eq!(g[0], vec![0.0, 0.5, 1.0, 0.5, 0.0]);
}

#[test]
fn where_selects_gradients_with_broadcasting() {
    let cond = randn(&[2, 3], 40).gt(0.0).unwrap();
    let c = cond.clone();
    let f = move |v: &[T]| c.where_(&v[0], &v[1]);
    check("where [2,3] [3] []", &f, &[randn(&[3], 41), randn(&[], 42)]);
    check(
        "where [2,3] [2,1] [2,3]",
        &f,
        &[randn(&[2, 1], 43), transposed(2, 3, 44, STD)],
    );
    let c = cond.clone();
    check(
        "where with a number",
        move |v: &[T]| c.where_(&v[0], 0.0),
        &[randn(&[2, 3], 45)],
    );
    // Condition broadcast against the branches.
    let c = randn(&[3], 46).gt(0.0).unwrap();
    check(
        "where [3] [2,3] [2,1]",
        move |v: &[T]| c.where_(&v[0], &v[1]),
        &[randn(&[2, 3], 47), randn(&[2, 1], 48)],
    );
    // relu as where(x > 0, x, 0): the condition depends on x but carries no gradient.
    check(
        "relu",
        |v: &[T]| v[0].gt(0.0)?.where_(&v[0], 0.0),
        &[rand(&[6], 49, Dom::Away(0.1, 2.0))],
    );
}

#[test]
fn cast_round_trips_and_keeps_gradient_dtypes() {
    // f64 -> f32 -> f64: the gradient passes through the casts. The f32 stage rounds to about 6e-8
    // relative, so the difference step and tolerance are coarse, and the function is linear so that
    // the step adds no truncation error.
    let opts = GradCheckOptions {
        eps: 1e-2,
        ..Default::default()
    };
    let f = |v: &[T]| v[0].cast(DType::F32)?.mul(3.0)?.cast(DType::F64);
    check_opts(
        "f64 -> f32 -> f64",
        f,
        &[randn(&[2, 3], 50)],
        &opts,
        1e-4,
        1e-4,
    );
    // Exact: d/dx sum(cast(x)^2) = 2 f32(x), returned as f64 to the f64 input.
    let x = t(&[0.1, 1.0 / 3.0, -2.5], &[3]);
    let g = grad(|x: &T| x.cast(DType::F32)?.square()?.cast(DType::F64)?.sum_all())(&x).unwrap();
    assert_eq!(g.dtype(), DType::F64);
    let want: Vec<f64> = vals(&x)
        .iter()
        .map(|&v| 2.0 * f64::from(v as f32))
        .collect();
    assert_near(&vals(&g), &want, 1e-6);
    // An f32 input gets an f32 gradient, even when the computation runs in f64.
    let x32 = x.cast(DType::F32).unwrap();
    let g = grad(|x: &T| x.cast(DType::F64)?.exp()?.sum_all())(&x32).unwrap();
    assert_eq!(g.dtype(), DType::F32);
    let want: Vec<f64> = vals(&x32).iter().map(|v| v.exp()).collect();
    assert_near(&vals(&g), &want, 1e-6);
    // Casting to an integer stops the gradient.
    let g = grads(
        |v: &[T]| v[0].cast(DType::I64)?.cast(DType::F64)?.sum_all(),
        &[x],
    );
    assert_eq!(g[0], vec![0.0; 3]);
}

#[test]
fn identity_of_contiguous_copies() {
    // contiguous() of a view records the identity.
    let f = |v: &[T]| v[0].t()?.contiguous()?.exp();
    check("contiguous of a transpose", f, &[randn(&[2, 3], 60)]);
    let f = |v: &[T]| v[0].slice(0, None, None, -2)?.contiguous()?.sin();
    check("contiguous of a step -2 slice", f, &[randn(&[5, 2], 61)]);
    // contiguous() of a broadcast view sums back.
    let f = |v: &[T]| v[0].broadcast_to([3, 2])?.contiguous()?.square();
    check("contiguous of a broadcast", f, &[randn(&[2], 62)]);
}

#[test]
fn half_precision_intermediates() {
    // f32 -> f16 -> f32: the gradient passes through the half-precision stage.
    let x = randn(&[3], 70).cast(DType::F32).unwrap();
    let g = grad(|x: &T| x.cast(DType::F16)?.cast(DType::F32)?.mul(2.0)?.sum_all())(&x).unwrap();
    assert_eq!(vals(&g), vec![2.0; 3]);
    // A half value broadcast: the cotangent is summed back.
    let g = grad(|x: &T| {
        x.cast(DType::F16)?
            .broadcast_to([4, 3])?
            .cast(DType::F32)?
            .sum_all()
    })(&x)
    .unwrap();
    assert_eq!(vals(&g), vec![4.0; 3]);
}

#[test]
fn half_precision_value_used_twice() {
    let x = randn(&[3], 71).cast(DType::F32).unwrap();
    // A half value used twice: its two cotangents are added.
    let g = grad(|x: &T| {
        let h = x.cast(DType::BF16)?;
        Tensor::cat(&[&h, &h], 0)?.cast(DType::F32)?.sum_all()
    })(&x)
    .unwrap();
    assert_eq!(vals(&g), vec![2.0; 3]);
}
