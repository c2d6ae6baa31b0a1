//! 2-D convolution (cross-correlation, as in PyTorch) over NCHW inputs and OIHW weights, with its input
//! and weight gradients, through `im2col` and faer matrix products.
//!
//! For one image `n` and channel group `g` (with `P = OH * OW` output pixels and `K = C/groups * KH * KW`
//! kernel taps):
//! - forward: `y[n, g] (og x P) = W[g] (og x K) * cols(x[n, g]) (K x P)`;
//! - input gradient: `dx[n, g] = col2im(W[g]^T * dy[n, g])`;
//! - weight gradient: `dW[g] = sum over n of dy[n, g] * cols(x[n, g])^T`.
//!
//! Work is split across threads over (image, group) pairs when there are enough of them; otherwise faer
//! parallelises each product. Strided inputs are read in place.
//!
//! Where the output planes are small (ResNet-18's last stage: 4x4 pixels), a product per image
//! would have a handful of columns and run far below the machine's peak; there, with one group, the
//! columns of several images sit side by side and one product serves them all
//! ([`images_per_product`]), at the cost of copying the small outputs (or output gradients) between
//! the product's layout and the images'.
//!
//! 3x3 convolutions of unit stride and dilation with one group and enough channels run as Winograd
//! transforms instead (`winograd.rs`): 2.25x fewer multiply-adds in 16 smaller products.

mod im2col;
mod runs;
#[cfg(test)]
mod tests;
mod winograd;

use crate::CpuStorage;
use crate::matmul::bf16::gemm_rounded_faer;
use crate::matmul::{gemm, mat_mut, mat_ref, mat_uninit, par_for};
use crate::reduce::Arith;
use crate::strided::{filled_vec, gather_view, output_vec};
use faer::traits::ComplexField;
use faer::{Accum, MatMut, MatRef, Par};
use im2col::{Geom, Image, col2im, im2col};
use nabla_core::{Conv2dParams, DType, Element, Error, Layout, Precision, Result};
use rayon::prelude::*;
use runs::Runs;
use std::borrow::Cow;

/// Multiply-adds above which a convolution is worth splitting across threads.
const PAR_FLOPS: usize = 1 << 18;

/// The float types convolutions support.
trait Float: Element + Arith + Runs + ComplexField + winograd::Real {
    /// `dst = a b` (or `dst += a b`) at `precision`, which is [`Precision::Full`] for any type but
    /// F32 (checked by [`float_dtype`]).
    ///
    /// The operands are views of the convolution's inputs or of a thread's scratch, and `dst` a
    /// different buffer, as the rounded (bf16, f16) products require.
    fn product(
        dst: MatMut<'_, Self>,
        accum: Accum,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        par: Par,
        precision: Precision,
    ) {
        debug_assert_eq!(precision, Precision::Full);
        gemm(dst, accum, a, b, par);
    }
}

impl Float for f32 {
    fn product(
        dst: MatMut<'_, f32>,
        accum: Accum,
        a: MatRef<'_, f32>,
        b: MatRef<'_, f32>,
        par: Par,
        precision: Precision,
    ) {
        match precision {
            Precision::Full => gemm(dst, accum, a, b, par),
            // SAFETY: the operands address inputs or scratch that nothing writes during the
            // product, each one allocation, and never the destination (see the trait method).
            Precision::Bf16 | Precision::F16 => unsafe {
                gemm_rounded_faer(dst, accum, a, b, par, precision)
            },
        }
    }
}

impl Float for f64 {}

/// Checks `params` on their own.
fn check_params(op: &'static str, p: &Conv2dParams) -> Result<()> {
    if p.groups == 0 {
        return Err(Error::invalid(op, "groups must be at least 1"));
    }
    if p.stride.0 == 0 || p.stride.1 == 0 || p.dilation.0 == 0 || p.dilation.1 == 0 {
        return Err(Error::invalid(
            op,
            format!(
                "stride {:?} and dilation {:?} must be positive",
                p.stride, p.dilation
            ),
        ));
    }
    Ok(())
}

