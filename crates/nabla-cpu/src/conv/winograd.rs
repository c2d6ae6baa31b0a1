//! Winograd's minimal filtering F(2x2, 3x3) for 3x3 convolutions of unit stride and dilation with
//! one group (most of a ResNet's convolutions): each 2x2 block of outputs, a *tile*, comes from a
//! 4x4 window of the input with 16 multiplications per pair of input and output channels instead of
//! 36, so the products take 2.25x fewer multiply-adds than `im2col`'s.
//!
//! With `d` a 4x4 window, `g` a 3x3 kernel and `⊙` the elementwise product, one tile is
//! `Y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A`, where
//! `Bᵀ = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]`,
//! `G = [[1, 0, 0], [½, ½, ½], [½, -½, ½], [0, 0, 1]]` and `Aᵀ = [[1, 1, 1, 0], [0, 1, -1, -1]]`.
//! The transforms only add, subtract and halve, which is exact in binary up to the rounding of each
//! sum, so the results agree with `im2col`'s to a few units in the last place (exactly, for the small
//! integers of the tests). Summed over input channels, the elementwise product at each of the 16
//! positions `ξ` of the 4x4 transform is one matrix product:
//! `M[ξ] (out x tiles) = U[ξ] (out x in) · V[ξ] (in x tiles)`, with `U = G g Gᵀ` and `V = Bᵀ d B`.
//!
//! - **Forward:** the weights are transformed once; then, for each block of images, their windows
//!   are transformed, the 16 products run, and each tile is transformed back into the output.
//! - **Input gradient:** the forward convolution of the output gradient with the kernel flipped in
//!   both axes and its channel axes swapped, padded by `2 - padding`.
//! - **Weight gradient:** the adjoint of the forward pass: with `P = A dY Aᵀ` the transformed
//!   output gradient of a tile, `dU[ξ] = Σ P[ξ] V[ξ]ᵀ` over every tile of the batch, and
//!   `dg = Gᵀ dU G`.
//!
//! Under autocast the products follow the precision's fast path on this CPU (see [`Rounding`]):
//! - **bf16:** the 16 products run on the bf16 kernel (AVX512_BF16's `vdpbf16ps` where the CPU has
//!   it), which rounds the *transformed* operands `U`, `V` (and `P`) to bf16 and sums in f32. This is
//!   the price of Winograd in low precision: each product's rounding error is relative to the
//!   transformed values, which mix up to 9 kernel taps and 4 inputs, so the worst case is several
//!   times `im2col`'s bound, while random-sign errors grow by about 2x (1.7 to 1.9x in the tests).
//! - **f16:** every input, weight and output-gradient element is rounded as it is read and the
//!   transformed values multiply in f32 (this CPU has no faster f16 product): the rounded operands'
//!   convolution, as the `im2col` path computes it, up to the order of the f32 sums.
//!
//! Blocks of images go to the threads (each product sequential), or, with fewer blocks than
//! threads, run one after another with faer splitting each product. Every transform works along
//! whole rows of tiles, which the compiler vectorises.

use super::im2col::{Geom, Image};
use super::{Float, for_units, image, unit_par};
use crate::matmul::bf16::rounded_operand;
use crate::matmul::{mat_mut, mat_ref, mat_uninit, par_for};
use crate::strided::{gather_view, output_vec};
use faer::{Accum, Par};
use nabla_core::{Layout, Precision};
use rayon::prelude::*;
use std::borrow::Cow;
use std::mem::MaybeUninit;
use std::ops::{Add, AddAssign, Mul, Neg, Sub};

/// Positions of the 4x4 transform: one matrix product each.
const POSITIONS: usize = 16;

/// Input and output channels below which the products are too thin for the transform to pay for
/// its passes over memory: the small CNN benchmark's 32-to-64-channel convolution on 11x11 planes
/// ran its step at 14.3 ms through the transform against 7.6 ms through `im2col`; ResNet's 64-channel
/// stages gain.
const MIN_CHANNELS: usize = 64;

/// Tiles a block of images aims for: enough columns for the products to run near the machine's
/// peak, few enough that a block's transformed windows and products stay in the caches.
const BLOCK_TILES: usize = 256;

/// Tiles per thread from which the weight gradient's threads each sum their own blocks (and add
/// the sums at the end) rather than splitting each product.
const SPREAD_TILES: usize = 512;

