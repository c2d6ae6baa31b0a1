//! Max pooling with `2x2` windows placed 2 apart (the usual CNN pooling) from plain vector loads: 16
//! consecutive inputs of each of a window row pair are split into their even and odd columns, which are
//! the four taps of eight adjacent outputs.
//!
//! Vector gathers ([`super::gathered`]) serve any window shape, but they are slow on some CPUs (on
//! the AMD EPYC development machine this kernel takes half their time); this layout needs none. A
//! row's last vector overlaps the one before it (its outputs are written twice, alike), so every
//! row length from 4 up vectorises without a scalar tail. Taps are visited in window order with the
//! same replacement test as the scalar kernels (strictly larger, or the window's first NaN), so
//! values and positions are the same bit for bit.

/// Pools one plane `w` wide with `2x2` windows of stride 2 into `vals` and `idx` (`out.0 * out.1`
/// entries each, row-major); `false` (writing nothing) when no kernel is compiled for this CPU and
/// element type, or the plane does not fit.
pub(super) trait PairPool: Sized {
    /// See [`PairPool`].
    fn pool_pairs(
        plane: &[Self],
        w: usize,
        out: (usize, usize),
        vals: &mut [Self],
        idx: &mut [i64],
    ) -> bool;
}

macro_rules! no_pairs {
    ($($t:ty),*) => {$(
        impl PairPool for $t {
            fn pool_pairs(_: &[Self], _: usize, _: (usize, usize), _: &mut [Self], _: &mut [i64]) -> bool {
                false
            }
        }
    )*};
}
no_pairs!(f64);
nabla_core::for_int_types!(no_pairs);

impl PairPool for f32 {
    fn pool_pairs(
        plane: &[f32],
        w: usize,
        (out_h, out_w): (usize, usize),
        vals: &mut [f32],
        idx: &mut [i64],
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            let outputs = out_h * out_w;
            let fits = out_w >= 4
                && 2 * out_w <= w
                && out_h.checked_mul(2 * w).is_some_and(|n| n <= plane.len())
                && i32::try_from(plane.len()).is_ok()
                && vals.len() == outputs
                && idx.len() == outputs;
            if fits && std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is present; every window row pair `2 oh, 2 oh + 1` (oh < out_h) lies in the
                // plane, each window's columns `2 ow, 2 ow + 1` (ow < out_w) lie in its row, positions fit
                // an `i32`, and the outputs hold `out_h * out_w` entries.
                unsafe { x86::pool_f32(plane, w, (out_h, out_w), vals, idx) };
                return true;
            }
        }
        let _ = (plane, w, out_h, out_w, vals, idx);
        false
    }
}

