//! Integer matrix products: an `i-p-j` loop (rows of the result accumulate scaled rows of the right
//! operand, which vectorises when those rows are contiguous) with wrapping arithmetic.

use super::{Dims, Operand};
use crate::PARALLEL_THRESHOLD;
use crate::reduce::Arith;
use rayon::prelude::*;

crate::simd_kernel! {
    /// `dst[j] = dst[j] + s * src[j]` (wrapping).
    fn axpy<T: Arith>(dst: &mut [T], s: T, src: &[T]) {
        for (d, &v) in dst.iter_mut().zip(src) {
            *d = d.add(s.mul(v));
        }
    }
}

/// The batched product with wrapping arithmetic; returns the contiguous `[batch, m, n]` result.
pub(super) fn matmul_int<T: Arith>(
    a: &[T],
    oa: &Operand,
    b: &[T],
    ob: &Operand,
    d: Dims,
) -> Vec<T> {
    let mut out = crate::strided::filled_vec(d.batch * d.m * d.n, T::zero());
    if out.is_empty() || d.k == 0 {
        return out;
    }
    let row = |r: usize, dst: &mut [T]| {
        let (bi, i) = (r / d.m, r % d.m);
        let a_row = oa.offsets[bi] as isize + i as isize * oa.rs;
        for p in 0..d.k {
            let s = a[(a_row + p as isize * oa.cs) as usize];
            let b_row = ob.offsets[bi] as isize + p as isize * ob.rs;
            if ob.cs == 1 {
                let start = b_row as usize;
                axpy(dst, s, &b[start..start + d.n]);
            } else {
                for (j, o) in dst.iter_mut().enumerate() {
                    let v = b[(b_row + j as isize * ob.cs) as usize];
                    *o = o.add(s.mul(v));
                }
            }
        }
    };
    if crate::splits(d.batch * d.m * d.n * d.k, PARALLEL_THRESHOLD) {
        out.par_chunks_mut(d.n)
            .enumerate()
            .for_each(|(r, dst)| row(r, dst));
    } else {
        out.chunks_mut(d.n)
            .enumerate()
            .for_each(|(r, dst)| row(r, dst));
    }
    out
}
