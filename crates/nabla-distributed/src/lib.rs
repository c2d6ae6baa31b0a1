//! Owns data-parallel training: [`Communicator`], [`DataParallel`], the bucketed all-reduce.
//! Must not name a concrete backend, nor need MPI to build: MPI is the opt-in `mpi` feature.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! Data-parallel training for nabla, on MPI.
//!
//! Every rank (process) holds a replica of the model and trains on its own part of each global
//! batch; [`DataParallel`] averages the gradients over the ranks, in buckets all-reduced while the
//! backward pass is still running, so that the replicas stay equal. The collectives go through the
//! [`Communicator`] trait: `MpiCommunicator` (the opt-in feature `mpi`, which needs an MPI
//! library, its headers and libclang at build time) runs them on the MPI library the job was
//! launched with; [`SingleProcess`] is the world of one. `nabla_data::DistributedSampler`-style
//! sharding of the data lives in `nabla-data`.
//!
//! ```no_run
//! use nabla_distributed::{Communicator, from_environment};
//! // `mpirun -np 4 ./train` starts four ranks; run alone, this is a world of one.
//! let comm = from_environment()?;
//! println!("rank {} of {}", comm.rank(), comm.world_size());
//! # Ok::<(), nabla_core::Error>(())
//! ```

mod agree;
mod comm;
mod data_parallel;
#[cfg(feature = "mpi")]
mod mpi_comm;

pub use agree::check_agreement;
pub use comm::{Communicator, HostBuffer, Pending, SingleProcess, all_reduce_f64};
pub use data_parallel::{DEFAULT_BUCKET_BYTES, DataParallel, StepTimings};
#[cfg(feature = "mpi")]
pub use mpi_comm::MpiCommunicator;

use nabla_core::{Error, Result};
use std::sync::Arc;

/// The environment variables by which MPI launchers tell a process its place in a job: OpenMPI's
/// `mpirun`, MPICH's and Intel MPI's Hydra, PMIx-based launchers and Slurm's `srun --mpi`.
const LAUNCHER_VARIABLES: [&str; 4] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"];

/// Whether this process was started by an MPI launcher.
pub fn launched_by_mpi() -> bool {
    LAUNCHER_VARIABLES
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// The communicator of this process: an `MpiCommunicator` (feature `mpi`) when an MPI launcher
/// started it, otherwise [`SingleProcess`] (MPI is not initialized). Call it once per process.
///
/// Built without the `mpi` feature, a process that a launcher started as one of several ranks
/// gets an error saying how to build with MPI, rather than training alone as if it were the whole
/// job (N independent copies writing the same files); a launcher's world of one runs alone.
pub fn from_environment() -> Result<Arc<dyn Communicator>> {
    if !launched_by_mpi() {
        return Ok(Arc::new(SingleProcess));
    }
    mpi_from_environment()
}

#[cfg(feature = "mpi")]
fn mpi_from_environment() -> Result<Arc<dyn Communicator>> {
    match MpiCommunicator::init() {
        Ok(comm) => Ok(Arc::new(comm)),
        Err(e) => Err(match launcher_rank(env_var) {
            Some(rank) => Error::invalid("distributed", format!("MPI rank {rank} failed: {e}")),
            None => e,
        }),
    }
}

#[cfg(not(feature = "mpi"))]
fn mpi_from_environment() -> Result<Arc<dyn Communicator>> {
    match launcher_world_size(env_var) {
        Some(1) => Ok(Arc::new(SingleProcess)),
        size => Err(built_without_mpi(size)),
    }
}

/// The error of a process started by an MPI launcher (as one of `size` ranks, where the launcher
/// says) in a build without the `mpi` feature.
#[cfg(not(feature = "mpi"))]
fn built_without_mpi(size: Option<usize>) -> Error {
    let ranks = size.map_or_else(
        || "one of several ranks".to_string(),
        |n| format!("one of {n} ranks"),
    );
    Error::invalid(
        "distributed",
        format!(
            "an MPI launcher started this process as {ranks}, but this build has no MPI support \
             (the `mpi` feature is off by default): install OpenMPI (Debian: apt-get install \
             openmpi-bin libopenmpi-dev libclang-dev) and rebuild with `--features mpi`, e.g. \
             `cargo install --path crates/nabla-cli --features mpi`, or run without mpirun"
        ),
    )
}

/// The value of the environment variable `name`, if it is set and valid Unicode.
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The number of ranks in the job, as the launcher's environment (read through `var`) gives it.
#[cfg(not(feature = "mpi"))]
fn launcher_world_size(var: impl Fn(&str) -> Option<String>) -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"]
        .iter()
        .find_map(|v| var(v)?.trim().parse().ok())
}

/// This process's rank as the launcher's environment (read through `var`) gives it, before MPI
/// is up.
#[cfg(feature = "mpi")]
fn launcher_rank(var: impl Fn(&str) -> Option<String>) -> Option<usize> {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|v| var(v)?.trim().parse().ok())
}

/// The error that ends a rank's part in a job: `error` with the rank named, so that the job's
/// output says which rank failed.
pub fn rank_error(comm: &dyn Communicator, error: Error) -> Error {
    if comm.world_size() == 1 {
        return error;
    }
    Error::invalid(
        "distributed",
        format!("{} failed: {error}", comm.describe()),
    )
}

#[cfg(all(test, not(feature = "mpi")))]
mod tests {
    use super::*;

    /// An environment holding only `vars`.
    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn world_size_comes_from_the_launcher_variables() {
        assert_eq!(
            launcher_world_size(env(&[("OMPI_COMM_WORLD_SIZE", "4")])),
            Some(4)
        );
        assert_eq!(launcher_world_size(env(&[("PMI_SIZE", " 2 ")])), Some(2));
        assert_eq!(launcher_world_size(env(&[("PMIX_RANK", "0")])), None);
        assert_eq!(
            launcher_world_size(env(&[("OMPI_COMM_WORLD_SIZE", "x")])),
            None
        );
    }

    #[test]
    fn the_error_without_mpi_says_how_to_build_with_it() {
        let e = built_without_mpi(Some(2)).to_string();
        assert!(e.contains("one of 2 ranks"), "{e}");
        assert!(e.contains("--features mpi"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(
            built_without_mpi(None)
                .to_string()
                .contains("one of several ranks")
        );
    }
}
