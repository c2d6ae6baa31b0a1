//! [`HostLoop`]: a hand-written loop a library attaches to a fused kernel it built, for backends whose
//! buffers live in host memory.

use std::fmt::Debug;

/// A loop over contiguous host slices computing, in place, exactly what a multi-result
/// [`crate::FusedKernel`]'s steps compute: the same operations in the same order with the same
/// roundings, so results agree bit for bit. The library that builds the kernel attaches it
/// ([`crate::FusedKernel::with_host_loop`]); a backend with host buffers (the CPU) may run it instead
/// of interpreting the steps, and every other backend ignores it. An optimizer's update (Adam's, in
/// `nabla-nn`) is the typical use: one pass over the parameter, gradient and moments, each element's
/// update in registers.
///
/// Result `j` of the kernel is an update of input [`HostLoop::updates`]`()[j]`: the backend hands the
/// loop a buffer holding that input's values (the donated input itself, or a copy), and the loop
/// overwrites it with the result. The other inputs are read only.
///
/// ```
/// use nabla_core::HostLoop;
/// /// `in0 += in1`, in place (for a kernel with steps `in0, in1, in0 + in1` and that one result).
/// #[derive(Debug)]
/// struct AddInto;
/// impl HostLoop for AddInto {
///     fn updates(&self) -> &[usize] { &[0] }
///     fn run_f32(&self, results: &mut [&mut [f32]], reads: &[&[f32]]) -> bool {
///         let ([acc], [x]) = (results, reads) else { return false };
///         acc.iter_mut().zip(*x).for_each(|(a, b)| *a += b);
///         true
///     }
///     fn run_f64(&self, _: &mut [&mut [f64]], _: &[&[f64]]) -> bool { false }
/// }
/// let mut acc = vec![1.0f32, 2.0];
/// assert!(AddInto.run_f32(&mut [&mut acc[..]], &[&[10.0, 20.0][..]]));
/// assert_eq!(acc, [11.0, 22.0]);
/// ```
pub trait HostLoop: Debug + Send + Sync {
    /// For each result of the kernel, in order, the input it updates in place (each input at most
    /// once).
    fn updates(&self) -> &[usize];

    /// Runs over `f32` elements: `results[j]` holds input `updates()[j]` on entry and result `j` on
    /// return; `reads` are the inputs not updated, in input order; every slice has the same length.
    /// Returns `false` (having written nothing) when the loop does not handle `f32`.
    fn run_f32(&self, results: &mut [&mut [f32]], reads: &[&[f32]]) -> bool;

    /// [`HostLoop::run_f32`] over `f64` elements.
    fn run_f64(&self, results: &mut [&mut [f64]], reads: &[&[f64]]) -> bool;
}
