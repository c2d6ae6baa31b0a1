//! Errors of the forward-mode transforms: tangents of the wrong shape, dtype or number, and inputs
//! that cannot be differentiated.

use super::support::*;
use nabla_core::DType;
use nabla_tensor::{Tensor, hessian, hvp, jacfwd, jacrev, jvp, jvp_n};
use std::fmt::Debug;

/// The message of a call that must fail.
#[track_caller]
fn msg<V: Debug>(r: nabla_tensor::Result<V>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn ints(shape: &[usize]) -> T {
    let n: usize = shape.iter().product();
    idx(&(0..n as i64).collect::<Vec<_>>(), shape)
}

#[test]
fn tangent_of_the_wrong_shape() {
    let x = randn(&[2, 3], 1);
    let m = msg(jvp(|x: &T| x.exp(), &x, &randn(&[3, 2], 2)));
    assert!(
        m.contains("[2, 3]") && m.contains("[3, 2]"),
        "the message names both shapes: {m}"
    );
    // Same number of elements or a broadcastable shape is not enough.
    let m = msg(jvp(|x: &T| x.exp(), &x, &randn(&[6], 3)));
    assert!(m.contains("[2, 3]") && m.contains("[6]"), "{m}");
    let m = msg(jvp(|x: &T| x.exp(), &x, &randn(&[3], 4)));
    assert!(m.contains("[2, 3]") && m.contains("[3]"), "{m}");
    let m = msg(jvp(|x: &T| x.exp(), &randn(&[], 5), &randn(&[1], 6)));
    assert!(m.contains("[]") && m.contains("[1]"), "{m}");
    // Per input of jvp_n: the second input's shapes are named.
    let xs = [randn(&[2], 7), randn(&[4, 1], 8)];
    let m = msg(jvp_n(
        |v: &[T]| v[0].add(&v[1]),
        &xs,
        &[randn(&[2], 9), randn(&[1, 4], 10)],
    ));
    assert!(m.contains("[4, 1]") && m.contains("[1, 4]"), "{m}");
    // hvp checks its direction the same way.
    let m = msg(hvp(|x: &T| x.exp()?.sum_all(), &x, &randn(&[3, 2], 11)));
    assert!(m.contains("[2, 3]") && m.contains("[3, 2]"), "{m}");
}

#[test]
fn tangent_of_the_wrong_dtype_or_number() {
    let x = randn(&[3], 20);
    let v32 = randn(&[3], 21).cast(DType::F32).unwrap();
    let m = msg(jvp(|x: &T| x.exp(), &x, &v32));
    assert!(
        m.contains(DType::F32.name()) || m.contains(DType::F64.name()),
        "the message names the dtypes: {m}"
    );
    let x32 = x.cast(DType::F32).unwrap();
    msg(jvp(|x: &T| x.exp(), &x32, &randn(&[3], 22)));
    // An integer tangent for a float input.
    msg(jvp(|x: &T| x.exp(), &x, &ints(&[3])));
    // One tangent per input.
    let xs = [randn(&[3], 23), randn(&[3], 24)];
    msg(jvp_n(|v: &[T]| v[0].mul(&v[1]), &xs, &[randn(&[3], 25)]));
    msg(jvp_n(
        |v: &[T]| v[0].mul(&v[1]),
        &xs,
        &[randn(&[3], 25), randn(&[3], 26), randn(&[3], 27)],
    ));
}

#[test]
fn inputs_that_cannot_be_differentiated() {
    // Integer inputs, with integer or float tangents.
    let i = ints(&[3]);
    msg(jvp(|x: &T| x.mul(2), &i, &ints(&[3])));
    msg(jvp(|x: &T| x.cast(DType::F64), &i, &randn(&[3], 30)));
    let b = randn(&[3], 31).gt(0.0).unwrap();
    msg(jvp(|x: &T| x.logical_not(), &b, &b));
    msg(jvp_n(
        |v: &[T]| v[0].add(&v[1].cast(DType::F64)?),
        &[randn(&[3], 32), ints(&[3])],
        &[randn(&[3], 33), ints(&[3])],
    ));
    // Jacobians and Hessians of non-float inputs.
    msg(jacfwd(|x: &T| x.mul(2))(&i));
    msg(jacfwd(|x: &T| x.cast(DType::F64)?.exp())(&i));
    msg(jacrev(|x: &T| x.cast(DType::F64)?.exp())(&i));
    msg(hessian(|x: &T| x.cast(DType::F64)?.exp()?.sum_all())(&i));
}

#[test]
fn errors_of_the_function_come_back_unchanged() {
    let x = randn(&[3], 40);
    let m = msg(jvp(|x: &T| x.reshape([5]), &x, &randn(&[3], 42)));
    assert!(m.starts_with("reshape"), "{m}");
    let t2 = Tensor::constant(randn(&[2], 43));
    let m = msg(jvp(|x: &T| x.add(&t2), &x, &randn(&[3], 44)));
    assert!(m.contains("[3]") && m.contains("[2]"), "{m}");
}
