//! Copying and adding the short runs of `im2col` and `col2im`: one kernel tap's reach across an
//! image row, often 5 to 30 elements, `oh` runs per row of the columns. A call to `memmove` per run
//! (what `copy_from_slice` compiles to) or a vectorised loop with a scalar tail costs more than the
//! run itself; on x86-64 with AVX, `f32` runs are moved in 8-lane blocks (copies of 4 to 32
//! elements, under 8 in two 4-lane blocks; adds of 8 or more) with no tail: the last block ends at
//! the run's end and overlaps the one before (a copy writes those lanes twice, alike; an add adds
//! `-0.0` there, which leaves every value's bits as they are, and writes the block before last, so
//! that the shared lanes keep that block's sums).

use crate::reduce::Arith;

/// Element types of the columns, with their run copies and adds.
pub(super) trait Runs: Arith {
    /// Copies `src` runs of `run` elements, `stride` apart, onto the consecutive runs of `dst`
    /// (`dst.len() / run` of them).
    fn copy_rows(dst: &mut [Self], src: &[Self], run: usize, stride: usize);
    /// Adds the consecutive runs of `run` elements of `src` onto runs `stride` apart in `dst`.
    fn add_rows(dst: &mut [Self], stride: usize, src: &[Self], run: usize);
}

fn copy_rows_plain<T: Copy>(dst: &mut [T], src: &[T], run: usize, stride: usize) {
    for (i, d) in dst.chunks_exact_mut(run).enumerate() {
        d.copy_from_slice(&src[i * stride..][..run]);
    }
}

fn add_rows_plain<T: Arith>(dst: &mut [T], stride: usize, src: &[T], run: usize) {
    for (i, s) in src.chunks_exact(run).enumerate() {
        for (d, &v) in dst[i * stride..][..run].iter_mut().zip(s) {
            *d = d.add(v);
        }
    }
}

impl Runs for f64 {
    fn copy_rows(dst: &mut [Self], src: &[Self], run: usize, stride: usize) {
        copy_rows_plain(dst, src, run, stride);
    }

    fn add_rows(dst: &mut [Self], stride: usize, src: &[Self], run: usize) {
        add_rows_plain(dst, stride, src, run);
    }
}

/// `true` when `count` runs of `run` elements, `stride` apart, lie in `len` elements.
fn runs_fit(count: usize, run: usize, stride: usize, len: usize) -> bool {
    count == 0
        || (count - 1)
            .checked_mul(stride)
            .and_then(|v| v.checked_add(run))
            .is_some_and(|end| end <= len)
}

/// `true` when the 8-lane `f32` kernels can run on this CPU.
fn has_avx() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

impl Runs for f32 {
    fn copy_rows(dst: &mut [Self], src: &[Self], run: usize, stride: usize) {
        #[cfg(target_arch = "x86_64")]
        if (4..=32).contains(&run) && runs_fit(dst.len() / run, run, stride, src.len()) && has_avx()
        {
            // SAFETY: AVX is present, runs hold 4 to 32 elements, and every run lies in its buffer.
            unsafe { x86::copy_rows(dst, src, run, stride) };
            return;
        }
        copy_rows_plain(dst, src, run, stride);
    }

    fn add_rows(dst: &mut [Self], stride: usize, src: &[Self], run: usize) {
        #[cfg(target_arch = "x86_64")]
        if run >= 8 && runs_fit(src.len() / run, run, stride, dst.len()) && has_avx() {
            // SAFETY: AVX is present, runs hold at least 8 elements, and every run lies in its buffer.
            unsafe { x86::add_rows(dst, stride, src, run) };
            return;
        }
        add_rows_plain(dst, stride, src, run);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Copies one run of `n` (4 to 32) elements in 8-lane blocks (4-lane under 8), the last block
    /// ending at the end.
    ///
    /// # Safety
    /// AVX must be present; `s..s + n` is readable and `d..d + n` writable.
    #[inline]
    #[target_feature(enable = "avx")]
    unsafe fn copy(d: *mut f32, s: *const f32, n: usize) {
        // SAFETY (every access): each block lies in `0..n` (caller).
        unsafe {
            if n < 8 {
                _mm_storeu_ps(d, _mm_loadu_ps(s));
                _mm_storeu_ps(d.add(n - 4), _mm_loadu_ps(s.add(n - 4)));
                return;
            }
            _mm256_storeu_ps(d, _mm256_loadu_ps(s));
            if n > 16 {
                _mm256_storeu_ps(d.add(8), _mm256_loadu_ps(s.add(8)));
            }
            if n > 24 {
                _mm256_storeu_ps(d.add(16), _mm256_loadu_ps(s.add(16)));
            }
            _mm256_storeu_ps(d.add(n - 8), _mm256_loadu_ps(s.add(n - 8)));
        }
    }

    /// See [`super::Runs::copy_rows`].
    ///
    /// # Safety
    /// AVX must be present; `run` is 4 to 32 and every run lies in `src`.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn copy_rows(dst: &mut [f32], src: &[f32], run: usize, stride: usize) {
        for (i, d) in dst.chunks_exact_mut(run).enumerate() {
            // SAFETY: run `i` of `src` lies in it (caller), and `d` holds `run` elements.
            unsafe { copy(d.as_mut_ptr(), src.as_ptr().add(i * stride), run) };
        }
    }

