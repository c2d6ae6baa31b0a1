//! `vmap` over linear algebra: the ops map over leading dimensions, so a batch runs as one call; the
//! results equal a loop over the examples, per-example gradients (`vmap(grad)`) included, and
//! `grad(vmap)` differentiates with the family's rules from an `AdContext`.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_linalg::{inv, logabsdet, solve};
use nabla_tensor::{AdContext, Tensor, TracedTensor, grad, vmap};

type T = Tensor<CpuBackend>;

fn matrices(batch: usize, n: usize) -> Result<T> {
    let cpu = CpuBackend::new();
    let data: Vec<f64> = (0..batch * n * n)
        .map(|i| ((i * 29 % 13) as f64 - 6.0) / 5.0 + if i % (n + 1) == 0 { 3.0 } else { 0.0 })
        .collect();
    Tensor::from_vec(data, [batch, n, n], &cpu)
}

fn close(a: &T, b: &T, what: &str) -> Result<()> {
    assert_eq!(a.shape(), b.shape(), "{what}");
    for (x, y) in a.to_vec::<f64>()?.iter().zip(b.to_vec::<f64>()?) {
        assert!(
            (x - y).abs() <= 1e-10 * (1.0 + y.abs()),
            "{what}: {x} vs {y}"
        );
    }
    Ok(())
}

#[test]
fn linear_algebra_under_vmap_equals_a_loop() -> Result<()> {
    let a = matrices(4, 3)?;
    let cpu = CpuBackend::new();
    let rhs = Tensor::from_vec((0..12).map(|i| i as f64 / 4.0).collect(), [4, 3, 1], &cpu)?;
    let shared = a.select_index(0, 0)?;
    let inverses = vmap(|t: &[TracedTensor]| inv(&t[0])).call1(&[&a])?;
    // Batch axis last: the matrices stacked along a trailing axis.
    let last = vmap(|t: &[TracedTensor]| logabsdet(&t[0]))
        .in_axes(&[Some(-1)])
        .call1(&[&a.permute(&[1, 2, 0])?])?;
    let solved = vmap(|t: &[TracedTensor]| solve(&t[0], &t[1]))
        .in_axes(&[None, Some(0)])
        .call1(&[&shared, &rhs])?;
    let per_example =
        vmap(|t: &[TracedTensor]| grad(|x: &TracedTensor| logabsdet(x))(&t[0])).call1(&[&a])?;
    for b in 0..4 {
        let m = a.select_index(0, b)?;
        close(&inverses.select_index(0, b)?, &inv(&m)?, "vmap(inv)")?;
        close(
            &last.select_index(0, b)?,
            &logabsdet(&m)?,
            "vmap(logabsdet), axis -1",
        )?;
        let want = solve(&shared, &rhs.select_index(0, b)?)?;
        close(&solved.select_index(0, b)?, &want, "vmap(solve), shared A")?;
        let g = grad(|x: &T| logabsdet(x))(&m)?;
        close(
            &per_example.select_index(0, b)?,
            &g,
            "vmap(grad(logabsdet))",
        )?;
    }
    Ok(())
}

#[test]
fn the_gradient_of_a_vmap_through_linear_algebra_uses_the_context_rules() -> Result<()> {
    let a = Tensor::var("a", matrices(3, 2)?)?;
    let total = vmap(|t: &[TracedTensor]| logabsdet(&t[0]))
        .call1(&[&a])?
        .sum_all()?;
    let ctx = AdContext::builder()
        .with_extension_rules(nabla_linalg::rules::<CpuBackend>())
        .build();
    let g = ctx.grad(&total, &a)?;
    // d log|det A| / dA = A^{-T}, per matrix.
    let want = inv(&a.detach())?.transpose(-1, -2)?;
    close(&g, &want.contiguous()?, "grad(vmap(logabsdet))")?;
    // Without the rules the replayed op has none: an error naming it, not a wrong gradient.
    let err = total.backward().unwrap_err().to_string();
    assert!(err.contains("linalg.logabsdet"), "{err}");
    assert_eq!(g.dtype(), DType::F64);
    Ok(())
}
