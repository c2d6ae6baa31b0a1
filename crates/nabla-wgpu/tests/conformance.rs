//! The conformance suite (`nabla-backend-tests`) on the wgpu backend: `float16` held widened to `float32`,
//! no `float64`, `bfloat16` or complex; `float32` results within `1e-4` relative (`1e-5` absolute) of the
//! references; IEEE-exact results (division, square root) not required to be bit-exact. On a device
//! that flushes float32 subnormals (`WgpuBackend::flushes_subnormals`, NVIDIA's), each element may
//! match NumPy's result on flushed inputs instead.
//!
//! Without an adapter every family is skipped with a message (it fails when `CI=true`). Run one family
//! with `cargo test -p nabla-wgpu --test conformance on_wgpu::reduce -- --nocapture`.

mod common;

use nabla_backend_tests::{Capabilities, conformance_suite};
use nabla_core::DType;
use nabla_wgpu::WgpuBackend;

/// The dtypes and tolerances the wgpu backend declares, and whether the device flushes subnormals.
fn caps() -> Capabilities {
    let caps = Capabilities::new(&[
        DType::F32,
        DType::F16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::Bool,
    ])
    .with_tolerance(DType::F32, 1e-4, 1e-5)
    .inexact_floats();
    match common::gpu().map(|g| g.flushes_subnormals().expect("probing subnormals")) {
        Some(true) => caps.flushing_subnormals(),
        _ => caps,
    }
}

/// The shared device (one per test binary), or `None` when there is no adapter.
fn device() -> Option<WgpuBackend> {
    common::gpu().cloned()
}

conformance_suite!(mod on_wgpu, try_make = device, caps = caps());
