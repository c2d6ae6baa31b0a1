//! `Backend::max_pool2d` against a naive loop over each window, per its contract: values and `I64` flat
//! indices `h * W + w` inside each plane, padding never wins, ties go to the first maximum in row-major
//! window order, a NaN in a window is its maximum, and `ceil_mode` adds a last partial window.

use super::{compare, kernel, read_out, small_values, view, view_kinds};
use crate::Suite;
use nabla_core::{Backend, DType, Pool2dParams};

/// Pools every `h x w` plane of row-major `x` (leading dimensions flattened): the values and the flat
/// indices of the maxima, or `None` when the parameters admit no window.
pub fn max_pool2d_reference(
    x: &[f64],
    (h, w): (usize, usize),
    p: &Pool2dParams,
) -> Option<(Vec<f64>, Vec<i64>)> {
    let (oh, ow) = p.output_size((h, w))?;
    let planes = x.len().checked_div(h * w).unwrap_or(0);
    let (mut vals, mut idx) = (Vec::new(), Vec::new());
    let tap = |o: usize, k: usize, s: usize, d: usize, pad: usize, n: usize| {
        let i = (o * s + k * d) as isize - pad as isize;
        (0..n as isize).contains(&i).then_some(i as usize)
    };
    for plane in 0..planes {
        let at = |iy: usize, ix: usize| iy * w + ix;
        let v = |i: usize| x[plane * h * w + i];
        for oy in 0..oh {
            for ox in 0..ow {
                let mut best: Option<usize> = None;
                'window: for ky in 0..p.kernel.0 {
                    let Some(iy) = tap(oy, ky, p.stride.0, p.dilation.0, p.padding.0, h) else {
                        continue;
                    };
                    for kx in 0..p.kernel.1 {
                        let Some(ix) = tap(ox, kx, p.stride.1, p.dilation.1, p.padding.1, w) else {
                            continue;
                        };
                        let i = at(iy, ix);
                        if v(i).is_nan() {
                            best = Some(i);
                            break 'window;
                        }
                        if best.is_none_or(|b| v(i) > v(b)) {
                            best = Some(i);
                        }
                    }
                }
                let b = best?;
                vals.push(v(b));
                idx.push(b as i64);
            }
        }
    }
    Some((vals, idx))
}

/// Runs the kernel on `x` (of `shape`, row-major values, seen through every view kind) and compares
/// values and indices with the reference.
fn check_pool<B: Backend>(
    cx: &Suite<B>,
    shape: &[usize],
    x: &[f64],
    p: &Pool2dParams,
    dtype: DType,
) -> Result<(), String> {
    let r = shape.len();
    let (h, w) = (shape[r - 2], shape[r - 1]);
    let (want_v, want_i) = max_pool2d_reference(x, (h, w), p)
        .ok_or_else(|| format!("test bug: {p:?} admits no window on {h}x{w}"))?;
    let (oh, ow) = p.output_size((h, w)).unwrap_or_default();
    let out_shape: Vec<usize> = shape[..r - 2].iter().copied().chain([oh, ow]).collect();
    for kind in view_kinds(r) {
        let what = format!("max_pool2d {dtype} {shape:?} ({kind:?}) {p:?}");
        let t = view(cx, shape, x, &kind, dtype);
        let (v, i) = cx
            .backend()
            .max_pool2d(t.storage(), t.layout(), p)
            .map_err(kernel(&what))?;
        let got_v = read_out(cx, &v, &out_shape, dtype, &format!("{what} values"))?;
        let got_i = read_out(cx, &i, &out_shape, DType::I64, &format!("{what} indices"))?;
        compare(&got_v, &want_v, (0.0, 0.0), &format!("{what} values"))?;
        let want_i: Vec<f64> = want_i.iter().map(|&i| i as f64).collect();
        compare(&got_i, &want_i, (0.0, 0.0), &format!("{what} indices"))?;
    }
    Ok(())
}

/// Parameter sets covering stride, padding, dilation, rectangular windows and `ceil_mode`.
fn param_sets() -> Vec<Pool2dParams> {
    let p = |kernel, stride, padding, dilation, ceil_mode| Pool2dParams {
        kernel,
        stride,
        padding,
        dilation,
        ceil_mode,
    };
    vec![
        Pool2dParams::square(2),
        p((1, 1), (1, 1), (0, 0), (1, 1), false),
        p((3, 3), (2, 2), (1, 1), (1, 1), false),
        p((3, 2), (1, 2), (1, 0), (2, 1), true),
        p((2, 2), (2, 2), (0, 0), (1, 1), true),
        p((3, 3), (2, 2), (1, 1), (1, 1), true),
        p((2, 3), (3, 1), (1, 1), (1, 2), false),
        // Whole windows that tile the rows (a kernel may take a vectorised path for these), and
        // overlapping whole windows.
        Pool2dParams::square(3),
        p((3, 3), (2, 2), (0, 0), (1, 1), false),
    ]
}

