//! [`HostLoop`]: a native loop that a fused kernel may carry, for backends that compute on host
//! memory.

use crate::fast_path::AdamUpdate;

/// A native loop computing, in place, exactly what a multi-result [`crate::FusedKernel`]'s steps
/// compute: the same operations in the same order with the same roundings, so results agree bit for
/// bit. The library that builds the kernel attaches the loop's description
/// ([`crate::FusedKernel::with_host_loop`]); a backend with host kernels (the CPU) runs its own
/// implementation of the loop instead of interpreting the steps, and every other backend runs the
/// steps. The description names what to compute, never code: the kernels live in the backend.
///
/// Result `j` of the kernel is an update of input [`HostLoop::updates`]`()[j]`: the backend hands the
/// loop a buffer holding that input's values (the donated input itself, or a copy), and the loop
/// overwrites it with the result. The other inputs are read only.
///
/// ```
/// use nabla_core::HostLoop;
/// use nabla_core::fast_path::{AdamCoefficients, AdamUpdate};
/// let coefficients = AdamCoefficients {
///     l2_decay: None,
///     one_minus_beta1: 0.1,
///     beta2: 0.999,
///     one_minus_beta2: 0.001,
///     param_decay: None,
///     bias_correction2_sqrt: 0.001f64.sqrt(),
///     eps: 1e-8,
///     step_size: 1e-2,
/// };
/// let adam = HostLoop::Adam(AdamUpdate { coefficients, amsgrad: false });
/// // The moments (inputs 2 and 3), then the parameter (input 0).
/// assert_eq!(adam.updates(), [2, 3, 0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HostLoop {
    /// One Adam/AdamW update.
    Adam(AdamUpdate),
}

impl HostLoop {
    /// For each result of the kernel, in order, the input it updates in place (each input at most
    /// once).
    pub fn updates(&self) -> &'static [usize] {
        match self {
            HostLoop::Adam(update) => update.updates(),
        }
    }
}
