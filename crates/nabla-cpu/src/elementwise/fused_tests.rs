//! The fused kernel against the op-by-op kernels ([`FusedKernel::evaluate_by_ops`] on the CPU backend):
//! results must be bit-identical, for every kind of view and size, with and without donation.

use crate::{CpuBackend, CpuStorage};
use nabla_core::{
    Backend, BinaryOp, CompareOp, DType, Element, FusedKernel, FusedOp, FusedStep, HostData,
    HostSlice, Layout, Scalar, UnaryOp,
};

/// Deterministic values in `[-2, 2)`.
fn random(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
        })
        .collect()
}

fn buffer<T: Element>(n: usize, seed: u64) -> CpuStorage {
    CpuStorage::from_vec(
        random(n, seed)
            .into_iter()
            .map(|v| T::from_scalar(Scalar::F64(v)))
            .collect::<Vec<T>>(),
    )
}

/// Equal element by element, NaN matching NaN.
fn same(a: HostSlice<'_>, b: HostSlice<'_>) -> bool {
    a.dtype() == b.dtype()
        && a.len() == b.len()
        && a.to_f64_vec()
            .iter()
            .zip(b.to_f64_vec())
            .all(|(x, y)| *x == y || (x.is_nan() && y.is_nan()))
}

/// Runs `kernel` fused and op by op on the same inputs and checks the results agree exactly.
fn check(kernel: &FusedKernel, inputs: &[(CpuStorage, Layout)], shape: &[usize]) -> HostData {
    let cpu = CpuBackend::new();
    let refs: Vec<(&CpuStorage, &Layout)> = inputs.iter().map(|(s, l)| (s, l)).collect();
    let want = kernel.evaluate_by_ops(&cpu, &refs, shape).unwrap();
    let owned: Vec<(CpuStorage, &Layout)> = inputs.iter().map(|(s, l)| (s.clone(), l)).collect();
    let got = cpu.fused(kernel, owned, shape, None).unwrap();
    let whole = Layout::contiguous(shape);
    let (got, want) = (
        cpu.read(&got, &whole).unwrap(),
        cpu.read(&want, &whole).unwrap(),
    );
    assert!(
        same(got.as_slice(), want.as_slice()),
        "{kernel}: fused {got:?} != op by op {want:?}"
    );
    got
}

/// `count` contiguous inputs of `n` random `dt` (f32 or f64) values.
fn contiguous_inputs(dt: DType, count: u64, n: usize) -> Vec<(CpuStorage, Layout)> {
    let l = Layout::contiguous([n]);
    (0..count)
        .map(|k| {
            let b = match dt {
                DType::F32 => buffer::<f32>(n, k),
                _ => buffer::<f64>(n, k),
            };
            (b, l.clone())
        })
        .collect()
}

fn step(op: FusedOp, dtype: DType) -> FusedStep {
    FusedStep::new(op, dtype)
}

/// `tanh(in0 * in1 + 1) * in2` in `dt`.
fn chain(dt: DType) -> FusedKernel {
    use FusedOp::*;
    FusedKernel::new(vec![
        step(Input(0), dt),
        step(Input(1), dt),
        step(Binary(BinaryOp::Mul, 0, 1), dt),
        step(Constant(Scalar::F64(1.0)), dt),
        step(Binary(BinaryOp::Add, 2, 3), dt),
        step(Unary(UnaryOp::Tanh, 4), dt),
        step(Input(2), dt),
        step(Binary(BinaryOp::Mul, 5, 6), dt),
    ])
    .unwrap()
}

#[test]
fn chain_matches_op_by_op_at_every_size() {
    for dt in [DType::F32, DType::F64] {
        let kernel = chain(dt);
        assert_eq!(kernel.to_string(), "tanh(in0 * in1 + 1) * in2");
        for n in [0, 1, 7, 513, 1025, 40_000, 1_000_003] {
            check(&kernel, &contiguous_inputs(dt, 3, n), &[n]);
        }
    }
}

