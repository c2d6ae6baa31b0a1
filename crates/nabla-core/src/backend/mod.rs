//! The kernel interface every device implements.

use crate::{DType, Layout, Result};
use std::fmt::Debug;

mod defaults;
mod methods;

/// Identifies the device a buffer lives on; tensors on different devices cannot be combined.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    /// Kind of device (`"cpu"`, `"wgpu"`, ...).
    pub kind: &'static str,
    /// Index among devices of that kind.
    pub ordinal: usize,
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind, self.ordinal)
    }
}

/// An F32 operand rounded to `to` (BF16 or F16, to nearest, ties to even) and back to F32, as a
/// row-major buffer: what a backend without arithmetic in `to` multiplies for a product at a
/// rounding [`Precision`](crate::Precision).
pub fn round_operand<B: Backend>(
    b: &B,
    s: &B::Storage,
    layout: &Layout,
    to: DType,
) -> Result<B::Storage> {
    let half = b.cast(s, layout, to)?;
    b.cast(&half, &Layout::row_major(layout.shape()), DType::F32)
}

/// Declares [`Backend`] from the method list of [`backend_methods!`](crate::backend_methods).
macro_rules! define_backend {
    ($(
        $(#[$meta:meta])*
        $recipe:ident fn $name:ident(&$self:ident $(, $arg:ident: $kind:tt)* $(,)?) -> $ret:tt $body:tt
    )*) => {
        /// A compute device: a small kernel interface over device-resident buffers.
        ///
        /// Contract, shared by every method:
        /// - A buffer is a [`Backend::Storage`], a cheap-to-clone handle that never changes once returned
        ///   (kernels write only into buffers they allocate). An input comes with a [`Layout`] describing the view
        ///   (strides may be zero or negative); each output is a new buffer holding a contiguous row-major result
        ///   whose shape the caller knows from the contract of the method.
        /// - The backend knows nothing about autodiff. Shapes and dtypes have been checked by the caller
        ///   (`nabla-tensor`), but a backend must still return an [`crate::Error`] rather than panic when an
        ///   input is invalid (out-of-range indices are only discoverable here).
        /// - Work may be queued: only [`Backend::read`] and [`Backend::synchronize`] must wait for results.
        ///
        /// The methods are written once, in the list of [`backend_methods!`](crate::backend_methods)
        /// (`backend/methods.rs`), from which this trait, [`Wrapped`](crate::Wrapped)'s forwarding and
        /// `nabla_any::AnyBackend`'s dispatch are generated.
        pub trait Backend: Clone + Debug + Send + Sync + 'static {
            /// A handle to a buffer on this device.
            type Storage: Clone + Debug + Send + Sync;
            $(
                $(#[$meta])*
                fn $name(&$self $(, $arg: crate::backend_arg_type!($kind))*)
                    -> crate::backend_return_type!($ret) $body
            )*
        }
    };
}

crate::backend_methods!(define_backend);
