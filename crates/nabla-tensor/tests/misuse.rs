//! Library misuse that used to be accepted silently or fail with a confusing message: integer
//! division by zero, two variables with one name, a second reverse pass through a freed graph, and
//! tensors of two traces mixed in one op.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GraphExecutor, Tensor, TracingBackend};

fn message<V: std::fmt::Debug>(r: Result<V>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn integer_division_by_zero_is_an_error() -> Result<()> {
    let cpu = CpuBackend::new();
    let a = Tensor::from_vec(vec![7i64, -7, 3], [3], &cpu)?;
    let b = Tensor::from_vec(vec![2i64, 0, 1], [3], &cpu)?;
    for e in [message(a.div(&b)), message(a.rem(&b)), message(&a / 0i64)] {
        assert!(e.contains("by zero"), "{e}");
    }
    assert!(message(a.cast(DType::I32)?.div(0)).contains("int32 divisor"));
    // Broadcast divisors are checked through the broadcast, and nonzero ones divide as before.
    let row = Tensor::from_vec(vec![0i64], [1], &cpu)?;
    assert!(message(a.rem(&row)).contains("rem by zero"));
    assert_eq!(a.div(2)?.to_vec::<i64>()?, vec![3, -4, 1]);
    assert_eq!(a.rem(-2)?.to_vec::<i64>()?, vec![-1, -1, -1]);
    // Floats keep IEEE results; an empty divisor has nothing to check.
    let x = Tensor::from_vec(vec![1.0f32], [1], &cpu)?;
    assert_eq!(x.div(0.0)?.to_vec::<f32>()?, vec![f32::INFINITY]);
    let empty = Tensor::<CpuBackend>::zeros([0], DType::I64, &cpu)?;
    assert_eq!(empty.div(&empty)?.shape(), &[0]);
    Ok(())
}

#[test]
fn two_variables_with_one_name_are_refused() -> Result<()> {
    let cpu = CpuBackend::new();
    let w1 = Tensor::var("w", Tensor::from_vec(vec![1.0f64], [1], &cpu)?)?;
    let w2 = Tensor::var("w", Tensor::from_vec(vec![2.0f64], [1], &cpu)?)?;
    let e = message(w1.mul(&w2)?.sum_all()?.backward());
    assert!(e.contains("named `w`"), "{e}");
    // One variable used twice is fine, and so are distinct names.
    let g = w1.mul(&w1)?.sum_all()?.backward()?;
    assert_eq!(
        g.by_name("w").map(|t| t.to_vec::<f64>()).transpose()?,
        Some(vec![2.0])
    );
    let v = Tensor::var("v", Tensor::from_vec(vec![2.0f64], [1], &cpu)?)?;
    let g = w1.mul(&v)?.sum_all()?.backward()?;
    assert_eq!(g.len(), 2);
    Ok(())
}

#[test]
fn a_second_reverse_pass_names_the_call_not_an_internal_op() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = Tensor::var("x", Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?)?;
    let loss = x.reshape([2, 1])?.exp()?.sum_all()?;
    loss.backward()?;
    for e in [message(loss.grad(&x)), message(loss.backward())] {
        assert!(
            e.starts_with("backward: this graph was already differentiated"),
            "{e}"
        );
        assert!(e.contains("retain_graph"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }
    Ok(())
}

#[test]
fn tensors_of_two_traces_do_not_mix() -> Result<()> {
    let (ta, tb) = (TracingBackend::new(), TracingBackend::new());
    let a = ta.placeholder([3], DType::F32)?;
    let b = tb.placeholder([3], DType::F32)?;
    let b_view = b.reshape([3, 1])?.reshape([3])?;
    for e in [
        message(a.add(&b)),
        message(a.mul(&b_view)),
        message(Tensor::cat(&[&a, &b], 0)),
        message(a.gt(0.0)?.where_(&b, 0.0)),
        message(a.matmul(&b)),
        message(ta.program(&[&b])),
    ] {
        assert!(e.contains("another TracingBackend"), "{e}");
    }
    // A clone shares the trace.
    let ta2 = ta.clone();
    let c = ta2.placeholder([3], DType::F32)?;
    let program = ta.program(&[&a.add(&c)?])?;
    let cpu = CpuBackend::new();
    let one = Tensor::from_vec(vec![1.0f32; 3], [3], &cpu)?;
    let out = GraphExecutor::new(&cpu).run(&program, &[one.clone(), one])?;
    assert_eq!(out[0].to_vec::<f32>()?, vec![2.0; 3]);
    Ok(())
}
