//! The Gram product `x @ xᵀ`: its tangent takes one product (`p + pᵀ` with `p = v xᵀ`), bit for bit
//! the two-product tangent on the CPU; a transposed operand with a tangent of its own keeps the
//! general rule; and the Hessian-vector product of `sum(tanh(X Xᵀ))`, eager and compiled, matches
//! its closed form.

use super::support::*;
use nabla_core::DType;
use nabla_tensor::{AdContext, GraphCompiler, GraphExecutor, Result, Tensor, TracingBackend, hvp};

fn bits(x: &T) -> Vec<u64> {
    vals(x).iter().map(|v| v.to_bits()).collect()
}

/// For `x @ xᵀ` and then `xᵀ @ x`: the tangent in direction `v` by `jvp` (the Gram rule) and the
/// general rule's two products written out (`v xᵀ + x vᵀ`, `vᵀ x + xᵀ v`).
fn gram_tangents(x: &T, v: &T) -> Result<[(T, T); 2]> {
    let ad = AdContext::new();
    let xv = T::var("x", x.clone())?;
    Ok([
        (
            ad.jvp(&xv.matmul(&xv.t()?)?, &xv, v)?,
            v.matmul(&x.t()?)?.add(&x.matmul(&v.t()?)?)?,
        ),
        (
            ad.jvp(&xv.t()?.matmul(&xv)?, &xv, v)?,
            v.t()?.matmul(x)?.add(&x.t()?.matmul(v)?)?,
        ),
    ])
}

#[test]
fn the_gram_tangent_is_bit_for_bit_the_two_product_tangent() -> Result<()> {
    // Shapes through the product kernel's several paths (small, blocked, ragged) and a batch.
    let shapes: [&[usize]; 5] = [&[5, 7], &[64, 33], &[130, 70], &[3, 4, 6], &[2, 1, 9]];
    for (k, shape) in shapes.into_iter().enumerate() {
        for dtype in [DType::F64, DType::F32] {
            let x = randn(shape, 60 + k as u64).cast(dtype)?;
            let v = randn(shape, 70 + k as u64).cast(dtype)?;
            for (form, (tangent, two_products)) in gram_tangents(&x, &v)?.iter().enumerate() {
                assert_eq!(tangent.shape(), two_products.shape());
                assert_eq!(
                    bits(tangent),
                    bits(two_products),
                    "form {form} {shape:?} {dtype:?}"
                );
            }
        }
    }
    Ok(())
}

#[test]
fn complex_gram_tangents_agree_to_rounding() -> Result<()> {
    let complex =
        |shape: &[usize], seed: u64| T::complex(&randn(shape, seed), &randn(shape, seed + 1));
    let (x, v) = (complex(&[6, 9], 100)?, complex(&[6, 9], 102)?);
    let parts = |t: &T| -> Result<Vec<f64>> { Ok([vals(&t.real()?), vals(&t.imag()?)].concat()) };
    for (tangent, two_products) in gram_tangents(&x, &v)? {
        assert_near(&parts(&tangent)?, &parts(&two_products)?, 1e-12);
    }
    Ok(())
}

/// Matrix products in the traced program of `build`'s output (before any compiler pass).
fn traced_products(
    build: impl Fn(&Tensor<TracingBackend>, &Tensor<TracingBackend>) -> Result<Tensor<TracingBackend>>,
) -> Result<usize> {
    let tb = TracingBackend::new();
    // Rows enough that the reverse pass multiplies each contribution out on its own (thinner
    // products reaching one operand are stacked into one).
    let x = tb.placeholder([130, 6], DType::F64)?;
    let v = tb.placeholder([130, 6], DType::F64)?;
    let out = build(&x, &v)?;
    let program = tb.program(&[&out])?;
    Ok(program
        .nodes()
        .iter()
        .filter(|n| n.op.to_string().starts_with("matmul"))
        .count())
}

