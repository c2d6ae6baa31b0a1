//! Batched matrix products.
//!
//! Float and complex products go through faer with the views' strides passed straight through: a
//! transposed, sliced or reversed operand is never copied, and broadcast batch dimensions (stride
//! 0) are never materialised. One large product is split into output blocks that run on every
//! thread; a batch of small products runs one product per thread with faer sequential. Integer
//! products use a simple row-oriented kernel with wrapping arithmetic.

pub(crate) mod bf16;
mod int;
#[cfg(test)]
mod tests;

use crate::CpuStorage;
use crate::reduce::Arith;
use faer::traits::ComplexField;
use faer::{Accum, MatMut, MatRef, Par};
use nabla_core::{Element, Error, Layout, Precision, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Multiply-adds per product above which a single product is worth splitting over threads: below it
/// (128x128x128 is 2^21) waking the pool costs about as much as the second core saves.
const PAR_MATRIX_FLOPS: usize = 1 << 22;

/// The shapes of a validated batched product.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    /// Number of products.
    pub batch: usize,
    /// Rows of the left operand and of the result.
    pub m: usize,
    /// Shared inner dimension.
    pub k: usize,
    /// Columns of the right operand and of the result.
    pub n: usize,
}

/// A matrix operand: where each batch item starts, and its row and column strides.
pub(crate) struct Operand {
    /// Buffer offset of each batch item's `[0, 0]` element.
    pub offsets: Vec<usize>,
    /// Step between rows.
    pub rs: isize,
    /// Step between columns.
    pub cs: isize,
}

impl Operand {
    fn new(layout: &Layout) -> Result<Operand> {
        let r = layout.rank();
        let batch = Layout::from_parts(
            layout.shape()[..r - 2].to_vec(),
            layout.strides()[..r - 2].to_vec(),
            layout.offset(),
        )?;
        Ok(Operand {
            offsets: batch.offsets().collect(),
            rs: layout.strides()[r - 2],
            cs: layout.strides()[r - 1],
        })
    }
}

/// Checks the operands of a batched product `[..., m, k] x [..., k, n]` and returns its dimensions.
pub(crate) fn check(op: &'static str, sa: &[usize], sb: &[usize]) -> Result<Dims> {
    if sa.len() < 2 || sb.len() < 2 {
        return Err(Error::shapes(op, sa, sb)
            .with_hint("both operands need at least two dimensions, [..., m, k] and [..., k, n]"));
    }
    let (ra, rb) = (sa.len(), sb.len());
    if sa[..ra - 2] != sb[..rb - 2] {
        return Err(Error::shapes(op, sa, sb).with_hint(format!(
            "batch dimensions {:?} and {:?} differ (broadcast them to one shape first)",
            &sa[..ra - 2],
            &sb[..rb - 2]
        )));
    }
    let (m, k, k2, n) = (sa[ra - 2], sa[ra - 1], sb[rb - 2], sb[rb - 1]);
    if k != k2 {
        return Err(
            Error::shapes(op, sa, sb).with_hint(format!("inner dimensions {k} and {k2} differ"))
        );
    }
    Ok(Dims {
        batch: sa[..ra - 2].iter().product(),
        m,
        k,
        n,
    })
}