/// Checks that `shape` has rank 4.
fn check_rank(op: &'static str, what: &str, shape: &[usize]) -> Result<()> {
    if shape.len() != 4 {
        return Err(Error::invalid(
            op,
            format!("expected {what}, got shape {shape:?}"),
        ));
    }
    Ok(())
}

const INPUT: &str = "a 4-D input [N, C_in, H, W]";
const WEIGHT: &str = "4-D weights [C_out, C_in / groups, KH, KW]";
const GRAD: &str = "a 4-D output gradient [N, C_out, H_out, W_out]";

/// Checks that both channel counts divide into the groups.
fn check_groups(
    op: &'static str,
    c: usize,
    o: usize,
    p: &Conv2dParams,
    lhs: &[usize],
    rhs: &[usize],
) -> Result<()> {
    if !c.is_multiple_of(p.groups) || !o.is_multiple_of(p.groups) {
        return Err(Error::shapes(op, lhs, rhs).with_hint(format!(
            "{c} input channels and {o} output channels must both be divisible by groups = {}",
            p.groups
        )));
    }
    Ok(())
}

/// The output size, or an error explaining that the kernel does not fit.
fn output_hw(
    op: &'static str,
    hw: (usize, usize),
    k: (usize, usize),
    p: &Conv2dParams,
) -> Result<(usize, usize)> {
    p.checked_output_size(op, hw, k)?.ok_or_else(|| {
        Error::invalid(
            op,
            format!(
                "a {}x{} kernel with dilation {:?} does not fit an input of {}x{} with padding {:?}",
                k.0, k.1, p.dilation, hw.0, hw.1, p.padding
            ),
        )
    })
}

/// The common dtype of two operands, which must be `F32` or `F64` (only `F32` for a rounded product).
fn float_dtype(
    op: &'static str,
    a: &CpuStorage,
    b: &CpuStorage,
    precision: Precision,
) -> Result<DType> {
    let dtype = a.dtype();
    if dtype != b.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            lhs: dtype,
            rhs: b.dtype(),
        });
    }
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(Error::dtype(op, dtype));
    }
    precision.check_operand(op, dtype)?;
    Ok(dtype)
}

/// A `[batch, rows, cols]` strided view of a 4-D operand whose last two dimensions are merged; the
/// operand is copied only when they cannot be merged without copying.
struct Mats<'a, T: Clone> {
    data: Cow<'a, [T]>,
    offset: usize,
    strides: [isize; 3],
}

impl<'a, T: Copy + Send + Sync> Mats<'a, T> {
    fn new(x: &'a [T], l: &Layout, dims: [usize; 3]) -> Self {
        match l.reshape(&dims) {
            Some(v) => Mats {
                data: Cow::Borrowed(x),
                offset: v.offset(),
                strides: [v.strides()[0], v.strides()[1], v.strides()[2]],
            },
            None => Mats {
                data: Cow::Owned(gather_view(x, l)),
                offset: 0,
                strides: [(dims[1] * dims[2]) as isize, dims[2] as isize, 1],
            },
        }
    }

    /// `rows x cols` (both non-zero) starting at row `row0` of batch item `b`.
    fn mat(&self, b: usize, row0: usize, rows: usize, cols: usize) -> MatRef<'_, T> {
        let [s0, s1, s2] = self.strides;
        let off = self.offset as isize + b as isize * s0 + row0 as isize * s1;
        // SAFETY: the view was checked against its buffer (or is a fresh contiguous copy) and the rows
        // and columns asked for lie inside it.
        unsafe { mat_ref(&self.data, off as usize, rows, cols, s1, s2) }
    }
}

/// The channels `c0..` of image `n` of a 4-D view.
fn image(l: &Layout, n: usize, c0: usize) -> Image {
    let s = l.strides();
    let off = l.offset() as isize + n as isize * s[0] + c0 as isize * s[1];
    Image {
        offset: off as usize,
        strides: [s[1], s[2], s[3]],
    }
}

