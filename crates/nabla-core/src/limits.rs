//! Limits on sizes that come from input (shapes, file headers, arguments): an element count that
//! overflows, or a buffer larger than the allocation limit, is an [`Error`] naming the op, the size and
//! the limit, instead of an abort, a panic or a silently empty tensor.
//!
//! The allocation limit defaults to the machine's physical memory (`MemTotal` of `/proc/meminfo`,
//! 64 GiB where that cannot be read); the environment variable `NABLA_MAX_ALLOC_BYTES` or
//! [`set_max_allocation_bytes`] changes it for the process, [`with_allocation_limit`] for a scope on the
//! current thread.
//!
//! ```
//! use nabla_core::{DType, check_allocation, checked_numel};
//! assert_eq!(checked_numel("demo", &[2, 3])?, 6);
//! assert!(checked_numel("demo", &[1 << 32, 1 << 32, 2]).is_err());
//! let err = check_allocation("zeros", &[1 << 40, 1 << 10], DType::F32).unwrap_err();
//! assert!(err.to_string().contains("zeros"));
//! # Ok::<(), nabla_core::Error>(())
//! ```

use crate::{DType, Error, Result, checked_numel};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The limit in bytes; 0 until first read.
static MAX_ALLOCATION: AtomicUsize = AtomicUsize::new(0);

const FALLBACK_LIMIT: usize = 64 << 30;

thread_local! {
    /// A scoped limit of the current thread ([`with_allocation_limit`]).
    static SCOPED: Cell<Option<usize>> = const { Cell::new(None) };
}

fn physical_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn default_limit() -> usize {
    std::env::var("NABLA_MAX_ALLOC_BYTES")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&b| b > 0)
        .or_else(physical_memory)
        .unwrap_or(FALLBACK_LIMIT)
}

/// The largest buffer, in bytes, that an op may allocate for a size taken from its input (the current
/// thread's scoped limit, if any, else the process's).
pub fn max_allocation_bytes() -> usize {
    if let Some(limit) = SCOPED.with(Cell::get) {
        return limit;
    }
    match MAX_ALLOCATION.load(Ordering::Relaxed) {
        0 => {
            let limit = default_limit();
            MAX_ALLOCATION.store(limit, Ordering::Relaxed);
            limit
        }
        limit => limit,
    }
}

/// Sets the allocation limit (bytes, at least 1) for the whole process.
pub fn set_max_allocation_bytes(bytes: usize) {
    MAX_ALLOCATION.store(bytes.max(1), Ordering::Relaxed);
}

/// Runs `f` with the allocation limit of the current thread set to `bytes` (at least 1), restoring the
/// previous limit afterwards (also when `f` panics).
///
/// ```
/// use nabla_core::{max_allocation_bytes, with_allocation_limit};
/// let inside = with_allocation_limit(4096, max_allocation_bytes);
/// assert_eq!(inside, 4096);
/// assert_ne!(max_allocation_bytes(), 4096);
/// ```
pub fn with_allocation_limit<R>(bytes: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.replace(Some(bytes.max(1)))));
    f()
}

/// The words every allocation-limit error contains ([`is_allocation_limit_error`] looks for them).
const OVER_LIMIT: &str = "over the allocation limit";

/// `true` for the error [`check_allocation`] gives: a buffer over the allocation limit (bindings
/// report it as out of memory, as Python's `MemoryError`).
///
/// ```
/// let err = nabla_core::check_allocation("zeros", &[1 << 20, 1 << 20, 1 << 10], nabla_core::DType::F32);
/// assert!(nabla_core::is_allocation_limit_error(&err.unwrap_err()));
/// ```
pub fn is_allocation_limit_error(err: &Error) -> bool {
    matches!(err, Error::InvalidArgument { message, .. } if message.contains(OVER_LIMIT))
}

/// The number of elements of `dims`, or an error naming `op`, the size and the limit when a buffer of
/// that many `dtype` elements would exceed [`max_allocation_bytes`].
pub fn check_allocation(op: &'static str, dims: &[usize], dtype: DType) -> Result<usize> {
    let len = checked_numel(op, dims)?;
    let limit = max_allocation_bytes();
    match len.checked_mul(dtype.size_in_bytes()) {
        Some(bytes) if bytes <= limit => Ok(len),
        bytes => Err(Error::invalid(
            op,
            format!(
                "shape {dims:?} of {dtype} needs {} bytes, {OVER_LIMIT} of {limit} \
                 bytes (NABLA_MAX_ALLOC_BYTES or nabla_core::set_max_allocation_bytes raises it)",
                bytes.map_or_else(|| "more than usize::MAX".to_string(), |b| b.to_string())
            ),
        )),
    }
}
