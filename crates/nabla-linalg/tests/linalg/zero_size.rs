//! Zero-size matrices (`min(m, n) = 0`, or an empty batch) through the spectral ops and what is built
//! on them: empty results of the right shapes and zero (empty) derivatives, as in PyTorch and JAX;
//! and `eigh` of a non-symmetric input, whose value and derivatives both describe `eigh((A + Aᵀ)/2)`.

use crate::spectral::sym;
use crate::support::{T, assert_real_close, central_differences, tensor, values};
use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_linalg::NormOrd;
use nabla_tensor::{AdContext, Tensor};

const SHAPES: [&[usize]; 6] = [
    &[0, 0],
    &[3, 0],
    &[0, 3],
    &[2, 0, 0],
    &[2, 3, 0],
    &[0, 3, 3],
];

fn empty(shape: &[usize], dtype: DType) -> T {
    Tensor::zeros(shape.to_vec(), dtype, &CpuBackend::new()).unwrap()
}

/// `f(a)` for a variable `a` of `shape`, its output shapes, and the gradient of the sum of every
/// output's real part, which must have `a`'s shape and be all zeros.
fn check(
    name: &str,
    shape: &[usize],
    dtype: DType,
    f: &dyn Fn(&T) -> Result<Vec<T>>,
) -> Vec<Vec<usize>> {
    let a = Tensor::var("a", empty(shape, dtype)).unwrap();
    let outs = f(&a).unwrap_or_else(|e| panic!("{name} {shape:?} {dtype:?}: {e}"));
    let loss = outs
        .iter()
        .map(|o| {
            let s = o.sum_all().unwrap();
            if s.dtype().is_complex() {
                s.real().unwrap()
            } else {
                s
            }
        })
        .reduce(|x, y| x.add(&y).unwrap())
        .unwrap();
    let g = AdContext::new()
        .grad(&loss, &a)
        .unwrap_or_else(|e| panic!("{name} {shape:?} grad: {e}"));
    assert_eq!(g.shape(), shape, "{name} {shape:?}: gradient shape");
    let zero = g
        .abs()
        .unwrap()
        .sum_all()
        .unwrap()
        .cast(DType::F64)
        .unwrap();
    assert_eq!(
        zero.item::<f64>().unwrap(),
        0.0,
        "{name} {shape:?}: zero gradient"
    );
    outs.iter().map(|o| o.shape().to_vec()).collect()
}

#[test]
fn spectral_ops_of_zero_size_matrices_give_empty_results_and_zero_derivatives() {
    for dtype in [DType::F32, DType::F64, DType::C64, DType::C128] {
        for shape in SHAPES {
            let r = shape.len();
            let (batch, m, n) = (&shape[..r - 2], shape[r - 2], shape[r - 1]);
            let k = m.min(n);
            let with = |tail: &[usize]| batch.iter().chain(tail).copied().collect::<Vec<_>>();
            let svd = check("svd", shape, dtype, &|a| {
                let (u, s, vh) = nabla_linalg::svd(a, false)?;
                Ok(vec![u, s, vh])
            });
            assert_eq!(
                svd,
                vec![with(&[m, k]), with(&[k]), with(&[k, n])],
                "svd {shape:?}"
            );
            let full = check("svd full", shape, dtype, &|a| {
                let (u, s, vh) = nabla_linalg::svd(&a.detach(), true)?;
                Ok(vec![u, s, vh])
            });
            assert_eq!(
                full,
                vec![with(&[m, m]), with(&[k]), with(&[n, n])],
                "full svd {shape:?}"
            );
            let vals = check("svdvals", shape, dtype, &|a| {
                Ok(vec![nabla_linalg::svdvals(a)?])
            });
            assert_eq!(vals, vec![with(&[k])]);
            let pinv = check("pinv", shape, dtype, &|a| {
                Ok(vec![nabla_linalg::pinv(a, None)?])
            });
            assert_eq!(pinv, vec![with(&[n, m])]);
            for ord in [NormOrd::Nuc, NormOrd::Fro] {
                let norm = check("matrix_norm", shape, dtype, &|a| {
                    Ok(vec![nabla_linalg::matrix_norm(a, ord)?])
                });
                assert_eq!(norm, vec![batch.to_vec()]);
            }
            if m == n {
                let eigh = check("eigh", shape, dtype, &|a| {
                    let (w, v) = nabla_linalg::eigh(a)?;
                    Ok(vec![w, v])
                });
                assert_eq!(eigh, vec![with(&[n]), with(&[n, n])], "eigh {shape:?}");
            }
        }
    }
}

#[test]
fn nuclear_norm_of_an_empty_matrix_is_zero() -> Result<()> {
    let a = empty(&[2, 3, 0], DType::F64);
    let norm = nabla_linalg::matrix_norm(&a, NormOrd::Nuc)?;
    assert_eq!(values(&norm), vec![0.0, 0.0]);
    Ok(())
}