/// The arithmetic of the transforms.
pub(super) trait Real:
    Copy
    + Default
    + Send
    + Sync
    + Add<Output = Self>
    + AddAssign
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
{
    /// One half.
    const HALF: Self;

    /// This value as an operand of a product at `precision`: rounded to bf16 or f16 (held in this
    /// type), or itself at [`Precision::Full`], the only precision other types come with.
    fn operand(self, precision: Precision) -> Self;
}

impl Real for f32 {
    const HALF: f32 = 0.5;

    fn operand(self, precision: Precision) -> f32 {
        rounded_operand(self, precision)
    }
}

impl Real for f64 {
    const HALF: f64 = 0.5;

    fn operand(self, precision: Precision) -> f64 {
        debug_assert_eq!(precision, Precision::Full);
        self
    }
}

/// Where autocast's rounding happens in the transform: to the operands as they are read, or to the
/// transformed operands as the products take them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rounding {
    /// What the inputs, weights and output gradients round to as they are read.
    read: Precision,
    /// The precision of the 16 products, whose kernel rounds the transformed operands.
    product: Precision,
}

impl Rounding {
    /// bf16 rounds the transformed operands on the bf16 product (twice f32's throughput with
    /// AVX512_BF16); f16, which this CPU multiplies in f32 anyway, rounds the operands as read.
    fn of(precision: Precision) -> Rounding {
        let (read, product) = match precision {
            Precision::Full => (Precision::Full, Precision::Full),
            Precision::Bf16 => (Precision::Full, Precision::Bf16),
            Precision::F16 => (Precision::F16, Precision::Full),
        };
        Rounding { read, product }
    }
}

/// Rounds every element of `values` as an operand at `precision` (nothing at full precision).
fn round_operands<T: Real>(values: &mut [T], precision: Precision) {
    match precision {
        Precision::Full => {}
        Precision::Bf16 => round_all(values, |v| v.operand(Precision::Bf16)),
        Precision::F16 => round_all(values, |v| v.operand(Precision::F16)),
    }
}

crate::simd_kernel! {
    /// `round` applied to every element of `values`, compiled per SIMD level so that the rounding
    /// (bf16's integer arithmetic on the bits, f16's conversions) runs on whole vectors. Under
    /// bf16 autocast nothing is rounded as read (see [`Rounding`]); f16 is.
    fn round_all<T: Real>(values: &mut [T], round: impl Fn(T) -> T) {
        for v in values {
            *v = round(*v);
        }
    }
}

/// `true` when the forward convolution and its weight gradient run through the transform.
pub(super) fn applies(g: &Geom) -> bool {
    g.kh == 3
        && g.kw == 3
        && g.p.stride == (1, 1)
        && g.p.dilation == (1, 1)
        && g.p.groups == 1
        && g.c >= MIN_CHANNELS
        && g.o >= MIN_CHANNELS
}

/// `true` when the input gradient runs through the transform: as [`applies`], with padding of at
/// most 2, so that the flipped kernel's padding `2 - padding` exists.
pub(super) fn applies_to_input_grad(g: &Geom) -> bool {
    applies(g) && g.p.padding.0 <= 2 && g.p.padding.1 <= 2
}

/// The sizes of one transformed convolution, `c` channels of `h x w` in, `o` channels of `oh x ow`
/// out.
#[derive(Clone, Copy, Debug)]
struct Plan {
    n: usize,
    c: usize,
    o: usize,
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    pad: (usize, usize),
    /// Autocast's rounding.
    rounding: Rounding,
    /// Tile rows and columns of one image.
    th: usize,
    tw: usize,
}

impl Plan {
    fn new(
        (n, c, o): (usize, usize, usize),
        (h, w): (usize, usize),
        (oh, ow): (usize, usize),
        pad: (usize, usize),
        precision: Precision,
    ) -> Plan {
        Plan {
            n,
            c,
            o,
            h,
            w,
            oh,
            ow,
            pad,
            rounding: Rounding::of(precision),
            th: oh.div_ceil(2),
            tw: ow.div_ceil(2),
        }
    }

    /// Tiles of one image.
    fn tiles(&self) -> usize {
        self.th * self.tw
    }

    /// Images per block: enough for [`BLOCK_TILES`] tiles, but no fewer blocks than threads while
    /// there are images for them.
    fn images_per_block(&self) -> usize {
        let threads = rayon::current_num_threads();
        BLOCK_TILES
            .div_ceil(self.tiles().max(1))
            .min(self.n.div_ceil(threads))
            .max(1)
    }

