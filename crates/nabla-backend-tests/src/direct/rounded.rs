//! The products autocast runs ([`Backend::matmul_rounded`], and the convolutions at
//! [`Precision::Bf16`] and [`Precision::F16`]): each operand element rounds to bf16 or f16 (to
//! nearest, ties to even; f16 past its range to infinity) and the products sum in f32. The references are loops over the rounded operands in f64, so the stated
//! tolerance is f32 summation's (relative `1e-5`), far below the rounding the checks look for; each
//! check also makes sure its operands are ones that bf16 rounding changes.

use super::{compare, kernel, read_out, small_values, view, view_kinds};
use crate::Suite;
use crate::direct::conv::cases;
use crate::properties::linalg::{batched_matmul, conv_walk};
use crate::properties::support::{ViewKind, round_to};
use nabla_core::{Backend, Conv2dParams, DType, Precision};

/// The rounding precisions, each with the dtype its operands round to.
const PRECISIONS: [(Precision, DType); 2] =
    [(Precision::Bf16, DType::BF16), (Precision::F16, DType::F16)];

/// Tolerance of a rounded product against its rounded-operand reference: f32 summation of a few dozen
/// terms of magnitude up to 16.
const SUM_TOL: (f64, f64) = (1e-5, 1e-5);

/// Small integers plus a fraction that bf16, and often f16, cannot hold (a multiple of `2^-11`),
/// exact in f32.
fn unrounded_values(n: usize, seed: u64) -> Vec<f64> {
    small_values(n, seed, 3)
        .into_iter()
        .enumerate()
        .map(|(i, v)| v + ((i % 5) as f64 + 1.0) * 2f64.powi(-11))
        .collect()
}

fn rounded(values: &[f64], to: DType) -> Vec<f64> {
    values.iter().map(|&v| round_to(to, v)).collect()
}

/// Errs unless the rounded reference differs from the unrounded one beyond the tolerance somewhere
/// (so a kernel that skipped the rounding would fail the check).
fn check_rounding_shows(rounded: &[f64], full: &[f64], what: &str) -> Result<(), String> {
    match compare(rounded, full, SUM_TOL, what) {
        Ok(()) => Err(format!(
            "test bug: {what}: rounding does not change the result beyond the tolerance"
        )),
        Err(_) => Ok(()),
    }
}

/// `matmul_rounded` of F32 operands in every view kind equals the loop over rounded operands, at
/// bf16 and f16; f16 overflows to infinity; F64 operands are an error.
pub fn matmul_rounded_matches_rounded_loops<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    if !cx.has(&[DType::F32]) {
        return Ok(());
    }
    let b = cx.backend();
    let cases = [(1, 5, 7, 3), (2, 9, 33, 17), (3, 1, 40, 2)];
    for (precision, to) in PRECISIONS {
        for (c, dims) in cases.into_iter().enumerate() {
            let (batch, m, k, n) = dims;
            let (sa, sb) = ([batch, m, k], [batch, k, n]);
            let av = unrounded_values(batch * m * k, 2 * c as u64);
            let bv = unrounded_values(batch * k * n, 2 * c as u64 + 1);
            let want = batched_matmul(&rounded(&av, to), &rounded(&bv, to), dims);
            let name = format!("matmul_rounded {precision:?} {sa:?} x {sb:?}");
            check_rounding_shows(&want, &batched_matmul(&av, &bv, dims), &name)?;
            for kind in view_kinds(3) {
                let name = format!("{name} ({kind:?})");
                let ta = view(cx, &sa, &av, &kind, DType::F32);
                let tb = view(cx, &sb, &bv, &kind, DType::F32);
                let got = b
                    .matmul_rounded(
                        ta.storage(),
                        ta.layout(),
                        tb.storage(),
                        tb.layout(),
                        precision,
                    )
                    .map_err(kernel(&name))?;
                let got = read_out(cx, &got, &[batch, m, n], DType::F32, &name)?;
                compare(&got, &want, SUM_TOL, &name)?;
            }
        }
    }
    let kind = ViewKind::Contiguous;
    let big = view(cx, &[1, 2], &[70000.0, 1.0], &kind, DType::F32);
    let ones = view(cx, &[2, 1], &[1.0, 1.0], &kind, DType::F32);
    let name = "matmul_rounded F16 of 70000 (past f16's 65504)";
    let got = b
        .matmul_rounded(
            big.storage(),
            big.layout(),
            ones.storage(),
            ones.layout(),
            Precision::F16,
        )
        .map_err(kernel(name))?;
    let got = read_out(cx, &got, &[1, 1], DType::F32, name)?;
    compare(&got, &[f64::INFINITY], SUM_TOL, name)?;
    if cx.has(&[DType::F64]) {
        let t = view(cx, &[2, 2], &[1.0; 4], &kind, DType::F64);
        for (precision, _) in PRECISIONS {
            let (s, l) = (t.storage(), t.layout());
            if b.matmul_rounded(s, l, s, l, precision).is_ok() {
                return Err(format!(
                    "matmul_rounded at {precision:?} accepted F64 operands"
                ));
            }
        }
    }
    Ok(())
}

