//! Max pooling of whole planes with vector gathers: eight `f32` (or four `f64`) outputs of a plane at
//! once, each lane reading its own window through AVX2 gathers.
//!
//! The row kernels in the parent module vectorise along an output row, which leaves most of the work
//! to scalar tails when rows are short (13 or 5 outputs in a small CNN's pooling). Here the lanes run
//! over a plane's outputs in flat order, so every row length vectorises alike, and one table of window
//! offsets serves every plane. Taps are visited in window order with the same replacement test as the
//! scalar kernels (strictly larger, or the window's first NaN), so values and positions are the same
//! bit for bit.

/// The flat offsets of one plane's windows, shared by every plane of a pooling: the corner of each
/// output (padded to whole vectors by repeating the last), and each tap's offset from its corner in
/// window (row-major) order.
pub(super) struct Windows {
    corners: Vec<i32>,
    outputs: usize,
    taps: Vec<i32>,
    /// The largest flat position any window reads.
    reach: usize,
}

impl Windows {
    /// The windows of a plane `w` wide, for an output of `out = (rows, cols)`, windows `kernel` taps
    /// large placed `stride` apart, taps `dilation` apart; every window must lie inside the plane
    /// (no padding). `None` when there are no outputs or taps, or when a position does not fit an
    /// `i32` (the gathers' offsets).
    pub(super) fn new(
        w: usize,
        out: (usize, usize),
        kernel: (usize, usize),
        stride: (usize, usize),
        dilation: (usize, usize),
    ) -> Option<Self> {
        let outputs = out.0.checked_mul(out.1)?;
        if outputs == 0 || kernel.0 == 0 || kernel.1 == 0 {
            return None;
        }
        let fit = |v: usize| i32::try_from(v).ok();
        let corner = |oh: usize, ow: usize| {
            fit(oh.checked_mul(stride.0)?.checked_mul(w)? + ow.checked_mul(stride.1)?)
        };
        let tap = |r: usize, c: usize| {
            fit(r.checked_mul(dilation.0)?.checked_mul(w)? + c.checked_mul(dilation.1)?)
        };
        let mut corners = Vec::with_capacity(outputs.next_multiple_of(8));
        for oh in 0..out.0 {
            for ow in 0..out.1 {
                corners.push(corner(oh, ow)?);
            }
        }
        let last = *corners.last()?;
        corners.resize(outputs.next_multiple_of(8), last);
        let mut taps = Vec::with_capacity(kernel.0 * kernel.1);
        for r in 0..kernel.0 {
            for c in 0..kernel.1 {
                taps.push(tap(r, c)?);
            }
        }
        let reach = usize::try_from(last).ok()? + usize::try_from(*taps.last()?).ok()?;
        fit(reach)?;
        Some(Windows {
            corners,
            outputs,
            taps,
            reach,
        })
    }
}

/// Pools one plane into `vals` and `idx` (one entry per output); `None` when no gathering kernel is
/// compiled for this CPU and element type, or the plane does not hold every window.
pub(super) trait GatheredPool: Sized {
    /// Pools `plane` through `windows`; `false` (writing nothing) when it cannot.
    fn pool_gathered(plane: &[Self], windows: &Windows, vals: &mut [Self], idx: &mut [i64])
    -> bool;
}

macro_rules! no_gathers {
    ($($t:ty),*) => {$(
        impl GatheredPool for $t {
            fn pool_gathered(_: &[Self], _: &Windows, _: &mut [Self], _: &mut [i64]) -> bool {
                false
            }
        }
    )*};
}
nabla_core::for_int_types!(no_gathers);

