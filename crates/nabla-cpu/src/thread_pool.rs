//! Setting up the thread pool the CPU kernels run on.

use nabla_core::{Error, Result};

/// The most threads [`init_thread_pool`] accepts: eight per logical CPU. Past a few per core,
/// threads only add switching (a thousand make an epoch minutes long).
///
/// ```
/// assert!(nabla_cpu::max_threads() >= 8);
/// ```
pub fn max_threads() -> usize {
    8 * logical_cpus()
}

/// The logical CPUs this process may use.
fn logical_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Sets up the thread pool that the CPU kernels split their work over (rayon's global pool) with
/// `threads` threads (`None`: one per logical CPU, or `RAYON_NUM_THREADS`), and makes the calling
/// thread one of them when there are two or more.
///
/// Without it, the pool starts on first use with threads of its own: every parallel op called from
/// the program's thread is then handed to the pool while that thread sleeps until it is done, a
/// hand-over and a wake-up per op (10–15% of a small MLP's training step on two cores). A pool thread
/// starts the op's work itself instead. With one thread, the pool keeps a thread of its own, so that
/// work sent from other threads (data-loader workers) still runs while the caller waits for it.
///
/// Call it once, early in `main`, from the thread that runs the model; that thread must live as long
/// as the program uses the pool (the main thread does). Fails if `threads` is zero or over
/// [`max_threads`], or the pool is already set up (by an earlier call, or by a first parallel op).
///
/// ```no_run
/// fn main() -> nabla_core::Result<()> {
///     nabla_cpu::init_thread_pool(None)?;
///     // ... build the model and train it on this thread ...
///     Ok(())
/// }
/// ```
pub fn init_thread_pool(threads: Option<usize>) -> Result<()> {
    const OP: &str = "init_thread_pool";
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        if n == 0 {
            return Err(Error::invalid(OP, "the pool needs at least 1 thread"));
        }
        if n > max_threads() {
            return Err(Error::invalid(
                OP,
                format!(
                    "{n} threads is more than the limit of {}: eight per logical CPU ({} here); \
                     more only add switching",
                    max_threads(),
                    logical_cpus()
                ),
            ));
        }
        builder = builder.num_threads(n);
    }
    let n = threads.unwrap_or_else(default_threads);
    if n >= 2 {
        builder = builder.use_current_thread();
    }
    builder.build_global().map_err(|e| {
        Error::invalid(
            OP,
            format!("cannot set up the CPU thread pool ({e}); call it once, before any op runs"),
        )
    })
}

/// The number of threads rayon gives a pool built without `num_threads`.
fn default_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(logical_cpus)
}
