//! [`MpiCommunicator`]: the [`Communicator`] on MPI (OpenMPI, MPICH or any MPI-3 library), through
//! the `mpi` crate.
//!
//! One worker thread owns MPI: it initializes it, runs every collective in the order they were
//! started, and finalizes it when the communicator is dropped (MPI's `MPI_THREAD_FUNNELED` level:
//! only that thread calls MPI). A collective started while the backward pass is still running is
//! therefore carried out by the worker while the training thread goes on computing, the way
//! PyTorch's MPI process group runs its work queue.

use crate::comm::{Communicator, HostBuffer, Pending, check_root};
use mpi::collective::SystemOperation;
use mpi::environment::Threading;
use mpi::traits::{Communicator as _, CommunicatorCollectives, Root};
use nabla_core::{Error, Result};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most elements one MPI call moves (MPI counts are C `int`s); longer buffers go in pieces.
const MAX_COUNT: usize = 1 << 28;

/// The default limit on waiting for one collective: PyTorch's process groups wait 30 minutes.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Work for the MPI thread.
enum Job {
    AllReduce(HostBuffer, Sender<Result<HostBuffer>>),
    Broadcast(HostBuffer, usize, Sender<Result<HostBuffer>>),
}

/// What the MPI thread reports once MPI is up.
struct Identity {
    rank: usize,
    world_size: usize,
    local_rank: usize,
    host: String,
    version: String,
}

/// The [`Communicator`] of the processes started together by `mpirun` (or `srun`, `mpiexec`).
///
/// ```no_run
/// use nabla_distributed::{Communicator, HostBuffer, MpiCommunicator};
/// // Run as `mpirun -np 2 ./program`.
/// let comm = MpiCommunicator::init()?;
/// let sum = comm.all_reduce_sum(HostBuffer::F64(vec![comm.rank() as f64]))?.wait()?;
/// assert_eq!(sum, HostBuffer::F64(vec![1.0]));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct MpiCommunicator {
    jobs: Mutex<Option<Sender<Job>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    identity: Identity,
    timeout: Duration,
    busy_nanos: Arc<AtomicU64>,
}

impl std::fmt::Debug for MpiCommunicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiCommunicator")
            .field("rank", &self.identity.rank)
            .field("world_size", &self.identity.world_size)
            .field("host", &self.identity.host)
            .finish()
    }
}

impl MpiCommunicator {
    /// Initializes MPI on a worker thread and joins the world of processes the launcher started
    /// (a process started without a launcher is a world of one). Fails if MPI was initialized
    /// before in this process. `NABLA_DIST_TIMEOUT` (seconds, default 1800) bounds the wait for any
    /// one collective.
    pub fn init() -> Result<MpiCommunicator> {
        let timeout = timeout_from_env()?;
        let (init_tx, init_rx) = channel();
        let (jobs_tx, jobs_rx) = channel();
        let busy_nanos = Arc::new(AtomicU64::new(0));
        let busy = Arc::clone(&busy_nanos);
        let worker = std::thread::Builder::new()
            .name("nabla-mpi".into())
            .spawn(move || run_worker(init_tx, jobs_rx, busy))
            .map_err(|e| Error::invalid("MpiCommunicator::init", e.to_string()))?;
        // MPI_Init waits for every rank of the job: bounded like any collective.
        let identity = match init_rx.recv_timeout(timeout) {
            Ok(identity) => identity?,
            Err(RecvTimeoutError::Timeout) => {
                return Err(Error::invalid(
                    "MpiCommunicator::init",
                    format!(
                        "MPI did not start within {:.0} s: another rank of the job has not started \
                         MPI (NABLA_DIST_TIMEOUT sets the limit in seconds)",
                        timeout.as_secs_f64()
                    ),
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::invalid(
                    "MpiCommunicator::init",
                    "the MPI thread stopped while initializing MPI",
                ));
            }
        };
        Ok(MpiCommunicator {
            jobs: Mutex::new(Some(jobs_tx)),
            worker: Mutex::new(Some(worker)),
            identity,
            timeout,
            busy_nanos,
        })
    }

    /// The MPI library's version string.
    pub fn library_version(&self) -> &str {
        &self.identity.version
    }

    /// Hands `job` to the MPI thread.
    fn submit(&self, op: &'static str, job: Job) -> Result<()> {
        let guard = self.jobs.lock().map_err(|_| poisoned(op))?;
        let sender = guard
            .as_ref()
            .ok_or_else(|| Error::invalid(op, "the communicator has been shut down"))?;
        sender
            .send(job)
            .map_err(|_| Error::invalid(op, "the MPI thread has stopped"))
    }
}

fn poisoned(op: &'static str) -> Error {
    Error::invalid(op, "the communicator's lock was poisoned by a panic")
}

/// `NABLA_DIST_TIMEOUT` in seconds, or the default.
fn timeout_from_env() -> Result<Duration> {
    match std::env::var("NABLA_DIST_TIMEOUT") {
        Err(_) => Ok(DEFAULT_TIMEOUT),
        Ok(s) => match s.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(Duration::from_secs_f64(v)),
            _ => Err(Error::invalid(
                "NABLA_DIST_TIMEOUT",
                format!("expected a positive number of seconds, got `{s}`"),
            )),
        },
    }
}