    /// Thread parallelism for blocks of `ipb` images: `None` to spread the blocks over threads.
    fn par(&self, ipb: usize) -> Option<Par> {
        let cols = ipb * self.tiles();
        unit_par(self.n.div_ceil(ipb), self.o, POSITIONS * self.c, cols)
            .map(|_| par_for(self.o, self.c, cols))
    }
}

/// A thread's buffers: transformed windows, products (or transformed output gradients) and rows.
/// Large ones come from the CPU buffer cache and go back to it when the scratch drops, so that
/// each call does not fault in fresh pages.
struct Scratch<T> {
    v: Vec<T>,
    m: Vec<T>,
    rows: Vec<T>,
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Scratch {
            v: Vec::new(),
            m: Vec::new(),
            rows: Vec::new(),
        }
    }
}

impl<T> Drop for Scratch<T> {
    fn drop(&mut self) {
        for buf in [&mut self.v, &mut self.m, &mut self.rows] {
            crate::host_pool::put(std::mem::take(buf));
        }
    }
}

/// `buf` holding exactly `len` elements (their values are about to be overwritten), its memory from
/// the buffer cache when it must grow.
fn sized<T: Real>(buf: &mut Vec<T>, len: usize) -> &mut [T] {
    if buf.capacity() < len {
        crate::host_pool::put(std::mem::replace(buf, output_vec(len)));
    }
    buf.resize(len, T::default());
    &mut buf[..len]
}

/// The `[o, c, 3, 3]` weights as one contiguous run, copied only when the view is not one.
fn dense<'a, T: Float>(w: &'a [T], lw: &Layout) -> Cow<'a, [T]> {
    match lw.contiguous_range() {
        Some(r) => Cow::Borrowed(&w[r]),
        None => Cow::Owned(gather_view(w, lw)),
    }
}

/// `[a, (a + b + c) / 2, (a - b + c) / 2, c]`: `G` applied to three values.
#[inline(always)]
fn g4<T: Real>(a: T, b: T, c: T) -> [T; 4] {
    [a, (a + b + c) * T::HALF, (a - b + c) * T::HALF, c]
}

/// `Gᵀ` applied to four values: the adjoint of [`g4`].
#[inline(always)]
fn gt3<T: Real>(a: T, b: T, c: T, d: T) -> [T; 3] {
    [
        a + (b + c) * T::HALF,
        (b - c) * T::HALF,
        (b + c) * T::HALF + d,
    ]
}

/// Four runs of `len` elements of `buf`, from `first` on, `step >= len` apart.
#[inline(always)]
fn runs4<T>(buf: &mut [T], first: usize, step: usize, len: usize) -> [&mut [T]; 4] {
    let (_, rest) = buf.split_at_mut(first);
    let (r0, rest) = rest.split_at_mut(step);
    let (r1, rest) = rest.split_at_mut(step);
    let (r2, r3) = rest.split_at_mut(step);
    [
        &mut r0[..len],
        &mut r1[..len],
        &mut r2[..len],
        &mut r3[..len],
    ]
}

/// `U = G g Gᵀ` of every kernel of the dense `[o, c, 3, 3]` weights `w` (their entries rounded as
/// operands at `precision` first), laid out `[out][16][in]`:
/// with `flipped`, the kernels of the input gradient's convolution (`c` out, `o` in, each kernel
/// reversed in both axes), else the forward's (`o` out, `c` in).
fn transform_weights<T: Real>(
    w: &[T],
    (o, c): (usize, usize),
    flipped: bool,
    precision: Precision,
) -> Vec<T> {
    let (outs, ins) = if flipped { (c, o) } else { (o, c) };
    let len = outs * POSITIONS * ins;
    let mut u = output_vec::<T>(len);
    u.spare_capacity_mut()[..len]
        .par_chunks_mut(POSITIONS * ins)
        .enumerate()
        .for_each_init(Vec::new, |taps, (oc, dst)| {
            // Tap `k` of every input channel's kernel in one run: `taps[k * ins + ic]`.
            let taps = sized(taps, 9 * ins);
            for ic in 0..ins {
                let kernel = match flipped {
                    true => &w[(ic * c + oc) * 9..][..9],
                    false => &w[(oc * c + ic) * 9..][..9],
                };
                for k in 0..9 {
                    taps[k * ins + ic] = kernel[if flipped { 8 - k } else { k }];
                }
            }
            round_operands(taps, precision);
            transform_kernels(taps, dst, ins);
        });
    // SAFETY: every output channel's chunk was written whole by `transform_kernels`.
    unsafe { u.set_len(len) };
    u
}