#[test]
fn broadcast_transposed_and_strided_views() {
    use FusedOp::*;
    let dt = DType::F32;
    let (r, c) = (37, 300);
    let kernel = chain(dt);
    let full = buffer::<f32>(r * c, 1);
    let t = buffer::<f32>(r * c, 2);
    let row = buffer::<f32>(c, 3);
    let col = buffer::<f32>(r, 4);
    let one = buffer::<f32>(5, 5);
    let shape = [r, c];
    let transposed = Layout::contiguous([c, r]).transpose(0, 1).unwrap();
    let row_b = Layout::contiguous([c])
        .unsqueeze(0)
        .unwrap()
        .broadcast_to(&shape)
        .unwrap();
    let col_b = Layout::contiguous([r])
        .unsqueeze(1)
        .unwrap()
        .broadcast_to(&shape)
        .unwrap();
    let scalar = Layout::from_parts(vec![], vec![], 3)
        .unwrap()
        .broadcast_to(&shape)
        .unwrap();
    let flipped = Layout::contiguous(shape).flip(1).unwrap();
    let sliced = Layout::contiguous([r, 2 * c]).slice(1, 1, c, 2).unwrap();
    let wide = buffer::<f32>(r * 2 * c, 6);
    let views = [
        (full.clone(), Layout::contiguous(shape)),
        (t.clone(), transposed),
        (row, row_b),
        (col, col_b),
        (one.clone(), scalar.clone()),
        (full.clone(), flipped),
        (wide, sliced),
    ];
    for a in &views {
        for b in &views {
            let ins = [a.clone(), b.clone(), views[1].clone()];
            check(&kernel, &ins, &shape);
        }
    }
    // Only broadcast scalars and constants: the whole expression is folded before the loop.
    let ins = [
        (one.clone(), scalar.clone()),
        (one.clone(), scalar.clone()),
        (one, scalar),
    ];
    check(&kernel, &ins, &shape);
    // Comparisons, select and casts, with bool intermediates and a bool result.
    let k = FusedKernel::new(vec![
        step(Input(0), dt),
        step(Input(1), dt),
        step(Compare(CompareOp::Gt, 0, 1), DType::Bool),
        step(Unary(UnaryOp::Exp, 0), dt),
        step(Select(2, 3, 1), dt),
        step(Cast(DType::Bool, 4), DType::Bool),
        step(Unary(UnaryOp::Not, 5), DType::Bool),
        step(Unary(UnaryOp::IsNan, 4), DType::Bool),
        step(Binary(BinaryOp::Or, 6, 7), DType::Bool),
        step(Compare(CompareOp::Ne, 8, 2), DType::Bool),
    ])
    .unwrap();
    check(&k, &[views[0].clone(), views[2].clone()], &shape);
    let mut with_float = k.steps().to_vec();
    with_float.push(step(Cast(dt, 9), dt));
    with_float.push(step(Unary(UnaryOp::Sqrt, 10), dt));
    let k = FusedKernel::new(with_float).unwrap();
    check(&k, &[views[3].clone(), views[1].clone()], &shape);
}

#[test]
fn large_transposes_are_copied_first() {
    let (r, c) = (1500, 1501);
    let shape = [r, c];
    let t = Layout::contiguous([c, r]).transpose(0, 1).unwrap();
    let l = Layout::contiguous(shape);
    let ins = [
        (buffer::<f32>(r * c, 1), t.clone()),
        (buffer::<f32>(r * c, 2), l),
        (buffer::<f32>(r * c, 3), t),
    ];
    check(&chain(DType::F32), &ins, &shape);
}