/// `true` when this CPU has AVX2 and the buffers fit the windows.
fn usable<T>(plane: &[T], windows: &Windows, vals: &[T], idx: &[i64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    let avx2 = std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    let avx2 = false;
    avx2 && windows.reach < plane.len()
        && vals.len() == windows.outputs
        && idx.len() == windows.outputs
}

macro_rules! gathers {
    ($($t:ty => $kernel:ident),*) => {$(
        impl GatheredPool for $t {
            fn pool_gathered(plane: &[Self], windows: &Windows, vals: &mut [Self], idx: &mut [i64]) -> bool {
                if !usable(plane, windows, vals, idx) {
                    return false;
                }
                #[cfg(target_arch = "x86_64")]
                // SAFETY: AVX2 is present, and every gathered position (at most `reach`) lies in `plane`.
                unsafe {
                    x86::$kernel(plane, windows, vals, idx)
                };
                cfg!(target_arch = "x86_64")
            }
        }
    )*};
}
gathers!(f32 => pool_f32, f64 => pool_f64);

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Windows;
    use crate::pool2d::x86::keep_max8;
    use std::arch::x86_64::*;

    /// Eight outputs of a plane from the corners `c`: the maxima and their flat positions.
    ///
    /// # Safety
    /// AVX2 must be present, and `plane` must hold every position `c + tap`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn eight(plane: *const f32, c: __m256i, taps: &[i32]) -> (__m256, __m256i) {
        let mut at = _mm256_add_epi32(c, _mm256_set1_epi32(taps[0]));
        // SAFETY (every gather here): the caller guarantees the positions lie in the plane.
        let mut best = unsafe { _mm256_i32gather_ps::<4>(plane, at) };
        for &t in &taps[1..] {
            let pos = _mm256_add_epi32(c, _mm256_set1_epi32(t));
            let v = unsafe { _mm256_i32gather_ps::<4>(plane, pos) };
            (best, at) = keep_max8((best, at), v, pos);
        }
        (best, at)
    }

    /// Pools one `f32` plane (see [`super::GatheredPool`]).
    ///
    /// # Safety
    /// AVX2 must be present, `plane` must be longer than `windows.reach`, and `vals` and `idx` must
    /// hold `windows.outputs` entries.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn pool_f32(
        plane: &[f32],
        windows: &Windows,
        vals: &mut [f32],
        idx: &mut [i64],
    ) {
        let n = windows.outputs;
        for (chunk, corners) in windows.corners.chunks_exact(8).enumerate() {
            let q = chunk * 8;
            // SAFETY: `corners` holds 8 entries; the windows lie in the plane (caller).
            let (best, at) = unsafe {
                let c = _mm256_loadu_si256(corners.as_ptr().cast());
                eight(plane.as_ptr(), c, &windows.taps)
            };
            let (lo, hi) = (
                _mm256_cvtepi32_epi64(_mm256_castsi256_si128(at)),
                _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(at)),
            );
            if q + 8 <= n {
                // SAFETY: outputs `q..q + 8` exist.
                unsafe {
                    _mm256_storeu_ps(vals.as_mut_ptr().add(q), best);
                    _mm256_storeu_si256(idx.as_mut_ptr().add(q).cast(), lo);
                    _mm256_storeu_si256(idx.as_mut_ptr().add(q + 4).cast(), hi);
                }
            } else {
                // The last, partial vector: its extra lanes repeat the last window.
                let (mut v, mut i) = ([0f32; 8], [0i64; 8]);
                // SAFETY: the arrays hold 8 entries.
                unsafe {
                    _mm256_storeu_ps(v.as_mut_ptr(), best);
                    _mm256_storeu_si256(i.as_mut_ptr().cast(), lo);
                    _mm256_storeu_si256(i.as_mut_ptr().add(4).cast(), hi);
                }
                vals[q..].copy_from_slice(&v[..n - q]);
                idx[q..].copy_from_slice(&i[..n - q]);
            }
        }
    }

    /// Four outputs of a plane from the corners `c` (see [`eight`]).
    ///
    /// # Safety
    /// AVX2 must be present, and `plane` must hold every position `c + tap`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn four(plane: *const f64, c: __m128i, taps: &[i32]) -> (__m256d, __m256i) {
        let mut at = _mm_add_epi32(c, _mm_set1_epi32(taps[0]));
        // SAFETY (every gather here): the caller guarantees the positions lie in the plane.
        let mut best = unsafe { _mm256_i32gather_pd::<8>(plane, at) };
        let mut at64 = _mm256_cvtepi32_epi64(at);
        for &t in &taps[1..] {
            at = _mm_add_epi32(c, _mm_set1_epi32(t));
            let v = unsafe { _mm256_i32gather_pd::<8>(plane, at) };
            let larger = _mm256_cmp_pd::<_CMP_GT_OQ>(v, best);
            let first_nan = _mm256_andnot_pd(
                _mm256_cmp_pd::<_CMP_UNORD_Q>(best, best),
                _mm256_cmp_pd::<_CMP_UNORD_Q>(v, v),
            );
            let wins = _mm256_or_pd(larger, first_nan);
            best = _mm256_blendv_pd(best, v, wins);
            at64 = _mm256_blendv_epi8(at64, _mm256_cvtepi32_epi64(at), _mm256_castpd_si256(wins));
        }
        (best, at64)
    }

    /// Pools one `f64` plane (see [`pool_f32`]).
    ///
    /// # Safety
    /// As [`pool_f32`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn pool_f64(
        plane: &[f64],
        windows: &Windows,
        vals: &mut [f64],
        idx: &mut [i64],
    ) {
        let n = windows.outputs;
        // The corners are padded to a multiple of 8: stop at the last vector holding an output.
        let vectors = windows.corners.chunks_exact(4).take(n.div_ceil(4));
        for (chunk, corners) in vectors.enumerate() {
            let q = chunk * 4;
            // SAFETY: `corners` holds 4 entries; the windows lie in the plane (caller).
            let (best, at) = unsafe {
                let c = _mm_loadu_si128(corners.as_ptr().cast());
                four(plane.as_ptr(), c, &windows.taps)
            };
            if q + 4 <= n {
                // SAFETY: outputs `q..q + 4` exist.
                unsafe {
                    _mm256_storeu_pd(vals.as_mut_ptr().add(q), best);
                    _mm256_storeu_si256(idx.as_mut_ptr().add(q).cast(), at);
                }
            } else {
                let (mut v, mut i) = ([0f64; 4], [0i64; 4]);
                // SAFETY: the arrays hold 4 entries.
                unsafe {
                    _mm256_storeu_pd(v.as_mut_ptr(), best);
                    _mm256_storeu_si256(i.as_mut_ptr().cast(), at);
                }
                vals[q..].copy_from_slice(&v[..n - q]);
                idx[q..].copy_from_slice(&i[..n - q]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each output's window scanned in row-major order, keeping the first maximum or the first NaN.
    fn reference<T: Copy + PartialOrd>(
        plane: &[T],
        w: usize,
        out: (usize, usize),
        kernel: (usize, usize),
        stride: (usize, usize),
        dilation: (usize, usize),
    ) -> (Vec<T>, Vec<i64>) {
        let (mut vals, mut idx) = (Vec::new(), Vec::new());
        for oh in 0..out.0 {
            for ow in 0..out.1 {
                let mut at = oh * stride.0 * w + ow * stride.1;
                for r in 0..kernel.0 {
                    for c in 0..kernel.1 {
                        let p =
                            (oh * stride.0 + r * dilation.0) * w + ow * stride.1 + c * dilation.1;
                        if super::super::replaces_max(plane[p], plane[at]) {
                            at = p;
                        }
                    }
                }
                vals.push(plane[at]);
                idx.push(at as i64);
            }
        }
        (vals, idx)
    }

    /// Values with many ties, signed zeros, NaNs and infinities, from a fixed pseudo-random sequence.
    fn awkward(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                match (s >> 33) % 11 {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => 0.0,
                    3 => f64::INFINITY,
                    4 => f64::NEG_INFINITY,
                    k => (k as f64 - 7.0) * 0.5,
                }
            })
            .collect()
    }

    fn check<T: Copy + PartialOrd + GatheredPool + std::fmt::Debug>(cast: fn(f64) -> T) {
        let same = |a: &[T], b: &[T]| {
            a.len() == b.len()
                && a.iter().zip(b).all(|(x, y)| {
                    #[allow(clippy::eq_op)]
                    let both_nan = x != x && y != y;
                    both_nan || format!("{x:?}") == format!("{y:?}")
                })
        };
        // (h, w, kernel, stride, dilation): both pooling layers of a small CNN, one- to 17-output
        // planes (partial vectors), overlapping windows, strides wider than the window, dilation.
        let cases = [
            (26, 26, (2, 2), (2, 2), (1, 1)),
            (11, 11, (2, 2), (2, 2), (1, 1)),
            (2, 2, (2, 2), (2, 2), (1, 1)),
            (3, 35, (3, 3), (1, 2), (1, 1)),
            (9, 7, (3, 2), (3, 1), (1, 1)),
            (8, 8, (2, 3), (1, 1), (2, 2)),
            (5, 40, (1, 4), (1, 4), (1, 1)),
        ];
        let mut gathered_ran = false;
        for (seed, &(h, w, k, s, d)) in cases.iter().enumerate() {
            let out = (
                (h - d.0 * (k.0 - 1) - 1) / s.0 + 1,
                (w - d.1 * (k.1 - 1) - 1) / s.1 + 1,
            );
            let plane: Vec<T> = awkward(h * w, seed as u64).into_iter().map(cast).collect();
            let windows = Windows::new(w, out, k, s, d).unwrap();
            let (want_v, want_i) = reference(&plane, w, out, k, s, d);
            let (mut v, mut i) = (vec![cast(7.0); out.0 * out.1], vec![-1i64; out.0 * out.1]);
            if T::pool_gathered(&plane, &windows, &mut v, &mut i) {
                gathered_ran = true;
                assert!(
                    same(&v, &want_v),
                    "{h}x{w} {k:?} {s:?} {d:?}: {v:?} vs {want_v:?}"
                );
                assert_eq!(i, want_i, "{h}x{w} {k:?} {s:?} {d:?}");
            }
            // A plane too short for its windows is refused, not read past its end.
            assert!(!T::pool_gathered(
                &plane[..windows.reach],
                &windows,
                &mut v,
                &mut i
            ));
        }
        #[cfg(target_arch = "x86_64")]
        assert_eq!(gathered_ran, std::arch::is_x86_feature_detected!("avx2"));
    }

    #[test]
    fn gathered_pooling_matches_the_window_scan_bit_for_bit() {
        check::<f32>(|v| v as f32);
        check::<f64>(|v| v);
    }

    #[test]
    fn windows_that_do_not_fit_an_i32_are_refused() {
        assert!(Windows::new(1 << 20, (4096, 2), (2, 2), (2, 2), (1, 1)).is_none());
        assert!(Windows::new(4, (0, 2), (2, 2), (2, 2), (1, 1)).is_none());
        assert!(Windows::new(4, (2, 2), (2, 2), (2, 2), (1, 1)).is_some());
    }
}
