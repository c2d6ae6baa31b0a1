//! The composed functions (`vector_norm`, `cross`, `vecdot`, `matrix_power`, `multi_dot`, `cond`,
//! `eigvalsh`, `cholesky_upper`, `pinvh`, `tensorsolve`, `tensorinv`) and broadcasting right-hand
//! sides of `solve` and `lstsq`: values against loops and identities, derivatives against central
//! differences and JAX (fixture from scripts/gen_linalg_composite_fixtures.py).

use crate::spectral::sym;
use crate::support::{T, assert_real_close, cpu, eye64, fixture_tensor, tensor, values};
use nabla_core::{DType, Result};
use nabla_linalg::NormOrd;
use nabla_tensor::{AdContext, GradCheckOptions, Tensor, check_gradients};
use serde_json::Value;

/// A well-conditioned matrix batch: random plus `n` on the diagonal.
fn conditioned(seed: u64, shape: &[usize]) -> T {
    let n = shape[shape.len() - 1];
    tensor(seed, shape)
        .add(eye64(n).mul(n as f64).unwrap())
        .unwrap()
}

#[test]
fn solve_and_lstsq_broadcast_batches_and_take_vectors() -> Result<()> {
    let a = conditioned(1, &[2, 1, 3, 3]);
    let b = tensor(2, &[4, 3, 2]);
    let x = nabla_linalg::solve(&a, &b)?;
    assert_eq!(x.shape(), &[2, 4, 3, 2]);
    for i in 0..2 {
        for j in 0..4 {
            let ai = a.select_index(0, i)?.select_index(0, 0)?;
            let want = nabla_linalg::solve(&ai, &b.select_index(0, j)?)?;
            assert_real_close(
                &values(&x.select_index(0, i)?.select_index(0, j)?),
                &values(&want),
                1e-14,
                "broadcast solve",
            );
        }
    }
    // Vectors: b [n] against one matrix, and against a batch ([3] with A [2, 3, 3]: [2, 3]).
    let v = tensor(3, &[3]);
    let xv = nabla_linalg::solve(&a.select_index(0, 0)?.select_index(0, 0)?, &v)?;
    assert_eq!(xv.shape(), &[3]);
    let batch = conditioned(4, &[2, 3, 3]);
    let xb = nabla_linalg::solve(&batch, &v)?;
    assert_eq!(xb.shape(), &[2, 3]);
    let back = batch.matmul(&xb.unsqueeze(-1)?)?.squeeze(-1)?;
    let vv = v.broadcast_to([2, 3])?;
    assert_real_close(&values(&back), &values(&vv), 1e-13, "A x = b");
    // Gradients flow through the broadcast (A's gradient sums over the broadcast batch).
    let f = |v: &[T]| nabla_linalg::solve(&v[0], &v[1]);
    check_gradients(f, &[a, b], &GradCheckOptions::default())?.assert_close(1e-8, 1e-6)?;
    // lstsq with a vector right-hand side.
    let tall = tensor(6, &[5, 3]);
    let y = tensor(7, &[5]);
    let sol = nabla_linalg::lstsq(&tall, &y)?;
    assert_eq!(sol.shape(), &[3]);
    let normal = tall.t()?.matmul(
        &tall
            .matmul(&sol.unsqueeze(-1)?)?
            .squeeze(-1)?
            .sub(&y)?
            .unsqueeze(-1)?,
    )?;
    assert!(
        values(&normal).iter().all(|r| r.abs() < 1e-12),
        "normal equations"
    );
    Ok(())
}