#[test]
fn every_unary_and_binary_op() {
    use FusedOp::*;
    let n = 3000;
    for dt in [DType::F32, DType::F64] {
        let ins = |k: u64| match dt {
            DType::F32 => (buffer::<f32>(n, k), Layout::contiguous([n])),
            _ => (buffer::<f64>(n, k), Layout::contiguous([n])),
        };
        for op in UnaryOp::ALL {
            let Some(out) = op.output_dtype(dt) else {
                continue;
            };
            let k = FusedKernel::new(vec![step(Input(0), dt), step(Unary(op, 0), out)]).unwrap();
            check(&k, &[ins(1)], &[n]);
        }
        for op in BinaryOp::ALL.into_iter().filter(|op| op.supports(dt)) {
            let k = FusedKernel::new(vec![
                step(Input(0), dt),
                step(Input(1), dt),
                step(Binary(op, 0, 1), dt),
                step(Constant(Scalar::F64(0.5)), dt),
                step(Binary(op, 2, 3), dt),
                step(Binary(op, 3, 4), dt),
            ])
            .unwrap();
            check(&k, &[ins(2), ins(3)], &[n]);
        }
    }
}

#[test]
fn other_dtypes_take_the_step_by_step_path() {
    use FusedOp::*;
    let n = 1000;
    let k = FusedKernel::new(vec![
        step(Input(0), DType::I64),
        step(Constant(Scalar::I64(3)), DType::I64),
        step(Binary(BinaryOp::Mul, 0, 1), DType::I64),
        step(Cast(DType::F32, 2), DType::F32),
        step(Input(1), DType::F64),
        step(Cast(DType::F32, 4), DType::F32),
        step(Binary(BinaryOp::Add, 3, 5), DType::F32),
    ])
    .unwrap();
    let ins = [
        (buffer::<i64>(n, 1), Layout::contiguous([n])),
        (buffer::<f64>(n, 2), Layout::contiguous([n])),
    ];
    let out = check(&k, &ins, &[n]);
    assert_eq!(out.dtype(), DType::F32);
    assert!(!CpuBackend.fused_reuses_donation(&k));
}

#[test]
fn donation_writes_in_place_only_when_unique() {
    let cpu = CpuBackend::new();
    let kernel = chain(DType::F64);
    for n in [1, 1000, 100_001] {
        let l = Layout::contiguous([n]);
        let ins: Vec<(CpuStorage, Layout)> =
            (0..3).map(|k| (buffer::<f64>(n, k), l.clone())).collect();
        let want = check(&kernel, &ins, &[n]);
        for donor in 0..3 {
            // A unique handle is overwritten: the result is the donated allocation. An extra handle to
            // input 0 keeps it from being donated.
            let owned: Vec<(CpuStorage, &Layout)> = ins
                .iter()
                .map(|(s, l)| (CpuStorage::new(s.host().to_owned()), l))
                .collect();
            let ptr = owned[donor].0.typed::<f64>("test").unwrap().as_ptr();
            let extra = (donor == 0).then(|| owned[0].0.clone());
            let got = cpu.fused(&kernel, owned, &[n], Some(donor)).unwrap();
            let reused = got.typed::<f64>("test").unwrap().as_ptr() == ptr;
            assert_eq!(reused, extra.is_none(), "donor {donor}, n={n}");
            assert!(same(got.host(), want.as_slice()), "donor {donor}, n={n}");
            if let Some(e) = extra {
                assert!(same(e.host(), ins[0].0.host()));
            }
        }
        // A shared handle is never written: the caller's copy keeps its values.
        let keep = ins[1].0.clone();
        let owned: Vec<(CpuStorage, &Layout)> = ins.iter().map(|(s, l)| (s.clone(), l)).collect();
        let got = cpu.fused(&kernel, owned, &[n], Some(1)).unwrap();
        assert!(same(got.host(), want.as_slice()));
        assert!(same(keep.host(), ins[1].0.host()));
        assert_ne!(got, keep);
    }
    // A donated buffer of another dtype, or read through a view, is left alone.
    let k = FusedKernel::new(vec![
        FusedStep::new(FusedOp::Input(0), DType::F32),
        FusedStep::new(FusedOp::Unary(UnaryOp::IsNan, 0), DType::Bool),
    ])
    .unwrap();
    let l = Layout::contiguous([10]);
    let got = cpu
        .fused(&k, vec![(buffer::<f32>(10, 1), &l)], &[10], Some(0))
        .unwrap();
    assert_eq!(got.host(), HostSlice::Bool(&[false; 10]));
    let y = buffer::<f32>(20, 2);
    let half = Layout::contiguous([20]).slice(0, 0, 10, 2).unwrap();
    let ins = [
        (y.clone(), half),
        (buffer::<f32>(10, 3), l.clone()),
        (buffer::<f32>(10, 4), l),
    ];
    let want = check(&chain(DType::F32), &ins, &[10]);
    let owned: Vec<(CpuStorage, &Layout)> = ins.iter().map(|(s, l)| (s.clone(), l)).collect();
    let got = cpu
        .fused(&chain(DType::F32), owned, &[10], Some(0))
        .unwrap();
    assert!(same(got.host(), want.as_slice()));
}

