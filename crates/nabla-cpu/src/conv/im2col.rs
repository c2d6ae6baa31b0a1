//! Unfolding image patches into columns (`im2col`) and its adjoint, folding columns back into an
//! image with accumulation (`col2im`).
//!
//! The columns matrix of one image and one channel group has a row per `(channel, ki, kj)` kernel
//! tap and a column per output pixel `(oy, ox)`: entry `[(c, ki, kj), (oy, ox)]` is the input at
//! `(c, oy * stride + ki * dilation - padding, ox * stride + kj * dilation - padding)`, or 0 in the
//! padding. Its rows lie `ld` elements apart (`ld >= pixels`), so that the columns of several images
//! can sit side by side in one wider matrix, one product for all of them.

use super::runs::Runs;
use nabla_core::Conv2dParams;

/// The sizes of one convolution.
#[derive(Clone, Copy, Debug)]
pub(super) struct Geom {
    /// Batch size.
    pub n: usize,
    /// Input channels.
    pub c: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels.
    pub o: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Output height.
    pub oh: usize,
    /// Output width.
    pub ow: usize,
    /// Stride, padding, dilation, groups.
    pub p: Conv2dParams,
}

impl Geom {
    /// Input channels per group.
    pub fn cg(&self) -> usize {
        self.c / self.p.groups
    }

    /// Output channels per group.
    pub fn og(&self) -> usize {
        self.o / self.p.groups
    }

    /// Rows of the columns matrix: kernel taps per group.
    pub fn taps(&self) -> usize {
        self.cg() * self.kh * self.kw
    }

    /// Output pixels per channel.
    pub fn pixels(&self) -> usize {
        self.oh * self.ow
    }

    /// `true` when the columns matrix is the input itself: a 1x1 kernel with unit stride and no
    /// padding.
    pub fn is_pointwise(&self) -> bool {
        self.kh == 1 && self.kw == 1 && self.p.stride == (1, 1) && self.p.padding == (0, 0)
    }
}

/// Where the channels of one image group start in a buffer, and the steps between channels, rows
/// and columns.
#[derive(Clone, Copy, Debug)]
pub(super) struct Image {
    /// Buffer offset of element `[c0, 0, 0]`.
    pub offset: usize,
    /// Steps between channels, rows and columns.
    pub strides: [isize; 3],
}

/// Output positions `lo..hi` along one axis for which kernel tap `tap` reads inside the input of
/// `size`: `o * stride + tap * dilation - padding` in `0..size`.
fn valid(
    out: usize,
    size: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    tap: usize,
) -> (usize, usize) {
    let shift = tap * dilation;
    let lo = if shift >= pad {
        0
    } else {
        (pad - shift).div_ceil(stride)
    };
    let hi = if size + pad <= shift {
        0
    } else {
        (size + pad - shift).div_ceil(stride)
    };
    let lo = lo.min(out);
    (lo, hi.clamp(lo, out))
}

/// One run of the columns matrix that reads the input: kernel-tap row `row` (channel `c`), output
/// row `oy` (input row `iy`), output columns `x0..x1` reading input columns `ix0, ix0 + stride,
/// ...`.
struct Segment {
    row: usize,
    c: usize,
    oy: usize,
    iy: usize,
    x0: usize,
    x1: usize,
    ix0: usize,
}

/// Calls `f` for every segment of the columns matrix that reads the input; every other entry is
/// padding.
fn for_each_segment(g: &Geom, mut f: impl FnMut(Segment)) {
    let Conv2dParams {
        stride: (sy, sx),
        padding: (py, px),
        dilation: (dy, dx),
        ..
    } = g.p;
    for c in 0..g.cg() {
        for ki in 0..g.kh {
            let (y0, y1) = valid(g.oh, g.h, sy, dy, py, ki);
            for kj in 0..g.kw {
                let (x0, x1) = valid(g.ow, g.w, sx, dx, px, kj);
                if x0 == x1 {
                    continue;
                }
                let row = (c * g.kh + ki) * g.kw + kj;
                let ix0 = x0 * sx + kj * dx - px;
                for oy in y0..y1 {
                    let iy = oy * sy + ki * dy - py;
                    f(Segment {
                        row,
                        c,
                        oy,
                        iy,
                        x0,
                        x1,
                        ix0,
                    });
                }
            }
        }
    }
}