crate::simd_kernel! {
    /// `G g Gᵀ` of `n` kernels at once: `taps` holds tap `k` of kernel `i` at `k * n + i`, and
    /// position `ξ` of its transform goes to `dst[ξ * n + i]`.
    fn transform_kernels<T: Real>(taps: &[T], dst: &mut [MaybeUninit<T>], n: usize) {
        let taps = &taps[..9 * n];
        let dst = &mut dst[..POSITIONS * n];
        for i in 0..n {
            let g = |k: usize| taps[k * n + i];
            // `G` down each of the kernel's three columns, then along each row of the result.
            let c0 = g4(g(0), g(3), g(6));
            let c1 = g4(g(1), g(4), g(7));
            let c2 = g4(g(2), g(5), g(8));
            for a in 0..4 {
                let row = g4(c0[a], c1[a], c2[a]);
                for (s, &value) in row.iter().enumerate() {
                    dst[(4 * a + s) * n + i].write(value);
                }
            }
        }
    }
}

crate::simd_kernel! {
    /// `dg = Gᵀ dU G` for output channel `oc`: `du` is `[16][o][c]` and `dst` the channel's
    /// `[c, 3, 3]` gradient.
    fn untransform_kernels<T: Real>(
        du: &[T],
        o: usize,
        c: usize,
        oc: usize,
        dst: &mut [MaybeUninit<T>],
    ) {
        let dst = &mut dst[..9 * c];
        for ic in 0..c {
            let at = |a: usize, s: usize| du[((4 * a + s) * o + oc) * c + ic];
            let r0 = gt3(at(0, 0), at(0, 1), at(0, 2), at(0, 3));
            let r1 = gt3(at(1, 0), at(1, 1), at(1, 2), at(1, 3));
            let r2 = gt3(at(2, 0), at(2, 1), at(2, 2), at(2, 3));
            let r3 = gt3(at(3, 0), at(3, 1), at(3, 2), at(3, 3));
            for j in 0..3 {
                let col = gt3(r0[j], r1[j], r2[j], r3[j]);
                for (i, &value) in col.iter().enumerate() {
                    dst[ic * 9 + 3 * i + j].write(value);
                }
            }
        }
    }
}

/// One image of a 4-D view: its buffer and where its channels and rows start.
#[derive(Clone, Copy)]
struct Source<'a, T> {
    data: &'a [T],
    img: Image,
}

impl<T: Real> Source<'_, T> {
    /// Copies row `y` of channel `ch` into `dst` (its first `dst.len()` entries), rounded as
    /// operands at `precision`.
    #[inline(always)]
    fn read_row(&self, ch: usize, y: usize, dst: &mut [T], precision: Precision) {
        let [sc, sh, step] = self.img.strides;
        let base = self.img.offset as isize + ch as isize * sc + y as isize * sh;
        if step == 1 {
            let base = base as usize;
            dst.copy_from_slice(&self.data[base..base + dst.len()]);
        } else {
            for (k, d) in dst.iter_mut().enumerate() {
                *d = self.data[(base + k as isize * step) as usize];
            }
        }
        round_operands(dst, precision);
    }
}

/// Where a transform writes: `[16][rows][ld]` with one image's tiles from column `col0`.
struct Columns<'a, T> {
    data: &'a mut [T],
    ld: usize,
    col0: usize,
}

crate::simd_kernel! {
    /// `V = Bᵀ d B` for every tile of one image's channels `plan.c`, into its columns of the
    /// `[16][c][ld]` windows `v`; `rows` is scratch.
    fn transform_input<T: Real>(x: Source<'_, T>, plan: &Plan, v: Columns<'_, T>, rows: &mut Vec<T>) {
        let (tw, th) = (plan.tw, plan.th);
        let Columns { data: v, ld, col0 } = v;
        // One padded input row (entry `j` is input column `j - pad.1`, zero outside), and for each
        // of the `2 th + 2` padded rows (input row `pr - pad.0`) its four horizontal combinations.
        let width = 2 * tw + 2;
        let padded_rows = 2 * th + 2;
        let (padded, horizontal) =
            sized(rows, width + padded_rows * 4 * tw).split_at_mut(width);
        padded.fill(T::default());
        let (j0, j1) = (plan.pad.1.min(width), (plan.pad.1 + plan.w).min(width));
        let a_step = 4 * plan.c * ld;
        for ch in 0..plan.c {
            for (pr, h) in horizontal.chunks_exact_mut(4 * tw).enumerate() {
                let Some(iy) = pr.checked_sub(plan.pad.0).filter(|&iy| iy < plan.h) else {
                    h.fill(T::default());
                    continue;
                };
                x.read_row(ch, iy, &mut padded[j0..j1], plan.rounding.read);
                horizontal_input(padded, h, tw);
            }
            for ty in 0..th {
                for s in 0..4 {
                    let r = |q: usize| &horizontal[((2 * ty + q) * 4 + s) * tw..][..tw];
                    let first = (s * plan.c + ch) * ld + col0 + ty * tw;
                    vertical_input([r(0), r(1), r(2), r(3)], runs4(v, first, a_step, tw));
                }
            }
        }
    }
}

