//! Matrix products in bfloat16 with f32 accumulation: each operand element is rounded to bf16 (round
//! to nearest, ties to even) as it is packed, products of pairs are summed in f32, and the result is
//! f32. This is the arithmetic of PyTorch's bf16 autocast and of `torch.set_float32_matmul_precision
//! ("medium")`.
//!
//! On CPUs with AVX512_BF16 a packed (Goto-style) kernel multiplies with `vdpbf16ps`, which sums two
//! bf16 products into each f32 lane per instruction: twice the multiply-adds of an f32 FMA. Elsewhere
//! the operands are rounded to bf16 into f32 copies and multiplied by faer, which gives the same
//! values up to summation order. Both paths treat subnormal bf16 inputs as the hardware does only
//! where it is used: `vdpbf16ps` flushes them to zero, the fallback keeps them.
//!
//! Products at f16 precision (autocast to f16) round the operands to f16 into f32 copies and
//! multiply them in f32 the same way: this CPU has no f16 arithmetic that would be faster.

use super::{Operand, gemm};
use faer::{Accum, MatRef, Par};
use nabla_core::Precision;
use std::mem::MaybeUninit;

/// What the packed kernel needs of an element type where it exists: rounding sixteen at a time.
#[cfg(target_arch = "x86_64")]
use dot::Chunk as Packable;

/// Nothing, where the packed kernel does not exist.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) trait Packable {}
#[cfg(not(target_arch = "x86_64"))]
impl<T> Packable for T {}

/// An element that rounds to bf16: f32 (rounded to nearest even) or bf16 itself.
pub(crate) trait ToBf16: Copy + Send + Sync + 'static + Packable {
    /// The bf16 bit pattern of this value.
    fn bf16_bits(self) -> u16;
}

impl ToBf16 for f32 {
    #[inline(always)]
    fn bf16_bits(self) -> u16 {
        let bits = self.to_bits();
        if self.is_nan() {
            // Keep the sign and the top of the payload, and make sure the result is still a NaN.
            ((bits >> 16) | 0x40) as u16
        } else {
            let round = 0x7fff + ((bits >> 16) & 1);
            (bits.wrapping_add(round) >> 16) as u16
        }
    }
}

impl ToBf16 for half::bf16 {
    #[inline(always)]
    fn bf16_bits(self) -> u16 {
        self.to_bits()
    }
}

/// `x` as an operand of a product at `precision`: rounded to bf16 or f16 (to nearest, ties to even;
/// f16 overflows to infinity) and held in f32, or `x` itself at full precision.
#[inline(always)]
pub(crate) fn rounded_operand(x: f32, precision: Precision) -> f32 {
    match precision {
        Precision::Full => x,
        Precision::Bf16 => bf16_value(x.bf16_bits()),
        Precision::F16 => half::f16::from_f32(x).to_f32(),
    }
}

/// The f32 value of a bf16 bit pattern.
#[inline(always)]
pub(crate) fn bf16_value(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// A strided matrix view: element `(i, j)` is `data[offset + i * rs + j * cs]`.
#[derive(Clone, Copy)]
pub(crate) struct View<'a, T> {
    pub data: &'a [T],
    pub offset: usize,
    pub rows: usize,
    pub cols: usize,
    pub rs: isize,
    pub cs: isize,
}

impl<'a, T: Copy> View<'a, T> {
    /// Item `i` of the batch of `rows x cols` matrices that `op` describes in `data`.
    fn item(data: &'a [T], op: &Operand, i: usize, rows: usize, cols: usize) -> Self {
        View {
            data,
            offset: op.offsets[i],
            rows,
            cols,
            rs: op.rs,
            cs: op.cs,
        }
    }

    #[inline(always)]
    fn at(&self, i: usize, j: usize) -> T {
        let index = self.offset as isize + i as isize * self.rs + j as isize * self.cs;
        self.data[index as usize]
    }

    /// The rows `start..start + len`.
    fn rows(self, start: usize, len: usize) -> Self {
        View {
            offset: (self.offset as isize + start as isize * self.rs) as usize,
            rows: len,
            ..self
        }
    }

