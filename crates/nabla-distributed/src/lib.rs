//! Data-parallel training for nabla, on MPI.
//!
//! Every rank (process) holds a replica of the model and trains on its own part of each global
//! batch; [`DataParallel`] averages the gradients over the ranks, in buckets all-reduced while
//! the backward pass is still running, so that the replicas stay equal. The collectives go
//! through the [`Communicator`] trait: [`MpiCommunicator`] (feature `mpi`, on by default) runs
//! them on the MPI library the job was launched with, [`SingleProcess`] is the world of one.
//! [`nabla_data::DistributedSampler`]-style sharding of the data lives in `nabla-data`.
//!
//! ```no_run
//! use nabla_distributed::{Communicator, from_environment};
//! // `mpirun -np 4 ./train` starts four ranks; run alone, this is a world of one.
//! let comm = from_environment()?;
//! println!("rank {} of {}", comm.rank(), comm.world_size());
//! # Ok::<(), nabla_core::Error>(())
//! ```

mod comm;
mod data_parallel;
#[cfg(feature = "mpi")]
mod mpi_comm;

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

/// The communicator of this process: an [`MpiCommunicator`] when an MPI launcher started it,
/// otherwise [`SingleProcess`] (MPI is not initialized). Call it once per process.
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
        Err(e) => Err(match launcher_rank() {
            Some(rank) => Error::invalid("distributed", format!("MPI rank {rank} failed: {e}")),
            None => e,
        }),
    }
}

/// This process's rank as the launcher's environment gives it (before MPI is up).
#[cfg(feature = "mpi")]
fn launcher_rank() -> Option<usize> {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

#[cfg(not(feature = "mpi"))]
fn mpi_from_environment() -> Result<Arc<dyn Communicator>> {
    Err(Error::invalid(
        "distributed",
        "this process was started by an MPI launcher, but nabla was built without the `mpi` \
         feature of nabla-distributed",
    ))
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
