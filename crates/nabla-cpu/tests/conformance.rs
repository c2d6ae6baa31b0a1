//! The conformance suite (`nabla-backend-tests`) on the CPU backend, the reference implementation: every
//! dtype, bit-exact IEEE results, no extra tolerance; and on `MemoryTracked<CpuBackend>`, which must give
//! the same results through its accounting wrapper.
//!
//! Run one family with `cargo test -p nabla-cpu --test conformance cpu::reduce -- --nocapture` (it prints
//! the per-op tallies, the time taken and the cases skipped per dtype).

use nabla_backend_tests::{Capabilities, conformance_suite};
use nabla_core::MemoryTracked;
use nabla_cpu::CpuBackend;

conformance_suite!(mod cpu, make = CpuBackend::new, caps = Capabilities::all());

conformance_suite!(
    mod memory_tracked,
    make = || MemoryTracked::new(CpuBackend::new()),
    caps = Capabilities::all()
);

/// The CPU under the capabilities a GPU backend declares (no f64, f16, bf16 or complex; float results
/// within a tolerance; IEEE-exact results not required to be bit-exact): checks that the suite skips, and
/// counts, what such a backend lacks, and still runs everything else.
fn gpu_like() -> Capabilities {
    use nabla_core::DType;
    Capabilities::new(&[DType::F32, DType::I32, DType::I64, DType::U8, DType::Bool])
        .with_tolerance(DType::F32, 1e-4, 1e-5)
        .inexact_floats()
}

conformance_suite!(mod gpu_like_caps, make = CpuBackend::new, caps = gpu_like());
