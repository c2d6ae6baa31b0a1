//! `diagonal`, `trace`, `tril`, `triu` and `diag_embed`: values against index loops (batched, every
//! offset, other axis pairs, zero-size), gradients against central differences, and errors.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GradCheckOptions, Tensor, check_gradients};

type T = Tensor<CpuBackend>;

fn x(shape: &[usize]) -> T {
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n).map(|i| (i as f64 * 0.37).sin()).collect(),
        shape.to_vec(),
        &CpuBackend::new(),
    )
    .unwrap()
}

#[test]
fn diagonals_match_an_index_loop_for_every_offset_and_axis_pair() -> Result<()> {
    let t = x(&[2, 3, 4]);
    let v = t.to_vec::<f64>()?;
    let at = |i: usize, j: usize, k: usize| v[(i * 3 + j) * 4 + k];
    for offset in -4..=5isize {
        // Axes 1 and 2: [2, len].
        let d = t.diagonal(offset, 1, 2)?;
        let want: Vec<f64> = (0..2)
            .flat_map(|b| {
                (0..3usize)
                    .filter_map(move |i| {
                        let j = i as isize + offset;
                        (0..4).contains(&j).then_some((b, i, j as usize))
                    })
                    .collect::<Vec<_>>()
            })
            .map(|(b, i, j)| at(b, i, j))
            .collect();
        assert_eq!(d.shape()[0], 2);
        assert_eq!(d.to_vec::<f64>()?, want, "offset {offset}");
        // Axes 2 and 0 (reversed order): rows are axis 2, columns axis 0, batch axis 1.
        let d = t.diagonal(offset, -1, 0)?;
        let mut want = Vec::new();
        for j in 0..3 {
            for k in 0..4usize {
                let i = k as isize + offset;
                if (0..2).contains(&i) {
                    want.push(at(i as usize, j, k));
                }
            }
        }
        assert_eq!(d.to_vec::<f64>()?, want, "axes (-1, 0) offset {offset}");
    }
    assert_eq!(x(&[0, 3]).diagonal(0, 0, 1)?.shape(), &[0]);
    assert_eq!(x(&[2, 0, 3]).diagonal(1, 1, 2)?.shape(), &[2, 0]);
    Ok(())
}

#[test]
fn trace_triangles_and_diag_embed_values() -> Result<()> {
    let t = x(&[2, 3, 3]);
    let tr = t.trace()?.to_vec::<f64>()?;
    let v = t.to_vec::<f64>()?;
    for (b, got) in tr.iter().enumerate() {
        let want: f64 = (0..3).map(|i| v[b * 9 + i * 4]).sum();
        assert!((got - want).abs() < 1e-15);
    }
    let m = x(&[3, 4]);
    let mv = m.to_vec::<f64>()?;
    for k in -3..=4isize {
        let (lo, up) = (m.tril(k)?.to_vec::<f64>()?, m.triu(k)?.to_vec::<f64>()?);
        for i in 0..3isize {
            for j in 0..4isize {
                let p = (i * 4 + j) as usize;
                assert_eq!(
                    lo[p],
                    if j <= i + k { mv[p] } else { 0.0 },
                    "tril {k} ({i}, {j})"
                );
                assert_eq!(
                    up[p],
                    if j >= i + k { mv[p] } else { 0.0 },
                    "triu {k} ({i}, {j})"
                );
            }
        }
    }
    // Infinities outside the triangle do not become NaN.
    let inf = Tensor::full([2, 2], f64::INFINITY, DType::F64, &CpuBackend::new())?;
    assert_eq!(
        inf.tril(0)?.to_vec::<f64>()?,
        vec![f64::INFINITY, 0.0, f64::INFINITY, f64::INFINITY]
    );
    // diag_embed inverts diagonal, batched and with offsets.
    let d = x(&[2, 3]);
    for k in [-2isize, 0, 1] {
        let e = d.diag_embed(k)?;
        assert_eq!(e.shape(), &[2, 3 + k.unsigned_abs(), 3 + k.unsigned_abs()]);
        assert_eq!(e.diagonal(k, -2, -1)?.to_vec::<f64>()?, d.to_vec::<f64>()?);
        assert_eq!(e.sum_all()?.item::<f64>()?, d.sum_all()?.item::<f64>()?);
    }
    Ok(())
}

#[test]
fn gradients_match_central_differences() -> Result<()> {
    let opts = GradCheckOptions::default();
    type F = fn(&[T]) -> Result<T>;
    let cases: [(&str, F, Vec<usize>); 6] = [
        ("diagonal", |v| v[0].diagonal(1, 1, 2), vec![2, 3, 4]),
        ("diagonal below", |v| v[0].diagonal(-1, 0, 2), vec![3, 2, 3]),
        ("trace", |v| v[0].trace(), vec![2, 3, 3]),
        ("tril", |v| v[0].tril(-1), vec![2, 3, 4]),
        ("triu", |v| v[0].triu(1), vec![3, 4]),
        ("diag_embed", |v| v[0].diag_embed(-1), vec![2, 3]),
    ];
    for (name, f, shape) in cases {
        check_gradients(f, &[x(&shape)], &opts)?
            .assert_close(1e-9, 1e-7)
            .map_err(|e| e.with_hint(name.to_string()))?;
    }
    Ok(())
}

#[test]
fn bad_arguments_are_errors() {
    let e = x(&[3, 3]).diagonal(0, 1, -1).unwrap_err().to_string();
    assert!(e.contains("diagonal") && e.contains("differ"), "{e}");
    let e = x(&[3]).trace().unwrap_err().to_string();
    assert!(e.contains("trace") && e.contains("[..., m, n]"), "{e}");
    let e = x(&[3]).tril(0).unwrap_err().to_string();
    assert!(e.contains("tril"), "{e}");
    let e = x(&[2, 2]).diagonal(0, 0, 2).unwrap_err().to_string();
    assert!(e.contains("diagonal"), "{e}");
    let scalar = Tensor::from_vec(vec![1.0f64], [], &CpuBackend::new()).unwrap();
    assert!(
        scalar
            .diag_embed(0)
            .unwrap_err()
            .to_string()
            .contains("diag_embed")
    );
}
