//! Every kernel the backend renders compiles with NVRTC: each elementwise op on each dtype it supports,
//! every cast, every reduction, the scans, gathers, scatter-adds, sorts, patch extraction and integer
//! products. Needs only NVRTC (no driver, no GPU), so it runs on a machine with the library and
//! without a device; without NVRTC it skips, saying so (`NABLA_REQUIRE_CUDA=1` makes that a failure).

use crate::elementwise::render;
use crate::kernel::{Views, preamble};
use nabla_core::{
    BinaryOp, CompareOp, DType, FusedKernel, FusedOp, FusedStep, Layout, ReduceOp, UnaryOp,
};

fn nvrtc_present() -> bool {
    // SAFETY: only probes whether the library can be opened.
    let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    if !present {
        assert!(
            std::env::var("NABLA_REQUIRE_CUDA").as_deref() != Ok("1"),
            "NABLA_REQUIRE_CUDA=1 but NVRTC could not be loaded"
        );
        eprintln!("SKIPPED: NVRTC (libnvrtc.so.13) is not on the library path");
    }
    present
}

/// Compiles each source, collecting the failures.
fn compile_all(sources: Vec<(String, String)>) {
    let mut failures = Vec::new();
    let count = sources.len();
    for (what, src) in sources {
        let full = format!("{}{src}", preamble());
        let opts = cudarc::nvrtc::CompileOptions {
            arch: Some("sm_90"),
            options: vec!["--std=c++17".into()],
            ..Default::default()
        };
        if let Err(e) = cudarc::nvrtc::compile_ptx_with_opts(&full, opts) {
            let log = match e {
                cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                    log.to_string_lossy().into_owned()
                }
                other => format!("{other:?}"),
            };
            failures.push(format!("{what}:\n{log}\n--- source ---\n{src}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} kernels failed to compile:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    eprintln!("{count} kernels compiled");
}

/// Every dtype the backend holds (all but the complex ones).
fn real() -> Vec<DType> {
    DType::ALL.into_iter().filter(|d| !d.is_complex()).collect()
}

/// A kernel of one op over `n` inputs of `dtype` and its views (dense and strided).
fn op_source(steps: Vec<FusedStep>, strided: bool) -> String {
    let kernel = FusedKernel::new(steps).unwrap();
    let shape = [3usize, 4];
    let dense = Layout::row_major(&shape);
    let transposed = Layout::row_major(&[4, 3]).transpose(0, 1).unwrap();
    let view = if strided { &transposed } else { &dense };
    let layouts: Vec<&Layout> = (0..kernel.num_inputs() + 1).map(|_| view).collect();
    render(&kernel, &Views::new("test", &layouts).unwrap()).unwrap()
}

#[test]
fn every_elementwise_kernel_compiles() {
    if !nvrtc_present() {
        return;
    }
    let mut sources = Vec::new();
    for dtype in real() {
        let input = FusedStep::new(FusedOp::Input(0), dtype);
        for op in UnaryOp::ALL {
            if let Some(out) = op.output_dtype(dtype) {
                let steps = vec![input, FusedStep::new(FusedOp::Unary(op, 0), out)];
                sources.push((format!("{op:?} {dtype}"), op_source(steps, true)));
            }
        }
        let two = [input, FusedStep::new(FusedOp::Input(1), dtype)];
        for op in BinaryOp::ALL {
            if op.supports(dtype) {
                let mut steps = two.to_vec();
                steps.push(FusedStep::new(FusedOp::Binary(op, 0, 1), dtype));
                sources.push((format!("{op:?} {dtype}"), op_source(steps, false)));
            }
        }
        for op in CompareOp::ALL {
            if op.supports(dtype) {
                let mut steps = two.to_vec();
                steps.push(FusedStep::new(FusedOp::Compare(op, 0, 1), DType::Bool));
                sources.push((format!("{op:?} {dtype}"), op_source(steps, false)));
            }
        }
        for to in real() {
            let steps = vec![input, FusedStep::new(FusedOp::Cast(to, 0), to)];
            sources.push((format!("cast {dtype} -> {to}"), op_source(steps, true)));
        }
        let constant = FusedStep::new(FusedOp::Constant(nabla_core::Scalar::F64(-1.5)), dtype);
        sources.push((format!("full {dtype}"), op_source(vec![constant], false)));
    }
    compile_all(sources);
}

#[test]
fn every_other_kernel_compiles() {
    if !nvrtc_present() {
        return;
    }
    let mut sources = Vec::new();
    let l = Layout::row_major(&[3, 4]);
    let strided = Layout::row_major(&[4, 3]).transpose(0, 1).unwrap();
    let views2 = Views::new("test", &[&l, &strided]).unwrap();
    let views3 = Views::new("test", &[&l, &strided, &l]).unwrap();
    // Kept and reduced index spaces of rank 0, 1 (dense and strided) and 2.
    let one = |layout: &Layout| Views::new("test", &[layout]).unwrap();
    let every_other = Layout::from_parts(vec![5], vec![2], 0).unwrap();
    let spaces = [
        (one(&Layout::row_major(&[])), one(&every_other)),
        (one(&Layout::row_major(&[5])), one(&Layout::row_major(&[7]))),
        (one(&strided), one(&strided)),
    ];
    for dtype in real() {
        for op in ReduceOp::ALL {
            if op.supports(dtype) {
                for group in [1, 8, 32, 256] {
                    for (k, (kept, reduced)) in spaces.iter().enumerate() {
                        sources.push((
                            format!("{op:?} {dtype} group {group} spaces {k}"),
                            crate::reduce::render_reduce(op, dtype, group, (kept, reduced)),
                        ));
                    }
                }
            }
        }
        if !dtype.is_bool() && !dtype.is_half() {
            sources.push((
                format!("cumsum {dtype}"),
                crate::reduce::render_cumsum(dtype, &views2),
            ));
        }
        let t = crate::source::storage_ty(dtype);
        sources.push((
            format!("gather {dtype}"),
            crate::movement::render_gather(t, &views2),
        ));
        if let Ok(src) = crate::movement::render_scatter_add(dtype, &views3) {
            sources.push((format!("scatter_add {dtype}"), src));
        }
        for descending in [false, true] {
            if let Ok(src) = crate::sort::render_sort(dtype, descending, &views2) {
                sources.push((format!("sort {dtype} {descending}"), src));
            }
        }
        if dtype.is_int() {
            sources.push((
                format!("gemm {dtype}"),
                crate::matmul::render_gemm_int(dtype),
            ));
        }
        if !dtype.is_bool() {
            sources.push((
                format!("im2col {dtype}"),
                crate::conv::render_im2col(dtype, dtype).unwrap(),
            ));
        }
    }
    for half in [DType::BF16, DType::F16] {
        sources.push((
            format!("im2col f32 -> {half}"),
            crate::conv::render_im2col(DType::F32, half).unwrap(),
        ));
    }
    compile_all(sources);
}
