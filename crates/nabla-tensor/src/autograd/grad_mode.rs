//! The `no_grad` scope: a per-thread switch that stops ops from recording derivative information.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// `true` unless the current thread is inside a [`no_grad`] scope.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Restores the previous recording state when dropped; made by [`NoGradGuard::new`].
#[must_use = "recording resumes as soon as the guard is dropped"]
pub struct NoGradGuard {
    previous: bool,
}

impl NoGradGuard {
    /// Stops recording on this thread until the guard is dropped.
    pub fn new() -> Self {
        Self::set(false)
    }

    /// Sets recording to `on` until the guard is dropped.
    fn set(on: bool) -> Self {
        let previous = GRAD_ENABLED.with(|g| g.replace(on));
        NoGradGuard { previous }
    }
}

impl Default for NoGradGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.previous));
    }
}

/// Runs `f` with recording on, whatever the enclosing scope says (a custom function re-runs its body
/// with recording to differentiate it, even inside `no_grad`).
pub(crate) fn with_grad<R>(f: impl FnOnce() -> R) -> R {
    let _on = NoGradGuard::set(true);
    f()
}

/// Runs `f` without recording: results computed inside do not require gradients, even from variables.
/// The switch is per thread, so parallel tests and worker threads do not see each other's scopes.
///
/// ```
/// # use nabla_tensor::{Tensor, no_grad}; use nabla_cpu::CpuBackend;
/// let x = Tensor::var("x", Tensor::from_vec(vec![1.0f32, 2.0], [2], &CpuBackend::new())?)?;
/// let y = no_grad(|| x.exp())?;
/// assert!(x.requires_grad() && !y.requires_grad());
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    let _guard = NoGradGuard::new();
    f()
}