/// The four combinations of `Bᵀ` along one padded row of `2 tw + 2` inputs, into `h` (`4 tw`):
/// `h[s][t]` combines inputs `2t..2t + 4`.
#[inline(always)]
fn horizontal_input<T: Real>(padded: &[T], h: &mut [T], tw: usize) {
    let [h0, h1, h2, h3] = runs4(h, 0, tw, tw);
    let pairs = padded.chunks_exact(2).zip(padded[2..].chunks_exact(2));
    for ((((p, q), h0), h1), (h2, h3)) in pairs.zip(h0).zip(h1).zip(h2.iter_mut().zip(h3)) {
        *h0 = p[0] - q[0];
        *h1 = p[1] + q[0];
        *h2 = q[0] - p[1];
        *h3 = p[1] - q[1];
    }
}

/// `Bᵀ` down four rows of horizontal combinations, into the four rows `out`.
#[inline(always)]
fn vertical_input<T: Real>(r: [&[T]; 4], [o0, o1, o2, o3]: [&mut [T]; 4]) {
    let n = o0.len();
    let (r0, r1, r2, r3) = (&r[0][..n], &r[1][..n], &r[2][..n], &r[3][..n]);
    let (o1, o2, o3) = (&mut o1[..n], &mut o2[..n], &mut o3[..n]);
    for t in 0..n {
        o0[t] = r0[t] - r2[t];
        o1[t] = r1[t] + r2[t];
        o2[t] = r2[t] - r1[t];
        o3[t] = r1[t] - r3[t];
    }
}

crate::simd_kernel! {
    /// `Y = Aᵀ M A` for every tile of every output channel of one image, from columns `col0..` of
    /// the `[16][o][ld]` products `m`, into the image's `[o, oh, ow]` planes `dst`; `rows` is
    /// scratch.
    fn transform_output<T: Real>(
        m: &[T],
        ld: usize,
        plan: &Plan,
        col0: usize,
        dst: &mut [MaybeUninit<T>],
        rows: &mut Vec<T>,
    ) {
        let (tw, ow) = (plan.tw, plan.ow);
        let plane = plan.oh * ow;
        // The two rows of `Aᵀ M` for each of the four columns `s`: `vertical[(2 s + i) tw + t]`.
        let vertical = sized(rows, 8 * tw);
        for (oc, dst) in dst.chunks_exact_mut(plane).enumerate() {
            for ty in 0..plan.th {
                for s in 0..4 {
                    let mrow =
                        |a: usize| &m[((4 * a + s) * plan.o + oc) * ld + col0 + ty * tw..][..tw];
                    let (top, bottom) = vertical[2 * s * tw..][..2 * tw].split_at_mut(tw);
                    vertical_output([mrow(0), mrow(1), mrow(2), mrow(3)], top, bottom);
                }
                for i in 0..2.min(plan.oh - 2 * ty) {
                    let col = |s: usize| &vertical[(2 * s + i) * tw..][..tw];
                    let out = &mut dst[(2 * ty + i) * ow..][..ow];
                    horizontal_output([col(0), col(1), col(2), col(3)], out);
                }
            }
        }
    }
}

/// The two rows of `Aᵀ` applied down four rows of products.
#[inline(always)]
fn vertical_output<T: Real>(m: [&[T]; 4], top: &mut [T], bottom: &mut [T]) {
    let n = top.len();
    let (m0, m1, m2, m3) = (&m[0][..n], &m[1][..n], &m[2][..n], &m[3][..n]);
    let bottom = &mut bottom[..n];
    for t in 0..n {
        top[t] = m0[t] + m1[t] + m2[t];
        bottom[t] = m1[t] - m2[t] - m3[t];
    }
}

