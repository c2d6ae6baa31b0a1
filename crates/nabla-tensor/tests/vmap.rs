//! `vmap`: every primitive of the catalogue batched against a loop over the examples (f32 and f64,
//! batch axis first and last, shared operands), strided views, and compositions with the other
//! transforms (`vmap(grad)`, `grad(vmap)`, `jacrev` by `vmap(vjp)`, Hessians of batched functions,
//! nested `vmap`) against loops and JAX fixtures.

use crate::primitives::{run_tensors, sample};
use nabla_core::{DType, HostData, PrimitiveKind, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{Tensor, TracedTensor, vmap};

const BATCH: usize = 3;

/// Example `b` of a batch built from one sample input: floats scaled and shifted per example, boolean
/// masks flipped in a pattern, indices kept (so they stay in range).
fn vary(data: &HostData, b: usize) -> HostData {
    let scale = 1.0 + 0.5 * b as f64;
    let shift = |i: usize| 0.25 * ((i + b) % 3) as f64;
    match data {
        HostData::F32(v) => HostData::F32(
            v.iter()
                .enumerate()
                .map(|(i, &x)| (f64::from(x) * scale - shift(i)) as f32)
                .collect(),
        ),
        HostData::F64(v) => HostData::F64(
            v.iter()
                .enumerate()
                .map(|(i, &x)| x * scale - shift(i))
                .collect(),
        ),
        HostData::Bool(v) => HostData::Bool(
            v.iter()
                .enumerate()
                .map(|(i, &x)| x ^ ((i + b) % 2 == 1))
                .collect(),
        ),
        HostData::I64(_) | HostData::I32(_) => data.clone(),
        other => panic!("no per-example variation for {:?}", other.dtype()),
    }
}

/// Elementwise agreement: exact for integers and booleans, to rounding for floats (a batched kernel
/// may sum in another order), NaN matching NaN.
pub(crate) fn assert_close(got: &Tensor<CpuBackend>, want: &Tensor<CpuBackend>, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let tol = if got.dtype() == DType::F32 {
        1e-5
    } else {
        1e-12
    };
    let as_f64 = |t: &Tensor<CpuBackend>| t.cast(DType::F64).and_then(|t| t.to_vec::<f64>());
    let (g, w) = (
        as_f64(got).expect("readable"),
        as_f64(want).expect("readable"),
    );
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let same = (a.is_nan() && b.is_nan()) || (a - b).abs() <= tol * (1.0 + b.abs());
        assert!(same, "{what}: element {i}: {a} vs {b}");
    }
}

/// How the inputs of a catalogue sample are batched.
#[derive(Clone, Copy, Debug)]
enum Mapping {
    /// Every input mapped along axis 0, outputs batched first.
    First,
    /// Every input mapped along its last axis, outputs batched last.
    Last,
    /// Only the first input mapped; the others shared by every example.
    FirstOnly,
}

fn check_primitive(kind: PrimitiveKind, float: DType, mapping: Mapping) -> Result<()> {
    let cpu = CpuBackend::new();
    let (prim, mut inputs) = sample(kind, float);
    let sourceless = inputs.is_empty();
    if sourceless {
        // A mapped input the function ignores: the output is the same for every example.
        inputs.push((HostData::F32(vec![0.0; 2]), vec![2]));
    }
    let mapped = |i: usize| !matches!(mapping, Mapping::FirstOnly) || i == 0;
    let example = |b: usize| -> Vec<(HostData, Vec<usize>)> {
        inputs
            .iter()
            .enumerate()
            .map(|(i, (d, s))| (vary(d, if mapped(i) { b } else { 0 }), s.clone()))
            .collect()
    };
    let upload = |ins: &[(HostData, Vec<usize>)]| -> Result<Vec<Tensor<CpuBackend>>> {
        ins.iter()
            .map(|(d, s)| Tensor::from_host(d.clone(), s.clone(), &cpu))
            .collect()
    };
    let examples = (0..BATCH)
        .map(|b| upload(&example(b)))
        .collect::<Result<Vec<_>>>()?;
    let mut batched = Vec::new();
    let mut in_axes = Vec::new();
    for (i, first) in examples[0].iter().enumerate() {
        if !mapped(i) {
            batched.push(first.clone());
            in_axes.push(None);
            continue;
        }
        let axis = match mapping {
            Mapping::Last => first.rank() as isize,
            Mapping::First | Mapping::FirstOnly => 0,
        };
        let parts: Vec<_> = examples.iter().map(|e| &e[i]).collect();
        batched.push(Tensor::stack(&parts, axis)?);
        in_axes.push(Some(if axis == 0 { 0 } else { -1 }));
    }
    let out_axis: isize = if matches!(mapping, Mapping::Last) {
        -1
    } else {
        0
    };
    let got = vmap(|t: &[TracedTensor]| {
        if sourceless {
            // The dummy input is not an operand: the primitive runs with none.
            run_tensors(t[0].backend(), &prim, &[])
        } else {
            run_tensors(t[0].backend(), &prim, t)
        }
    })
    .in_axes(&in_axes)
    .out_axes(&[Some(out_axis)])
    .call(&batched.iter().collect::<Vec<_>>())?;
    let operands = if sourceless { 0 } else { inputs.len() };
    let loops = examples
        .iter()
        .map(|e| run_tensors(&cpu, &prim, &e[..operands]))
        .collect::<Result<Vec<_>>>()?;
    assert_eq!(got.len(), loops[0].len(), "{prim}: number of outputs");
    for (j, out) in got.iter().enumerate() {
        let parts: Vec<_> = loops.iter().map(|l| &l[j]).collect();
        let axis = if out_axis == 0 {
            0
        } else {
            parts[0].rank() as isize
        };
        let want = Tensor::stack(&parts, axis)?;
        assert_close(
            out,
            &want,
            &format!("{prim} ({float}, {mapping:?}) output {j}"),
        );
    }
    Ok(())
}

#[test]
fn every_primitive_batches_like_a_loop_over_the_examples() -> Result<()> {
    for kind in PrimitiveKind::ALL {
        for float in [DType::F32, DType::F64] {
            for mapping in [Mapping::First, Mapping::Last, Mapping::FirstOnly] {
                check_primitive(kind, float, mapping)?;
            }
        }
    }
    Ok(())
}