    /// The transposed view.
    fn t(self) -> Self {
        View {
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }
}

/// The row-major output, `rows x cols` with row stride `ld`.
struct Out {
    ptr: *mut f32,
    rows: usize,
    cols: usize,
    ld: usize,
}

// SAFETY: the kernels' tasks write disjoint tiles of the output, each from one thread.
unsafe impl Send for Out {}
// SAFETY: as above: shared between tasks only to address their own tiles.
unsafe impl Sync for Out {}

/// How the products run: with `vdpbf16ps`, or by faer on bf16-rounded f32 copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// The packed AVX512_BF16 kernel.
    Dot,
    /// Operands rounded to bf16 into f32 copies, multiplied by faer in f32.
    Rounded,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub(crate) fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            static DOT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
            let dot = *DOT.get_or_init(|| {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512bf16")
            });
            if dot {
                return Kernel::Dot;
            }
        }
        Kernel::Rounded
    }
}

/// The `m x n` output of the product of `a` (`m x k`) and `b` (`k x n`) in `dst`, or `None` when there is nothing
/// left to compute (an empty output, or `k = 0`, where `dst` is filled with zeros).
fn output<T>(dst: &mut [MaybeUninit<f32>], a: &View<'_, T>, b: &View<'_, T>) -> Option<Out> {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert!(dst.len() >= m * n && k == b.rows);
    if m == 0 || n == 0 {
        return None;
    }
    if k == 0 {
        for v in &mut dst[..m * n] {
            v.write(0.0);
        }
        return None;
    }
    Some(Out {
        ptr: dst.as_mut_ptr().cast(),
        rows: m,
        cols: n,
        ld: n,
    })
}

