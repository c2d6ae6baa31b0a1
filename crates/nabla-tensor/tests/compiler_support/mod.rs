//! Shared helpers of the compiler tests: random inputs for a program's placeholders and the check
//! that a compiled program computes what the original does.

use nabla_core::{Backend, DType, Primitive};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GraphExecutor, Program, Tensor, TraceOp};

/// `n` pseudo-random values in [-1, 1) from `seed`.
pub fn data(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Random tensors on `backend` matching the program's placeholders (integers in -100..100).
pub fn inputs<B: Backend>(program: &Program, backend: &B, seed: u64) -> Vec<Tensor<B>> {
    program
        .inputs()
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let info = &program.values()[v];
            let scale = if info.dtype.is_float() { 1.0 } else { 100.0 };
            let xs = data(seed * 31 + i as u64, info.len())
                .iter()
                .map(|x| x * scale)
                .collect();
            Tensor::from_vec::<f64>(xs, info.shape.clone(), backend)
                .and_then(|t| t.cast(info.dtype))
                .unwrap()
        })
        .collect()
}

/// The values of `t` as f64.
pub fn values(t: &Tensor<CpuBackend>) -> Vec<f64> {
    t.cast(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// Runs both programs on two input sets: equal shapes, dtypes and values (bit for bit when `tol` is 0,
/// else within `tol` relative), fresh results on the second set, the executor's peak equal to the
/// compiled program's plan, and no donated buffer that is a program input or output.
pub fn check_equivalent(original: &Program, compiled: &Program, tol: f64) {
    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);
    let mut runs = Vec::new();
    for seed in [1, 2] {
        let xs = inputs(original, &cpu, seed);
        let want = exec.run(original, &xs).unwrap();
        let got = exec.run(compiled, &xs).unwrap();
        let stats = exec.last_run_stats().unwrap();
        assert_eq!(stats.peak_buffer_bytes, compiled.planned_peak_bytes());
        assert_eq!(got.len(), want.len());
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!((g.shape(), g.dtype()), (w.shape(), w.dtype()), "output {k}");
            for (i, (p, q)) in values(g).iter().zip(values(w)).enumerate() {
                let same = if tol == 0.0 {
                    p.to_bits() == q.to_bits()
                } else {
                    (p - q).abs() <= tol * (1.0 + q.abs()) || (p.is_nan() && q.is_nan())
                };
                assert!(same, "output {k} element {i}: {p} vs {q}\n{compiled}");
            }
        }
        runs.push(got.iter().map(values).collect::<Vec<_>>());
    }
    assert_ne!(runs[0], runs[1], "a second run computes fresh results");
    check_donations(compiled);
}

/// Every planned donation names a buffer that is neither a program input nor a program output.
pub fn check_donations(program: &Program) {
    for (i, node) in program.nodes().iter().enumerate() {
        if let Some(k) = program.reused_operand(i) {
            assert!(
                matches!(node.op, TraceOp::Primitive(Primitive::Fused { .. })),
                "node {i}"
            );
            let v = node.inputs[k].value;
            assert!(
                !program.inputs().contains(&v),
                "%{v} is an input\n{program}"
            );
            assert!(
                !program.outputs().iter().any(|o| o.value == v),
                "%{v} is an output\n{program}"
            );
            let reader_after = program.nodes()[i + 1..]
                .iter()
                .any(|n| n.inputs.iter().any(|o| o.value == v));
            assert!(!reader_after, "%{v} is read after node {i}\n{program}");
        }
    }
}