/// `A` applied along one output row: tile `t` gives outputs `2t` and `2t + 1` (the last one
/// dropped when the row is odd).
#[inline(always)]
fn horizontal_output<T: Real>(c: [&[T]; 4], out: &mut [MaybeUninit<T>]) {
    let whole = out.len() / 2;
    let (c0, c1, c2, c3) = (
        &c[0][..whole],
        &c[1][..whole],
        &c[2][..whole],
        &c[3][..whole],
    );
    for (t, pair) in out.chunks_exact_mut(2).enumerate() {
        pair[0].write(c0[t] + c1[t] + c2[t]);
        pair[1].write(c1[t] - c2[t] - c3[t]);
    }
    if out.len() % 2 == 1 {
        out[2 * whole].write(c[0][whole] + c[1][whole] + c[2][whole]);
    }
}

crate::simd_kernel! {
    /// `P = A dY Aᵀ` for every tile of one image's output gradient (channels `plan.o`), into its
    /// columns of the `[16][o][ld]` buffer `p`; `rows` is scratch.
    fn transform_grad<T: Real>(dy: Source<'_, T>, plan: &Plan, p: Columns<'_, T>, rows: &mut Vec<T>) {
        let (tw, ow) = (plan.tw, plan.ow);
        let Columns { data: p, ld, col0 } = p;
        // One output row padded to `2 tw`, and for a tile row's two output rows their four
        // combinations `[e, e + o, e - o, -o]` of even and odd columns (`A` along each row).
        let (padded, horizontal) = sized(rows, 2 * tw + 8 * tw).split_at_mut(2 * tw);
        padded.fill(T::default());
        let a_step = 4 * plan.o * ld;
        for ch in 0..plan.o {
            for ty in 0..plan.th {
                for (i, h) in horizontal.chunks_exact_mut(4 * tw).enumerate() {
                    let oy = 2 * ty + i;
                    if oy >= plan.oh {
                        h.fill(T::default());
                        continue;
                    }
                    dy.read_row(ch, oy, &mut padded[..ow], plan.rounding.read);
                    horizontal_grad(padded, h, tw);
                }
                for s in 0..4 {
                    let y0 = &horizontal[s * tw..][..tw];
                    let y1 = &horizontal[(4 + s) * tw..][..tw];
                    let first = (s * plan.o + ch) * ld + col0 + ty * tw;
                    vertical_grad(y0, y1, runs4(p, first, a_step, tw));
                }
            }
        }
    }
}

/// `A` along one output-gradient row of `2 tw` entries: `[e, e + o, e - o, -o]` per tile.
#[inline(always)]
fn horizontal_grad<T: Real>(padded: &[T], h: &mut [T], tw: usize) {
    let [h0, h1, h2, h3] = runs4(h, 0, tw, tw);
    for ((pair, (h0, h1)), (h2, h3)) in padded
        .chunks_exact(2)
        .zip(h0.iter_mut().zip(h1))
        .zip(h2.iter_mut().zip(h3))
    {
        let (e, o) = (pair[0], pair[1]);
        *h0 = e;
        *h1 = e + o;
        *h2 = e - o;
        *h3 = -o;
    }
}

/// `A` down a tile row's two rows of combinations, into the four rows `out`.
#[inline(always)]
fn vertical_grad<T: Real>(y0: &[T], y1: &[T], [o0, o1, o2, o3]: [&mut [T]; 4]) {
    let n = o0.len();
    let (y0, y1) = (&y0[..n], &y1[..n]);
    let (o1, o2, o3) = (&mut o1[..n], &mut o2[..n], &mut o3[..n]);
    for t in 0..n {
        o0[t] = y0[t];
        o1[t] = y0[t] + y1[t];
        o2[t] = y0[t] - y1[t];
        o3[t] = -y1[t];
    }
}

