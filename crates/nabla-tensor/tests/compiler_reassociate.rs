//! The opt-in `Pass::Reassociate`: matrix products sharing a factor across a sum are merged (counted
//! in the compiled program), the result agrees with the original up to rounding, and products read
//! elsewhere, broadcast sums and the default pipeline are left alone.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{AdContext, GraphCompiler, Pass, Program, Tensor, TracingBackend};

use crate::compiler_support::check_equivalent;

type Traced = Tensor<TracingBackend>;

fn products(p: &Program) -> usize {
    p.nodes()
        .iter()
        .filter(|n| n.op.to_string().starts_with("matmul"))
        .count()
}

/// The product counts of `outs` compiled by default and with reassociation; checks the
/// reassociated program against the original.
fn counts(tb: &TracingBackend, outs: &[&Traced]) -> Result<(usize, usize)> {
    let program = tb.program(outs)?;
    let cpu = CpuBackend::new();
    let plain = GraphCompiler::for_backend(&cpu).compile(&program)?;
    let merged = GraphCompiler::for_backend(&cpu)
        .with(Pass::Reassociate)
        .compile(&program)?;
    check_equivalent(&program, &plain, 0.0);
    check_equivalent(&program, &merged, 1e-12);
    Ok((products(&plain), products(&merged)))
}

fn placeholders(tb: &TracingBackend, shapes: &[&[usize]]) -> Result<Vec<Traced>> {
    shapes
        .iter()
        .map(|s| tb.placeholder(s.to_vec(), DType::F64))
        .collect()
}

#[test]
fn a_shared_right_or_left_factor_makes_one_product() -> Result<()> {
    let tb = TracingBackend::new();
    let v = placeholders(&tb, &[&[4, 5], &[4, 5], &[5, 3]])?;
    let (a, b, x) = (&v[0], &v[1], &v[2]);
    let shared_rhs = a.matmul(x)?.add(&b.matmul(x)?)?.exp()?;
    assert_eq!(counts(&tb, &[&shared_rhs])?, (2, 1));
    let tb = TracingBackend::new();
    let v = placeholders(&tb, &[&[4, 5], &[5, 3], &[5, 3]])?;
    let shared_lhs = v[0].matmul(&v[1])?.add(&v[0].matmul(&v[2])?)?;
    assert_eq!(counts(&tb, &[&shared_lhs])?, (2, 1));
    Ok(())
}

#[test]
fn transposed_and_batched_products_and_longer_sums_merge() -> Result<()> {
    // (xᵀ b)ᵀ = bᵀ x shares x with a x.
    let tb = TracingBackend::new();
    let v = placeholders(&tb, &[&[4, 5], &[5, 4], &[5, 3]])?;
    let (a, b, x) = (&v[0], &v[1], &v[2]);
    let y = a.matmul(x)?.add(&x.t()?.matmul(b)?.t()?)?;
    assert_eq!(counts(&tb, &[&y])?, (2, 1));
    // Batched, three products and a bias: (a + b + c) @ x + bias.
    let tb = TracingBackend::new();
    let v = placeholders(&tb, &[&[2, 3, 4], &[2, 3, 4], &[2, 3, 4], &[2, 4, 6], &[6]])?;
    let x = &v[3];
    let y = v[0]
        .matmul(x)?
        .add(&v[4])?
        .add(&v[1].matmul(x)?)?
        .add(&v[2].matmul(x)?)?;
    assert_eq!(counts(&tb, &[&y])?, (3, 1));
    // Four products sharing factors in pairs, across a transposed inner sum (what an HVP builds):
    // a x + b v + (vᵀ c + xᵀ d)ᵀ = (a + dᵀ) x + (b + cᵀ) v.
    let tb = TracingBackend::new();
    let v = placeholders(&tb, &[&[5, 5], &[5, 5], &[5, 5], &[5, 5], &[5, 5], &[5, 5]])?;
    let (a, b, c, d, x, w) = (&v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
    let inner = w.t()?.matmul(c)?.add(&x.t()?.matmul(d)?)?;
    let y = a.matmul(x)?.add(&b.matmul(w)?)?.add(&inner.t()?)?;
    assert_eq!(counts(&tb, &[&y])?, (4, 2));
    Ok(())
}

#[test]
fn products_read_elsewhere_and_mismatched_factors_stay() -> Result<()> {
    let tb = TracingBackend::new();
    let v = placeholders(&tb, &[&[4, 5], &[4, 5], &[5, 3]])?;
    let (a, b, x) = (&v[0], &v[1], &v[2]);
    // a x is also an output: merging would compute it twice.
    let ax = a.matmul(x)?;
    let y = ax.add(&b.matmul(x)?)?;
    assert_eq!(counts(&tb, &[&y, &ax])?, (2, 2));
    // The same value through another view is not the same factor: x vs zᵀ.
    let tb = TracingBackend::new();
    let v = placeholders(&tb, &[&[4, 5], &[4, 5], &[5, 3], &[3, 5]])?;
    let y = v[0].matmul(&v[2])?.add(&v[1].matmul(&v[3].t()?)?)?;
    assert_eq!(counts(&tb, &[&y])?, (2, 2));
    Ok(())
}

/// `sum(tanh(X Xᵀ))`, the bench_transforms workload.
fn gram(x: &Traced) -> Result<Traced> {
    x.matmul(&x.t()?)?.tanh()?.sum_all()
}

#[test]
fn the_gram_gradient_and_hvp_need_fewer_products() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([6, 6], DType::F64)?;
    let g = AdContext::new().grad(&gram(&x)?, &x)?;
    // Forward X Xᵀ, then S X + Sᵀ X becomes (S + Sᵀ) X.
    assert_eq!(counts(&tb, &[&g])?, (3, 2));
    let tb = TracingBackend::new();
    let x = tb.placeholder([6, 6], DType::F64)?;
    let v = tb.placeholder([6, 6], DType::F64)?;
    let ad = AdContext::new();
    let g = ad.grad(&gram(&x)?, &x)?;
    let hv = ad.jvp(&g, &x, &v.detach())?;
    // The forward product and its tangent's two, and the four of the gradient's tangent paired.
    assert_eq!(counts(&tb, &[&hv])?, (6, 4));
    Ok(())
}