/// Random small-integer planes (so ties are common) of several ranks, in every supported real dtype
/// and every view kind, for every parameter set that fits.
pub fn max_pool2d_matches_the_contract<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    // Rows of 13, 21 and 130 columns give pooled rows longer than a vector and longer than 64.
    let shapes: [&[usize]; 8] = [
        &[2, 3, 5, 7],
        &[1, 1, 4, 4],
        &[3, 6, 5],
        &[5, 5],
        &[2, 1, 1, 3],
        &[2, 13, 13],
        &[6, 21],
        &[2, 4, 130],
    ];
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64, DType::U8] {
        if !cx.has(&[dtype, DType::I64]) {
            continue;
        }
        // u8 holds no negatives: shift the values up.
        let shift = if dtype == DType::U8 { 3.0 } else { 0.0 };
        for (s, shape) in shapes.iter().enumerate() {
            let n: usize = shape.iter().product();
            let x: Vec<f64> = small_values(n, s as u64 + 7, 3)
                .into_iter()
                .map(|v| v + shift)
                .collect();
            let r = shape.len();
            for p in param_sets() {
                if p.output_size((shape[r - 2], shape[r - 1])).is_some() {
                    check_pool(cx, shape, &x, &p, dtype)?;
                }
            }
        }
    }
    Ok(())
}

/// Hand-made planes for the rules: equal values give the first tap, a NaN wins wherever it sits,
/// negative values beat the padding, and `ceil_mode` pools the last partial window.
pub fn max_pool2d_ties_nan_and_padding<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    let dtype = cx.float();
    if !cx.has(&[DType::I64]) {
        return Ok(());
    }
    let run = |shape: &[usize], x: &[f64], p: Pool2dParams, want_v: &[f64], want_i: &[i64]| {
        let what = format!("max_pool2d {dtype} {x:?} {p:?}");
        let (reference_v, reference_i) =
            max_pool2d_reference(x, (shape[0], shape[1]), &p).ok_or("test bug: no window")?;
        let want_f: Vec<f64> = want_i.iter().map(|&i| i as f64).collect();
        let ref_f: Vec<f64> = reference_i.iter().map(|&i| i as f64).collect();
        compare(&reference_v, want_v, (0.0, 0.0), "reference values")?;
        compare(&ref_f, &want_f, (0.0, 0.0), "reference indices")?;
        check_pool(cx, shape, x, &p, dtype).map_err(|e| format!("{what}: {e}"))
    };
    let nan = f64::NAN;
    let three = Pool2dParams {
        kernel: (3, 3),
        stride: (1, 1),
        padding: (1, 1),
        dilation: (1, 1),
        ceil_mode: false,
    };
    // Ties: every window's maximum is its first tap inside the plane.
    run(&[2, 2], &[1.0; 4], three, &[1.0; 4], &[0, 0, 0, 0])?;
    run(
        &[2, 4],
        &[5.0; 8],
        Pool2dParams::square(2),
        &[5.0; 2],
        &[0, 2],
    )?;
    // NaN wins, wherever it sits in the window, and a second NaN does not move the index.
    run(
        &[2, 2],
        &[1.0, nan, 9.0, nan],
        Pool2dParams::square(2),
        &[nan],
        &[1],
    )?;
    run(
        &[2, 3],
        &[7.0, 1.0, 2.0, 3.0, 4.0, nan],
        Pool2dParams {
            stride: (1, 1),
            ..Pool2dParams::square(2)
        },
        &[7.0, nan],
        &[0, 5],
    )?;
    // Ties and NaNs along a row of nine 2x2 windows (longer than a vector of f32 lanes).
    let x = [
        [
            1., 1., 2., nan, 0., 3., 3., 3., 5., 4., 4., 4., nan, 1., 2., 2., 0., 0.,
        ],
        [
            0., 1., 2., 2., 3., 0., 3., 3., 5., 5., 4., 4., 1., nan, 2., 2., 0., 0.,
        ],
    ]
    .concat();
    run(
        &[2, 18],
        &x,
        Pool2dParams::square(2),
        &[1., nan, 3., 3., 5., 4., nan, 2., 0.],
        &[0, 3, 5, 6, 8, 10, 12, 14, 16],
    )?;
    // Padding never wins, even over negative values.
    run(
        &[2, 2],
        &[-4.0, -3.0, -2.0, -1.0],
        three,
        &[-1.0; 4],
        &[3, 3, 3, 3],
    )?;
    // ceil_mode: a 3x3 plane with 2x2 windows gives a last partial row and column.
    let ceil = Pool2dParams {
        ceil_mode: true,
        ..Pool2dParams::square(2)
    };
    let x: Vec<f64> = (1..=9).map(f64::from).collect();
    run(&[3, 3], &x, ceil, &[5.0, 6.0, 8.0, 9.0], &[4, 5, 7, 8])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_follows_pytorch_on_a_known_case() {
        // torch.nn.functional.max_pool2d(torch.arange(16.).view(1,1,4,4), 3, 2, 1, return_indices=True)
        let x: Vec<f64> = (0..16).map(f64::from).collect();
        let p = Pool2dParams {
            kernel: (3, 3),
            stride: (2, 2),
            padding: (1, 1),
            dilation: (1, 1),
            ceil_mode: false,
        };
        let (v, i) = max_pool2d_reference(&x, (4, 4), &p).expect("fits");
        assert_eq!(v, vec![5.0, 7.0, 13.0, 15.0]);
        assert_eq!(i, vec![5, 7, 13, 15]);
    }
}