#[test]
fn bad_calls_are_errors() {
    let cpu = CpuBackend::new();
    let kernel = chain(DType::F32);
    let l = Layout::contiguous([4]);
    let x = buffer::<f32>(4, 1);
    assert!(
        cpu.fused(&kernel, vec![(x.clone(), &l)], &[4], None)
            .is_err()
    );
    let d = buffer::<f64>(4, 1);
    let ins = vec![(x.clone(), &l), (x.clone(), &l), (d, &l)];
    assert!(cpu.fused(&kernel, ins, &[4], None).is_err());
    let l5 = Layout::contiguous([5]);
    let ins = vec![(x.clone(), &l), (x.clone(), &l5), (x.clone(), &l)];
    assert!(cpu.fused(&kernel, ins, &[4], None).is_err());
    // A view reaching outside its buffer.
    let ins = vec![(x.clone(), &l5), (x.clone(), &l5), (x, &l5)];
    assert!(cpu.fused(&kernel, ins, &[5], None).is_err());
}

/// Runs a kernel with several results fused (donating as `donate` says, from fresh unique copies of
/// the inputs) and op by op; checks every result agrees exactly and returns which results reused their
/// donated buffer.
fn check_many(
    kernel: &FusedKernel,
    inputs: &[(CpuStorage, Layout)],
    shape: &[usize],
    donate: &[Option<usize>],
) -> Vec<bool> {
    let cpu = CpuBackend::new();
    let refs: Vec<(&CpuStorage, &Layout)> = inputs.iter().map(|(s, l)| (s, l)).collect();
    let want = kernel.evaluate_outputs_by_ops(&cpu, &refs, shape).unwrap();
    let owned: Vec<(CpuStorage, &Layout)> = inputs
        .iter()
        .map(|(s, l)| (CpuStorage::new(s.host().to_owned()), l))
        .collect();
    let addr = |s: &CpuStorage| match s.host() {
        HostSlice::F32(v) => v.as_ptr() as usize,
        HostSlice::F64(v) => v.as_ptr() as usize,
        HostSlice::Bool(v) => v.as_ptr() as usize,
        _ => 0,
    };
    let donated: Vec<Option<usize>> = donate
        .iter()
        .map(|d| d.map(|k| addr(&owned[k].0)))
        .collect();
    let got = cpu.fused_many(kernel, owned, shape, donate).unwrap();
    assert_eq!(got.len(), kernel.outputs().len());
    let whole = Layout::contiguous(shape);
    for (j, (g, w)) in got.iter().zip(&want).enumerate() {
        let (g, w) = (cpu.read(g, &whole).unwrap(), cpu.read(w, &whole).unwrap());
        assert!(
            same(g.as_slice(), w.as_slice()),
            "{kernel}: result {j}: fused {g:?} != {w:?}"
        );
    }
    got.iter()
        .enumerate()
        .map(|(j, g)| donated.get(j).copied().flatten() == Some(addr(g)))
        .collect()
}

