//! Direct checks of `select`, `pad`, `concat`, `cumsum`, `topk`, `one_hot` and `scatter_add` on strided
//! inputs, against loops over row-major values.

use super::{compare, kernel, read_out, small_values, view, view_kinds};
use crate::Suite;
use crate::properties::support::{ravel, strides, unravel};
use nabla_core::{Backend, DType, Scalar};

/// The dtypes of the value-moving checks: every real and integer dtype the backend has.
const VALUE_DTYPES: [DType; 5] = [DType::F32, DType::F64, DType::I32, DType::I64, DType::U8];

/// Values for `dtype`: small integers, shifted up for `u8`.
fn values_for(dtype: DType, n: usize, seed: u64) -> Vec<f64> {
    let shift = if dtype == DType::U8 { 4.0 } else { 0.0 };
    small_values(n, seed, 4)
        .into_iter()
        .map(|v| v + shift)
        .collect()
}

/// Calls `f(lane_positions)` for every lane along `axis` (flat positions in row-major order).
fn lanes(shape: &[usize], axis: usize, mut f: impl FnMut(Vec<usize>)) {
    let n: usize = shape.iter().product();
    let st = strides(shape);
    for i in 0..n {
        if unravel(i, shape)[axis] == 0 {
            f((0..shape[axis]).map(|j| i + j * st[axis]).collect());
        }
    }
}

/// `select(cond, a, b)` with each operand in a different view kind.
pub fn select_picks_by_condition<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    let shape = [3, 4, 5];
    let n = 60;
    let cond: Vec<f64> = small_values(n, 1, 1)
        .iter()
        .map(|v| (*v > 0.0) as u8 as f64)
        .collect();
    let kinds = view_kinds(3);
    for dtype in VALUE_DTYPES {
        if !cx.has(&[dtype, DType::Bool]) {
            continue;
        }
        let (a, b) = (values_for(dtype, n, 2), values_for(dtype, n, 3));
        let want: Vec<f64> = (0..n)
            .map(|i| if cond[i] != 0.0 { a[i] } else { b[i] })
            .collect();
        for (k, kind) in kinds.iter().enumerate() {
            let what = format!("select {dtype} (cond {kind:?})");
            let tc = view(cx, &shape, &cond, kind, DType::Bool);
            let ta = view(cx, &shape, &a, &kinds[(k + 1) % kinds.len()], dtype);
            let tb = view(cx, &shape, &b, &kinds[(k + 2) % kinds.len()], dtype);
            let got = cx
                .backend()
                .select(
                    tc.storage(),
                    tc.layout(),
                    ta.storage(),
                    ta.layout(),
                    tb.storage(),
                    tb.layout(),
                )
                .map_err(kernel(&what))?;
            compare(
                &read_out(cx, &got, &shape, dtype, &what)?,
                &want,
                (0.0, 0.0),
                &what,
            )?;
        }
    }
    Ok(())
}

/// `pad` with asymmetric widths (zero included) on every view kind.
pub fn pad_kernel_on_views<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    let shape = [2, 3, 4];
    let pads = [(1, 0), (0, 2), (3, 1)];
    let out: Vec<usize> = shape
        .iter()
        .zip(&pads)
        .map(|(d, (a, b))| d + a + b)
        .collect();
    for dtype in VALUE_DTYPES {
        if !cx.has(&[dtype]) {
            continue;
        }
        let x = values_for(dtype, 24, 4);
        let fill = 7.0;
        let want: Vec<f64> = (0..out.iter().product())
            .map(|i| {
                let o = unravel(i, &out);
                let inside = (0..3).all(|d| o[d] >= pads[d].0 && o[d] < pads[d].0 + shape[d]);
                if inside {
                    let src: Vec<usize> = (0..3).map(|d| o[d] - pads[d].0).collect();
                    x[ravel(&src, &shape)]
                } else {
                    fill
                }
            })
            .collect();
        for kind in view_kinds(3) {
            let what = format!("pad {dtype} {pads:?} ({kind:?})");
            let t = view(cx, &shape, &x, &kind, dtype);
            let got = cx
                .backend()
                .pad(t.storage(), t.layout(), &pads, Scalar::F64(fill))
                .map_err(kernel(&what))?;
            compare(
                &read_out(cx, &got, &out, dtype, &what)?,
                &want,
                (0.0, 0.0),
                &what,
            )?;
        }
    }
    Ok(())
}

