//! Arithmetic on float16 and bfloat16 tensors: each op computes in float32 and rounds its result to
//! the half dtype once (PyTorch's CPU semantics), so every result equals the float32 computation of
//! the same op on the same (half) values, rounded; gradients reach float32 variables through the
//! casts; traced programs agree with eager.

use nabla_core::{DType, Pool2dParams, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{Tensor, grad};

type T = Tensor<CpuBackend>;

const HALVES: [DType; 2] = [DType::F16, DType::BF16];

fn values(dtype: DType) -> Result<T> {
    let v: Vec<f32> = vec![0.3, -1.7, 2.5, 0.0, 7.25, -0.01, 3.0, 1.1];
    T::from_vec(v, [2, 4], &CpuBackend::new())?.cast(dtype)
}

/// `f` on the half tensor equals `f` on its float32 values, rounded to the half dtype.
fn check(name: &str, f: impl Fn(&T) -> Result<T>) -> Result<()> {
    for dtype in HALVES {
        let x = values(dtype)?;
        let ours = f(&x)?;
        let reference = f(&x.cast(DType::F32)?)?;
        let expected = if reference.dtype() == DType::F32 {
            reference.cast(dtype)?
        } else {
            reference
        };
        assert_eq!(ours.dtype(), expected.dtype(), "{name} {dtype:?}");
        assert_eq!(ours.shape(), expected.shape(), "{name} {dtype:?}");
        let (a, b) = (
            ours.cast(DType::F64)?.to_vec::<f64>()?,
            expected.cast(DType::F64)?.to_vec::<f64>()?,
        );
        for (p, q) in a.iter().zip(&b) {
            assert!(
                p == q || (p.is_nan() && q.is_nan()),
                "{name} {dtype:?}: {a:?} vs {b:?}"
            );
        }
    }
    Ok(())
}

#[test]
fn elementwise_ops_round_once_per_op() -> Result<()> {
    check("exp", |x| x.exp())?;
    check("sqrt", |x| x.abs()?.sqrt())?;
    check("tanh", |x| x.tanh())?;
    check("add", |x| x.add(x))?;
    check("mul number", |x| x.mul(2.5))?;
    check("div", |x| x.div(&x.flip(&[1])?))?;
    check("pow", |x| x.abs()?.pow(1.5))?;
    check("maximum", |x| x.maximum(&x.neg()?))?;
    check("isnan", |x| x.div(x)?.isnan())?;
    check("compare", |x| x.gt(0.5))?;
    check("where", |x| x.gt(0.0)?.where_(x, 0.0))?;
    Ok(())
}

#[test]
fn reductions_and_selection() -> Result<()> {
    check("sum", |x| x.sum(&[1], false))?;
    check("mean", |x| x.mean(&[], false))?;
    check("max", |x| x.max(&[0], true))?;
    check("prod", |x| x.prod(&[1], false))?;
    check("argmax", |x| x.argmax(1, false))?;
    check("cumsum", |x| x.cumsum(1))?;
    check("sort", |x| Ok(x.sort(1, true)?.0))?;
    check("topk", |x| Ok(x.topk(2, 1, true)?.0))?;
    check("variance", |x| x.variance(&[1], false, 1))?;
    Ok(())
}

#[test]
fn composites_matmul_and_pooling() -> Result<()> {
    check("softmax", |x| x.softmax(1))?;
    check("log_softmax", |x| x.log_softmax(1))?;
    check("logsumexp", |x| x.logsumexp(&[1], false))?;
    check("relu", |x| x.relu())?;
    check("gelu", |x| x.gelu())?;
    check("layer_norm", |x| x.layer_norm(&[1], 1e-5))?;
    check("matmul", |x| x.matmul(&x.transpose(0, 1)?))?;
    check("max_pool2d", |x| {
        Ok(x.reshape([1, 1, 2, 4])?
            .max_pool2d(&Pool2dParams::square(2))?
            .0)
    })?;
    Ok(())
}

#[test]
fn a_mixed_chain_keeps_the_half_dtype() -> Result<()> {
    for dtype in HALVES {
        let x = values(dtype)?;
        let y = x.mul(&x)?.add(1.0)?.sqrt()?.sum_all()?;
        assert_eq!(y.dtype(), dtype);
        // float32 with a half tensor promotes to float32, as in PyTorch.
        let f = values(DType::F32)?;
        assert_eq!(x.add(&f)?.dtype(), DType::F32);
    }
    Ok(())
}

#[test]
fn gradients_flow_through_half_ops_to_float32_variables() -> Result<()> {
    let x = values(DType::F32)?;
    for dtype in HALVES {
        let g = grad(|x: &T| x.cast(dtype)?.mul(3.0)?.exp()?.sum_all()?.cast(DType::F32))(
            &x.mul(0.1)?,
        )?;
        assert_eq!(g.dtype(), DType::F32);
        // d/dx e^{3x} = 3 e^{3x}, in half precision (a relative error of a few parts in 2^8).
        let expected: Vec<f64> = x
            .mul(0.1)?
            .cast(DType::F64)?
            .to_vec::<f64>()?
            .iter()
            .map(|v| 3.0 * (3.0 * v).exp())
            .collect();
        for (a, b) in g.cast(DType::F64)?.to_vec::<f64>()?.iter().zip(&expected) {
            assert!((a - b).abs() <= 0.02 * b.abs(), "{dtype:?}: {a} vs {b}");
        }
    }
    Ok(())
}

#[test]
fn traced_programs_agree_with_eager() -> Result<()> {
    use nabla_tensor::{GraphCompiler, GraphExecutor, TracingBackend};
    let cpu = CpuBackend::new();
    for dtype in HALVES {
        let x = values(dtype)?;
        let eager = x.softmax(1)?.mul(&x)?.sum(&[1], false)?;
        let tb = TracingBackend::new();
        let p = tb.placeholder(vec![2, 4], dtype)?;
        let out = p.softmax(1)?.mul(&p)?.sum(&[1], false)?;
        for compiler in [GraphCompiler::new(), GraphCompiler::new().only(&[])] {
            let program = compiler.compile(std::slice::from_ref(&out))?;
            let traced = GraphExecutor::new(&cpu)
                .run(&program, std::slice::from_ref(&x))?
                .remove(0);
            assert_eq!(traced.dtype(), dtype);
            assert_eq!(
                traced.cast(DType::F64)?.to_vec::<f64>()?,
                eager.cast(DType::F64)?.to_vec::<f64>()?
            );
        }
    }
    Ok(())
}

#[test]
fn half_variables_get_half_gradients() -> Result<()> {
    let x = values(DType::F32)?.mul(0.1)?;
    for dtype in HALVES {
        let h = x.cast(dtype)?;
        let g = grad(|v: &T| v.mul(3.0)?.exp()?.sum_all())(&h)?;
        assert_eq!(g.dtype(), dtype);
        // Each op rounds: 3 e^{3x} within a few half-precision steps.
        for (a, v) in g
            .cast(DType::F64)?
            .to_vec::<f64>()?
            .iter()
            .zip(h.cast(DType::F64)?.to_vec::<f64>()?)
        {
            let want = 3.0 * (3.0 * v).exp();
            assert!((a - want).abs() <= 0.02 * want, "{dtype:?}: {a} vs {want}");
        }
    }
    Ok(())
}
