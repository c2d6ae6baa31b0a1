//! The shared CUDA device of a test binary, or a skip.
#![allow(dead_code)]

use nabla_cuda::CudaBackend;
use std::sync::OnceLock;

/// The shared backend on device 0, or `None` (after a message) when CUDA or a GPU is missing. CI has
/// no GPU, so a missing one skips; `NABLA_REQUIRE_CUDA=1` (set where a GPU is lent) makes it fail.
pub fn gpu() -> Option<&'static CudaBackend> {
    static GPU: OnceLock<Option<CudaBackend>> = OnceLock::new();
    let gpu = GPU.get_or_init(|| match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("SKIPPED: no CUDA device ({e})");
            None
        }
    });
    if gpu.is_none() && std::env::var("NABLA_REQUIRE_CUDA").as_deref() == Ok("1") {
        panic!("NABLA_REQUIRE_CUDA=1 but no CUDA device could be opened");
    }
    gpu.as_ref()
}