/// `concat` of three views (one empty) along each axis.
pub fn concat_kernel_on_views<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    let kinds = view_kinds(3);
    for dtype in VALUE_DTYPES {
        if !cx.has(&[dtype]) {
            continue;
        }
        for axis in 0..3 {
            let sizes = [2, 0, 3];
            let shapes: Vec<Vec<usize>> = sizes
                .iter()
                .map(|&k| {
                    let mut s = vec![2, 3, 4];
                    s[axis] = k;
                    s
                })
                .collect();
            let parts: Vec<Vec<f64>> = shapes
                .iter()
                .enumerate()
                .map(|(i, s)| values_for(dtype, s.iter().product(), 10 + i as u64))
                .collect();
            let mut out = vec![2, 3, 4];
            out[axis] = sizes.iter().sum();
            let want: Vec<f64> = (0..out.iter().product())
                .map(|i| {
                    let mut o = unravel(i, &out);
                    let mut k = 0;
                    while o[axis] >= sizes[k] {
                        o[axis] -= sizes[k];
                        k += 1;
                    }
                    parts[k][ravel(&o, &shapes[k])]
                })
                .collect();
            let ts: Vec<_> = (0..3)
                .map(|i| {
                    view(
                        cx,
                        &shapes[i],
                        &parts[i],
                        &kinds[(axis + i) % kinds.len()],
                        dtype,
                    )
                })
                .collect();
            let args: Vec<_> = ts.iter().map(|t| (t.storage(), t.layout())).collect();
            let what = format!("concat {dtype} axis {axis}");
            let got = cx.backend().concat(&args, axis).map_err(kernel(&what))?;
            compare(
                &read_out(cx, &got, &out, dtype, &what)?,
                &want,
                (0.0, 0.0),
                &what,
            )?;
        }
    }
    Ok(())
}

/// Inclusive `cumsum` along every axis of every view kind.
pub fn cumsum_kernel_on_views<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    let shape = [3, 4, 5];
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let x = values_for(dtype, 60, 5);
        for axis in 0..3 {
            let mut want = vec![0.0; 60];
            lanes(&shape, axis, |lane| {
                let mut acc = 0.0;
                for &p in &lane {
                    acc += x[p];
                    want[p] = acc;
                }
            });
            for kind in view_kinds(3) {
                let what = format!("cumsum {dtype} axis {axis} ({kind:?})");
                let t = view(cx, &shape, &x, &kind, dtype);
                let got = cx
                    .backend()
                    .cumsum(t.storage(), t.layout(), axis)
                    .map_err(kernel(&what))?;
                let tol = cx.tol(dtype, 0.0, 0.0);
                compare(
                    &read_out(cx, &got, &shape, dtype, &what)?,
                    &want,
                    tol,
                    &what,
                )?;
            }
        }
    }
    Ok(())
}

/// Orders floats with NaN above every number (and equal to itself).
fn nan_largest(a: f64, b: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Equal,
        (true, false) => Greater,
        (false, true) => Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Equal),
    }
}