/// Batched product of `a: [..., m, k]` and `b: [..., k, n]` with equal batch dimensions.
pub(crate) fn matmul(
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<CpuStorage> {
    let dims = check("matmul", la.shape(), lb.shape())?;
    let dtype = a.dtype();
    if dtype != b.dtype() {
        return Err(Error::DTypeMismatch {
            op: "matmul",
            lhs: dtype,
            rhs: b.dtype(),
        });
    }
    fn float<T: Element + ComplexField>(
        a: &CpuStorage,
        la: &Layout,
        b: &CpuStorage,
        lb: &Layout,
        dims: Dims,
    ) -> Result<CpuStorage> {
        let (x, y) = (a.typed::<T>("matmul")?, b.typed::<T>("matmul")?);
        let out = matmul_faer(x, &Operand::new(la)?, y, &Operand::new(lb)?, dims);
        Ok(CpuStorage::from_vec(out))
    }
    fn int<T: Arith>(
        a: &CpuStorage,
        la: &Layout,
        b: &CpuStorage,
        lb: &Layout,
        dims: Dims,
    ) -> Result<CpuStorage> {
        let (x, y) = (a.typed::<T>("matmul")?, b.typed::<T>("matmul")?);
        let out = int::matmul_int(x, &Operand::new(la)?, y, &Operand::new(lb)?, dims);
        Ok(CpuStorage::from_vec(out))
    }
    nabla_core::dispatch_dtype!(dtype, T, {
        real | complex => float::<T>(a, la, b, lb, dims),
        int => int::<T>(a, la, b, lb, dims),
        _ => Err(Error::dtype("matmul", dtype)),
    })
}

/// Batched product of `a: [..., m, k]` and `b: [..., k, n]` at `precision`
/// (`Backend::matmul_rounded`): at bf16 or f16 the F32 operands' elements round to that type and
/// the products sum in f32, on the fastest kernel this CPU has.
pub(crate) fn matmul_rounded(
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
    precision: Precision,
) -> Result<CpuStorage> {
    const OP: &str = "matmul_rounded";
    if precision == Precision::Full {
        return matmul(a, la, b, lb);
    }
    let dims = check(OP, la.shape(), lb.shape())?;
    precision.check_operand(OP, a.dtype())?;
    precision.check_operand(OP, b.dtype())?;
    let (x, y) = (a.typed::<f32>(OP)?, b.typed::<f32>(OP)?);
    let (oa, ob) = (Operand::new(la)?, Operand::new(lb)?);
    let out = bf16::matmul_rounded(x, &oa, y, &ob, dims, |dst, a, b, par| {
        bf16::gemm_at(dst, a, b, precision, par)
    });
    Ok(CpuStorage::from_vec(out))
}

/// A faer view of one strided matrix of `data` starting at `offset`.
///
/// # Safety
/// Every element `offset + i * rs + j * cs` (`i < rows`, `j < cols`) must lie inside `data`, and
/// `rows` and `cols` must be non-zero.
pub(crate) unsafe fn mat_ref<T>(
    data: &[T],
    offset: usize,
    rows: usize,
    cols: usize,
    rs: isize,
    cs: isize,
) -> MatRef<'_, T> {
    debug_assert!(offset < data.len());
    // SAFETY: the caller guarantees every addressed element is inside `data`, which outlives the view.
    unsafe { MatRef::from_raw_parts(data.as_ptr().add(offset), rows, cols, rs, cs) }
}

/// A faer view of a contiguous row-major `rows x cols` matrix (non-empty).
pub(crate) fn mat_mut<T>(data: &mut [T], rows: usize, cols: usize) -> MatMut<'_, T> {
    assert!(data.len() >= rows * cols && rows > 0 && cols > 0);
    // SAFETY: the `rows * cols` elements lie in `data`, which is borrowed mutably for the view's life.
    unsafe { MatMut::from_raw_parts_mut(data.as_mut_ptr(), rows, cols, cols as isize, 1) }
}

/// A faer view of a contiguous row-major `rows x cols` matrix (non-empty) over memory not yet
/// written, for a product that replaces it: with `Accum::Replace` faer writes every element of the
/// destination and reads none (its documented contract), so the output needs no zero-fill first.
///
/// # Safety
/// The view must only be passed to [`gemm`] with `Accum::Replace`, and the elements count as
/// initialised only once that product has run.
pub(crate) unsafe fn mat_uninit<T>(
    data: &mut [MaybeUninit<T>],
    rows: usize,
    cols: usize,
) -> MatMut<'_, T> {
    assert!(data.len() >= rows * cols && rows > 0 && cols > 0);
    // SAFETY: the `rows * cols` elements lie in `data`, which is borrowed mutably for the view's life;
    // the caller only writes through the view before anything reads it.
    unsafe { MatMut::from_raw_parts_mut(data.as_mut_ptr().cast(), rows, cols, cols as isize, 1) }
}

