//! The primitive catalogue, walked from `PrimitiveKind::ALL`: every primitive has a shape rule, a
//! dispatch on every backend (CPU, a memory-tracking wrapper, the tracing backend) and a printed form,
//! and a traced replay of it through the executor gives the eager result bit for bit. A new primitive
//! fails to compile here until `sample` has a case for it.

use nabla_core::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Distribution, Error,
    ExtensionCall, ExtensionOp, FusedBuilder, HostAllocator, HostData, HostView, Layout,
    MemoryTracked, OutputSpec, Pool2dParams, Primitive, PrimitiveKind, ReduceOp, Result, RngKey,
    Scalar, UnaryOp,
};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GraphExecutor, Tensor, TracingBackend};
use std::collections::HashSet;
use std::sync::Arc;

/// Row sums of an f32 or f64 matrix: the extension sample.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RowSum;

impl ExtensionOp for RowSum {
    fn name(&self) -> &str {
        "test.row_sum"
    }
    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        match inputs {
            [(dtype @ (DType::F32 | DType::F64), [m, _])] => Ok(OutputSpec {
                dtype: *dtype,
                shape: vec![*m],
            }),
            _ => Err(Error::invalid(
                "test.row_sum",
                "expects one f32 or f64 matrix",
            )),
        }
    }
    fn host_kernel(&self, inputs: &[HostView<'_>], _alloc: &dyn HostAllocator) -> Result<HostData> {
        let n = inputs[0].shape[1].max(1);
        match inputs[0].data {
            HostData::F32(x) => Ok(HostData::F32(x.chunks(n).map(|r| r.iter().sum()).collect())),
            HostData::F64(x) => Ok(HostData::F64(x.chunks(n).map(|r| r.iter().sum()).collect())),
            _ => Err(Error::invalid("test.row_sum", "f32 or f64 only")),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn f32s(shape: &[usize], scale: f32) -> (HostData, Vec<usize>) {
    floats(shape, scale, DType::F32)
}

/// Deterministic values of `dtype` (f32 or f64) in `[-5, 5] * scale`.
pub(crate) fn floats(shape: &[usize], scale: f32, dtype: DType) -> (HostData, Vec<usize>) {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) * scale)
        .collect();
    let data = match dtype {
        DType::F64 => HostData::F64(v.into_iter().map(f64::from).collect()),
        _ => HostData::F32(v),
    };
    (data, shape.to_vec())
}

fn i64s(values: Vec<i64>, shape: &[usize]) -> (HostData, Vec<usize>) {
    (HostData::I64(values), shape.to_vec())
}

/// A primitive of `kind` with inputs it accepts, its floating-point inputs (and outputs, where the
/// primitive names a dtype) of `float` (f32 or f64). Exhaustive: every kind of the catalogue has a case.
pub(crate) fn sample(
    kind: PrimitiveKind,
    float: DType,
) -> (Primitive, Vec<(HostData, Vec<usize>)>) {
    let f32s = |shape: &[usize], scale: f32| floats(shape, scale, float);
    let x = || f32s(&[2, 3], 0.5);
    let conv = Conv2dParams {
        padding: (1, 1),
        ..Default::default()
    };
    match kind {
        PrimitiveKind::Constant => (Primitive::Constant(HostData::I32(vec![4, 5])), vec![]),
        PrimitiveKind::Full => {
            let value = Scalar::F64(2.5);
            let prim = Primitive::Full {
                value,
                len: 5,
                dtype: float,
            };
            (prim, vec![])
        }
        PrimitiveKind::Random => {
            let prim = Primitive::Random {
                dist: Distribution::Normal {
                    mean: 0.0,
                    std: 1.0,
                },
                key: RngKey { seed: 7, offset: 3 },
                len: 6,
                dtype: float,
            };
            (prim, vec![])
        }
        PrimitiveKind::Copy => (Primitive::Copy, vec![x()]),
        PrimitiveKind::Unary => (Primitive::Unary(UnaryOp::Tanh), vec![x()]),
        PrimitiveKind::Binary => (Primitive::Binary(BinaryOp::Mul), vec![x(), x()]),
        PrimitiveKind::Compare => (
            Primitive::Compare(CompareOp::Lt),
            vec![x(), f32s(&[2, 3], 0.3)],
        ),
        PrimitiveKind::Select => {
            let cond = (
                HostData::Bool(vec![true, false, true, false, false, true]),
                vec![2, 3],
            );
            (Primitive::Select, vec![cond, x(), f32s(&[2, 3], 2.0)])
        }
        PrimitiveKind::Cast => (Primitive::Cast(DType::I64), vec![f32s(&[2, 3], 3.0)]),
        PrimitiveKind::Reduce => {
            let prim = Primitive::Reduce {
                op: ReduceOp::Sum,
                axes: vec![1],
            };
            (prim, vec![x()])
        }
        PrimitiveKind::ArgReduce => {
            let prim = Primitive::ArgReduce {
                op: ArgReduceOp::ArgMax,
                axis: 0,
            };
            (prim, vec![x()])
        }
        PrimitiveKind::Cumsum => (Primitive::Cumsum { axis: 1 }, vec![x()]),
        PrimitiveKind::Matmul => (Primitive::Matmul, vec![x(), f32s(&[3, 4], 0.25)]),
        PrimitiveKind::MatmulRounded => {
            // Rounded products take F32 operands whatever `float` is.
            let f32_only = |shape: &[usize], scale: f32| floats(shape, scale, DType::F32);
            let inputs = vec![f32_only(&[2, 3], 0.5), f32_only(&[3, 4], 0.25)];
            (Primitive::MatmulRounded(nabla_core::Precision::F16), inputs)
        }
        PrimitiveKind::Pad => {
            let prim = Primitive::Pad {
                pads: vec![(1, 0), (0, 2)],
                value: Scalar::F64(-1.0),
            };
            (prim, vec![x()])
        }
        PrimitiveKind::Concat => (
            Primitive::Concat { axis: 0 },
            vec![x(), f32s(&[1, 3], 1.0), x()],
        ),
        PrimitiveKind::Gather => {
            let index = i64s(vec![2, 0, 1, 1], &[2, 2]);
            (Primitive::Gather { axis: 1 }, vec![x(), index])
        }
        PrimitiveKind::IndexSelect => {
            let index = i64s(vec![1, 1, 0], &[3]);
            (Primitive::IndexSelect { axis: 0 }, vec![x(), index])
        }
        PrimitiveKind::ScatterAdd => {
            let index = i64s(vec![2, 0, 2, 1], &[2, 2]);
            (
                Primitive::ScatterAdd { axis: 1 },
                vec![x(), index, f32s(&[2, 2], 1.0)],
            )
        }
        PrimitiveKind::OneHot => {
            let prim = Primitive::OneHot {
                classes: 4,
                dtype: float,
            };
            (prim, vec![i64s(vec![3, 0, 1], &[3])])
        }
        PrimitiveKind::Sort => {
            let prim = Primitive::Sort {
                axis: 1,
                descending: true,
            };
            (prim, vec![x()])
        }
        PrimitiveKind::Topk => {
            let prim = Primitive::Topk {
                axis: 1,
                k: 2,
                largest: false,
            };
            (prim, vec![x()])
        }
        PrimitiveKind::MaxPool2d => {
            let prim = Primitive::MaxPool2d(Pool2dParams::square(2));
            (prim, vec![f32s(&[1, 2, 4, 4], 1.0)])
        }
        PrimitiveKind::Conv2d => {
            let ins = vec![f32s(&[1, 2, 4, 4], 1.0), f32s(&[3, 2, 3, 3], 0.5)];
            (Primitive::Conv2d(conv), ins)
        }
        PrimitiveKind::Conv2dInputGrad => {
            let prim = Primitive::Conv2dInputGrad {
                input_hw: (4, 4),
                params: conv,
            };
            (
                prim,
                vec![f32s(&[1, 3, 4, 4], 1.0), f32s(&[3, 2, 3, 3], 0.5)],
            )
        }
        PrimitiveKind::Conv2dWeightGrad => {
            let prim = Primitive::Conv2dWeightGrad {
                kernel_hw: (3, 3),
                params: conv,
            };
            (
                prim,
                vec![f32s(&[1, 2, 4, 4], 1.0), f32s(&[1, 3, 4, 4], 0.5)],
            )
        }
        PrimitiveKind::Extension => {
            let op: Arc<dyn ExtensionOp> = Arc::new(RowSum);
            (Primitive::Extension(ExtensionCall(op)), vec![x()])
        }
        PrimitiveKind::Fused => {
            let mut k = FusedBuilder::new(float);
            let (a, b) = (k.input(), k.input());
            let ab = k.mul(a, b);
            let out = k.unary(UnaryOp::Exp, ab);
            let prim = Primitive::Fused {
                kernel: k.finish(out).expect("a valid kernel"),
                shape: vec![2, 3],
            };
            (prim, vec![x(), f32s(&[2, 3], 0.1)])
        }
    }
}

/// Runs `prim` on `backend` with `inputs` uploaded; returns the outputs read back.
fn run_on<B: Backend>(
    backend: &B,
    prim: &Primitive,
    inputs: &[(HostData, Vec<usize>)],
) -> Result<Vec<HostData>> {
    let uploaded = inputs
        .iter()
        .map(|(d, s)| Ok((backend.upload(d.clone())?, Layout::contiguous(s.clone()))))
        .collect::<Result<Vec<_>>>()?;
    let args: Vec<_> = uploaded.iter().map(|(s, l)| (s, l)).collect();
    let specs: Vec<_> = inputs
        .iter()
        .map(|(d, s)| (d.dtype(), s.as_slice()))
        .collect();
    let outs = prim.dispatch(backend, &args)?;
    let expected = prim.output_specs(&specs)?;
    assert_eq!(outs.len(), expected.len(), "{prim}: number of outputs");
    outs.iter()
        .zip(&expected)
        .map(|(o, spec)| {
            let data = backend.read(o, &Layout::contiguous(spec.shape.clone()))?;
            assert_eq!(data.dtype(), spec.dtype, "{prim}: dtype");
            assert_eq!(
                data.len(),
                spec.shape.iter().product::<usize>(),
                "{prim}: length"
            );
            Ok(data)
        })
        .collect()
}

/// Runs `prim` on `inputs` (tensors of `backend`, eager or traced), wrapping its outputs as tensors.
pub(crate) fn run_tensors<B: Backend>(
    backend: &B,
    prim: &Primitive,
    inputs: &[Tensor<B>],
) -> Result<Vec<Tensor<B>>> {
    let args: Vec<_> = inputs.iter().map(|t| (t.storage(), t.layout())).collect();
    let specs: Vec<_> = inputs.iter().map(|t| (t.dtype(), t.shape())).collect();
    let expected = prim.output_specs(&specs)?;
    prim.dispatch(backend, &args)?
        .into_iter()
        .zip(&expected)
        .map(|(s, spec)| Tensor::from_storage(s, Layout::contiguous(spec.shape.clone()), backend))
        .collect()
}

/// Records `prim` on placeholders, runs the program on the CPU and returns its outputs.
fn traced_replay(prim: &Primitive, inputs: &[(HostData, Vec<usize>)]) -> Result<Vec<HostData>> {
    let tb = TracingBackend::new();
    let cpu = CpuBackend::new();
    let placeholders = inputs
        .iter()
        .map(|(d, s)| tb.placeholder(s.clone(), d.dtype()))
        .collect::<Result<Vec<_>>>()?;
    let args: Vec<_> = placeholders
        .iter()
        .map(|t| (t.storage(), t.layout()))
        .collect();
    let specs: Vec<_> = inputs
        .iter()
        .map(|(d, s)| (d.dtype(), s.as_slice()))
        .collect();
    let expected = prim.output_specs(&specs)?;
    let outs = prim
        .dispatch(&tb, &args)?
        .into_iter()
        .zip(&expected)
        .map(|(v, spec)| Tensor::from_storage(v, Layout::contiguous(spec.shape.clone()), &tb))
        .collect::<Result<Vec<_>>>()?;
    let program = tb.program(&outs.iter().collect::<Vec<_>>())?;
    let printed = program.to_string();
    assert!(printed.contains(&prim.to_string()), "{printed}");
    let values = inputs
        .iter()
        .map(|(d, s)| Tensor::from_host(d.clone(), s.clone(), &cpu))
        .collect::<Result<Vec<_>>>()?;
    GraphExecutor::new(&cpu)
        .run(&program, &values)?
        .iter()
        .map(Tensor::to_host)
        .collect()
}

#[test]
fn every_primitive_dispatches_traces_and_replays_the_same() -> Result<()> {
    let cpu = CpuBackend::new();
    let tracked = MemoryTracked::new(cpu);
    let mut names = HashSet::new();
    for kind in PrimitiveKind::ALL {
        let (prim, inputs) = sample(kind, DType::F32);
        assert_eq!(prim.kind(), kind);
        assert!(names.insert(kind.name()), "duplicate name {}", kind.name());
        if let Some(n) = prim.arity() {
            assert_eq!(inputs.len(), n, "{prim}: arity");
        }
        let eager = run_on(&cpu, &prim, &inputs)?;
        assert_eq!(
            run_on(&tracked, &prim, &inputs)?,
            eager,
            "{prim}: MemoryTracked"
        );
        assert_eq!(
            traced_replay(&prim, &inputs)?,
            eager,
            "{prim}: traced replay"
        );
    }
    assert_eq!(names.len(), PrimitiveKind::COUNT);
    Ok(())
}

#[test]
fn a_wrong_number_of_inputs_is_an_error_naming_the_primitive() {
    let cpu = CpuBackend::new();
    for kind in PrimitiveKind::ALL {
        let (prim, mut inputs) = sample(kind, DType::F32);
        let Some(n) = prim.arity() else { continue };
        if n == 0 {
            inputs.push(f32s(&[2], 1.0));
        } else {
            inputs.pop();
        }
        let err = run_on(&cpu, &prim, &inputs).expect_err("wrong arity accepted");
        assert!(err.to_string().contains(prim.name()), "{err}");
    }
}
