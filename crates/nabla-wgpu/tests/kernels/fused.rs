//! Fused elementwise kernels rendered to one WGSL shader: results against the CPU's fused kernel for
//! every step kind (inputs, constants, unary, binary, compare, select, cast) over contiguous,
//! transposed and broadcast views and several results; one dispatch per kernel (counted by the
//! profiler); compiled programs fusing on wgpu; and a kernel with more inputs than a shader may bind.

use crate::common::{assert_close, both, random, with_gpu};
use nabla_core::{
    Backend, BinaryOp, CompareOp, DType, FusedKernel, FusedOp, FusedStep, HostData, Layout, Scalar,
    UnaryOp,
};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GraphCompiler, GraphExecutor, Tensor, TracingBackend};
use nabla_wgpu::WgpuBackend;
use std::sync::Mutex;

/// Profiling is per device, and the tests share one. Every test of this file takes its turn, so
/// that fused dispatches counted by one come from it alone (other files dispatch none).
static PROFILING: Mutex<()> = Mutex::new(());

/// `m = (a > b) ? tanh(a * b + 1.5) : -c`, its cast to `i32`, and the comparison: three results
/// over f32 inputs, with a constant, every step kind and a step read twice.
fn mixed_kernel() -> FusedKernel {
    let f = DType::F32;
    let step = FusedStep::new;
    let steps = vec![
        step(FusedOp::Input(0), f),                               // 0: a
        step(FusedOp::Input(1), f),                               // 1: b
        step(FusedOp::Input(2), f),                               // 2: c
        step(FusedOp::Binary(BinaryOp::Mul, 0, 1), f),            // 3: a * b
        step(FusedOp::Constant(Scalar::F64(1.5)), f),             // 4
        step(FusedOp::Binary(BinaryOp::Add, 3, 4), f),            // 5
        step(FusedOp::Unary(UnaryOp::Tanh, 5), f),                // 6
        step(FusedOp::Unary(UnaryOp::Neg, 2), f),                 // 7: -c
        step(FusedOp::Compare(CompareOp::Gt, 0, 1), DType::Bool), // 8: a > b
        step(FusedOp::Select(8, 6, 7), f),                        // 9
        step(FusedOp::Binary(BinaryOp::Mul, 9, 4), f),            // 10: scaled
        step(FusedOp::Cast(DType::I32, 10), DType::I32),          // 11
    ];
    FusedKernel::with_outputs(steps, vec![9, 11, 8]).unwrap()
}

/// The kernel's results on both backends, inputs uploaded from the same host data and viewed through
/// `layouts` (each `shape`-shaped).
fn run_both(
    g: &WgpuBackend,
    c: &CpuBackend,
    kernel: &FusedKernel,
    data: &[HostData],
    layouts: &[Layout],
    shape: &[usize],
) -> (Vec<HostData>, Vec<HostData>) {
    let stored: Vec<_> = data.iter().map(|d| both(g, c, d)).collect();
    let gin = stored
        .iter()
        .zip(layouts)
        .map(|((s, _), l)| (s.clone(), l))
        .collect();
    let cin = stored
        .iter()
        .zip(layouts)
        .map(|((_, s), l)| (s.clone(), l))
        .collect();
    let out = Layout::row_major(shape);
    let got = g.fused_many(kernel, gin, shape, &[]).unwrap();
    let want = c.fused_many(kernel, cin, shape, &[]).unwrap();
    let read_g = got.iter().map(|s| g.read(s, &out).unwrap()).collect();
    let read_c = want.iter().map(|s| c.read(s, &out).unwrap()).collect();
    (read_g, read_c)
}

#[test]
fn fused_kernels_match_the_cpu_in_one_dispatch() {
    with_gpu(|g, c| {
        let kernel = mixed_kernel();
        let shape = [25, 40];
        // a contiguous, b a transposed view of a [40, 25] buffer, c a row broadcast over the rows.
        let layouts = [
            Layout::row_major(&shape),
            Layout::row_major(&[40, 25]).permute(&[1, 0]).unwrap(),
            Layout::row_major(&[40]).broadcast_to(&shape).unwrap(),
        ];
        let data = [
            random(DType::F32, 1000, 1),
            random(DType::F32, 1000, 2),
            random(DType::F32, 40, 3),
        ];
        let _turn = PROFILING.lock().unwrap_or_else(|e| e.into_inner());
        g.set_profiling(true);
        let (got, want) = run_both(g, c, &kernel, &data, &layouts, &shape);
        // Other tests may dispatch single-op kernels meanwhile, but no fused ones (see
        // `PROFILING`); a kernel run step by step would dispatch none.
        let calls: usize = g
            .profile()
            .iter()
            .filter(|r| r.op == "fused")
            .map(|r| r.calls)
            .sum();
        g.set_profiling(false);
        for (k, (got, want)) in got.iter().zip(&want).enumerate() {
            assert_close(&format!("result {k}"), got, want, 1e-5);
        }
        // The whole kernel is one dispatch.
        assert_eq!(calls, 1);
        // Empty outputs dispatch nothing.
        let empty = Layout::row_major(&[0, 3]);
        let (got, _) = run_both(
            g,
            c,
            &kernel,
            &[
                HostData::F32(vec![]),
                HostData::F32(vec![]),
                HostData::F32(vec![]),
            ],
            &[empty.clone(), empty.clone(), empty],
            &[0, 3],
        );
        assert!(got.iter().all(HostData::is_empty));
    });
}

