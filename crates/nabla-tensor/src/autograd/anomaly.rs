//! Anomaly detection (`torch.autograd.detect_anomaly`, `jax_debug_nans`): a scoped, per-thread mode in
//! which the first op that makes a NaN or an infinity out of finite values returns an error naming it.
//!
//! Forward ops are checked as they run; reverse rules as backward applies them, and their errors say
//! where the op was recorded in the forward pass. Off (the default) it costs one thread-local read
//! per computing op.

use crate::Tensor;
use nabla_core::{Backend, Error, HostData, Result};
use std::backtrace::Backtrace;
use std::cell::Cell;

thread_local! {
    static DETECTING: Cell<bool> = const { Cell::new(false) };
}

/// `true` inside a [`detect_anomaly`] scope on this thread.
#[inline]
pub fn is_anomaly_detection_enabled() -> bool {
    DETECTING.with(Cell::get)
}

/// Restores the previous mode when dropped; made by [`AnomalyGuard::new`].
#[must_use = "detection stops as soon as the guard is dropped"]
pub struct AnomalyGuard {
    previous: bool,
}

impl AnomalyGuard {
    /// Turns anomaly detection on for this thread until the guard is dropped.
    pub fn new() -> Self {
        Self::set(true)
    }

    /// Sets the mode to `on` until the guard is dropped.
    fn set(on: bool) -> Self {
        let previous = DETECTING.with(|d| d.replace(on));
        AnomalyGuard { previous }
    }
}

impl Default for AnomalyGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for AnomalyGuard {
    fn drop(&mut self) {
        DETECTING.with(|d| d.set(self.previous));
    }
}

/// Runs `f` with anomaly detection on (this thread only): the first op, forward or in a backward pass,
/// that produces a NaN or an infinity from finite inputs returns an [`Error::NonFinite`] naming the op,
/// its input shapes and, for a reverse rule, where its forward op was recorded. Values that were
/// already non-finite in the inputs pass through. Traced tensors have no values and are not checked.
///
/// ```
/// use nabla_tensor::{Tensor, detect_anomaly};
/// use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![-1.0f64, 0.0, 4.0], [3], &CpuBackend::new())?;
/// assert!(x.log()?.sum_all().is_ok()); // NaN and -inf, silently
/// let err = detect_anomaly(|| x.log()).unwrap_err();
/// assert!(err.to_string().contains("log"));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn detect_anomaly<R>(f: impl FnOnce() -> R) -> R {
    let _guard = AnomalyGuard::new();
    f()
}

/// Runs `f` with detection off (a reverse rule's own ops), so that the rule as a whole is checked and
/// named after the primitive it differentiates.
pub(crate) fn suspended<R>(f: impl FnOnce() -> R) -> R {
    let _off = AnomalyGuard::set(false);
    f()
}

/// The first non-finite element of `t` (index and value), or `None`; traced and integer tensors have
/// none.
fn first_non_finite<B: Backend>(t: &Tensor<B>) -> Option<(usize, String)> {
    let host = t.to_host().ok()?;
    fn find(v: impl Iterator<Item = f64>) -> Option<usize> {
        v.into_iter().position(|x| !x.is_finite())
    }
    let (index, shown) = match &host {
        HostData::F16(v) => {
            let i = find(v.iter().map(|x| x.to_f64()))?;
            (i, v[i].to_string())
        }
        HostData::BF16(v) => {
            let i = find(v.iter().map(|x| x.to_f64()))?;
            (i, v[i].to_string())
        }
        HostData::F32(v) => {
            let i = find(v.iter().map(|&x| x as f64))?;
            (i, v[i].to_string())
        }
        HostData::F64(v) => {
            let i = find(v.iter().copied())?;
            (i, v[i].to_string())
        }
        HostData::C64(v) => {
            let i = v
                .iter()
                .position(|z| !(z.re.is_finite() && z.im.is_finite()))?;
            (i, v[i].to_string())
        }
        HostData::C128(v) => {
            let i = v
                .iter()
                .position(|z| !(z.re.is_finite() && z.im.is_finite()))?;
            (i, v[i].to_string())
        }
        // Integers and booleans are always finite.
        _ => return None,
    };
    Some((index, shown))
}

/// In anomaly mode, an error when `output` of `op` holds a NaN or infinity while every input is
/// finite; `stage` says which pass (`"forward"`, `"backward"`) and `origin` where the op was recorded.
pub(crate) fn check<B: Backend>(
    op: &'static str,
    stage: &str,
    inputs: &[&Tensor<B>],
    output: &Tensor<B>,
    origin: Option<&str>,
) -> Result<()> {
    // An op without inputs (a fill, random draws) makes what it was asked for: nothing to compare.
    if !is_anomaly_detection_enabled() || inputs.is_empty() {
        return Ok(());
    }
    let Some((index, value)) = first_non_finite(output) else {
        return Ok(());
    };
    if inputs.iter().any(|t| first_non_finite(t).is_some()) {
        return Ok(());
    }
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
    let mut message = format!(
        "{stage} produced {value} at flat index {index} of its {:?} output from finite inputs of \
         shapes {shapes:?} (anomaly detection)",
        output.shape()
    );
    if let Some(origin) = origin {
        message.push_str(&format!("; the op was recorded at {origin}"));
    }
    Err(Error::NonFinite { op, message })
}

/// Where the op being recorded was called from (called in anomaly mode only): the innermost frames of the call stack
/// (with their source locations) outside this crate's sources and the Rust toolchain's.
#[cold]
#[inline(never)]
pub(crate) fn origin() -> Option<Box<str>> {
    // This crate's sources, as an absolute path (backtraces print paths under the working directory
    // relative to it).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let cwd = std::env::current_dir().unwrap_or_default();
    let trace = Backtrace::force_capture().to_string();
    let mut frames = Vec::new();
    let mut symbol = None;
    for line in trace.lines().map(str::trim) {
        if let Some(at) = line.strip_prefix("at ") {
            let file = at.split(':').next().unwrap_or(at);
            let internal = cwd.join(file).starts_with(&root)
                || file.contains("/rustc/")
                || file.contains("/library/");
            if let (false, Some(name)) = (internal, symbol.take()) {
                frames.push(format!("{name} ({at})"));
            }
        } else if let Some((_, name)) = line.split_once(": ") {
            symbol = Some(name.to_string());
        }
        if frames.len() == 3 {
            break;
        }
    }
    Some(if frames.is_empty() {
        "an unknown location (build with debug line tables for call sites)".into()
    } else {
        frames.join(" <- ").into()
    })
}
