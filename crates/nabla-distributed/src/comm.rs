//! The [`Communicator`] trait that data-parallel training runs on, the host buffers it moves, the
//! handle of a collective in flight, and the one-process communicator.

use nabla_core::{Error, Result};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Host memory that a collective reads and writes: one of the element types the reduction runs in.
/// Gradients of half-precision parameters are reduced in `F32`; `U64` carries integers such as a
/// bucket order.
#[derive(Clone, Debug, PartialEq)]
pub enum HostBuffer {
    /// 32-bit floats.
    F32(Vec<f32>),
    /// 64-bit floats.
    F64(Vec<f64>),
    /// 64-bit unsigned integers.
    U64(Vec<u64>),
}

impl HostBuffer {
    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            HostBuffer::F32(v) => v.len(),
            HostBuffer::F64(v) => v.len(),
            HostBuffer::U64(v) => v.len(),
        }
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The size in bytes.
    pub fn bytes(&self) -> usize {
        match self {
            HostBuffer::F32(v) => 4 * v.len(),
            HostBuffer::F64(v) => 8 * v.len(),
            HostBuffer::U64(v) => 8 * v.len(),
        }
    }

    /// The name of the element type, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            HostBuffer::F32(_) => "f32",
            HostBuffer::F64(_) => "f64",
            HostBuffer::U64(_) => "u64",
        }
    }
}

/// A collective in flight: [`Pending::wait`] blocks until its result arrives, or fails after the
/// communicator's timeout (a rank that died or stopped answering must end the job, never hang it).
#[derive(Debug)]
pub struct Pending {
    state: PendingState,
    op: &'static str,
    timeout: Duration,
}

#[derive(Debug)]
enum PendingState {
    Ready(Result<HostBuffer>),
    Waiting(Receiver<Result<HostBuffer>>),
}

impl Pending {
    /// A collective that has already completed with `result`.
    pub fn ready(op: &'static str, result: Result<HostBuffer>) -> Pending {
        Pending {
            state: PendingState::Ready(result),
            op,
            timeout: Duration::MAX,
        }
    }

    /// A collective whose result the communicator's worker will send on `receiver`, given up after
    /// `timeout`.
    pub fn from_channel(
        op: &'static str,
        receiver: Receiver<Result<HostBuffer>>,
        timeout: Duration,
    ) -> Pending {
        Pending {
            state: PendingState::Waiting(receiver),
            op,
            timeout,
        }
    }

    /// The result: the reduced (or broadcast) buffer.
    pub fn wait(self) -> Result<HostBuffer> {
        match self.state {
            PendingState::Ready(result) => result,
            PendingState::Waiting(rx) => {
                let start = Instant::now();
                match rx.recv_timeout(self.timeout) {
                    Ok(result) => result,
                    Err(RecvTimeoutError::Timeout) => Err(Error::invalid(
                        self.op,
                        format!(
                            "no result after {:.0} s: another rank has died or stopped answering \
                             (NABLA_DIST_TIMEOUT sets the limit in seconds)",
                            start.elapsed().as_secs_f64()
                        ),
                    )),
                    Err(RecvTimeoutError::Disconnected) => Err(Error::invalid(
                        self.op,
                        "the communicator's worker thread has stopped",
                    )),
                }
            }
        }
    }
}

/// The collectives data-parallel training needs, over a fixed group of processes (ranks). Every rank
/// must call the same collectives in the same order with buffers of the same kind and length.
///
/// `MpiCommunicator` (feature `mpi`) implements it on MPI; [`SingleProcess`] is the
/// one-rank group. A NCCL communicator for CUDA devices would implement the same trait.
///
/// ```
/// use nabla_distributed::{Communicator, HostBuffer, SingleProcess};
/// let comm = SingleProcess;
/// let sum = comm.all_reduce_sum(HostBuffer::F32(vec![1.0, 2.0]))?.wait()?;
/// assert_eq!(sum, HostBuffer::F32(vec![1.0, 2.0]));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub trait Communicator: Send + Sync {
    /// This process's rank, `0..world_size()`.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn world_size(&self) -> usize;

    /// This process's rank among the ranks on the same machine.
    fn local_rank(&self) -> usize;

    /// The name of the implementation and the machine, for messages (`"mpi on host-a"`).
    fn describe(&self) -> String;

    /// Starts the element-wise sum of `buffer` over all ranks and returns at once; the sum arrives
    /// through the returned [`Pending`]. Collectives complete in the order they were started.
    fn all_reduce_sum(&self, buffer: HostBuffer) -> Result<Pending>;

    /// Starts a copy of rank `root`'s `buffer` to every rank (the other ranks' buffers give the
    /// kind and length and are overwritten).
    fn broadcast(&self, buffer: HostBuffer, root: usize) -> Result<Pending>;

    /// The time spent inside collectives so far (what a worker thread measured; zero where
    /// collectives cost nothing).
    fn collective_time(&self) -> Duration {
        Duration::ZERO
    }

    /// Waits until every rank has reached this call.
    fn barrier(&self) -> Result<()> {
        self.all_reduce_sum(HostBuffer::U64(vec![0]))?.wait()?;
        Ok(())
    }
}

/// The communicator of a run with one process: every collective returns its input.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleProcess;

impl Communicator for SingleProcess {
    fn rank(&self) -> usize {
        0
    }

    fn world_size(&self) -> usize {
        1
    }

    fn local_rank(&self) -> usize {
        0
    }

    fn describe(&self) -> String {
        "a single process".to_string()
    }

    fn all_reduce_sum(&self, buffer: HostBuffer) -> Result<Pending> {
        Ok(Pending::ready("all_reduce", Ok(buffer)))
    }

    fn broadcast(&self, buffer: HostBuffer, root: usize) -> Result<Pending> {
        check_root("broadcast", root, 1)?;
        Ok(Pending::ready("broadcast", Ok(buffer)))
    }
}

/// An error unless `root` is a rank of a group of `world` ranks.
pub(crate) fn check_root(op: &'static str, root: usize, world: usize) -> Result<()> {
    if root >= world {
        return Err(Error::invalid(
            op,
            format!("root rank {root} is not in a group of {world} ranks"),
        ));
    }
    Ok(())
}

/// Sums `values` (one per metric) over all ranks and waits for the result.
///
/// ```
/// use nabla_distributed::{SingleProcess, all_reduce_f64};
/// assert_eq!(all_reduce_f64(&SingleProcess, &[1.5, 2.0])?, vec![1.5, 2.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn all_reduce_f64(comm: &dyn Communicator, values: &[f64]) -> Result<Vec<f64>> {
    match comm
        .all_reduce_sum(HostBuffer::F64(values.to_vec()))?
        .wait()?
    {
        HostBuffer::F64(v) if v.len() == values.len() => Ok(v),
        other => Err(Error::invalid(
            "all_reduce",
            format!(
                "expected {} f64 values back, got {} {}",
                values.len(),
                other.len(),
                other.kind()
            ),
        )),
    }
}