/// An Adam-like update of `in0` (parameter) from `in1` (gradient) and moments `in2`, `in3`: results
/// `(m, v, p, isnan(p))`, where `m` and `v` are also read by `p`.
fn adam_like(dt: DType) -> FusedKernel {
    use FusedOp::*;
    let c = |v: f64| step(Constant(Scalar::F64(v)), dt);
    FusedKernel::with_outputs(
        vec![
            step(Input(0), dt),                           // 0 p
            step(Input(1), dt),                           // 1 g
            step(Input(2), dt),                           // 2 m
            step(Binary(BinaryOp::Sub, 1, 2), dt),        // 3 g - m
            c(0.1),                                       // 4
            step(Binary(BinaryOp::Mul, 3, 4), dt),        // 5
            step(Binary(BinaryOp::Add, 2, 5), dt),        // 6 m'
            step(Input(3), dt),                           // 7 v
            c(0.999),                                     // 8
            step(Binary(BinaryOp::Mul, 7, 8), dt),        // 9
            step(Binary(BinaryOp::Mul, 1, 1), dt),        // 10 g^2
            c(0.001),                                     // 11
            step(Binary(BinaryOp::Mul, 10, 11), dt),      // 12
            step(Binary(BinaryOp::Add, 9, 12), dt),       // 13 v'
            step(Unary(UnaryOp::Abs, 13), dt),            // 14
            step(Unary(UnaryOp::Sqrt, 14), dt),           // 15
            c(1e-8),                                      // 16
            step(Binary(BinaryOp::Add, 15, 16), dt),      // 17
            step(Binary(BinaryOp::Div, 6, 17), dt),       // 18
            c(1e-3),                                      // 19
            step(Binary(BinaryOp::Mul, 18, 19), dt),      // 20
            step(Binary(BinaryOp::Sub, 0, 20), dt),       // 21 p'
            step(Unary(UnaryOp::IsNan, 21), DType::Bool), // 22
        ],
        vec![6, 13, 21, 22],
    )
    .unwrap()
}

#[test]
fn several_results_match_op_by_op_with_and_without_donation() {
    for dt in [DType::F32, DType::F64] {
        let kernel = adam_like(dt);
        assert_eq!(kernel.output_dtypes(), [dt, dt, dt, DType::Bool]);
        for n in [1, 1000, 100_001] {
            let ins = contiguous_inputs(dt, 4, n);
            assert_eq!(check_many(&kernel, &ins, &[n], &[]), [false; 4]);
            // The moments are updated in place, the parameter too.
            let reused = check_many(&kernel, &ins, &[n], &[Some(2), Some(3), Some(0), None]);
            assert_eq!(reused, [true, true, true, false], "{dt} n={n}");
            // The gradient's buffer (read by every result) may take the parameter's place as well.
            let reused = check_many(&kernel, &ins, &[n], &[None, None, Some(1), None]);
            assert_eq!(reused, [false, false, true, false], "{dt} n={n}");
        }
    }
}

#[test]
fn a_result_computed_before_its_donor_is_read_waits_for_it() {
    use FusedOp::*;
    let f = DType::F32;
    // (2 * in0, 2 * in0 + in1), with in1's buffer donated to the first result, whose step comes before
    // in1 is read: the first result must stay in a slot until the block's end.
    let kernel = FusedKernel::with_outputs(
        vec![
            step(Input(0), f),
            step(Constant(Scalar::F64(2.0)), f),
            step(Binary(BinaryOp::Mul, 0, 1), f),
            step(Input(1), f),
            step(Binary(BinaryOp::Add, 2, 3), f),
        ],
        vec![2, 4],
    )
    .unwrap();
    assert_eq!(kernel.to_string(), "t2 = in0 * 2; (t2, t2 + in1)");
    for n in [7, 70_000] {
        let l = Layout::contiguous([n]);
        let ins = [(buffer::<f32>(n, 1), l.clone()), (buffer::<f32>(n, 2), l)];
        assert_eq!(
            check_many(&kernel, &ins, &[n], &[Some(1), None]),
            [true, false]
        );
        assert_eq!(
            check_many(&kernel, &ins, &[n], &[Some(0), Some(1)]),
            [true, true]
        );
    }
    // Results that are an input or a constant are copied out.
    let kernel = FusedKernel::with_outputs(
        vec![
            step(Input(0), f),
            step(Constant(Scalar::F64(3.0)), f),
            step(Unary(UnaryOp::Neg, 0), f),
        ],
        vec![1, 0, 2],
    )
    .unwrap();
    let l = Layout::contiguous([2, 50_000]).transpose(0, 1).unwrap();
    let ins = [(buffer::<f32>(100_000, 3), l)];
    assert_eq!(check_many(&kernel, &ins, &[50_000, 2], &[]), [false; 3]);
}

