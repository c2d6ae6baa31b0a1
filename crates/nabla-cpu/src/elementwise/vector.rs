//! Slice kernels for the heavier vectorisable functions (`exp`, `sigmoid`, `tanh`, `erf`).
//!
//! A closure handed to the generic walkers of [`crate::strided`] is only inlined into their AVX2 loop
//! while its body is small; after inlining `erf` or a 16-term polynomial it no longer is, and the loop
//! would call a baseline (SSE2, scalar) function per element. Here each function is called directly
//! inside its own multiversioned loop, where `#[inline(always)]` is honoured, so it always vectorises.

use super::erf::{erf_f32, erf_f64};
use crate::PARALLEL_THRESHOLD;
use crate::simd_math::{exp_f32, exp_f64, sigmoid_f32, sigmoid_f64, tanh_f32, tanh_f64};
use crate::strided::{CHUNK, gather_view, output_vec};
use nabla_core::Layout;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// A loop applying one function to a contiguous slice.
pub(crate) type SliceKernel<T> = fn(&[T], &mut [MaybeUninit<T>]);

macro_rules! slice_kernels {
    ($($name:ident: $t:ty => $f:path;)*) => {$(
        /// Applies the function to every element of `src`, writing `dst`; compiled for AVX2+FMA when
        /// the CPU has it.
        #[multiversion::multiversion(targets("x86_64+avx2+fma"))]
        pub(crate) fn $name(src: &[$t], dst: &mut [MaybeUninit<$t>]) {
            for (o, &s) in dst.iter_mut().zip(src) {
                o.write($f(s));
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
    if n >= PARALLEL_THRESHOLD {
        spare
            .par_chunks_mut(CHUNK)
            .zip(src.par_chunks(CHUNK))
            .for_each(|(o, s)| kernel(s, o));
    } else {
        kernel(src, spare);
    }
    // SAFETY: the kernel wrote every element of `spare`, which is `out[..n]`.
    unsafe { out.set_len(n) };
    out
}