    /// `-1` lanes from position 8 on: 8 consecutive entries from `8 - done` select the lanes from
    /// `done` on.
    static FROM: [i32; 16] = [0, 0, 0, 0, 0, 0, 0, 0, -1, -1, -1, -1, -1, -1, -1, -1];

    /// See [`super::Runs::add_rows`].
    ///
    /// # Safety
    /// AVX must be present; `run` is at least 8 and every run lies in `dst`.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn add_rows(dst: &mut [f32], stride: usize, src: &[f32], run: usize) {
        let whole = run / 8 * 8;
        let last = run - 8;
        // The last block's lanes that the whole blocks already added (`< 8`) take `-0.0`.
        let done = whole - last;
        // SAFETY: `8 - done` is in `1..=8`, so 8 entries from it lie in the table.
        let take = unsafe {
            _mm256_castsi256_ps(_mm256_loadu_si256(
                FROM.as_ptr().add(8 - done).cast::<__m256i>(),
            ))
        };
        let identity = _mm256_set1_ps(-0.0);
        // With a partial block, the last whole block is added together with it (below).
        let plain = if whole == run { whole } else { whole - 8 };
        for (i, s) in src.chunks_exact(run).enumerate() {
            let (s, d) = (s.as_ptr(), dst[i * stride..].as_mut_ptr());
            // SAFETY (every access): each block lies in `0..run` of the source run and of run `i` of
            // `dst` (caller).
            unsafe {
                let mut at = 0;
                while at < plain {
                    let sum = _mm256_add_ps(_mm256_loadu_ps(d.add(at)), _mm256_loadu_ps(s.add(at)));
                    _mm256_storeu_ps(d.add(at), sum);
                    at += 8;
                }
                if plain != whole {
                    // Both overlapping blocks are read before either is written (a read of a block
                    // just written in part would wait for the write), and the whole block is written
                    // last, so that the shared lanes keep its sums.
                    let (d_whole, d_last) =
                        (_mm256_loadu_ps(d.add(plain)), _mm256_loadu_ps(d.add(last)));
                    let tail = _mm256_blendv_ps(identity, _mm256_loadu_ps(s.add(last)), take);
                    _mm256_storeu_ps(d.add(last), _mm256_add_ps(d_last, tail));
                    let head = _mm256_add_ps(d_whole, _mm256_loadu_ps(s.add(plain)));
                    _mm256_storeu_ps(d.add(plain), head);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Every run length, with strides leaving gaps, copies and adds exactly; `-0.0` plus `-0.0` stays
    /// `-0.0`; and the `f32` kernels agree with the plain loops.
    #[test]
    fn runs_copy_and_add_every_length_exactly() {
        let src: Vec<f32> = (0..160)
            .map(|i| match i % 5 {
                0 => -0.0,
                1 => f32::NAN,
                _ => i as f32,
            })
            .collect();
        for run in 1..=40 {
            for (count, gap) in [(1, 0), (3, 0), (3, 1), (2, 7)] {
                let stride = run + gap;
                if (count - 1) * stride + run > src.len() {
                    continue;
                }
                let mut copied = vec![f32::INFINITY; count * run];
                f32::copy_rows(&mut copied, &src, run, stride);
                let mut want = vec![0.0; count * run];
                copy_rows_plain(&mut want, &src, run, stride);
                assert_eq!(bits(&copied), bits(&want), "copy {run} {count} {gap}");
                let mut sum = vec![-0.0f32; (count - 1) * stride + run];
                f32::add_rows(&mut sum, stride, &copied, run);
                f32::add_rows(&mut sum, stride, &copied, run);
                let mut want_sum = vec![-0.0f32; sum.len()];
                add_rows_plain(&mut want_sum, stride, &copied, run);
                add_rows_plain(&mut want_sum, stride, &copied, run);
                assert_eq!(bits(&sum), bits(&want_sum), "add {run} {count} {gap}");
            }
        }
    }
}