#[test]
fn bad_donations_and_single_result_calls_are_errors() {
    let cpu = CpuBackend::new();
    let kernel = adam_like(DType::F32);
    let l = Layout::contiguous([4]);
    let ins = || {
        (0..4)
            .map(|k| (buffer::<f32>(4, k), &l))
            .collect::<Vec<_>>()
    };
    assert!(cpu.fused_many(&kernel, ins(), &[4], &[Some(0)]).is_err());
    assert!(
        cpu.fused_many(&kernel, ins(), &[4], &[Some(0), Some(0), None, None])
            .is_err()
    );
    assert!(
        cpu.fused_many(&kernel, ins(), &[4], &[Some(4), None, None, None])
            .is_err()
    );
    let err = cpu.fused(&kernel, ins(), &[4], None).unwrap_err();
    assert!(err.to_string().contains("fused_many"), "{err}");
    let refs: Vec<(&CpuStorage, &Layout)> = Vec::new();
    assert!(kernel.evaluate_by_ops(&cpu, &refs, &[4]).is_err());
}

/// An Adam update with every option (L2 decay aside) and its kernel in `dt`: inputs `(p, g, m, v,
/// max)`, results `(m, v, max, p)`.
fn adam_kernel(dt: DType) -> FusedKernel {
    use nabla_core::fast_path::{AdamCoefficients, AdamUpdate};
    let coefficients = AdamCoefficients {
        l2_decay: None,
        one_minus_beta1: 0.1,
        beta2: 0.999,
        one_minus_beta2: 0.001,
        param_decay: Some(0.99),
        bias_correction2_sqrt: 0.002f64.sqrt(),
        eps: 1e-8,
        step_size: 0.05,
    };
    AdamUpdate {
        coefficients,
        amsgrad: true,
    }
    .kernel(dt)
    .unwrap()
}

#[test]
fn host_loops_run_in_place_and_match_op_by_op() {
    let runs = crate::host_loop_runs;
    for dt in [DType::F32, DType::F64] {
        let kernel = adam_kernel(dt);
        let donate = [Some(2), Some(3), Some(4), Some(0)];
        for n in [1, 1000, 100_001] {
            // Second moments may be negative here, so some updates are NaN: they must match.
            let ins = contiguous_inputs(dt, 5, n);
            let before = runs();
            assert_eq!(check_many(&kernel, &ins, &[n], &[]), vec![false; 4]);
            let reused = check_many(&kernel, &ins, &[n], &donate);
            assert_eq!(reused, vec![true; 4], "{dt} n={n}");
            assert_eq!(runs(), before + 2, "{dt} n={n}");
        }
        // A broadcast read is not contiguous: the blocked evaluation runs it, with the same results.
        let mut ins = contiguous_inputs(dt, 5, 64);
        ins[1].1 = Layout::contiguous([1]).broadcast_to(&[64]).unwrap();
        let before = runs();
        check_many(&kernel, &ins, &[64], &donate);
        assert_eq!(runs(), before);
        // An input donated to a result that does not update it also takes the blocked path.
        let ins = contiguous_inputs(dt, 5, 64);
        check_many(&kernel, &ins, &[64], &[Some(3), Some(2), Some(4), Some(0)]);
        assert_eq!(runs(), before);
    }
    // A loop whose updates do not fit the kernel is refused.
    let adam = *adam_kernel(DType::F32).host_loop().unwrap();
    let kernel = FusedKernel::new(vec![step(FusedOp::Input(0), DType::F32)]).unwrap();
    assert!(kernel.with_host_loop(adam).is_err());
}
