//! Factorisations and the ops built on them: cholesky, triangular solve, LU, det, slogdet, QR, lstsq.

use nabla_core::Backend;
use nabla_tensor::ExtensionRules;

/// Adds the rules of this module's ops to `rules`.
pub(crate) fn register<B: Backend>(rules: ExtensionRules<B>) -> ExtensionRules<B> {
    rules
}
