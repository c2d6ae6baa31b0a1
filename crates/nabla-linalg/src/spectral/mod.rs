//! Spectral ops and the ops built on them: eigh, SVD, eigenvalues of general matrices, pinv, matrix
//! norms, matrix exponential.

use nabla_core::Backend;
use nabla_tensor::ExtensionRules;

/// Adds the rules of this module's ops to `rules`.
pub(crate) fn register<B: Backend>(rules: ExtensionRules<B>) -> ExtensionRules<B> {
    rules
}
