//! Slice kernels for the heavier vectorisable functions (`exp`, `sigmoid`, `tanh`, `erf`).
//!
//! A closure handed to the generic walkers of [`crate::strided`] is only inlined into their SIMD
//! loops while its body is small; after inlining `erf` or a 16-term polynomial it no longer is, and
//! the loop would call a baseline (SSE2, scalar) function per element. Here each function is called
//! directly inside its own multiversioned loop, where `#[inline(always)]` is honoured, so it always
//! vectorises.

use super::erf::{erf_f32, erf_f64};
use crate::simd_math::{exp_f32, exp_f64, sigmoid_f32, sigmoid_f64, tanh_f32, tanh_f64};
use crate::strided::{CHUNK, gather_view, output_vec};
use nabla_core::Layout;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// These functions cost about 1 ns per element, 10 to 20 times a memory-bound op's, so their
/// outputs are split across threads from this size on (the cheap ops' [`crate::PARALLEL_THRESHOLD`]
/// is 8 times larger): a GRU step's gates (`[32, 256]`) are split, while a task still gets several
/// microseconds of work.
const EXPENSIVE_PARALLEL_THRESHOLD: usize = 1 << 12;

/// A loop applying one function to a contiguous slice.
pub(crate) type SliceKernel<T> = fn(&[T], &mut [MaybeUninit<T>]);

macro_rules! slice_kernels {
    ($($name:ident: $t:ty => $f:path;)*) => {$(
        crate::simd_kernel! {
            /// Applies the function to every element of `src`, writing `dst`; compiled for each
            /// SIMD level the CPU may have.
            pub(crate) fn $name(src: &[$t], dst: &mut [MaybeUninit<$t>]) {
                for (o, &s) in dst.iter_mut().zip(src) {
                    o.write($f(s));
                }
            }
        }
    )*};
}

slice_kernels! {
    exp_slice_f32: f32 => exp_f32;
    exp_slice_f64: f64 => exp_f64;
    sigmoid_slice_f32: f32 => sigmoid_f32;
    sigmoid_slice_f64: f64 => sigmoid_f64;
    tanh_slice_f32: f32 => tanh_f32;
    tanh_slice_f64: f64 => tanh_f64;
    erf_slice_f32: f32 => erf_f32;
    erf_slice_f64: f64 => erf_f64;
}

/// Applies `kernel` to a view: contiguous views directly, strided ones after a gather (the function
/// costs far more than the copy). Large inputs are split across threads.
pub(super) fn map_slices<T: Copy + Send + Sync>(
    x: &[T],
    l: &Layout,
    kernel: SliceKernel<T>,
) -> Vec<T> {
    let gathered;
    let src: &[T] = match l.contiguous_range() {
        Some(r) => &x[r],
        None => {
            gathered = gather_view(x, l);
            &gathered
        }
    };
    let n = src.len();
    let mut out: Vec<T> = output_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if crate::splits(n, EXPENSIVE_PARALLEL_THRESHOLD) {
        let chunk = CHUNK.min(n.div_ceil(rayon::current_num_threads()));
        spare
            .par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(o, s)| kernel(s, o));
    } else {
        kernel(src, spare);
    }
    // SAFETY: the kernel wrote every element of `spare`, which is `out[..n]`.
    unsafe { out.set_len(n) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes below, at and above the split, with a last task shorter than the others, on contiguous
    /// and transposed views: every element is the function of its own input.
    #[test]
    fn split_outputs_match_the_function_of_each_element() {
        type Pair = (SliceKernel<f32>, fn(f32) -> f32);
        let kernels: [Pair; 4] = [
            (exp_slice_f32, exp_f32),
            (sigmoid_slice_f32, sigmoid_f32),
            (tanh_slice_f32, tanh_f32),
            (erf_slice_f32, erf_f32),
        ];
        for n in [
            EXPENSIVE_PARALLEL_THRESHOLD - 1,
            EXPENSIVE_PARALLEL_THRESHOLD,
            3 * EXPENSIVE_PARALLEL_THRESHOLD + 7,
        ] {
            let x: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 9.0)
                .collect();
            let rows = n.div_ceil(64);
            let padded: Vec<f32> = (0..rows * 64).map(|i| x[i % n]).collect();
            let flat = Layout::contiguous(vec![n]);
            let transposed = Layout::contiguous(vec![rows, 64]).permute(&[1, 0]).unwrap();
            for (kernel, f) in kernels {
                let out = map_slices(&x, &flat, kernel);
                assert!(
                    out.iter()
                        .zip(&x)
                        .all(|(o, &v)| o.to_bits() == f(v).to_bits())
                );
                let out = map_slices(&padded, &transposed, kernel);
                let want = (0..64).flat_map(|c| (0..rows).map(move |r| r * 64 + c));
                assert!(
                    out.iter()
                        .zip(want)
                        .all(|(o, i)| o.to_bits() == f(padded[i]).to_bits())
                );
            }
        }
    }
}
