//! The `no_grad` scope: a per-thread switch that stops ops from recording derivative information.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// `true` unless the current thread is inside a [`no_grad`] scope.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Sets recording on this thread to `on` until it is set again, and returns the previous state
/// (PyTorch's `torch.set_grad_enabled(mode)` called as a function). Scoped code should prefer
/// [`NoGradGuard`], which restores the state however the scope ends.
pub fn set_grad_enabled(on: bool) -> bool {
    GRAD_ENABLED.with(|g| g.replace(on))
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

    /// Sets recording to `on` until the guard is dropped (PyTorch's `set_grad_enabled`; `true`
    /// records again inside a `no_grad` scope, as `enable_grad`).
    pub fn set(on: bool) -> Self {
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