/// Output planes of fewer pixels than this make products too thin to run near the machine's peak
/// (a 4x4 plane gives a 16-column product); larger ones run faster one image at a time, without the
/// copies that sharing a product costs (measured on a CNN's 11x11 planes).
const SMALL_PLANE: usize = 64;

/// The columns a shared product aims for.
const MIN_PRODUCT_COLUMNS: usize = 256;

/// Images whose columns go into one product: 1, or enough for [`MIN_PRODUCT_COLUMNS`] when the
/// output planes are smaller than [`SMALL_PLANE`] and the convolution has one group and unfolds its
/// input (`im2col`).
fn images_per_product(g: &Geom) -> usize {
    let pix = g.pixels();
    if g.is_pointwise() || g.p.groups != 1 || pix == 0 || pix >= SMALL_PLANE {
        1
    } else {
        MIN_PRODUCT_COLUMNS.div_ceil(pix).clamp(1, g.n.max(1))
    }
}

/// Runs `unit` on each `chunk`-element piece of `out` with a scratch `S` per thread: spread over
/// threads (each product sequential) when `par` is `None`, else one after another, each product
/// parallelised by faer with `par`.
fn for_units<E: Send, S: Default>(
    out: &mut [E],
    chunk: usize,
    par: Option<Par>,
    unit: impl Fn(usize, &mut [E], &mut S, Par) + Send + Sync,
) {
    match par {
        // One run of units per thread, so that each thread sets up its scratch once.
        None => {
            let per_thread = out
                .len()
                .div_ceil(chunk)
                .div_ceil(rayon::current_num_threads());
            out.par_chunks_mut(chunk)
                .with_min_len(per_thread)
                .enumerate()
                .for_each_init(S::default, |scratch, (u, dst)| {
                    unit(u, dst, scratch, Par::Seq)
                })
        }
        Some(par) => {
            let mut scratch = S::default();
            for (u, dst) in out.chunks_mut(chunk).enumerate() {
                unit(u, dst, &mut scratch, par);
            }
        }
    }
}

/// Copies the output gradients of images `n0..n0 + count` (`[o, pixels]` each) side by side into
/// `dst`, `o x (count * pixels)`.
fn gather_images<T: Float>(
    dym: &Mats<'_, T>,
    n0: usize,
    count: usize,
    o: usize,
    pix: usize,
    dst: &mut Vec<T>,
) {
    let ld = count * pix;
    dst.resize(o * ld, T::zero());
    for i in 0..count {
        let src = dym.mat(n0 + i, 0, o, pix);
        for (r, row) in dst.chunks_exact_mut(ld).enumerate() {
            for (p, d) in row[i * pix..][..pix].iter_mut().enumerate() {
                *d = src[(r, p)];
            }
        }
    }
}

/// Unfolds images `n0..n0 + count` of `x` side by side into `cols`, `taps x (count * pixels)`.
fn unfold_images<T: Float>(
    x: &[T],
    lx: &Layout,
    g: &Geom,
    n0: usize,
    count: usize,
    cols: &mut Vec<T>,
) {
    let ld = count * g.pixels();
    cols.resize(g.taps() * ld, T::zero());
    for i in 0..count {
        im2col(x, image(lx, n0 + i, 0), g, &mut cols[i * g.pixels()..], ld);
    }
}

/// Faer parallelism for a product of the given size when (image, group) units run one after another,
/// or `None` when the units should be spread over threads instead.
fn unit_par(units: usize, m: usize, k: usize, n: usize) -> Option<Par> {
    let flops = units.saturating_mul(m).saturating_mul(k).saturating_mul(n);
    if units > 1 && units >= rayon::current_num_threads() && crate::splits(flops, PAR_FLOPS) {
        None
    } else {
        Some(par_for(m, k, n))
    }
}

