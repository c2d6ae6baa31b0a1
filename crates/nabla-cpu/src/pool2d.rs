//! 2-D max pooling with the position of each maximum (PyTorch's `max_pool2d(..., return_indices=True)`).
//!
//! Every `H x W` plane (the last two dimensions) is pooled on its own; planes are split across threads
//! for large inputs. Window taps in the padding are skipped, so padding never wins; ties keep the first
//! maximum in row-major window order; the first NaN of a window is its maximum, as in PyTorch.

use crate::CpuStorage;
use crate::strided::gather_view;
use nabla_core::{DType, Element, Error, Layout, Pool2dParams, Result};
use rayon::prelude::*;
use std::borrow::Cow;

/// Output elements above which planes are pooled in parallel.
const PARALLEL_OUTPUTS: usize = 1 << 14;

/// The geometry of one pooling: plane sizes and parameters.
#[derive(Clone, Copy)]
struct Geometry {
    h: usize,
    w: usize,
    out_h: usize,
    out_w: usize,
    p: Pool2dParams,
}

impl Geometry {
    /// Pools one plane into `vals`/`idx` (each `out_h * out_w` long); `Err(position)` names an output
    /// whose window covers no input element.
    fn pool_plane<T: Element + PartialOrd>(
        &self,
        plane: &[T],
        vals: &mut [T],
        idx: &mut [i64],
    ) -> std::result::Result<(), (usize, usize)> {
        let p = &self.p;
        for oh in 0..self.out_h {
            let taps_h = taps(
                oh,
                p.stride.0,
                p.padding.0,
                p.dilation.0,
                p.kernel.0,
                self.h,
            );
            for ow in 0..self.out_w {
                let mut best: Option<(T, usize)> = None;
                'window: for ih in taps_h.clone() {
                    let taps_w = taps(
                        ow,
                        p.stride.1,
                        p.padding.1,
                        p.dilation.1,
                        p.kernel.1,
                        self.w,
                    );
                    for iw in taps_w {
                        let at = ih * self.w + iw;
                        let v = plane[at];
                        #[allow(clippy::eq_op)]
                        let is_nan = v != v;
                        let wins = match best {
                            _ if is_nan => true,
                            None => true,
                            Some((b, _)) => v > b,
                        };
                        if wins {
                            best = Some((v, at));
                        }
                        if is_nan {
                            break 'window;
                        }
                    }
                }
                let (v, at) = best.ok_or((oh, ow))?;
                vals[oh * self.out_w + ow] = v;
                idx[oh * self.out_w + ow] = at as i64;
            }
        }
        Ok(())
    }
}

/// The input rows (or columns) that output position `o` reads, padding taps left out.
fn taps(
    o: usize,
    stride: usize,
    pad: usize,
    dilation: usize,
    kernel: usize,
    size: usize,
) -> impl Iterator<Item = usize> + Clone {
    (0..kernel).filter_map(move |k| {
        (o * stride + k * dilation)
            .checked_sub(pad)
            .filter(|&i| i < size)
    })
}

/// Max pooling of every plane of `x`; returns the values and the `I64` flat positions of the maxima.
pub(crate) fn max_pool2d(
    x: &CpuStorage,
    layout: &Layout,
    p: &Pool2dParams,
) -> Result<(CpuStorage, CpuStorage)> {
    const OP: &str = "max_pool2d";
    let shape = layout.shape();
    let rank = shape.len();
    if rank < 2 {
        return Err(Error::invalid(
            OP,
            format!("expected at least 2 dimensions [..., H, W], got shape {shape:?}"),
        ));
    }
    let (h, w) = (shape[rank - 2], shape[rank - 1]);
    let (out_h, out_w) = p.output_size((h, w)).ok_or_else(|| {
        Error::invalid(
            OP,
            format!("parameters {p:?} give no output for an input plane of {h}x{w}"),
        )
    })?;
    let geometry = Geometry {
        h,
        w,
        out_h,
        out_w,
        p: *p,
    };
    macro_rules! go {
        ($($dt:ident => $t:ty),*) => {
            match x.dtype() {
                $(DType::$dt => pool_typed::<$t>(x.typed::<$t>(OP)?, layout, geometry),)*
                other => Err(Error::invalid(
                    OP,
                    format!("max pooling supports real floats and integers, not {other:?}"),
                )),
            }
        };
    }
    go!(F32 => f32, F64 => f64, I32 => i32, I64 => i64, U8 => u8)
}