/// `dst = a b` in bf16 with f32 accumulation, for `dst` a contiguous row-major `[m, n]` slice, on the
/// given kernel, over the thread pool when `par`. Every element of `dst` is written before any is
/// read, so it may start uninitialised.
pub(crate) fn gemm_bf16<T: ToBf16>(
    dst: &mut [MaybeUninit<f32>],
    a: View<'_, T>,
    b: View<'_, T>,
    kernel: Kernel,
    par: bool,
) {
    let Some(out) = output(dst, &a, &b) else {
        return;
    };
    match kernel {
        Kernel::Dot => {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Kernel::Dot` is only chosen (by `detect`, or by tests after `detect` returned
            // it) where the CPU has AVX512F, AVX512BW, AVX512VL and AVX512_BF16; `out` addresses
            // `dst`, which holds `m x n` elements.
            unsafe {
                let threads = if par { rayon::current_num_threads() } else { 1 };
                dot::product(out, a, b, threads)
            }
            #[cfg(not(target_arch = "x86_64"))]
            rounded(out, a, b, par, |x: T| bf16_value(x.bf16_bits()))
        }
        Kernel::Rounded => rounded(out, a, b, par, |x: T| bf16_value(x.bf16_bits())),
    }
}

/// `dst = a b` with each operand element rounded to f16 (to nearest, ties to even, overflow to
/// infinity) and the products summed in f32, for `dst` as in [`gemm_bf16`].
pub(crate) fn gemm_f16(
    dst: &mut [MaybeUninit<f32>],
    a: View<'_, f32>,
    b: View<'_, f32>,
    par: bool,
) {
    let Some(out) = output(dst, &a, &b) else {
        return;
    };
    rounded(out, a, b, par, |x| rounded_operand(x, Precision::F16));
}

/// The elements a faer view addresses, as a strided [`View`].
///
/// # Safety
/// The memory from the view's lowest to its highest addressed element must lie in one allocation
/// that nothing writes while the returned view lives.
unsafe fn view_of(m: MatRef<'_, f32>) -> View<'_, f32> {
    let (rows, cols, rs, cs) = (m.nrows(), m.ncols(), m.row_stride(), m.col_stride());
    let reach = |n: usize, s: isize| (n.saturating_sub(1) as isize) * s;
    let (r, c) = (reach(rows, rs), reach(cols, cs));
    let low = r.min(0) + c.min(0);
    let len = (r.max(0) + c.max(0) - low) as usize + 1;
    // SAFETY: the caller guarantees that the `len` elements from the lowest addressed one lie in one
    // allocation that nothing writes meanwhile; the view's first element sits `-low` after it.
    let data = unsafe { std::slice::from_raw_parts(m.as_ptr().offset(low), len) };
    View {
        data,
        offset: (-low) as usize,
        rows,
        cols,
        rs,
        cs,
    }
}

/// `dst = a b` at `precision` (bf16 or f16 operands, or the f32 values as they are; f32 sums) into
/// a row-major `dst`, over the thread pool when `par`.
pub(crate) fn gemm_at(
    dst: &mut [MaybeUninit<f32>],
    a: View<'_, f32>,
    b: View<'_, f32>,
    precision: Precision,
    par: bool,
) {
    match precision {
        Precision::Bf16 => gemm_bf16(dst, a, b, Kernel::detect(), par),
        Precision::F16 => gemm_f16(dst, a, b, par),
        Precision::Full => {
            if let Some(out) = output(dst, &a, &b) {
                rounded(out, a, b, par, |x: f32| x);
            }
        }
    }
}

/// `dst = a b`, or `dst += a b` with [`Accum::Add`], at a rounding `precision` for faer views
/// (non-empty), over the thread pool when `par` is parallel: the products of a convolution that
/// autocast runs in bf16 or f16.
///
/// # Safety
/// As [`view_of`], for `a` and `b`; `dst` must not overlap them.
pub(crate) unsafe fn gemm_rounded_faer(
    dst: faer::MatMut<'_, f32>,
    accum: Accum,
    a: MatRef<'_, f32>,
    b: MatRef<'_, f32>,
    par: Par,
    precision: Precision,
) {
    let (m, n) = (dst.nrows(), dst.ncols());
    // SAFETY: forwarded from the caller.
    let (va, vb) = unsafe { (view_of(a), view_of(b)) };
    let par = matches!(par, Par::Rayon(_));
    let row_major = dst.col_stride() == 1 && dst.row_stride() == n as isize;
    if matches!(accum, Accum::Replace) && row_major {
        // SAFETY: a row-major destination of `m x n` elements is one contiguous run; the product
        // writes all of them.
        let out = unsafe { std::slice::from_raw_parts_mut(dst.as_ptr_mut().cast(), m * n) };
        gemm_at(out, va, vb, precision, par);
        return;
    }
    let mut product = Vec::with_capacity(m * n);
    gemm_at(
        &mut product.spare_capacity_mut()[..m * n],
        va,
        vb,
        precision,
        par,
    );
    // SAFETY: `gemm_bf16` wrote all `m * n` elements.
    unsafe { product.set_len(m * n) };
    let mut dst = dst;
    for i in 0..m {
        for j in 0..n {
            let v = product[i * n + j];
            let d = dst.as_mut().get_mut(i, j);
            *d = if matches!(accum, Accum::Add) {
                *d + v
            } else {
                v
            };
        }
    }
}

/// Both operands rounded by `round` into contiguous f32 copies, multiplied by faer: the bf16
/// fallback, and the f16 product.
fn rounded<T: Copy>(
    out: Out,
    a: View<'_, T>,
    b: View<'_, T>,
    par: bool,
    round: impl Fn(T) -> f32 + Copy,
) {
    let copy = |v: View<'_, T>| -> Vec<f32> {
        let mut data = Vec::with_capacity(v.rows * v.cols);
        for i in 0..v.rows {
            data.extend((0..v.cols).map(|j| round(v.at(i, j))));
        }
        data
    };
    let (x, y) = (copy(a), copy(b));
    // SAFETY: `out` addresses `rows` rows of `cols` elements `ld` apart, owned by this task.
    let dst = unsafe {
        faer::MatMut::from_raw_parts_mut(out.ptr, out.rows, out.cols, out.ld as isize, 1)
    };
    gemm(
        dst,
        Accum::Replace,
        MatRef::from_row_major_slice(&x, a.rows, a.cols),
        MatRef::from_row_major_slice(&y, b.rows, b.cols),
        if par { Par::rayon(0) } else { Par::Seq },
    );
}

/// The batched product with `product` (a bf16 or f16 product with f32 sums) run on each item, the
/// strided operands described by `oa` and `ob`; returns the contiguous `[batch, m, n]` f32 result.
pub(crate) fn matmul_rounded<T: Copy + Send + Sync>(
    a: &[T],
    oa: &Operand,
    b: &[T],
    ob: &Operand,
    d: super::Dims,
    product: impl Fn(&mut [MaybeUninit<f32>], View<'_, T>, View<'_, T>, bool) + Sync,
) -> Vec<f32> {
    let per = d.m * d.n;
    let len = d.batch * per;
    if per == 0 || d.k == 0 {
        return crate::strided::filled_vec(len, 0.0);
    }
    // From the buffer cache, uninitialised: every product writes its whole block.
    let mut out = crate::strided::output_vec::<f32>(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    super::for_each_product(spare, d, |i, dst, par| {
        let lhs = View::item(a, oa, i, d.m, d.k);
        let rhs = View::item(b, ob, i, d.k, d.n);
        product(dst, lhs, rhs, matches!(par, Par::Rayon(_)));
    });
    // SAFETY: every product wrote its whole block of `per` elements.
    unsafe { out.set_len(len) };
    out
}

#[cfg(target_arch = "x86_64")]
mod dot;
#[cfg(test)]
mod tests;