/// The convolution that `plan` describes of the images of `x` (a 4-D view) with the transformed
/// weights `u` (`[o][16][c]`); returns the contiguous `[n, o, oh, ow]` output.
fn convolve<T: Float>(x: &[T], lx: &Layout, u: &[T], plan: &Plan) -> Vec<T> {
    let (c, o, tiles) = (plan.c, plan.o, plan.tiles());
    let plane = plan.oh * plan.ow;
    let per_image = o * plane;
    let len = plan.n * per_image;
    let mut out = output_vec::<T>(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let ipb = plan.images_per_block();
    for_units(
        spare,
        ipb * per_image,
        plan.par(ipb),
        |b, dst, s: &mut Scratch<T>, par| {
            let count = dst.len() / per_image;
            let ld = count * tiles;
            let v = sized(&mut s.v, POSITIONS * c * ld);
            for i in 0..count {
                let img = image(lx, b * ipb + i, 0);
                let x = Source { data: x, img };
                let dst = Columns {
                    data: &mut *v,
                    ld,
                    col0: i * tiles,
                };
                transform_input(x, plan, dst, &mut s.rows);
            }
            let m = sized(&mut s.m, POSITIONS * o * ld);
            for (xi, mx) in m.chunks_exact_mut(o * ld).enumerate() {
                // SAFETY: `u` holds `o` rows of `16 c` and `v` `16 c` rows of `ld`, all non-zero.
                let (ux, vx) = unsafe {
                    (
                        mat_ref(u, xi * c, o, c, (POSITIONS * c) as isize, 1),
                        mat_ref(v, xi * c * ld, c, ld, ld as isize, 1),
                    )
                };
                let product = plan.rounding.product;
                T::product(mat_mut(mx, o, ld), Accum::Replace, ux, vx, par, product);
            }
            for (i, planes) in dst.chunks_exact_mut(per_image).enumerate() {
                transform_output(m, ld, plan, i * tiles, planes, &mut s.rows);
            }
        },
    );
    // SAFETY: each block's output transform wrote every pixel of its images' planes.
    unsafe { out.set_len(len) };
    out
}

/// The forward convolution (see [`super::conv2d`]) when [`applies`].
pub(super) fn forward<T: Float>(x: &[T], lx: &Layout, w: &[T], lw: &Layout, g: &Geom) -> Vec<T> {
    with_kernels(x, lx, (w, lw), g, false)
}

/// The input gradient (see [`super::conv2d_input_grad`]) when [`applies_to_input_grad`]: the
/// output gradient convolved with the flipped kernels, whose input channels are the forward's
/// output channels.
pub(super) fn input_grad<T: Float>(
    dy: &[T],
    ldy: &Layout,
    w: &[T],
    lw: &Layout,
    g: &Geom,
) -> Vec<T> {
    with_kernels(dy, ldy, (w, lw), g, true)
}

/// The images of `x` convolved with the kernels of `w`: the forward convolution `g` describes, or,
/// `flipped`, its input gradient (`x` being the output gradient).
fn with_kernels<T: Float>(
    x: &[T],
    lx: &Layout,
    (w, lw): (&[T], &Layout),
    g: &Geom,
    flipped: bool,
) -> Vec<T> {
    let read = Rounding::of(g.p.precision).read;
    let u = transform_weights(&dense(w, lw), (g.o, g.c), flipped, read);
    let (py, px) = g.p.padding;
    let plan = match flipped {
        false => Plan::new(
            (g.n, g.c, g.o),
            (g.h, g.w),
            (g.oh, g.ow),
            (py, px),
            g.p.precision,
        ),
        true => Plan::new(
            (g.n, g.o, g.c),
            (g.oh, g.ow),
            (g.h, g.w),
            (2 - py, 2 - px),
            g.p.precision,
        ),
    };
    let out = convolve(x, lx, &u, &plan);
    crate::host_pool::put(u);
    out
}

/// The weight gradient (see [`super::conv2d_weight_grad`]) when [`applies`].
pub(super) fn weight_grad<T: Float>(
    x: &[T],
    lx: &Layout,
    dy: &[T],
    ldy: &Layout,
    g: &Geom,
) -> Vec<T> {
    let plan = Plan::new(
        (g.n, g.c, g.o),
        (g.h, g.w),
        (g.oh, g.ow),
        g.p.padding,
        g.p.precision,
    );
    let (c, o, tiles) = (plan.c, plan.o, plan.tiles());
    let threads = rayon::current_num_threads();
    // Threads summing their own blocks need one `[16][o][c]` sum each, added at the end: worth it
    // only with many tiles per thread; otherwise faer splits each product.
    let spread = threads > 1 && g.n * tiles >= SPREAD_TILES * threads;
    let ipb = match spread {
        true => plan.images_per_block(),
        false => BLOCK_TILES.div_ceil(tiles.max(1)).min(g.n).max(1),
    };
    let blocks = g.n.div_ceil(ipb);
    // Adds block `b`'s `P[ξ] V[ξ]ᵀ` to the sum `du` (`[16][o][c]`), or starts it.
    let add = |b: usize, du: &mut Option<Vec<T>>, s: &mut Scratch<T>, par: Par| {
        let images = b * ipb..(b * ipb + ipb).min(g.n);
        accumulate_block(&plan, (x, lx), (dy, ldy), images, du, s, par);
    };
    let du = if spread {
        (0..blocks)
            .into_par_iter()
            .with_min_len(blocks.div_ceil(threads))
            .fold(
                || (None, Scratch::default()),
                |(mut du, mut s), b| {
                    add(b, &mut du, &mut s, Par::Seq);
                    (du, s)
                },
            )
            .filter_map(|(du, _)| du)
            .reduce_with(|mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x += *y;
                }
                crate::host_pool::put(b);
                a
            })
    } else {
        let (mut du, mut s) = (None, Scratch::default());
        let par = par_for(o, ipb * tiles, c);
        for b in 0..blocks {
            add(b, &mut du, &mut s, par);
        }
        du
    };
    let Some(du) = du else {
        return vec![T::default(); o * c * 9];
    };
    kernel_gradients(du, o, c)
}