#[test]
fn integer_kernels_match_the_cpu() {
    with_gpu(|g, c| {
        let _turn = PROFILING.lock().unwrap_or_else(|e| e.into_inner());
        for dtype in [DType::I32, DType::I64] {
            let step = FusedStep::new;
            let steps = vec![
                step(FusedOp::Input(0), dtype),
                step(FusedOp::Input(1), dtype),
                step(FusedOp::Binary(BinaryOp::Mul, 0, 1), dtype),
                step(FusedOp::Constant(Scalar::I64(-7)), dtype),
                step(FusedOp::Binary(BinaryOp::Sub, 2, 3), dtype),
                step(FusedOp::Unary(UnaryOp::Abs, 4), dtype),
                step(FusedOp::Binary(BinaryOp::Maximum, 5, 0), dtype),
            ];
            let kernel = FusedKernel::new(steps).unwrap();
            let shape = [3, 70, 5];
            let l = Layout::row_major(&shape);
            let data = [random(dtype, 1050, 4), random(dtype, 1050, 5)];
            let (got, want) = run_both(g, c, &kernel, &data, &[l.clone(), l], &shape);
            assert_eq!(got, want, "{dtype}");
        }
    });
}

#[test]
fn kernels_wider_than_the_binding_limit_run_step_by_step() {
    with_gpu(|g, c| {
        let _turn = PROFILING.lock().unwrap_or_else(|e| e.into_inner());
        // Sum of 40 inputs: more storage buffers than any adapter binds per stage.
        let f = DType::F32;
        let mut steps: Vec<FusedStep> = (0..40)
            .map(|k| FusedStep::new(FusedOp::Input(k), f))
            .collect();
        let mut total = 0;
        for k in 1..40 {
            steps.push(FusedStep::new(FusedOp::Binary(BinaryOp::Add, total, k), f));
            total = steps.len() - 1;
        }
        let kernel = FusedKernel::new(steps).unwrap();
        let l = Layout::row_major(&[300]);
        let data: Vec<HostData> = (0..40).map(|k| random(f, 300, 10 + k)).collect();
        let layouts = vec![l; 40];
        let (got, want) = run_both(g, c, &kernel, &data, &layouts, &[300]);
        assert_close("sum of 40", &got[0], &want[0], 1e-5);
    });
}

#[test]
fn compiled_programs_fuse_on_wgpu() {
    with_gpu(|g, c| {
        let tb = TracingBackend::new();
        let a = tb.placeholder([64, 33], DType::F32).unwrap();
        let b = tb.placeholder([64, 33], DType::F32).unwrap();
        let y = ((&a * &b).unwrap() + 1.0)
            .unwrap()
            .tanh()
            .unwrap()
            .mul(&a)
            .unwrap()
            .exp()
            .unwrap();
        let program = tb.program(&[&y]).unwrap();
        let compiled = GraphCompiler::new().compile(&program).unwrap();
        let host = [
            random(DType::F32, 64 * 33, 7),
            random(DType::F32, 64 * 33, 8),
        ];
        let on = |backend_inputs: Vec<Tensor<WgpuBackend>>, p| {
            GraphExecutor::new(g).run(p, &backend_inputs).unwrap()[0]
                .to_host()
                .unwrap()
        };
        let gpu_inputs = || {
            host.iter()
                .map(|d| Tensor::from_host(d.clone(), [64, 33], g).unwrap())
                .collect::<Vec<_>>()
        };
        // Other tests share the device and may dispatch elementwise kernels meanwhile, but no
        // fused ones (see `PROFILING`).
        let calls = |op: &str| {
            g.profile()
                .iter()
                .filter(|r| r.op == op)
                .map(|r| r.calls)
                .sum()
        };
        let inputs = gpu_inputs();
        let turn = PROFILING.lock().unwrap_or_else(|e| e.into_inner());
        g.set_profiling(true);
        let fused = on(inputs, &compiled);
        let fused_calls: usize = calls("fused");
        g.set_profiling(false);
        let inputs = gpu_inputs();
        g.set_profiling(true);
        let unfused = on(inputs, &program);
        let (fused_in_plain, tanh_calls): (usize, usize) = (calls("fused"), calls("tanh"));
        g.set_profiling(false);
        drop(turn);
        // Compiled: the whole chain is one dispatch. Op by op: one kernel per op (two products, the
        // sum, tanh, exp, and a fill for the constant 1).
        assert_eq!(fused_calls, 1);
        assert_eq!(fused_in_plain, 0);
        assert!(tanh_calls >= 1);
        let cpu_inputs: Vec<_> = host
            .iter()
            .map(|d| Tensor::from_host(d.clone(), [64, 33], c).unwrap())
            .collect();
        let want = GraphExecutor::new(c).run(&compiled, &cpu_inputs).unwrap()[0]
            .to_host()
            .unwrap();
        assert_close("compiled on wgpu", &fused, &want, 1e-5);
        assert_close("uncompiled on wgpu", &unfused, &want, 1e-5);
    });
}