fn pool_typed<T: Element + PartialOrd>(
    data: &[T],
    layout: &Layout,
    g: Geometry,
) -> Result<(CpuStorage, CpuStorage)> {
    let input: Cow<'_, [T]> = match layout.contiguous_range() {
        Some(r) => Cow::Borrowed(&data[r]),
        None => Cow::Owned(gather_view(data, layout)),
    };
    let (plane_in, plane_out) = (g.h * g.w, g.out_h * g.out_w);
    let planes = if plane_in == 0 {
        0
    } else {
        input.len() / plane_in
    };
    let mut vals = vec![T::zero(); planes * plane_out];
    let mut idx = vec![0i64; planes * plane_out];
    let run = |(i, (v, ix)): (usize, (&mut [T], &mut [i64]))| {
        g.pool_plane(&input[i * plane_in..(i + 1) * plane_in], v, ix)
    };
    let outcome = if plane_out == 0 {
        Ok(())
    } else if vals.len() >= PARALLEL_OUTPUTS {
        vals.par_chunks_mut(plane_out)
            .zip(idx.par_chunks_mut(plane_out))
            .enumerate()
            .try_for_each(run)
    } else {
        vals.chunks_mut(plane_out)
            .zip(idx.chunks_mut(plane_out))
            .enumerate()
            .try_for_each(run)
    };
    outcome.map_err(|(oh, ow)| {
        Error::invalid(
            "max_pool2d",
            format!(
                "the window of output ({oh}, {ow}) covers no input element ({:?} on a {}x{} plane)",
                g.p, g.h, g.w
            ),
        )
    })?;
    Ok((CpuStorage::from_vec(vals), CpuStorage::from_vec(idx)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(values: Vec<f32>, h: usize, w: usize, p: Pool2dParams) -> (Vec<f32>, Vec<i64>) {
        let x = CpuStorage::from_vec(values);
        let (v, i) = max_pool2d(&x, &Layout::contiguous([1, h, w]), &p).unwrap();
        (
            v.typed::<f32>("t").unwrap().to_vec(),
            i.typed::<i64>("t").unwrap().to_vec(),
        )
    }

    #[test]
    fn two_by_two_windows_pick_the_first_maximum() {
        let x = vec![
            1., 3., 3., 0., 2., 2., -1., 4., 5., 5., 0., 0., 5., 5., 0., 7.,
        ];
        let (v, i) = pool(x, 4, 4, Pool2dParams::square(2));
        assert_eq!(v, vec![3., 4., 5., 7.]);
        assert_eq!(i, vec![1, 7, 8, 15]);
    }

    #[test]
    fn padding_never_wins_and_nan_propagates() {
        let p = Pool2dParams {
            padding: (1, 1),
            ..Pool2dParams::square(2)
        };
        let (v, i) = pool(vec![-5., -6., f32::NAN, -7.], 2, 2, p);
        assert_eq!(v[..2], [-5., -6.]);
        assert!(v[2].is_nan());
        assert_eq!(i, vec![0, 1, 2, 3]);
    }

    #[test]
    fn strided_views_are_pooled_as_seen() {
        let x = CpuStorage::from_vec((0..8).map(|v| v as f64).collect::<Vec<_>>());
        // The transpose of a 2x4 plane: a 4x2 plane.
        let view = Layout::contiguous([2, 4]).permute(&[1, 0]).unwrap();
        let (v, i) = max_pool2d(&x, &view, &Pool2dParams::square(2)).unwrap();
        assert_eq!(v.typed::<f64>("t").unwrap(), [5., 7.]);
        assert_eq!(i.typed::<i64>("t").unwrap(), [3, 7]);
    }
}
