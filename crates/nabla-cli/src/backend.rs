//! Run-time backend selection: `--backend cpu|wgpu|cuda` opens that device as an [`AnyBackend`], the one
//! backend type the commands are instantiated for. The commands themselves are generic over
//! [`Backend`]; data always loads on the CPU and batches move to the chosen backend in the loader's
//! collate step.

use crate::args::{BackendKind, CommonArgs};
use nabla_any::AnyBackend;
use nabla_core::{Backend, Error, Result};
use nabla_cpu::CpuBackend;
use nabla_data::{Collate, DataLoader, Dataset};
use nabla_tensor::Tensor;

/// A command written once, generic over the backend, that [`dispatch`] runs on the backend named
/// by `--backend` (Rust closures cannot be generic, hence a trait).
pub trait Job {
    /// Runs the command on `backend`.
    fn run<B: Backend>(self, backend: &B) -> Result<()>;
}

/// Sets up the CPU thread pool (data loading uses it on every backend), opens the backend that
/// `common` asks for and runs `job` on it.
pub fn dispatch(common: &CommonArgs, job: impl Job) -> Result<()> {
    let max = nabla_cpu::max_threads();
    match common.threads {
        Some(0) => return Err(Error::invalid("--threads", "needs at least 1 thread")),
        Some(n) if n > max => {
            return Err(Error::invalid(
                "--threads",
                format!("{n} is more than the limit of {max} (eight per core of this machine)"),
            ));
        }
        _ => {}
    }
    // This (the main) thread joins the pool, so each op starts its parallel work without a hand-over.
    nabla_cpu::init_thread_pool(common.threads)?;
    let backend = match common.backend {
        BackendKind::Cpu => AnyBackend::cpu(),
        BackendKind::Wgpu => open_wgpu()?,
        BackendKind::Cuda => AnyBackend::from_name("cuda")
            .map_err(|e| Error::invalid("--backend cuda", e.to_string()))?,
    };
    job.run(&backend)
}

/// Opens the default wgpu adapter.
#[cfg(feature = "wgpu")]
fn open_wgpu() -> Result<AnyBackend> {
    AnyBackend::wgpu().map_err(|e| {
        Error::invalid(
            "--backend wgpu",
            format!(
                "no usable wgpu adapter (install a GPU driver, or Mesa's lavapipe: the Debian packages \
                 mesa-vulkan-drivers and libvulkan1): {e}"
            ),
        )
    })
}

/// The error of a build without the `wgpu` feature.
#[cfg(not(feature = "wgpu"))]
fn open_wgpu() -> Result<AnyBackend> {
    Err(Error::invalid(
        "--backend",
        "backend `wgpu` is not available: this nabla was built without the `wgpu` feature \
         (rebuild with `cargo build -p nabla-cli --features wgpu`)",
    ))
}

/// A loader of `dataset` (examples held on the CPU) whose batches are moved to `backend`.
pub fn loader_on<B: Backend, D: Dataset<Item = Vec<Tensor<CpuBackend>>>>(
    dataset: D,
    batch_size: usize,
    backend: &B,
) -> Result<DataLoader<D, Vec<Tensor<B>>>> {
    let backend = backend.clone();
    Ok(
        DataLoader::new(dataset, batch_size)?.with_collate(move |items| {
            Collate::collate(items)?
                .iter()
                .map(|t: &Tensor<CpuBackend>| t.to_backend(&backend))
                .collect()
        }),
    )
}