/// 2-D convolution of `x: [N, C_in, H, W]` with `w: [C_out, C_in / groups, KH, KW]`.
pub(crate) fn conv2d(
    x: &CpuStorage,
    lx: &Layout,
    w: &CpuStorage,
    lw: &Layout,
    p: &Conv2dParams,
) -> Result<CpuStorage> {
    const OP: &str = "conv2d";
    let (sx, sw) = (lx.shape(), lw.shape());
    check_params(OP, p)?;
    check_rank(OP, INPUT, sx)?;
    check_rank(OP, WEIGHT, sw)?;
    let (c, o) = (sx[1], sw[0]);
    check_groups(OP, c, o, p, sx, sw)?;
    if sw[1] != c / p.groups {
        return Err(Error::shapes(OP, sx, sw).with_hint(format!(
            "the weights take {} channels per group but the input has {c} channels in {} groups",
            sw[1], p.groups
        )));
    }
    let (oh, ow) = output_hw(OP, (sx[2], sx[3]), (sw[2], sw[3]), p)?;
    let g = Geom {
        n: sx[0],
        c,
        h: sx[2],
        w: sx[3],
        o,
        kh: sw[2],
        kw: sw[3],
        oh,
        ow,
        p: *p,
    };
    fn run<T: Float>(
        x: &CpuStorage,
        lx: &Layout,
        w: &CpuStorage,
        lw: &Layout,
        g: Geom,
    ) -> Result<CpuStorage> {
        let out = forward(x.typed::<T>(OP)?, lx, w.typed::<T>(OP)?, lw, &g);
        Ok(CpuStorage::from_vec(out))
    }
    match float_dtype(OP, x, w, p.precision)? {
        DType::F32 => run::<f32>(x, lx, w, lw, g),
        _ => run::<f64>(x, lx, w, lw, g),
    }
}