/// `topk` against a stable sort of each lane, NaN counting as the largest value (and so coming first
/// when `largest`, last otherwise), ties in their original order.
pub fn topk_kernel_with_ties_and_nan<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    let shape = [3, 6];
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        if !cx.has(&[dtype, DType::I64]) {
            continue;
        }
        let mut x = values_for(dtype, 18, 6);
        if dtype.is_float() {
            x[4] = f64::NAN;
            x[13] = f64::NAN;
        }
        for axis in 0..2 {
            for largest in [true, false] {
                for k in [0, 1, 3, shape[axis]] {
                    let mut out = shape.to_vec();
                    out[axis] = k;
                    let len = k * 18 / shape[axis];
                    let (mut want_v, mut want_i) = (vec![0.0; len], vec![0.0; len]);
                    lanes(&shape, axis, |lane| {
                        let mut order: Vec<usize> = (0..lane.len()).collect();
                        // A stable sort, so ties keep their original order either way.
                        order.sort_by(|&a, &b| {
                            let o = nan_largest(x[lane[a]], x[lane[b]]);
                            if largest { o.reverse() } else { o }
                        });
                        let mut pos = unravel(lane[0], &shape);
                        for (j, &o) in order.iter().take(k).enumerate() {
                            pos[axis] = j;
                            let at = ravel(&pos, &out);
                            want_v[at] = x[lane[o]];
                            want_i[at] = o as f64;
                        }
                    });
                    for kind in view_kinds(2) {
                        let what = format!(
                            "topk {dtype} k {k} axis {axis} largest {largest} ({kind:?}) of {x:?}"
                        );
                        let t = view(cx, &shape, &x, &kind, dtype);
                        let (v, i) = cx
                            .backend()
                            .topk(t.storage(), t.layout(), axis, k, largest)
                            .map_err(kernel(&what))?;
                        let got_v = read_out(cx, &v, &out, dtype, &what)?;
                        let got_i = read_out(cx, &i, &out, DType::I64, &what)?;
                        compare(&got_v, &want_v, (0.0, 0.0), &format!("{what} values"))?;
                        compare(&got_i, &want_i, (0.0, 0.0), &format!("{what} indices"))?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// `one_hot` of an `I64` index view into every dtype.
pub fn one_hot_kernel<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    if !cx.has(&[DType::I64]) {
        return Ok(());
    }
    let shape = [2, 3];
    let classes = 4;
    let labels: Vec<f64> = small_values(6, 8, 3)
        .iter()
        .map(|v| v.rem_euclid(4.0))
        .collect();
    let want: Vec<f64> = labels
        .iter()
        .flat_map(|&l| (0..classes).map(move |c| (c as f64 == l) as u8 as f64))
        .collect();
    let out = [2, 3, classes];
    for dtype in [
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::Bool,
    ] {
        if !cx.has(&[dtype]) {
            continue;
        }
        for kind in view_kinds(2) {
            let what = format!("one_hot {dtype} of {labels:?} ({kind:?})");
            let t = view(cx, &shape, &labels, &kind, DType::I64);
            let got = cx
                .backend()
                .one_hot(t.storage(), t.layout(), classes, dtype)
                .map_err(kernel(&what))?;
            compare(
                &read_out(cx, &got, &out, dtype, &what)?,
                &want,
                (0.0, 0.0),
                &what,
            )?;
        }
    }
    Ok(())
}

/// `scatter_add` with repeated and negative indices into every view kind of `dst`, along each axis.
pub fn scatter_add_kernel_on_views<B: Backend>(cx: &Suite<B>) -> Result<(), String> {
    let shape = [3, 4, 2];
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        if !cx.has(&[dtype, DType::I64]) {
            continue;
        }
        let dst = values_for(dtype, 24, 9);
        for axis in 0..3 {
            let n = shape[axis] as i64;
            let mut ishape = shape.to_vec();
            ishape[axis] = 5;
            let count: usize = ishape.iter().product();
            // Indices in -n..n, repeats guaranteed (5 entries per lane for at most 4 positions).
            let idx: Vec<i64> = small_values(count, 20 + axis as u64, 4)
                .iter()
                .map(|&v| (v as i64).rem_euclid(2 * n) - n)
                .collect();
            let src = values_for(dtype, count, 30 + axis as u64);
            let mut want = dst.clone();
            for (i, (&j, &v)) in idx.iter().zip(&src).enumerate() {
                let mut o = unravel(i, &ishape);
                o[axis] = j.rem_euclid(n) as usize;
                want[ravel(&o, &shape)] += v;
            }
            let idx_f: Vec<f64> = idx.iter().map(|&i| i as f64).collect();
            for kind in view_kinds(3) {
                let what = format!("scatter_add {dtype} axis {axis} ({kind:?})");
                let td = view(cx, &shape, &dst, &kind, dtype);
                let ti = view(cx, &ishape, &idx_f, &kind, DType::I64);
                let ts = view(cx, &ishape, &src, &kind, dtype);
                let got = cx
                    .backend()
                    .scatter_add(
                        td.storage(),
                        td.layout(),
                        axis,
                        ti.storage(),
                        ti.layout(),
                        ts.storage(),
                        ts.layout(),
                    )
                    .map_err(kernel(&what))?;
                let tol = cx.tol(dtype, 0.0, 0.0);
                compare(
                    &read_out(cx, &got, &shape, dtype, &what)?,
                    &want,
                    tol,
                    &what,
                )?;
            }
        }
    }
    Ok(())
}