impl Communicator for MpiCommunicator {
    fn rank(&self) -> usize {
        self.identity.rank
    }

    fn world_size(&self) -> usize {
        self.identity.world_size
    }

    fn local_rank(&self) -> usize {
        self.identity.local_rank
    }

    fn describe(&self) -> String {
        format!(
            "MPI rank {} of {} on {}",
            self.identity.rank, self.identity.world_size, self.identity.host
        )
    }

    fn collective_time(&self) -> Duration {
        Duration::from_nanos(self.busy_nanos.load(Ordering::Relaxed))
    }

    fn all_reduce_sum(&self, buffer: HostBuffer) -> Result<Pending> {
        let (tx, rx) = channel();
        self.submit("all_reduce", Job::AllReduce(buffer, tx))?;
        Ok(Pending::from_channel("all_reduce", rx, self.timeout))
    }

    fn broadcast(&self, buffer: HostBuffer, root: usize) -> Result<Pending> {
        check_root("broadcast", root, self.identity.world_size)?;
        let (tx, rx) = channel();
        self.submit("broadcast", Job::Broadcast(buffer, root, tx))?;
        Ok(Pending::from_channel("broadcast", rx, self.timeout))
    }
}

impl Drop for MpiCommunicator {
    /// Stops the MPI thread, which finalizes MPI. While the thread is unwinding from a panic
    /// nothing is waited for: finalizing would wait for ranks that may be blocked in a collective
    /// with this one, and the process is about to end anyway (which ends the job).
    fn drop(&mut self) {
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        if std::thread::panicking() {
            return;
        }
        if let Ok(mut worker) = self.worker.lock()
            && let Some(handle) = worker.take()
        {
            let _ = handle.join();
        }
    }
}