/// `dst = a * b` (or `dst += a * b`) for one product.
///
/// With a parallel `par`, the output is cut into row or column blocks (along its longer side) that
/// run as separate tasks, each a sequential faer product. On this class of machine that beats
/// faer's own split for the mid-sized products of training (batch 128 by a few hundred): for
/// example 128x784x512 goes from about 120 to about 200 GFLOP/s on two cores, and large products
/// are no slower.
pub(crate) fn gemm<T: ComplexField>(
    dst: MatMut<'_, T>,
    accum: Accum,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    par: Par,
) {
    let blocks = match par {
        Par::Seq => 1,
        Par::Rayon(threads) => 2 * threads.get(),
    };
    gemm_blocks(dst, accum, a, b, blocks);
}

/// `dst = a b`, or `dst += a b` when `accumulate`, for host kernels outside this crate (the fused
/// LSTM layer of `nabla-nn` runs its recurrent products through it), split over the thread pool as
/// this backend's own products are. A shape mismatch is an error naming `op`.
///
/// ```
/// use faer::{MatMut, MatRef};
/// let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [1.0f32, 0.0, 0.0, 1.0]);
/// let mut c = [0.0f32; 4];
/// nabla_cpu::host_gemm(
///     "example",
///     MatMut::from_row_major_slice_mut(&mut c, 2, 2),
///     false,
///     MatRef::from_row_major_slice(&a, 2, 2),
///     MatRef::from_row_major_slice(&b, 2, 2).transpose(),
/// )?;
/// assert_eq!(c, a);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn host_gemm<T: ComplexField>(
    op: &'static str,
    dst: MatMut<'_, T>,
    accumulate: bool,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
) -> Result<()> {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    if b.nrows() != k || dst.nrows() != m || dst.ncols() != n {
        return Err(
            Error::shapes(op, &[m, k], &[b.nrows(), n]).with_hint(format!(
                "into a {}x{} destination",
                dst.nrows(),
                dst.ncols()
            )),
        );
    }
    let accum = if accumulate {
        Accum::Add
    } else {
        Accum::Replace
    };
    gemm(dst, accum, a, b, par_for(m, k, n));
    Ok(())
}

/// `dst = a b` into the uninitialised row-major `[a.nrows(), b.ncols()]` matrix at the start of
/// `dst`, which it writes whole (zeros when `a` has no columns), for host kernels that fill their
/// output buffers as they go. A shape mismatch, or a `dst` too short, is an error naming `op`, and
/// then nothing is written.
///
/// ```
/// use faer::MatRef;
/// use std::mem::MaybeUninit;
/// let (a, b) = ([1.0f64, 2.0], [3.0f64, 4.0]);
/// let mut c = [MaybeUninit::<f64>::uninit(); 4];
/// nabla_cpu::host_gemm_uninit(
///     "example",
///     &mut c,
///     MatRef::from_row_major_slice(&a, 2, 1),
///     MatRef::from_row_major_slice(&b, 1, 2),
/// )?;
/// // SAFETY: the product wrote all four elements.
/// let c = c.map(|v| unsafe { v.assume_init() });
/// assert_eq!(c, [3.0, 4.0, 6.0, 8.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn host_gemm_uninit<T: ComplexField>(
    op: &'static str,
    dst: &mut [MaybeUninit<T>],
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
) -> Result<()> {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    if b.nrows() != k || m.checked_mul(n).is_none_or(|len| len > dst.len()) {
        return Err(Error::shapes(op, &[m, k], &[b.nrows(), n])
            .with_hint(format!("into a destination of {} elements", dst.len())));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        for v in &mut dst[..m * n] {
            v.write(T::zero_impl());
        }
        return Ok(());
    }
    // SAFETY: `dst` holds the `m * n` elements, and `Replace` writes them without reading them.
    let dst = unsafe { mat_uninit(dst, m, n) };
    gemm(dst, Accum::Replace, a, b, par_for(m, k, n));
    Ok(())
}

/// Smallest side of an output block worth a task of its own.
const MIN_BLOCK: usize = 32;