#[test]
fn the_gram_tangent_and_the_hvp_record_fewer_products() -> Result<()> {
    // One tangent product, where the general rule records two (the program holds what the
    // tangent reads: not the primal product).
    let jvp = traced_products(|x, v| AdContext::new().jvp(&x.matmul(&x.t()?)?, x, &v.detach()))?;
    assert_eq!(jvp, 1);
    let jvp = traced_products(|x, v| AdContext::new().jvp(&x.t()?.matmul(x)?, x, &v.detach()))?;
    assert_eq!(jvp, 1);
    let general = traced_products(|x, v| {
        let xt = x.t()?.contiguous()?;
        AdContext::new().jvp(&x.matmul(&xt)?, x, &v.detach())
    })?;
    assert_eq!(general, 2);
    // Reverse over forward: the primal, the tangent's one, its reverse pass's one (the two
    // cotangents of p + pᵀ added first) and the primal product's two.
    let hvp = traced_products(|x, v| AdContext::new().hvp(&gram_loss(x)?, x, &v.detach()))?;
    assert_eq!(hvp, 5);
    // Forward over reverse: the primal, the Gram tangent and the four tangents of the gradient's
    // two products (the program holds what the result reads, not the gradient's own products).
    let fwd_rev = traced_products(|x, v| {
        let ad = AdContext::new();
        let g = ad.grad(&gram_loss(x)?, x)?;
        ad.jvp(&g, x, &v.detach())
    })?;
    assert_eq!(fwd_rev, 6);
    Ok(())
}

#[test]
fn a_transposed_operand_with_its_own_tangent_keeps_the_general_rule() -> Result<()> {
    let (x, v, w) = (randn(&[3, 5], 80), randn(&[3, 5], 81), randn(&[5, 3], 82));
    let xv = T::var("x", x.clone())?;
    let xt = xv.t()?;
    let y = xv.matmul(&xt)?;
    // Marking the transposed node gives it the tangent w, not vᵀ.
    let tangent = AdContext::new().jvp_n(&y, &[&xv, &xt], &[&v, &w])?;
    let want = v.matmul(&x.t()?)?.add(&x.matmul(&w)?)?;
    assert_near(&vals(&tangent), &vals(&want), 1e-13);
    Ok(())
}

/// `sum(tanh(X Xᵀ))`.
fn gram_loss<B: nabla_core::Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    x.matmul(&x.t()?)?.tanh()?.sum_all()
}

/// The closed form of its HVP: with `Y = X Xᵀ`, `G = 1 - tanh²(Y)` and `Ẏ = V Xᵀ + X Vᵀ`,
/// `H V = (Ġ + Ġᵀ) X + (G + Gᵀ) V` where `Ġ = -2 tanh(Y) G Ẏ` (elementwise).
fn gram_hvp_closed_form(x: &T, v: &T) -> Result<T> {
    let y = x.matmul(&x.t()?)?;
    let th = y.tanh()?;
    let g = th.square()?.neg()?.add(1.0)?;
    let dy = v.matmul(&x.t()?)?.add(&x.matmul(&v.t()?)?)?;
    let dg = th.mul(&g)?.mul(&dy)?.mul(-2.0)?;
    dg.add(&dg.t()?)?
        .matmul(x)?
        .add(&g.add(&g.t()?)?.matmul(v)?)
}

#[test]
fn the_gram_hvp_matches_its_closed_form_eager_and_compiled() -> Result<()> {
    for (k, shape) in [[6usize, 6], [4, 7], [9, 3]].into_iter().enumerate() {
        let x = randn(&shape, 90 + k as u64).mul(0.3)?;
        let v = randn(&shape, 95 + k as u64);
        let want = vals(&gram_hvp_closed_form(&x, &v)?);
        let xv = T::var("x", x.clone())?;
        let eager = AdContext::new().hvp(&gram_loss(&xv)?, &xv, &v)?;
        assert_near(&vals(&eager), &want, 1e-11);
        assert_near(&vals(&hvp(gram_loss, &x, &v)?), &want, 1e-11);
        let tb = TracingBackend::new();
        let (px, pv) = (
            tb.placeholder(shape, DType::F64)?,
            tb.placeholder(shape, DType::F64)?,
        );
        let out = AdContext::new().hvp(&gram_loss(&px)?, &px, &pv.detach())?;
        let cpu = cpu();
        let program = GraphCompiler::for_backend(&cpu).compile(&tb.program(&[&out])?)?;
        let compiled = GraphExecutor::new(&cpu).run(&program, &[x, v])?;
        assert_near(&vals(&compiled[0]), &want, 1e-11);
    }
    Ok(())
}