/// Fills `cols` (`taps x pixels`, rows `ld` apart) with the patches of one image group of `x`.
pub(super) fn im2col<T: Runs>(x: &[T], img: Image, g: &Geom, cols: &mut [T], ld: usize) {
    let [sc, sh, sw] = img.strides;
    if g.p.padding == (0, 0) && g.p.stride.1 == 1 && sw == 1 && sc >= 0 && sh >= 0 {
        return im2col_unpadded(x, img.offset, [sc as usize, sh as usize], g, cols, ld);
    }
    let pixels = g.pixels();
    // Without padding every entry reads the input (the output size keeps each window inside it), so
    // only padded convolutions have entries to zero.
    if g.p.padding != (0, 0) && pixels > 0 {
        for row in 0..g.taps() {
            cols[row * ld..][..pixels].fill(T::zero());
        }
    }
    let step = g.p.stride.1 as isize * sw;
    for_each_segment(g, |s| {
        let dst = &mut cols[s.row * ld + s.oy * g.ow..][s.x0..s.x1];
        let src =
            img.offset as isize + s.c as isize * sc + s.iy as isize * sh + s.ix0 as isize * sw;
        if step == 1 {
            let src = src as usize;
            dst.copy_from_slice(&x[src..src + dst.len()]);
        } else {
            for (t, v) in dst.iter_mut().enumerate() {
                *v = x[(src + t as isize * step) as usize];
            }
        }
    });
}

crate::simd_kernel! {
    /// Adds the columns matrix `cols` (`taps x pixels`, rows `ld` apart) back onto the contiguous
    /// `[channels, h, w]` image group `dx`: the adjoint of [`im2col`]. Compiled per SIMD level, so
    /// that the adds of a short run are vector adds.
    pub(super) fn col2im<T: Runs>(cols: &[T], g: &Geom, dx: &mut [T], ld: usize) {
        let step = g.p.stride.1;
        if g.p.padding == (0, 0) && step == 1 {
            return col2im_unpadded(cols, g, dx, ld);
        }
        for_each_segment(g, |s| {
            let src = &cols[s.row * ld + s.oy * g.ow..][s.x0..s.x1];
            let start = (s.c * g.h + s.iy) * g.w + s.ix0;
            if step == 1 {
                for (d, &v) in dx[start..start + src.len()].iter_mut().zip(src) {
                    *d = d.add(v);
                }
            } else {
                for (t, &v) in src.iter().enumerate() {
                    let d = &mut dx[start + t * step];
                    *d = d.add(v);
                }
            }
        });
    }
}

/// The image offset of kernel tap `(c, ki, kj)`'s first input (output pixel `(0, 0)`) in an
/// unpadded convolution, given the steps between channels and rows (columns are contiguous).
fn tap_start(g: &Geom, [sc, sh]: [usize; 2], (c, ki, kj): (usize, usize, usize)) -> usize {
    c * sc + ki * g.p.dilation.0 * sh + kj * g.p.dilation.1
}

/// The kernel taps `(c, ki, kj)` in the order of the columns' rows.
fn taps(g: &Geom) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    (0..g.cg())
        .flat_map(move |c| (0..g.kh).flat_map(move |ki| (0..g.kw).map(move |kj| (c, ki, kj))))
}

/// [`im2col`] without padding and with unit column stride: every row of the columns is `oh` whole
/// runs of `ow` consecutive inputs, `stride.0` image rows apart.
fn im2col_unpadded<T: Runs>(
    x: &[T],
    offset: usize,
    steps: [usize; 2],
    g: &Geom,
    cols: &mut [T],
    ld: usize,
) {
    let pixels = g.pixels();
    if pixels == 0 {
        return;
    }
    for (r, tap) in taps(g).enumerate() {
        let start = offset + tap_start(g, steps, tap);
        T::copy_rows(
            &mut cols[r * ld..][..pixels],
            &x[start..],
            g.ow,
            g.p.stride.0 * steps[1],
        );
    }
}

/// [`col2im`] without padding and with unit column stride (see [`im2col_unpadded`]).
fn col2im_unpadded<T: Runs>(cols: &[T], g: &Geom, dx: &mut [T], ld: usize) {
    let pixels = g.pixels();
    if pixels == 0 {
        return;
    }
    let steps = [g.h * g.w, g.w];
    for (r, tap) in taps(g).enumerate() {
        let start = tap_start(g, steps, tap);
        T::add_rows(
            &mut dx[start..],
            g.p.stride.0 * g.w,
            &cols[r * ld..][..pixels],
            g.ow,
        );
    }
}
