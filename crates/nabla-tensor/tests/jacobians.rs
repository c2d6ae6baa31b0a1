//! Jacobians and Hessians over several inputs and outputs, and `linearize`, against JAX
//! (`scripts/gen_jax_jacobians.py`, `fixtures/jax_jacobians.json`): `jacfwd_n` and `jacrev_n` give
//! the same blocks as `jax.jacfwd`/`jax.jacrev` with `argnums=(0, 1)` and tuple outputs, `hessian_n`
//! as `jax.hessian`, and a linearised function gives `jax.linearize`'s tangents without running the
//! function again.

use crate::vmap::assert_close;
use nabla_core::Result;
use nabla_cpu::CpuBackend;
use nabla_tensor::{Tensor, hessian_n, jacfwd_n, jacrev_n, jvp, linearize, linearize_n};
use serde_json::Value;
use std::cell::Cell;

type T = Tensor<CpuBackend>;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/jax_jacobians.json")).expect("valid fixture JSON")
}

fn tensor(v: &Value) -> Result<T> {
    Ok(crate::support::fixture_array(v))
}

fn check_blocks(got: &[Vec<T>], want: &Value, what: &str) -> Result<()> {
    let want = want.as_array().expect("rows");
    assert_eq!(got.len(), want.len(), "{what}: outputs");
    for (i, (row, wrow)) in got.iter().zip(want).enumerate() {
        let wrow = wrow.as_array().expect("blocks");
        assert_eq!(row.len(), wrow.len(), "{what}: inputs");
        for (j, (block, w)) in row.iter().zip(wrow).enumerate() {
            assert_close(block, &tensor(w)?, &format!("{what} block ({i}, {j})"));
        }
    }
    Ok(())
}

fn f(x: &[T]) -> Result<Vec<T>> {
    Ok(vec![x[0].sin()?.mul(x[1].sum_all()?)?, x[0].matmul(&x[1])?])
}

#[test]
fn jacobians_of_several_inputs_and_outputs_match_jax() -> Result<()> {
    let doc = fixture();
    let xs = [tensor(&doc["a"])?, tensor(&doc["b"])?];
    check_blocks(&jacfwd_n(f)(&xs)?, &doc["jac"], "jacfwd_n")?;
    check_blocks(&jacrev_n(f)(&xs)?, &doc["jac"], "jacrev_n")
}

#[test]
fn hessian_blocks_of_several_inputs_match_jax() -> Result<()> {
    let doc = fixture();
    let xs = [tensor(&doc["a"])?, tensor(&doc["b"])?];
    let g = |x: &[T]| {
        x[0].matmul(&x[1])?
            .tanh()?
            .sum_all()?
            .mul(x[1].select_index(0, 0)?)
    };
    check_blocks(&hessian_n(g)(&xs)?, &doc["hessian"], "hessian_n")
}

#[test]
fn linearize_pushes_tangents_without_running_the_function_again() -> Result<()> {
    let doc = fixture();
    let x = tensor(&doc["x"])?;
    let calls = Cell::new(0);
    let h = |x: &T| {
        calls.set(calls.get() + 1);
        x.sin()?.exp()?.mul(x)
    };
    let (y, lin) = linearize(h, &x)?;
    assert_close(&y, &tensor(&doc["linearize_value"])?, "linearize value");
    for (t, want) in doc["tangents"]
        .as_array()
        .expect("tangents")
        .iter()
        .zip(doc["linearize_out"].as_array().expect("outputs"))
    {
        assert_close(
            &lin.apply(&[tensor(t)?])?,
            &tensor(want)?,
            "linearize apply",
        );
    }
    assert_eq!(calls.get(), 1, "the function ran once");
    // Several inputs: the tangents add up, as jvp's do.
    let b = Tensor::from_vec(vec![0.5f64, -1.0, 2.0], [3], &CpuBackend::new())?;
    let (_, lin2) = linearize_n(|v: &[T]| v[0].mul(&v[1])?.sin(), &[x.clone(), b.clone()])?;
    let (t0, t1) = (tensor(&doc["tangents"][0])?, tensor(&doc["tangents"][1])?);
    let want = jvp(|v: &T| v.mul(&b)?.sin(), &x, &t0)?
        .1
        .add(&jvp(|v: &T| x.mul(v)?.sin(), &b, &t1)?.1)?;
    assert_close(&lin2.apply(&[t0, t1])?, &want, "linearize_n");
    let err = lin.apply(&[b.reshape([1, 3])?]).unwrap_err().to_string();
    assert!(err.contains("linearize"), "{err}");
    Ok(())
}

#[test]
fn jacobians_of_mixed_dtype_outputs_and_random_functions() -> Result<()> {
    use nabla_core::{DType, Generator};
    let cpu = CpuBackend::new();
    let x = Tensor::from_vec(vec![0.5f64, -1.0, 2.0], [3], &cpu)?;
    // An f64 output, an f32 output and an index: blocks of the output's dtype, zeros for the index.
    let f = |v: &[T]| {
        Ok(vec![
            v[0].square()?,
            v[0].cast(DType::F32)?.exp()?,
            v[0].argmax(0, false)?,
        ])
    };
    for blocks in [
        jacfwd_n(f)(std::slice::from_ref(&x))?,
        jacrev_n(f)(std::slice::from_ref(&x))?,
    ] {
        assert_eq!(blocks[0][0].to_vec2::<f64>()?[1], vec![0.0, -2.0, 0.0]);
        // As JAX: forward mode gives the output's dtype (f32), reverse mode the input's (f64).
        let d = blocks[1][0].cast(DType::F64)?.to_vec2::<f64>()?;
        assert!(
            (d[2][2] - 2f64.exp()).abs() < 1e-5 && d[0][1] == 0.0,
            "{d:?}"
        );
        assert_eq!(blocks[2][0].to_vec::<f64>()?, vec![0.0; 3]);
    }
    // A function with a random mask: every row and column sees the same mask, so the Jacobian is
    // diagonal with the mask on it (each call would otherwise draw another).
    let rng = std::cell::RefCell::new(Generator::new(9));
    let masked = |v: &[T]| {
        let mask = Tensor::bernoulli([3], 0.5, DType::F64, &mut rng.borrow_mut(), &cpu)?;
        Ok(vec![v[0].mul(&mask)?])
    };
    for j in [
        jacfwd_n(masked)(std::slice::from_ref(&x))?,
        jacrev_n(masked)(std::slice::from_ref(&x))?,
    ] {
        let m = j[0][0].to_vec2::<f64>()?;
        for (r, row) in m.iter().enumerate() {
            for (c, &v) in row.iter().enumerate() {
                assert!(r == c || v == 0.0, "{m:?}");
            }
        }
    }
    Ok(())
}