/// The reference convolution and its two gradients over the given operand values.
fn conv_loops(
    xs: &[usize],
    ws: &[usize],
    p: &Conv2dParams,
    (xv, wv, dyv): (&[f64], &[f64], &[f64]),
) -> [Vec<f64>; 3] {
    let (mut y, mut dx, mut dw) = (
        vec![0.0; dyv.len()],
        vec![0.0; xv.len()],
        vec![0.0; wv.len()],
    );
    conv_walk(xs, ws, p, |o, i, k| {
        y[o] += xv[i] * wv[k];
        dx[i] += dyv[o] * wv[k];
        dw[k] += dyv[o] * xv[i];
    });
    [y, dx, dw]
}

/// The three convolution kernels at [`Precision::Bf16`] and [`Precision::F16`], on every case of
/// the direct convolution checks and every view kind, equal the loops over rounded operands; F64
/// operands are an error.
pub fn conv_rounded_matches_rounded_loops<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    if !cx.has(&[DType::F32]) {
        return Ok(());
    }
    for (precision, to) in PRECISIONS {
        for (c, (xs, ws, p)) in cases().into_iter().enumerate() {
            conv_case(cx, c, &xs, &ws, &Conv2dParams { precision, ..p }, to)?;
        }
    }
    if cx.has(&[DType::F64]) {
        let b = cx.backend();
        let t = view(
            cx,
            &[1, 1, 2, 2],
            &[1.0; 4],
            &ViewKind::Contiguous,
            DType::F64,
        );
        for (precision, _) in PRECISIONS {
            let p = Conv2dParams {
                precision,
                ..Default::default()
            };
            if b.conv2d(t.storage(), t.layout(), t.storage(), t.layout(), &p)
                .is_ok()
            {
                return Err(format!("conv2d at {precision:?} accepted F64 operands"));
            }
        }
    }
    Ok(())
}

/// One case of [`conv_rounded_matches_rounded_loops`]: the operands round to `to`.
fn conv_case<B: Backend>(
    cx: &Suite<B>,
    c: usize,
    xs: &[usize; 4],
    ws: &[usize; 4],
    p: &Conv2dParams,
    to: DType,
) -> Result<(), String> {
    let b = cx.backend();
    let (oh, ow) = p
        .output_size((xs[2], xs[3]), (ws[2], ws[3]))
        .ok_or_else(|| format!("test bug: case {c} does not fit"))?;
    let ys = [xs[0], ws[0], oh, ow];
    let xv = unrounded_values(xs.iter().product(), 3 * c as u64);
    let wv = unrounded_values(ws.iter().product(), 3 * c as u64 + 1);
    let dyv = unrounded_values(ys.iter().product(), 3 * c as u64 + 2);
    let (rx, rw, rdy) = (rounded(&xv, to), rounded(&wv, to), rounded(&dyv, to));
    let want = conv_loops(xs, ws, p, (&rx, &rw, &rdy));
    let full = conv_loops(xs, ws, p, (&xv, &wv, &dyv));
    for (k, op) in ["conv2d", "conv2d_input_grad", "conv2d_weight_grad"]
        .iter()
        .enumerate()
    {
        check_rounding_shows(&want[k], &full[k], &format!("{op} case {c} {p:?}"))?;
    }
    for kind in view_kinds(4) {
        let what = format!("x {xs:?} w {ws:?} ({kind:?}) {p:?}");
        let tx = view(cx, xs, &xv, &kind, DType::F32);
        let tw = view(cx, ws, &wv, &kind, DType::F32);
        let tdy = view(cx, &ys, &dyv, &kind, DType::F32);
        let name = format!("conv2d {what}");
        let got = b
            .conv2d(tx.storage(), tx.layout(), tw.storage(), tw.layout(), p)
            .map_err(kernel(&name))?;
        compare(
            &read_out(cx, &got, &ys, DType::F32, &name)?,
            &want[0],
            SUM_TOL,
            &name,
        )?;
        let name = format!("conv2d_input_grad {what}");
        let (g, l) = (tdy.storage(), tdy.layout());
        let got = b
            .conv2d_input_grad(g, l, tw.storage(), tw.layout(), (xs[2], xs[3]), p)
            .map_err(kernel(&name))?;
        compare(
            &read_out(cx, &got, xs, DType::F32, &name)?,
            &want[1],
            SUM_TOL,
            &name,
        )?;
        let name = format!("conv2d_weight_grad {what}");
        let got = b
            .conv2d_weight_grad(tx.storage(), tx.layout(), g, l, (ws[2], ws[3]), p)
            .map_err(kernel(&name))?;
        compare(
            &read_out(cx, &got, ws, DType::F32, &name)?,
            &want[2],
            SUM_TOL,
            &name,
        )?;
    }
    Ok(())
}