fn forward<T: Float>(x: &[T], lx: &Layout, w: &[T], lw: &Layout, g: &Geom) -> Vec<T> {
    let (og, cg, taps, pix) = (g.og(), g.cg(), g.taps(), g.pixels());
    let len = g.n * g.o * pix;
    if len == 0 || taps == 0 {
        return filled_vec(len, T::zero());
    }
    if winograd::applies(g) {
        return winograd::forward(x, lx, w, lw, g);
    }
    let wm = Mats::new(w, lw, [1, g.o, taps]);
    let mut out = output_vec(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let batch = images_per_product(g);
    if batch > 1 {
        // One product for `batch` images of one group, copied out image by image.
        let per = g.o * pix;
        let par = unit_par(g.n.div_ceil(batch), g.o, taps, batch * pix);
        for_units(
            spare,
            batch * per,
            par,
            |u, dst, (cols, prod): &mut (Vec<T>, Vec<T>), par| {
                let count = dst.len() / per;
                let ld = count * pix;
                unfold_images(x, lx, g, u * batch, count, cols);
                prod.resize(g.o * ld, T::zero());
                // SAFETY: `cols` holds `taps x ld` elements, both non-zero.
                let rhs = unsafe { mat_ref(cols, 0, taps, ld, ld as isize, 1) };
                T::product(
                    mat_mut(prod, g.o, ld),
                    Accum::Replace,
                    wm.mat(0, 0, g.o, taps),
                    rhs,
                    par,
                    g.p.precision,
                );
                for (r, row) in prod.chunks_exact(ld).enumerate() {
                    for i in 0..count {
                        for (d, &v) in dst[i * per + r * pix..][..pix]
                            .iter_mut()
                            .zip(&row[i * pix..])
                        {
                            d.write(v);
                        }
                    }
                }
            },
        );
    } else {
        // A pointwise convolution multiplies by the input itself when its pixels merge into one axis.
        let direct = g
            .is_pointwise()
            .then(|| lx.reshape(&[g.n, g.c, g.h * g.w]))
            .flatten();
        let xm = direct.map(|_| Mats::new(x, lx, [g.n, g.c, g.h * g.w]));
        let par = unit_par(g.n * g.p.groups, og, taps, pix);
        for_units(spare, og * pix, par, |u, dst, cols: &mut Vec<T>, par| {
            let (n, gi) = (u / g.p.groups, u % g.p.groups);
            let rhs = match &xm {
                Some(xm) => xm.mat(n, gi * cg, cg, pix),
                None => {
                    cols.resize(taps * pix, T::zero());
                    im2col(x, image(lx, n, gi * cg), g, cols, pix);
                    // SAFETY: `cols` holds `taps * pix` elements, both non-zero.
                    unsafe { mat_ref(cols, 0, taps, pix, pix as isize, 1) }
                }
            };
            // SAFETY: the block is only replaced by the product (no zero-fill needed first).
            let dst = unsafe { mat_uninit(dst, og, pix) };
            T::product(
                dst,
                Accum::Replace,
                wm.mat(0, gi * og, og, taps),
                rhs,
                par,
                g.p.precision,
            );
        });
    }
    // SAFETY: every unit wrote its whole block: the product's rows, or each image's copy.
    unsafe { out.set_len(len) };
    out
}

/// Gradient of [`conv2d`] with respect to its input, of shape `[N, C_in, input_hw.0, input_hw.1]`.
pub(crate) fn conv2d_input_grad(
    dy: &CpuStorage,
    ldy: &Layout,
    w: &CpuStorage,
    lw: &Layout,
    input_hw: (usize, usize),
    p: &Conv2dParams,
) -> Result<CpuStorage> {
    const OP: &str = "conv2d_input_grad";
    let (sd, sw) = (ldy.shape(), lw.shape());
    check_params(OP, p)?;
    check_rank(OP, GRAD, sd)?;
    check_rank(OP, WEIGHT, sw)?;
    let (o, c) = (sw[0], p.input_channels(OP, sw[1])?);
    check_groups(OP, c, o, p, sd, sw)?;
    if sd[1] != o {
        return Err(Error::shapes(OP, sd, sw).with_hint(format!(
            "the gradient has {} channels but the weights have {o} output channels",
            sd[1]
        )));
    }
    let (oh, ow) = output_hw(OP, input_hw, (sw[2], sw[3]), p)?;
    if (oh, ow) != (sd[2], sd[3]) {
        return Err(Error::shapes(OP, sd, sw).with_hint(format!(
            "an input of {}x{} gives an output of {oh}x{ow}, not {}x{}",
            input_hw.0, input_hw.1, sd[2], sd[3]
        )));
    }
    let g = Geom {
        n: sd[0],
        c,
        h: input_hw.0,
        w: input_hw.1,
        o,
        kh: sw[2],
        kw: sw[3],
        oh,
        ow,
        p: *p,
    };
    fn run<T: Float>(
        dy: &CpuStorage,
        ldy: &Layout,
        w: &CpuStorage,
        lw: &Layout,
        g: Geom,
    ) -> Result<CpuStorage> {
        let out = input_grad(dy.typed::<T>(OP)?, ldy, w.typed::<T>(OP)?, lw, &g);
        Ok(CpuStorage::from_vec(out))
    }
    match float_dtype(OP, dy, w, p.precision)? {
        DType::F32 => run::<f32>(dy, ldy, w, lw, g),
        _ => run::<f64>(dy, ldy, w, lw, g),
    }
}

fn input_grad<T: Float>(dy: &[T], ldy: &Layout, w: &[T], lw: &Layout, g: &Geom) -> Vec<T> {
    let (og, cg, taps, pix) = (g.og(), g.cg(), g.taps(), g.pixels());
    let image_len = cg * g.h * g.w;
    let len = g.n * g.c * g.h * g.w;
    if len == 0 || og == 0 || pix == 0 {
        return filled_vec(len, T::zero());
    }
    if winograd::applies_to_input_grad(g) {
        return winograd::input_grad(dy, ldy, w, lw, g);
    }
    let mut dx = filled_vec(len, T::zero());
    let wm = Mats::new(w, lw, [1, g.o, taps]);
    let dym = Mats::new(dy, ldy, [g.n, g.o, pix]);
    let batch = images_per_product(g);
    if batch > 1 {
        // The output gradients of `batch` images side by side, one product, folded back per image.
        let wt = wm.mat(0, 0, g.o, taps).transpose();
        let par = unit_par(g.n.div_ceil(batch), taps, g.o, batch * pix);
        for_units(
            &mut dx,
            batch * image_len,
            par,
            |u, dst, (dyc, cols): &mut (Vec<T>, Vec<T>), par| {
                let count = dst.len() / image_len;
                let ld = count * pix;
                gather_images(&dym, u * batch, count, g.o, pix, dyc);
                cols.resize(taps * ld, T::zero());
                // SAFETY: `dyc` holds `o x ld` elements, both non-zero.
                let rhs = unsafe { mat_ref(dyc, 0, g.o, ld, ld as isize, 1) };
                T::product(
                    mat_mut(cols, taps, ld),
                    Accum::Replace,
                    wt,
                    rhs,
                    par,
                    g.p.precision,
                );
                for (i, image) in dst.chunks_exact_mut(image_len).enumerate() {
                    col2im(&cols[i * pix..], g, image, ld);
                }
            },
        );
        return dx;
    }
    let par = unit_par(g.n * g.p.groups, taps, og, pix);
    for_units(&mut dx, image_len, par, |u, dst, cols: &mut Vec<T>, par| {
        let (n, gi) = (u / g.p.groups, u % g.p.groups);
        let wt = wm.mat(0, gi * og, og, taps).transpose();
        let rhs = dym.mat(n, gi * og, og, pix);
        if g.is_pointwise() {
            T::product(
                mat_mut(dst, cg, pix),
                Accum::Replace,
                wt,
                rhs,
                par,
                g.p.precision,
            );
        } else {
            cols.resize(taps * pix, T::zero());
            T::product(
                mat_mut(cols, taps, pix),
                Accum::Replace,
                wt,
                rhs,
                par,
                g.p.precision,
            );
            col2im(cols, g, dst, pix);
        }
    });
    dx
}

/// Gradient of [`conv2d`] with respect to its weights, of shape `[C_out, C_in / groups, KH, KW]`.
pub(crate) fn conv2d_weight_grad(
    x: &CpuStorage,
    lx: &Layout,
    dy: &CpuStorage,
    ldy: &Layout,
    kernel_hw: (usize, usize),
    p: &Conv2dParams,
) -> Result<CpuStorage> {
    const OP: &str = "conv2d_weight_grad";
    let (sx, sd) = (lx.shape(), ldy.shape());
    check_params(OP, p)?;
    check_rank(OP, INPUT, sx)?;
    check_rank(OP, GRAD, sd)?;
    let (c, o) = (sx[1], sd[1]);
    check_groups(OP, c, o, p, sx, sd)?;
    let (oh, ow) = output_hw(OP, (sx[2], sx[3]), kernel_hw, p)?;
    if sx[0] != sd[0] || (oh, ow) != (sd[2], sd[3]) {
        return Err(Error::shapes(OP, sx, sd).with_hint(format!(
            "an input batch of {} with a {}x{} kernel gives an output gradient of [{}, {o}, {oh}, {ow}]",
            sx[0], kernel_hw.0, kernel_hw.1, sx[0]
        )));
    }
    let g = Geom {
        n: sx[0],
        c,
        h: sx[2],
        w: sx[3],
        o,
        kh: kernel_hw.0,
        kw: kernel_hw.1,
        oh,
        ow,
        p: *p,
    };
    fn run<T: Float>(
        x: &CpuStorage,
        lx: &Layout,
        dy: &CpuStorage,
        ldy: &Layout,
        g: Geom,
    ) -> Result<CpuStorage> {
        let out = weight_grad(x.typed::<T>(OP)?, lx, dy.typed::<T>(OP)?, ldy, &g);
        Ok(CpuStorage::from_vec(out))
    }
    match float_dtype(OP, x, dy, p.precision)? {
        DType::F32 => run::<f32>(x, lx, dy, ldy, g),
        _ => run::<f64>(x, lx, dy, ldy, g),
    }
}

fn weight_grad<T: Float>(x: &[T], lx: &Layout, dy: &[T], ldy: &Layout, g: &Geom) -> Vec<T> {
    let (og, cg, taps, pix) = (g.og(), g.cg(), g.taps(), g.pixels());
    let len = g.o * taps;
    if len == 0 || g.n == 0 || pix == 0 {
        return vec![T::zero(); len];
    }
    if winograd::applies(g) {
        return winograd::weight_grad(x, lx, dy, ldy, g);
    }
    let dym = Mats::new(dy, ldy, [g.n, g.o, pix]);
    let direct = g
        .is_pointwise()
        .then(|| lx.reshape(&[g.n, g.c, g.h * g.w]))
        .flatten();
    let xm = direct.map(|_| Mats::new(x, lx, [g.n, g.c, g.h * g.w]));
    // Images per product, and the products: chunks of images.
    let batch = images_per_product(g);
    let chunks = g.n.div_ceil(batch);
    // Adds chunk `k`'s contribution to group `gi`'s `og x taps` block of the gradient.
    let add = |k: usize, gi: usize, dst: &mut [T], (cols, dyc): &mut (Vec<T>, Vec<T>), par: Par| {
        let (n0, count) = (k * batch, batch.min(g.n - k * batch));
        if count > 1 {
            let ld = count * pix;
            gather_images(&dym, n0, count, g.o, pix, dyc);
            unfold_images(x, lx, g, n0, count, cols);
            // SAFETY: `dyc` holds `o x ld` elements and `cols` `taps x ld`, all non-zero.
            let (lhs, cols_t) = unsafe {
                (
                    mat_ref(dyc, 0, g.o, ld, ld as isize, 1),
                    mat_ref(cols, 0, ld, taps, 1, ld as isize),
                )
            };
            T::product(
                mat_mut(dst, og, taps),
                Accum::Add,
                lhs,
                cols_t,
                par,
                g.p.precision,
            );
            return;
        }
        let lhs = dym.mat(n0, gi * og, og, pix);
        let cols_t = match &xm {
            Some(xm) => xm.mat(n0, gi * cg, cg, pix).transpose(),
            None => {
                cols.resize(taps * pix, T::zero());
                im2col(x, image(lx, n0, gi * cg), g, cols, pix);
                // SAFETY: `cols` holds `taps * pix` elements, both non-zero.
                unsafe { mat_ref(cols, 0, pix, taps, 1, pix as isize) }
            }
        };
        T::product(
            mat_mut(dst, og, taps),
            Accum::Add,
            lhs,
            cols_t,
            par,
            g.p.precision,
        );
    };
    let groups = g.p.groups;
    let threads = rayon::current_num_threads();
    let mut dw = vec![T::zero(); len];
    let big = crate::splits(g.n * g.o * taps * pix, PAR_FLOPS);
    if big && groups > 1 && groups >= threads {
        // Groups own disjoint blocks of the gradient.
        dw.par_chunks_mut(og * taps).enumerate().for_each_init(
            Default::default,
            |scratch, (gi, dst)| {
                for k in 0..chunks {
                    add(k, gi, dst, scratch, Par::Seq);
                }
            },
        );
    } else if big && chunks > 1 && chunks >= threads {
        // Each thread sums a share of the chunks into its own gradient; the shares are added at the
        // end.
        let partial = (0..chunks)
            .into_par_iter()
            .with_min_len(chunks.div_ceil(threads))
            .fold(
                || (vec![T::zero(); len], Default::default()),
                |(mut acc, mut scratch), k| {
                    for (gi, dst) in acc.chunks_mut(og * taps).enumerate() {
                        add(k, gi, dst, &mut scratch, Par::Seq);
                    }
                    (acc, scratch)
                },
            )
            .map(|(acc, _)| acc)
            .reduce_with(|mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x = Arith::add(*x, *y);
                }
                a
            });
        if let Some(sum) = partial {
            dw = sum;
        }
    } else {
        let par = par_for(og, batch * pix, taps);
        let mut scratch = Default::default();
        for k in 0..chunks {
            for (gi, dst) in dw.chunks_mut(og * taps).enumerate() {
                add(k, gi, dst, &mut scratch, par);
            }
        }
    }
    dw
}