/// Computes `dst (+)= a * b` as up to `blocks` tasks over row or column blocks of `dst`.
fn gemm_blocks<T: ComplexField>(
    dst: MatMut<'_, T>,
    accum: Accum,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    blocks: usize,
) {
    let (m, n) = (dst.nrows(), dst.ncols());
    let along_rows = m >= n;
    let side = if along_rows { m } else { n };
    let blocks = blocks.min(side / MIN_BLOCK);
    if blocks < 2 {
        faer::linalg::matmul::matmul(dst, accum, a, b, T::one_impl(), Par::Seq);
        return;
    }
    // Cut at the midpoint and recurse: rayon balances the halves between threads.
    let mid = side / 2;
    let (left, right) = (blocks / 2, blocks - blocks / 2);
    if along_rows {
        let (top, bottom) = dst.split_at_row_mut(mid);
        let (a_top, a_bottom) = a.split_at_row(mid);
        rayon::join(
            || gemm_blocks(top, accum, a_top, b, left),
            || gemm_blocks(bottom, accum, a_bottom, b, right),
        );
    } else {
        let (lhs, rhs) = dst.split_at_col_mut(mid);
        let (b_left, b_right) = b.split_at_col(mid);
        rayon::join(
            || gemm_blocks(lhs, accum, a, b_left, left),
            || gemm_blocks(rhs, accum, a, b_right, right),
        );
    }
}

/// Faer parallelism for one product of `m x k` by `k x n` that runs alone.
pub(crate) fn par_for(m: usize, k: usize, n: usize) -> Par {
    if crate::splits(m.saturating_mul(k).saturating_mul(n), PAR_MATRIX_FLOPS) {
        Par::rayon(0)
    } else {
        Par::Seq
    }
}

/// The batched product through faer; returns the contiguous `[batch, m, n]` result.
fn matmul_faer<T: Element + ComplexField>(
    a: &[T],
    oa: &Operand,
    b: &[T],
    ob: &Operand,
    d: Dims,
) -> Vec<T> {
    let len = d.batch * d.m * d.n;
    if len == 0 || d.k == 0 {
        return crate::strided::filled_vec(len, T::zero());
    }
    let mut out = crate::strided::output_vec(len);
    let one = |i: usize, dst: &mut [MaybeUninit<T>], par: Par| {
        // SAFETY: the layouts were checked against the buffers by the backend, and m, k, n are
        // non-zero; the destination is only replaced.
        let (lhs, rhs, dst) = unsafe {
            (
                mat_ref(a, oa.offsets[i], d.m, d.k, oa.rs, oa.cs),
                mat_ref(b, ob.offsets[i], d.k, d.n, ob.rs, ob.cs),
                mat_uninit(dst, d.m, d.n),
            )
        };
        gemm(dst, Accum::Replace, lhs, rhs, par);
    };
    for_each_product(&mut out.spare_capacity_mut()[..len], d, one);
    // SAFETY: every product replaced its whole block of `per` elements.
    unsafe { out.set_len(len) };
    out
}

/// Runs `one(i, block, par)` for each product `i` of a batch of `d` products on its `m * n` block of
/// `out`, choosing the parallelism: few large products one after another, each split over the
/// threads (`par` from [`par_for`]), with no imbalance between products; many products one per task,
/// each sequential; little work on this thread alone.
pub(crate) fn for_each_product<U: Send>(
    out: &mut [U],
    d: Dims,
    one: impl Fn(usize, &mut [U], Par) + Sync,
) {
    let per = d.m * d.n;
    let threads = rayon::current_num_threads();
    let big = d.m * d.k * d.n >= PAR_MATRIX_FLOPS;
    if d.batch == 1 || (big && d.batch < 4 * threads) {
        for (i, dst) in out.chunks_mut(per).enumerate() {
            one(i, dst, par_for(d.m, d.k, d.n));
        }
    } else if crate::splits(d.batch * d.m * d.k * d.n, PAR_MATRIX_FLOPS) {
        out.par_chunks_mut(per)
            .enumerate()
            .for_each(|(i, dst)| one(i, dst, Par::Seq));
    } else {
        for (i, dst) in out.chunks_mut(per).enumerate() {
            one(i, dst, Par::Seq);
        }
    }
}