/// `dg = Gᵀ dU G` for each pair of channels of the summed `[16][o][c]` products `du` (given back
/// to the buffer cache): the `[o, c, 3, 3]` weight gradient.
fn kernel_gradients<T: Real>(du: Vec<T>, o: usize, c: usize) -> Vec<T> {
    let len = o * c * 9;
    let mut dw = output_vec::<T>(len);
    dw.spare_capacity_mut()[..len]
        .par_chunks_mut(c * 9)
        .enumerate()
        .for_each(|(oc, dst)| untransform_kernels(&du, o, c, oc, dst));
    // SAFETY: every output channel's `c x 3 x 3` gradient was written whole.
    unsafe { dw.set_len(len) };
    crate::host_pool::put(du);
    dw
}

/// Adds `Σ P[ξ] V[ξ]ᵀ` over the tiles of `images` (one block) to the weight gradient's sum `du`
/// (`[16][o][c]`), or starts the sum when there is none yet.
fn accumulate_block<T: Float>(
    plan: &Plan,
    (x, lx): (&[T], &Layout),
    (dy, ldy): (&[T], &Layout),
    images: std::ops::Range<usize>,
    du: &mut Option<Vec<T>>,
    s: &mut Scratch<T>,
    par: Par,
) {
    let (c, o, tiles) = (plan.c, plan.o, plan.tiles());
    let ld = images.len() * tiles;
    let v = sized(&mut s.v, POSITIONS * c * ld);
    let p = sized(&mut s.m, POSITIONS * o * ld);
    for (i, n) in images.enumerate() {
        let col0 = i * tiles;
        let (xs, dys) = (
            Source {
                data: x,
                img: image(lx, n, 0),
            },
            Source {
                data: dy,
                img: image(ldy, n, 0),
            },
        );
        transform_input(
            xs,
            plan,
            Columns {
                data: &mut *v,
                ld,
                col0,
            },
            &mut s.rows,
        );
        transform_grad(
            dys,
            plan,
            Columns {
                data: &mut *p,
                ld,
                col0,
            },
            &mut s.rows,
        );
    }
    // SAFETY: `p` holds `16 o` rows of `ld` and `v` `16 c` rows of `ld`, all non-zero.
    let factors = |xi: usize| unsafe {
        (
            mat_ref(p, xi * o * ld, o, ld, ld as isize, 1),
            mat_ref(v, xi * c * ld, ld, c, 1, ld as isize),
        )
    };
    let product = plan.rounding.product;
    match du {
        Some(du) => {
            for (xi, dux) in du.chunks_exact_mut(o * c).enumerate() {
                let (px, vxt) = factors(xi);
                T::product(mat_mut(dux, o, c), Accum::Add, px, vxt, par, product);
            }
        }
        None => {
            let mut sum = output_vec::<T>(POSITIONS * o * c);
            let spare = &mut sum.spare_capacity_mut()[..POSITIONS * o * c];
            for (xi, dux) in spare.chunks_exact_mut(o * c).enumerate() {
                let (px, vxt) = factors(xi);
                // SAFETY: the product replaces the whole block before anything reads it.
                let dst = unsafe { mat_uninit(dux, o, c) };
                T::product(dst, Accum::Replace, px, vxt, par, product);
            }
            // SAFETY: the 16 products wrote every element.
            unsafe { sum.set_len(POSITIONS * o * c) };
            *du = Some(sum);
        }
    }
}
