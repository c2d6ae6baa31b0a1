//! `Backend::conv2d`, `conv2d_input_grad` and `conv2d_weight_grad` called directly with strided inputs
//! and every parameter (stride, padding, dilation, groups), against a naive loop over every
//! (output, input, weight) triple.

use super::{compare, kernel, read_out, small_values, view, view_kinds};
use crate::Suite;
use crate::properties::linalg::conv_walk;
use nabla_core::{Backend, Conv2dParams, DType};

/// `(x shape, w shape, params)` of the checked convolutions.
pub(crate) fn cases() -> Vec<([usize; 4], [usize; 4], Conv2dParams)> {
    let p = |stride, padding, dilation, groups| Conv2dParams {
        stride,
        padding,
        dilation,
        groups,
        precision: Default::default(),
    };
    vec![
        ([2, 3, 5, 6], [4, 3, 3, 3], Conv2dParams::default()),
        ([1, 2, 7, 7], [3, 2, 3, 2], p((2, 2), (1, 1), (1, 1), 1)),
        ([2, 4, 6, 5], [6, 2, 2, 3], p((1, 2), (1, 0), (2, 1), 2)),
        ([1, 4, 4, 4], [4, 1, 3, 3], p((1, 1), (1, 1), (1, 1), 4)),
        ([3, 1, 3, 3], [2, 1, 1, 1], p((2, 1), (0, 1), (1, 1), 1)),
    ]
}

/// The three kernels on every case, in every view kind of `x` and `dy`, for `f32` and `f64`.
pub fn conv_kernels_match_loops<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    for dtype in [DType::F32, DType::F64] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let tol = cx.tol(dtype, 0.0, 0.0);
        for (c, (xs, ws, p)) in cases().into_iter().enumerate() {
            let (oh, ow) = p
                .output_size((xs[2], xs[3]), (ws[2], ws[3]))
                .ok_or_else(|| format!("test bug: case {c} does not fit"))?;
            let ys = [xs[0], ws[0], oh, ow];
            let xv = small_values(xs.iter().product(), 3 * c as u64, 3);
            let wv = small_values(ws.iter().product(), 3 * c as u64 + 1, 3);
            let dyv = small_values(ys.iter().product(), 3 * c as u64 + 2, 3);
            let (mut y, mut dx, mut dw) = (
                vec![0.0; dyv.len()],
                vec![0.0; xv.len()],
                vec![0.0; wv.len()],
            );
            conv_walk(&xs, &ws, &p, |o, i, k| {
                y[o] += xv[i] * wv[k];
                dx[i] += dyv[o] * wv[k];
                dw[k] += dyv[o] * xv[i];
            });
            let b = cx.backend();
            for kind in view_kinds(4) {
                let what = format!("{dtype} x {xs:?} w {ws:?} ({kind:?}) {p:?}");
                let tx = view(cx, &xs, &xv, &kind, dtype);
                let tw = view(cx, &ws, &wv, &kind, dtype);
                let tdy = view(cx, &ys, &dyv, &kind, dtype);
                let name = format!("conv2d {what}");
                let got = b
                    .conv2d(tx.storage(), tx.layout(), tw.storage(), tw.layout(), &p)
                    .map_err(kernel(&name))?;
                compare(&read_out(cx, &got, &ys, dtype, &name)?, &y, tol, &name)?;
                let name = format!("conv2d_input_grad {what}");
                let got = b
                    .conv2d_input_grad(
                        tdy.storage(),
                        tdy.layout(),
                        tw.storage(),
                        tw.layout(),
                        (xs[2], xs[3]),
                        &p,
                    )
                    .map_err(kernel(&name))?;
                compare(&read_out(cx, &got, &xs, dtype, &name)?, &dx, tol, &name)?;
                let name = format!("conv2d_weight_grad {what}");
                let got = b
                    .conv2d_weight_grad(
                        tx.storage(),
                        tx.layout(),
                        tdy.storage(),
                        tdy.layout(),
                        (ws[2], ws[3]),
                        &p,
                    )
                    .map_err(kernel(&name))?;
                compare(&read_out(cx, &got, &ws, dtype, &name)?, &dw, tol, &name)?;
            }
        }
    }
    Ok(())
}