#[test]
fn eigh_of_a_non_symmetric_matrix_is_that_of_its_symmetric_part() -> Result<()> {
    let a = tensor(41, &[2, 4, 4]);
    let (w, v) = nabla_linalg::eigh(&a)?;
    let (ws, vs) = nabla_linalg::eigh(&sym(&a)?)?;
    assert_real_close(&values(&w), &values(&ws), 1e-14, "eigenvalues");
    assert_real_close(
        &values(&v.abs()?),
        &values(&vs.abs()?),
        1e-12,
        "eigenvectors",
    );
    // The JVP of the eigenvalues agrees with central differences of the op's own value.
    let tangent = tensor(42, &[2, 4, 4]);
    let var = Tensor::var("a", a.clone())?;
    let (w_var, _) = nabla_linalg::eigh(&var)?;
    let loss = w_var.mul(tensor(43, &[2, 4]))?.sum_all()?;
    let jvp = AdContext::new().jvp(&loss, &var, &tangent)?;
    let f = |xs: &[T]| -> f64 {
        let (w, _) = nabla_linalg::eigh(&xs[0]).unwrap();
        w.mul(tensor(43, &[2, 4]))
            .unwrap()
            .sum_all()
            .unwrap()
            .item::<f64>()
            .unwrap()
    };
    let fd = central_differences(&f, &[a], 0);
    let directional: f64 = fd.iter().zip(values(&tangent)).map(|(d, t)| d * t).sum();
    assert_real_close(
        &[jvp.item::<f64>()?],
        &[directional],
        1e-7,
        "eigh jvp vs differences",
    );
    Ok(())
}

#[test]
fn full_svd_of_an_empty_matrix_has_identity_factors() -> Result<()> {
    // As PyTorch and JAX: U of a 3 x 0 matrix is any unitary 3 x 3 matrix; the identity is chosen.
    let (u, s, vh) = nabla_linalg::svd(&empty(&[3, 0], DType::F64), true)?;
    assert_eq!(
        values(&u),
        values(&Tensor::eye(3, DType::F64, &CpuBackend::new())?)
    );
    assert_eq!((s.shape(), vh.shape()), (&[0usize][..], &[0usize, 0][..]));
    Ok(())
}

/// The factorisations, solves and the other matrix functions on zero-size input: each gives results
/// of the expected empty shapes (`det` of a 0 x 0 matrix is 1, as in PyTorch and JAX) and a
/// gradient of the input's shape.
#[test]
fn every_other_linear_algebra_op_takes_zero_size_input() {
    type Op = (&'static str, fn(&T) -> Result<Vec<T>>);
    let square: [Op; 12] = [
        ("inv", |a| Ok(vec![nabla_linalg::inv(a)?])),
        ("det", |a| Ok(vec![nabla_linalg::det(a)?])),
        ("slogdet", |a| {
            let (s, l) = nabla_linalg::slogdet(a)?;
            Ok(vec![s, l])
        }),
        ("logabsdet", |a| Ok(vec![nabla_linalg::logabsdet(a)?])),
        ("cholesky", |a| Ok(vec![nabla_linalg::cholesky(a)?])),
        ("matrix_exp", |a| Ok(vec![nabla_linalg::matrix_exp(a)?])),
        ("solve", |a| {
            let b = a.narrow(-1, 0, 0)?.add(0.0)?;
            Ok(vec![nabla_linalg::solve(a, &b)?])
        }),
        ("eigvalsh", |a| Ok(vec![nabla_linalg::eigvalsh(a)?])),
        ("pinvh", |a| Ok(vec![nabla_linalg::pinvh(a, None)?])),
        ("matrix_power", |a| {
            Ok(vec![nabla_linalg::matrix_power(a, 3)?])
        }),
        ("lu", |a| {
            let (p, l, u) = nabla_linalg::lu(a)?;
            Ok(vec![p, l, u])
        }),
        ("qr", |a| {
            let (q, r) = nabla_linalg::qr(a)?;
            Ok(vec![q, r])
        }),
    ];
    for shape in [&[0usize, 0][..], &[2, 0, 0], &[0, 3, 3]] {
        for (name, op) in &square {
            check(name, shape, DType::F64, op);
        }
    }
    let det = nabla_linalg::det(&empty(&[2, 0, 0], DType::F64)).unwrap();
    assert_eq!(values(&det), vec![1.0, 1.0], "det of 0 x 0 matrices");
    let (_, logdet) = nabla_linalg::slogdet(&empty(&[0, 0], DType::F64)).unwrap();
    assert_eq!(values(&logdet), vec![0.0]);
    // Non-square empty matrices through LU, QR and least squares.
    for shape in [&[3usize, 0][..], &[0, 3], &[2, 3, 0]] {
        let r = shape.len();
        let (m, n) = (shape[r - 2], shape[r - 1]);
        let lu = check("lu", shape, DType::F64, &|a| {
            let (p, l, u) = nabla_linalg::lu(a)?;
            Ok(vec![p, l, u])
        });
        let k = m.min(n);
        assert_eq!(lu[1][r - 2..], [m, k]);
        let qr = check("qr", shape, DType::F64, &|a| {
            let (q, r) = nabla_linalg::qr(a)?;
            Ok(vec![q, r])
        });
        assert_eq!(qr[1][r - 2..], [k, n]);
    }
    let x = check("lstsq", &[3, 0], DType::F64, &|a| {
        Ok(vec![nabla_linalg::lstsq(a, &empty(&[3, 2], DType::F64))?])
    });
    assert_eq!(x, vec![vec![0, 2]]);
}