/// The MPI thread: initializes MPI, reports who this process is, then runs jobs in order until
/// the communicator is dropped.
fn run_worker(init_tx: Sender<Result<Identity>>, jobs: Receiver<Job>, busy_nanos: Arc<AtomicU64>) {
    let Some((universe, _level)) = mpi::initialize_with_threading(Threading::Funneled) else {
        let _ = init_tx.send(Err(Error::invalid(
            "MpiCommunicator::init",
            "MPI has already been initialized in this process",
        )));
        return;
    };
    let world = universe.world();
    let local = world.split_shared(world.rank());
    let identity = Identity {
        rank: world.rank() as usize,
        world_size: world.size() as usize,
        local_rank: local.rank() as usize,
        host: mpi::environment::processor_name().unwrap_or_else(|_| "an unnamed host".into()),
        version: mpi::environment::library_version().unwrap_or_default(),
    };
    if init_tx.send(Ok(identity)).is_err() {
        return;
    }
    for job in jobs {
        let start = Instant::now();
        match job {
            Job::AllReduce(buffer, reply) => {
                let result = same_collective(&world, "all_reduce", &buffer, None)
                    .map(|()| all_reduce(&world, buffer));
                let _ = reply.send(result);
            }
            Job::Broadcast(buffer, root, reply) => {
                let result = same_collective(&world, "broadcast", &buffer, Some(root))
                    .map(|()| broadcast(&world, buffer, root));
                let _ = reply.send(result);
            }
        }
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        busy_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
    drop(local);
    drop(universe);
}

/// Checks, before any data moves, that every rank of `world` is about to run the same collective
/// (`op`, with the same `root`) on a buffer of the same element type and length, so that MPI is
/// never handed buffers of different sizes (which corrupts memory). One all-reduce of each value
/// and its complement under `max` gives the largest and the smallest over the ranks; every rank
/// sees the same result, so all of them fail together when any differs.
fn same_collective<C: CommunicatorCollectives>(
    world: &C,
    op: &'static str,
    buffer: &HostBuffer,
    root: Option<usize>,
) -> Result<()> {
    let kind = match buffer {
        HostBuffer::F32(_) => 1,
        HostBuffer::F64(_) => 2,
        HostBuffer::U64(_) => 3,
    };
    let op_code = if root.is_some() { 2 } else { 1 };
    let root_code = root.map_or(0, |r| r as u64);
    let header = [op_code, kind, buffer.len() as u64, root_code];
    let send: Vec<u64> = header.iter().flat_map(|&v| [v, u64::MAX - v]).collect();
    let mut extremes = vec![0u64; send.len()];
    world.all_reduce_into(&send[..], &mut extremes[..], SystemOperation::max());
    let range = |i: usize| (u64::MAX - extremes[2 * i + 1], extremes[2 * i]);
    if (0..header.len()).all(|i| range(i).0 == range(i).1) {
        return Ok(());
    }
    let (shortest, longest) = range(2);
    Err(Error::invalid(
        op,
        format!(
            "the ranks are not running the same collective (this rank: {op} of {} {} values; \
             lengths across ranks from {shortest} to {longest}): every rank must train the same \
             model with the same options for the same number of steps",
            buffer.len(),
            buffer.kind()
        ),
    ))
}

/// The element-wise sum of `buffer` over `world`, in pieces of at most [`MAX_COUNT`] elements.
fn all_reduce<C: CommunicatorCollectives>(world: &C, buffer: HostBuffer) -> HostBuffer {
    fn sum<T, C>(world: &C, send: Vec<T>) -> Vec<T>
    where
        T: Copy + Default + mpi::datatype::Equivalence,
        C: CommunicatorCollectives,
    {
        let mut out = vec![T::default(); send.len()];
        for (s, o) in send.chunks(MAX_COUNT).zip(out.chunks_mut(MAX_COUNT)) {
            world.all_reduce_into(s, o, SystemOperation::sum());
        }
        out
    }
    match buffer {
        HostBuffer::F32(v) => HostBuffer::F32(sum(world, v)),
        HostBuffer::F64(v) => HostBuffer::F64(sum(world, v)),
        HostBuffer::U64(v) => HostBuffer::U64(sum(world, v)),
    }
}

/// Rank `root`'s `buffer` on every rank of `world`, in pieces of at most [`MAX_COUNT`] elements.
fn broadcast<C: mpi::traits::Communicator>(
    world: &C,
    buffer: HostBuffer,
    root: usize,
) -> HostBuffer {
    fn bcast<T, C>(world: &C, mut v: Vec<T>, root: usize) -> Vec<T>
    where
        T: mpi::datatype::Equivalence,
        C: mpi::traits::Communicator,
    {
        let process = world.process_at_rank(root as i32);
        for piece in v.chunks_mut(MAX_COUNT) {
            process.broadcast_into(piece);
        }
        v
    }
    match buffer {
        HostBuffer::F32(v) => HostBuffer::F32(bcast(world, v, root)),
        HostBuffer::F64(v) => HostBuffer::F64(bcast(world, v, root)),
        HostBuffer::U64(v) => HostBuffer::U64(bcast(world, v, root)),
    }
}
