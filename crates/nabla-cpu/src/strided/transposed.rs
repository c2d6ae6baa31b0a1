//! Elementwise maps of a row-major matrix and a transposed one, such as `x + xᵀ` or a cotangent plus
//! a transposed cotangent (a Gram product's tangent and its reverse pass make both).
//!
//! Row by row, the transposed operand is read one element per cache line. Here each task takes a band
//! of rows and copies the transposed operand's tiles into a small row-major buffer first, reading
//! whole cache lines, so that the map itself runs over contiguous rows of both operands.

use super::{CHUNK, apply2, output_vec};
use crate::PARALLEL_THRESHOLD;
use nabla_core::{Error, Layout, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Rows and columns of one tile of the transposed operand.
const TILE: usize = 32;

/// `f` over a row-major `[m, n]` operand and the transpose of a row-major `[n, m]` one, either way
/// round; `None` unless the two layouts are exactly that (rank 2, more than one band of rows, more
/// than one column). Fewer rows would make one task of the whole map; the general loop splits long
/// rows across threads instead.
pub(crate) fn map2_transposed<A, B, U, F>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    f: &F,
) -> Option<Vec<U>>
where
    A: Copy + Sync,
    B: Copy + Sync,
    U: Send,
    F: Fn(A, B) -> U + Sync,
{
    debug_assert_eq!(la.shape(), lb.shape());
    if let (Some(ra), Some(rb)) = (la.contiguous_range(), transposed_range(lb)) {
        return Some(rows_with_transposed(&a[ra], &b[rb], la.shape(), f));
    }
    if let (Some(ra), Some(rb)) = (transposed_range(la), lb.contiguous_range()) {
        return Some(rows_with_transposed(&b[rb], &a[ra], la.shape(), &|y, x| {
            f(x, y)
        }));
    }
    None
}

/// The buffer range of `l` when it is the transpose of a contiguous row-major matrix.
fn transposed_range(l: &Layout) -> Option<std::ops::Range<usize>> {
    let shape = l.shape();
    if shape.len() != 2 || shape[0] <= TILE || shape[1] < 2 {
        return None;
    }
    l.transpose(0, 1).ok()?.contiguous_range()
}

/// `out[i, j] = f(rows[i * n + j], cols[j * m + i])` for `shape = [m, n]`.
fn rows_with_transposed<A, B, U, F>(rows: &[A], cols: &[B], shape: &[usize], f: &F) -> Vec<U>
where
    A: Copy + Sync,
    B: Copy + Sync,
    U: Send,
    F: Fn(A, B) -> U + Sync,
{
    let (m, n) = (shape[0], shape[1]);
    let mut out: Vec<U> = output_vec(m * n);
    let spare = &mut out.spare_capacity_mut()[..m * n];
    // Each task runs the bands of TILE rows from band `first` that `dst` holds, with one tile buffer.
    let task = |first: usize, dst: &mut [MaybeUninit<U>]| {
        let mut tile = [cols[0]; TILE * TILE];
        for (k, band) in dst.chunks_mut(TILE * n).enumerate() {
            band_with_transposed(rows, cols, m, n, (first + k) * TILE, band, &mut tile, f);
        }
    };
    if crate::splits(m * n, PARALLEL_THRESHOLD) {
        let bands = (CHUNK / (TILE * n)).max(1);
        spare
            .par_chunks_mut(bands * TILE * n)
            .enumerate()
            .for_each(|(t, dst)| task(t * bands, dst));
    } else {
        task(0, spare);
    }
    // SAFETY: each band wrote every element of its rows, and the bands cover all m * n.
    unsafe { out.set_len(m * n) };
    out
}

/// Rows `first..` of the map (as many as `dst` holds), tile by tile across the columns, through
/// the scratch `tile`.
#[allow(clippy::too_many_arguments)]
fn band_with_transposed<A, B, U, F>(
    rows: &[A],
    cols: &[B],
    m: usize,
    n: usize,
    first: usize,
    dst: &mut [MaybeUninit<U>],
    tile: &mut [B; TILE * TILE],
    f: &F,
) where
    A: Copy,
    B: Copy,
    F: Fn(A, B) -> U,
{
    let height = dst.len() / n;
    for left in (0..n).step_by(TILE) {
        let width = TILE.min(n - left);
        // tile[r * TILE + c] = the transposed operand at (first + r, left + c), read column by column
        // of the tile, which is row by row of its buffer.
        for c in 0..width {
            let src = &cols[(left + c) * m + first..][..height];
            for (r, &v) in src.iter().enumerate() {
                tile[r * TILE + c] = v;
            }
        }
        for r in 0..height {
            let i = first + r;
            apply2(
                &rows[i * n + left..][..width],
                &tile[r * TILE..][..width],
                &mut dst[r * n + left..][..width],
                f,
            );
        }
    }
}