#[test]
fn vector_norms_cross_and_dot_products() -> Result<()> {
    let x = Tensor::from_vec(vec![3.0f64, -4.0, 0.0, 1.0, 2.0, -2.0], [2, 3], &cpu())?;
    let norm = |ord: f64, axes: &[isize]| {
        values(&nabla_linalg::vector_norm(&x, ord, axes, false).unwrap())
    };
    assert_eq!(norm(2.0, &[-1]), vec![5.0, 3.0]);
    assert_eq!(norm(1.0, &[]), vec![12.0]);
    assert_eq!(norm(f64::INFINITY, &[0]), vec![3.0, 4.0, 2.0]);
    assert_eq!(norm(f64::NEG_INFINITY, &[-1]), vec![0.0, 1.0]);
    assert_eq!(norm(0.0, &[-1]), vec![2.0, 3.0]);
    assert_real_close(
        &norm(3.0, &[-1]),
        &[91f64.cbrt(), 17f64.cbrt()],
        1e-14,
        "3-norm",
    );
    let a = tensor(8, &[4, 3]);
    let b = tensor(9, &[3]);
    let c = nabla_linalg::cross(&a, &b, -1)?;
    // The cross product is orthogonal to both factors.
    for d in [
        nabla_linalg::vecdot(&c, &a, -1)?,
        nabla_linalg::vecdot(&c, &b.broadcast_to([4, 3])?, -1)?,
    ] {
        assert!(values(&d).iter().all(|v| v.abs() < 1e-15));
    }
    let z = Tensor::complex(&tensor(10, &[3]), &tensor(11, &[3]))?;
    let self_dot = nabla_linalg::vecdot(&z, &z, -1)?;
    let sq = values(&z.abs()?.square()?.sum_all()?)[0];
    assert_eq!(self_dot.imag()?.item::<f64>()?, 0.0);
    assert!(
        (self_dot.real()?.item::<f64>()? - sq).abs() < 1e-15,
        "vecdot conjugates its first argument"
    );
    let err = nabla_linalg::cross(&tensor(1, &[4]), &tensor(2, &[4]), -1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("linalg.cross") && err.contains("3-vectors"),
        "{err}"
    );
    Ok(())
}

#[test]
fn matrix_powers_chains_and_conditions() -> Result<()> {
    let a = conditioned(12, &[2, 3, 3]);
    let cube = a.matmul(&a)?.matmul(&a)?;
    assert_real_close(
        &values(&nabla_linalg::matrix_power(&a, 3)?),
        &values(&cube),
        1e-13,
        "A³",
    );
    let inv_sq = nabla_linalg::inv(&a.matmul(&a)?)?;
    assert_real_close(
        &values(&nabla_linalg::matrix_power(&a, -2)?),
        &values(&inv_sq),
        1e-13,
        "A⁻²",
    );
    let id = nabla_linalg::matrix_power(&a, 0)?;
    assert_eq!(id.shape(), &[2, 3, 3]);
    assert_eq!(values(&id.select_index(0, 1)?), values(&eye64(3)));
    let (p, q, r) = (
        tensor(13, &[2, 5]),
        tensor(14, &[5, 4]),
        tensor(15, &[4, 3]),
    );
    let chain = nabla_linalg::multi_dot(&[&p, &q, &r])?;
    assert_real_close(
        &values(&chain),
        &values(&p.matmul(&q)?.matmul(&r)?),
        1e-14,
        "multi_dot",
    );
    let (u, w) = (tensor(16, &[2]), tensor(17, &[3]));
    let vv = nabla_linalg::multi_dot(&[&u, &p, &q, &r, &w])?;
    assert_eq!(vv.shape(), &[] as &[usize]);
    let m = a.select_index(0, 0)?;
    let s = values(&nabla_linalg::svdvals(&m)?);
    assert_real_close(
        &values(&nabla_linalg::cond(&m, NormOrd::Two)?),
        &[s[0] / s[2]],
        1e-13,
        "cond 2",
    );
    let fro = values(&nabla_linalg::matrix_norm(&m, NormOrd::Fro)?.mul(
        &nabla_linalg::matrix_norm(&nabla_linalg::inv(&m)?, NormOrd::Fro)?,
    )?);
    assert_real_close(
        &values(&nabla_linalg::cond(&m, NormOrd::Fro)?),
        &fro,
        1e-13,
        "cond fro",
    );
    Ok(())
}

#[test]
fn hermitian_helpers_and_tensor_solves() -> Result<()> {
    let s = sym(&tensor(18, &[2, 4, 4]))?;
    let (w, _) = nabla_linalg::eigh(&s)?;
    assert_eq!(values(&nabla_linalg::eigvalsh(&s)?), values(&w));
    assert_real_close(
        &values(&nabla_linalg::pinvh(&s, None)?),
        &values(&nabla_linalg::pinv(&s, None)?),
        1e-11,
        "pinvh = pinv",
    );
    let spd = s.matmul(&s)?.add(eye64(4))?;
    let u = nabla_linalg::cholesky_upper(&spd)?;
    assert_real_close(
        &values(&u.t()?.matmul(&u)?),
        &values(&spd),
        1e-13,
        "UᴴU = A",
    );
    assert!(
        values(&u.tril(-1)?).iter().all(|v| *v == 0.0),
        "upper triangular"
    );
    // numpy.linalg.tensorsolve's example: a = eye(6).reshape(6, 2, 3) scaled, b [6] → x [2, 3].
    let a = conditioned(19, &[6, 6]).reshape([6, 2, 3])?;
    let b = tensor(20, &[6]);
    let x = nabla_linalg::tensorsolve(&a, &b)?;
    assert_eq!(x.shape(), &[2, 3]);
    let back = Tensor::einsum("ijk,jk->i", &[&a, &x])?;
    assert_real_close(&values(&back), &values(&b), 1e-13, "tensordot(A, X) = B");
    let t = conditioned(21, &[24, 24]).reshape([4, 6, 8, 3])?;
    let ti = nabla_linalg::tensorinv(&t, 2)?;
    assert_eq!(ti.shape(), &[8, 3, 4, 6]);
    let prod = Tensor::einsum("abcd,cdef->abef", &[&t, &ti])?.reshape([24, 24])?;
    assert_real_close(&values(&prod), &values(&eye64(24)), 1e-12, "tensorinv");
    Ok(())
}