/// The first output column of each vector of `lanes` outputs in a row `out_w >= lanes` long: whole
/// vectors, then one ending at the row's end (overlapping the previous one) when `lanes` does not
/// divide `out_w`.
fn vector_starts(out_w: usize, lanes: usize) -> impl Iterator<Item = usize> {
    let whole = (0..out_w / lanes).map(move |v| v * lanes);
    let tail = (!out_w.is_multiple_of(lanes)).then_some(out_w - lanes);
    whole.chain(tail)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::vector_starts;
    use crate::pool2d::x86::keep_max8;
    use std::arch::x86_64::*;

    /// The even and odd columns of 16 consecutive inputs at `p`, in order.
    ///
    /// # Safety
    /// AVX2 must be present and `p..p + 16` readable.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn split8(p: *const f32) -> (__m256, __m256) {
        // SAFETY: the caller guarantees 16 readable floats.
        let (lo, hi) = unsafe { (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))) };
        // Shuffles work within 128-bit halves: [l0 l2 h0 h2 | l4 l6 h4 h6], put back in order.
        let order = |v: __m256| {
            _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)))
        };
        (
            order(_mm256_shuffle_ps::<0b10_00_10_00>(lo, hi)),
            order(_mm256_shuffle_ps::<0b11_01_11_01>(lo, hi)),
        )
    }

    /// The even and odd columns of 8 consecutive inputs at `p`, in order.
    ///
    /// # Safety
    /// AVX2 must be present and `p..p + 8` readable.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn split4(p: *const f32) -> (__m128, __m128) {
        // SAFETY: the caller guarantees 8 readable floats.
        let (lo, hi) = unsafe { (_mm_loadu_ps(p), _mm_loadu_ps(p.add(4))) };
        (
            _mm_shuffle_ps::<0b10_00_10_00>(lo, hi),
            _mm_shuffle_ps::<0b11_01_11_01>(lo, hi),
        )
    }

    /// Pools one plane (see [`super::PairPool`]).
    ///
    /// # Safety
    /// AVX2 must be present; `out_w >= 4`, `2 * out_w <= w`, `2 * out_h * w <= plane.len()`, which
    /// fits an `i32`; `vals` and `idx` hold `out_h * out_w` entries.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn pool_f32(
        plane: &[f32],
        w: usize,
        (out_h, out_w): (usize, usize),
        vals: &mut [f32],
        idx: &mut [i64],
    ) {
        let next_row = w as i32;
        let lanes8 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
        let lanes4 = _mm_setr_epi32(0, 2, 4, 6);
        for oh in 0..out_h {
            let top = 2 * oh * w;
            let out = oh * out_w;
            if out_w >= 8 {
                for ow in vector_starts(out_w, 8) {
                    let corner = top + 2 * ow;
                    // SAFETY: both window rows hold columns `2 ow .. 2 ow + 16 <= 2 out_w <= w` (caller),
                    // and outputs `out + ow .. out + ow + 8` exist.
                    unsafe {
                        let p = plane.as_ptr().add(corner);
                        let (t00, t01) = split8(p);
                        let (t10, t11) = split8(p.add(w));
                        let at = _mm256_add_epi32(_mm256_set1_epi32(corner as i32), lanes8);
                        let (best, at) = max8([t00, t01, t10, t11], at, next_row);
                        _mm256_storeu_ps(vals.as_mut_ptr().add(out + ow), best);
                        let dst = idx.as_mut_ptr().add(out + ow).cast::<__m256i>();
                        _mm256_storeu_si256(dst, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(at)));
                        let high = _mm256_extracti128_si256::<1>(at);
                        _mm256_storeu_si256(dst.add(1), _mm256_cvtepi32_epi64(high));
                    }
                }
            } else {
                for ow in vector_starts(out_w, 4) {
                    let corner = top + 2 * ow;
                    // SAFETY: as above, with 8 columns per row and 4 outputs.
                    unsafe {
                        let p = plane.as_ptr().add(corner);
                        let (t00, t01) = split4(p);
                        let (t10, t11) = split4(p.add(w));
                        let at = _mm_add_epi32(_mm_set1_epi32(corner as i32), lanes4);
                        let (best, at) = max4([t00, t01, t10, t11], at, next_row);
                        _mm_storeu_ps(vals.as_mut_ptr().add(out + ow), best);
                        let dst = idx.as_mut_ptr().add(out + ow).cast::<__m256i>();
                        _mm256_storeu_si256(dst, _mm256_cvtepi32_epi64(at));
                    }
                }
            }
        }
    }

    /// The maxima of eight windows from their taps in window order (top-left, top-right, bottom-left,
    /// bottom-right) and their flat positions, given the top-left positions `at`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn max8(taps: [__m256; 4], at: __m256i, next_row: i32) -> (__m256, __m256i) {
        let offsets = [1, next_row, next_row + 1];
        let mut kept = (taps[0], at);
        for (&v, off) in taps[1..].iter().zip(offsets) {
            kept = keep_max8(kept, v, _mm256_add_epi32(at, _mm256_set1_epi32(off)));
        }
        kept
    }

    /// [`max8`] for four windows (the replacement test of [`keep_max8`] on 128-bit lanes).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn max4(taps: [__m128; 4], at: __m128i, next_row: i32) -> (__m128, __m128i) {
        let offsets = [1, next_row, next_row + 1];
        let (mut best, mut best_at) = (taps[0], at);
        for (&v, off) in taps[1..].iter().zip(offsets) {
            let larger = _mm_cmpgt_ps(v, best);
            let first_nan = _mm_andnot_ps(_mm_cmpunord_ps(best, best), _mm_cmpunord_ps(v, v));
            let wins = _mm_or_ps(larger, first_nan);
            best = _mm_blendv_ps(best, v, wins);
            let pos = _mm_add_epi32(at, _mm_set1_epi32(off));
            best_at = _mm_blendv_epi8(best_at, pos, _mm_castps_si128(wins));
        }
        (best, best_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each `2x2` window scanned in row-major order, keeping the first maximum or the first NaN.
    fn reference(plane: &[f32], w: usize, out: (usize, usize)) -> (Vec<f32>, Vec<i64>) {
        let (mut vals, mut idx) = (Vec::new(), Vec::new());
        for oh in 0..out.0 {
            for ow in 0..out.1 {
                let corner = 2 * oh * w + 2 * ow;
                let mut at = corner;
                for p in [corner + 1, corner + w, corner + w + 1] {
                    if super::super::replaces_max(plane[p], plane[at]) {
                        at = p;
                    }
                }
                vals.push(plane[at]);
                idx.push(at as i64);
            }
        }
        (vals, idx)
    }

    #[test]
    fn rows_of_4_to_20_outputs_match_the_scan_bit_for_bit() {
        let specials = [f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY, 1.0];
        for (h, w) in [
            (2, 8),
            (5, 9),
            (4, 14),
            (6, 16),
            (7, 17),
            (26, 26),
            (11, 11),
            (3, 40),
        ] {
            let out = (h / 2, w / 2);
            // Many ties (small integers) and every special value at scattered positions.
            let plane: Vec<f32> = (0..h * w)
                .map(|i| match (i * 7919) % 23 {
                    k @ 0..6 => specials[k],
                    k => ((k * 31) % 5) as f32,
                })
                .collect();
            let (mut vals, mut idx) = (vec![0.0; out.0 * out.1], vec![0; out.0 * out.1]);
            let ran = f32::pool_pairs(&plane, w, out, &mut vals, &mut idx);
            if out.1 < 4 || !cfg!(target_arch = "x86_64") {
                assert!(!ran, "{h}x{w}");
                continue;
            }
            if !std::arch::is_x86_feature_detected!("avx2") {
                continue;
            }
            assert!(ran, "{h}x{w}");
            let (want_vals, want_idx) = reference(&plane, w, out);
            assert_eq!(idx, want_idx, "{h}x{w}");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&vals), bits(&want_vals), "{h}x{w}");
        }
    }

    #[test]
    fn planes_too_short_are_left_to_the_other_kernels() {
        let plane = vec![0f32; 8 * 8 - 1];
        let (mut vals, mut idx) = (vec![0.0; 16], vec![0; 16]);
        assert!(!f32::pool_pairs(&plane, 8, (4, 4), &mut vals, &mut idx));
        assert!(!f32::pool_pairs(
            &plane,
            8,
            (3, 5),
            &mut vals[..15],
            &mut idx[..15]
        ));
    }
}