/// The transpose of the row-major `[rows, cols]` matrix `src`: the row-major `[cols, rows]` matrix,
/// for host kernels outside this crate (the fused LSTM layer multiplies by `W_hhᵀ` every step, and a
/// product reads a row-major right operand faster than a transposed view). Bands of `TILE` output
/// rows run as parallel tasks, tile by tile across the input, so that the reads of each tile share
/// their cache lines and the writes run along the output's rows. A length mismatch is an error.
///
/// ```
/// let src = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // [[1, 2, 3], [4, 5, 6]]
/// let t = nabla_cpu::host_transpose(&src, 2, 3)?;
/// assert_eq!(t, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn host_transpose<T: Copy + Send + Sync>(
    src: &[T],
    rows: usize,
    cols: usize,
) -> Result<Vec<T>> {
    if rows.checked_mul(cols) != Some(src.len()) {
        return Err(Error::invalid(
            "transpose",
            format!(
                "a {rows}x{cols} matrix needs {} elements, got {}",
                rows.saturating_mul(cols),
                src.len()
            ),
        ));
    }
    let len = src.len();
    if len == 0 {
        return Ok(Vec::new());
    }
    let mut out: Vec<T> = output_vec(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    // Output rows `first..` (as many as `dst` holds): column `first + r` of `src`, tile by tile.
    let band = |first: usize, dst: &mut [MaybeUninit<T>]| {
        let height = dst.len() / rows;
        for top in (0..rows).step_by(TILE) {
            let bottom = (top + TILE).min(rows);
            for r in 0..height {
                let out_row = &mut dst[r * rows + top..r * rows + bottom];
                for (i, o) in (top..bottom).zip(out_row) {
                    o.write(src[i * cols + first + r]);
                }
            }
        }
    };
    if crate::splits(len, PARALLEL_THRESHOLD) {
        spare
            .par_chunks_mut(TILE * rows)
            .enumerate()
            .for_each(|(b, dst)| band(b * TILE, dst));
    } else {
        band(0, spare);
    }
    // SAFETY: the bands wrote every element of their rows, and they cover all `cols * rows`.
    unsafe { out.set_len(len) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shapes below, at and above the tile and the parallel threshold, and empty ones.
    #[test]
    fn host_transpose_matches_the_definition() -> Result<()> {
        for (rows, cols) in [
            (0, 3),
            (3, 0),
            (1, 1),
            (2, 33),
            (33, 2),
            (31, 65),
            (1024, 256),
        ] {
            let src: Vec<u32> = (0..rows * cols).map(|k| k as u32).collect();
            let t = host_transpose(&src, rows, cols)?;
            assert_eq!(t.len(), rows * cols);
            for i in 0..rows {
                for j in 0..cols {
                    assert_eq!(
                        t[j * rows + i],
                        src[i * cols + j],
                        "{rows}x{cols} at ({i}, {j})"
                    );
                }
            }
        }
        assert!(host_transpose(&[1.0f32; 5], 2, 3).is_err());
        assert!(host_transpose(&[0u8; 0], usize::MAX, 2).is_err());
        // An empty matrix with a huge side returns at once.
        assert!(host_transpose(&[0u8; 0], usize::MAX, 0)?.is_empty());
        Ok(())
    }

    /// Every band and tile edge: shapes below, at and above the tile and band sizes, both operand
    /// orders, against the plain strided loop's definition.
    #[test]
    fn transposed_maps_match_the_elementwise_definition() {
        for (m, n) in [
            (33, 2),
            (33, 31),
            (64, 64),
            (100, 257),
            (300, 129),
            (1100, 3),
        ] {
            let a: Vec<f32> = (0..m * n).map(|k| k as f32 * 0.5).collect();
            let b: Vec<f32> = (0..m * n).map(|k| (k as f32).sin()).collect();
            let la = Layout::contiguous([m, n]);
            let lb = Layout::contiguous([n, m]).transpose(0, 1).unwrap();
            let expect = |i: usize, j: usize| a[i * n + j] - 3.0 * b[j * m + i];
            let got = map2_transposed(&a, &la, &b, &lb, &|x, y| x - 3.0 * y).unwrap();
            let swapped = map2_transposed(&b, &lb, &a, &la, &|y, x| x - 3.0 * y).unwrap();
            for i in 0..m {
                for j in 0..n {
                    assert_eq!(got[i * n + j].to_bits(), expect(i, j).to_bits(), "{m}x{n}");
                    assert_eq!(swapped[i * n + j].to_bits(), expect(i, j).to_bits());
                }
            }
        }
    }

    #[test]
    fn other_layouts_are_left_to_the_general_loop() {
        let a = vec![0f32; 12];
        let row_major = Layout::contiguous([3, 4]);
        let strided = Layout::contiguous([3, 8]).slice(1, 0, 4, 2).unwrap();
        assert!(map2_transposed(&a, &row_major, &a, &row_major, &|x, y| x + y).is_none());
        assert!(map2_transposed(&a, &row_major, &a, &strided, &|x, y| x + y).is_none());
        let vector = Layout::contiguous([1, 4]).transpose(0, 1).unwrap();
        assert!(
            map2_transposed(&a, &Layout::contiguous([4, 1]), &a, &vector, &|x, y| x + y).is_none()
        );
        // One band of rows: the general loop, which splits long rows across threads.
        let wide = vec![0f32; 4 * 40];
        let short = Layout::contiguous([40, 4]).transpose(0, 1).unwrap();
        let out = map2_transposed(
            &wide,
            &Layout::contiguous([4, 40]),
            &wide,
            &short,
            &|x, y| x + y,
        );
        assert!(out.is_none());
    }
}