const FIXTURE: &str = include_str!("../fixtures/composite.json");

/// The function a fixture case names, applied to its inputs.
fn composite(name: &str, x: &[T]) -> Result<T> {
    match name {
        "vector_norm_2" => nabla_linalg::vector_norm(&x[0], 2.0, &[-1], false),
        "vector_norm_3" => nabla_linalg::vector_norm(&x[0], 3.0, &[], false),
        "vector_norm_inf" => nabla_linalg::vector_norm(&x[0], f64::INFINITY, &[0], false),
        "cross" => nabla_linalg::cross(&x[0], &x[1], -1),
        "vecdot" => nabla_linalg::vecdot(&x[0], &x[1], -1),
        "matrix_power_3" => nabla_linalg::matrix_power(&x[0], 3),
        "matrix_power_-2" => nabla_linalg::matrix_power(&x[0], -2),
        "multi_dot" => nabla_linalg::multi_dot(&[&x[0], &x[1], &x[2]]),
        "cond_2" => nabla_linalg::cond(&x[0], NormOrd::Two),
        "cond_fro" => nabla_linalg::cond(&x[0], NormOrd::Fro),
        "eigvalsh" => nabla_linalg::eigvalsh(&x[0]),
        "cholesky_upper" => nabla_linalg::cholesky_upper(&x[0]),
        "pinvh" => nabla_linalg::pinvh(&x[0], None),
        "solve_vector_broadcast" => nabla_linalg::solve(&x[0], &x[1]),
        "lstsq_vector" => nabla_linalg::lstsq(&x[0], &x[1]),
        "tensorsolve" => nabla_linalg::tensorsolve(&x[0], &x[1]),
        other => panic!("no function for fixture case {other}"),
    }
}

#[test]
fn values_and_gradients_match_jax() {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 16);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let inputs: Vec<T> = case["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, v)| Tensor::var(format!("x{i}"), fixture_tensor(v)).unwrap())
            .collect();
        let y = composite(name, &inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_real_close(
            &values(&y.cast(DType::F64).unwrap().contiguous().unwrap()),
            &values(&fixture_tensor(&case["output"])),
            1e-11,
            name,
        );
        let loss = y
            .mul(fixture_tensor(&case["weight"]))
            .unwrap()
            .sum_all()
            .unwrap();
        let refs: Vec<&T> = inputs.iter().collect();
        let grads = AdContext::new()
            .grads(&loss, &refs)
            .unwrap_or_else(|e| panic!("{name} grad: {e}"));
        for (i, (g, want)) in grads
            .iter()
            .zip(case["grads"].as_array().unwrap())
            .enumerate()
        {
            assert_real_close(
                &values(g),
                &values(&fixture_tensor(want)),
                1e-9,
                &format!("{name} grad {i}"),
            );
        }
    }
}

/// Linear-algebra functions and their derivative rules multiply in float32 inside an autocast scope
/// (PyTorch's float32 list): the same values and gradients as outside it, bit for bit.
#[test]
fn autocast_leaves_linear_algebra_in_float32() -> Result<()> {
    let a = conditioned(21, &[2, 4, 4]).cast(DType::F32)?;
    let eval = || -> Result<(Vec<f32>, Vec<f32>)> {
        let x = Tensor::var("a", a.clone())?;
        let y = nabla_linalg::matrix_power(&x, 3)?
            .add(&nabla_linalg::inv(&x)?)?
            .add(&nabla_linalg::pinv(&x, None)?)?
            .sum_all()?;
        let g = AdContext::new().grad(&y, &x)?;
        Ok((y.to_vec::<f32>()?, g.to_vec::<f32>()?))
    };
    let outside = eval()?;
    let inside = nabla_tensor::autocast(DType::BF16, eval)??;
    assert_eq!(inside, outside);
    Ok(())
}
