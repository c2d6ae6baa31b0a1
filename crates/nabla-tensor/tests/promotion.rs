//! Type promotion: `DType::promote` against `torch.promote_types` for every pair of dtypes (JAX's
//! `promote_types` agrees on all of them, and decides the pairs of uint16, uint32 and uint64 with
//! other dtypes, which PyTorch refuses), numbers against `torch.result_type` (fixture from
//! scripts/gen_promotion_fixture.py), and the ops that promote (elementwise binary ops, comparisons,
//! `where`, `matmul`, `cat`) with gradients through the casts, as `jax.grad` gives them.

use nabla_core::num_complex::Complex64;
use nabla_core::{DType, Result, Scalar};
use nabla_cpu::CpuBackend;
use nabla_tensor::{AdContext, Tensor};
use serde_json::Value;

type T = Tensor<CpuBackend>;

fn dtype(name: &str) -> DType {
    DType::ALL
        .into_iter()
        .find(|d| d.name() == name)
        .unwrap_or_else(|| panic!("unknown dtype {name}"))
}

#[test]
fn promotion_of_every_pair_matches_pytorch_and_jax() {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/promotion.json")).unwrap();
    let pairs = fixture["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 225);
    for p in pairs {
        let (a, b) = (
            dtype(p["a"].as_str().unwrap()),
            dtype(p["b"].as_str().unwrap()),
        );
        let jax = dtype(p["jax"].as_str().unwrap());
        // PyTorch refuses uint16, uint32 and uint64 with other dtypes (null): JAX's lattice decides.
        let want = p["torch"].as_str().map_or(jax, dtype);
        assert_eq!(a.promote(b), want, "{a} with {b}");
        assert_eq!(jax, want, "JAX agrees with PyTorch on {a} with {b}");
    }
    let scalars = fixture["scalars"].as_array().unwrap();
    assert_eq!(scalars.len(), 60);
    for case in scalars {
        let tensor = dtype(case["tensor"].as_str().unwrap());
        let scalar = match case["scalar"].as_str().unwrap() {
            "bool" => Scalar::Bool(true),
            "int" => Scalar::I64(3),
            "float" => Scalar::F64(2.5),
            _ => Scalar::C128(Complex64::new(0.0, 1.0)),
        };
        // PyTorch's float16 * 1j is complex32 (bfloat16 * 1j bcomplex32), which nabla does not
        // have: complex64 instead.
        let want = match case["torch"].as_str().unwrap() {
            "complex32" | "bcomplex32" => DType::C64,
            name => dtype(name),
        };
        assert_eq!(scalar.result_type(tensor), want, "{tensor} with {scalar:?}");
    }
}

fn cpu() -> CpuBackend {
    CpuBackend::new()
}

#[test]
fn ops_promote_mixed_operands() -> Result<()> {
    let f32s = Tensor::from_vec(vec![1.5f32, -2.0], [2], &cpu())?;
    let f64s = Tensor::from_vec(vec![0.25f64, 4.0], [2], &cpu())?;
    let ints = Tensor::from_vec(vec![3i64, -1], [2], &cpu())?;
    let z = Tensor::from_vec(
        vec![Complex64::new(1.0, 2.0), Complex64::new(0.0, -1.0)],
        [2],
        &cpu(),
    )?;
    let sum = f32s.add(&f64s)?;
    assert_eq!(
        (sum.dtype(), sum.to_vec::<f64>()?),
        (DType::F64, vec![1.75, 2.0])
    );
    assert_eq!(ints.mul(&f32s)?.to_vec::<f32>()?, vec![4.5, 2.0]);
    let prod = f64s.mul(&z)?;
    assert_eq!(prod.dtype(), DType::C128);
    assert_eq!(
        prod.to_vec::<Complex64>()?,
        vec![Complex64::new(0.25, 0.5), Complex64::new(0.0, -4.0)]
    );
    // Numbers are weak: they keep the tensor's dtype within its category.
    assert_eq!(f32s.mul(2.5)?.dtype(), DType::F32);
    assert_eq!(ints.add(0.5)?.to_vec::<f32>()?, vec![3.5, -0.5]);
    assert_eq!(f64s.mul(Complex64::new(0.0, 1.0))?.dtype(), DType::C128);
    let flags = Tensor::from_vec(vec![true, false], [2], &cpu())?;
    assert_eq!(flags.add(1)?.to_vec::<i64>()?, vec![2, 1]);
    assert_eq!(ints.lt(&f32s)?.to_vec::<bool>()?, vec![false, false]);
    let picked = flags.where_(&ints, &f64s)?;
    assert_eq!(
        (picked.dtype(), picked.to_vec::<f64>()?),
        (DType::F64, vec![3.0, 4.0])
    );
    let m = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], &cpu())?;
    assert_eq!(m.matmul(&f64s)?.to_vec::<f64>()?, vec![8.25, 16.75]);
    assert_eq!(
        Tensor::cat(&[&ints, &f32s], 0)?.to_vec::<f32>()?,
        vec![3.0, -1.0, 1.5, -2.0]
    );
    Ok(())
}

#[test]
fn gradients_flow_through_promotions_as_in_jax() -> Result<()> {
    // jax.grad(lambda x, w: jnp.real(jnp.sum(x * z)) + jnp.sum(w @ x))(x, w) with x float64, z
    // complex128 and w float32: dx = Re z + wᵀ 1 (in float64), dw = 1 xᵀ (in float32).
    let x = Tensor::var("x", Tensor::from_vec(vec![0.5f64, -1.0], [2], &cpu())?)?;
    let w = Tensor::var(
        "w",
        Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], &cpu())?,
    )?;
    let z = Tensor::from_vec(
        vec![Complex64::new(1.0, 2.0), Complex64::new(-3.0, 0.5)],
        [2],
        &cpu(),
    )?;
    let loss = x
        .mul(&z)?
        .sum_all()?
        .real()?
        .add(&w.matmul(&x)?.sum_all()?)?;
    let grads = AdContext::new().grads(&loss, &[&x, &w])?;
    assert_eq!(grads[0].dtype(), DType::F64);
    assert_eq!(grads[0].to_vec::<f64>()?, vec![1.0 + 4.0, -3.0 + 6.0]);
    assert_eq!(grads[1].dtype(), DType::F32);
    assert_eq!(grads[1].to_vec::<f32>()?, vec![0.5, -1.0, 0.5, -1.0]);
    let t: T = Tensor::from_vec(vec![1.0f64, 1.0], [2], &cpu())?;
    let tangent = AdContext::new().jvp(&loss, &x, &t)?;
    assert_eq!(tangent.item::<f64>()?, 5.0 + 3.0);
    Ok(())
}
