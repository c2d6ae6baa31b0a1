//! Reductions over random axis subsets, arg-reductions, cumulative sums and sorting, against loops over
//! row-major data.

use super::support::*;
use nabla_core::{DType, ReduceOp};

use proptest::prelude::*;

/// Reduces `vals` of `shape` over `axes` (sorted) with `f` from `init`; returns the keepdims shape and
/// the values.
fn reduce_ref(
    vals: &[f64],
    shape: &[usize],
    axes: &[usize],
    init: f64,
    f: impl Fn(f64, f64) -> f64,
) -> (Vec<usize>, Vec<f64>) {
    let mut kept = shape.to_vec();
    for &a in axes {
        kept[a] = 1;
    }
    let mut out = vec![init; kept.iter().product()];
    for (i, &v) in vals.iter().enumerate() {
        let mut idx = unravel(i, shape);
        for &a in axes {
            idx[a] = 0;
        }
        let o = ravel(&idx, &kept);
        out[o] = f(out[o], v);
    }
    (kept, out)
}

/// A random subset of the axes of `rank`, each written positive or negative.
fn axes(rank: usize) -> impl Strategy<Value = (Vec<usize>, Vec<isize>)> {
    (
        prop::collection::vec(any::<bool>(), rank),
        prop::collection::vec(any::<bool>(), rank),
    )
        .prop_map(move |(pick, neg)| {
            let chosen: Vec<usize> = (0..rank).filter(|&a| pick[a]).collect();
            let signed = chosen
                .iter()
                .map(|&a| {
                    if neg[a] {
                        a as isize - rank as isize
                    } else {
                        a as isize
                    }
                })
                .rev() // order must not matter
                .collect();
            (chosen, signed)
        })
}

/// An input together with an axis subset and a keepdims flag.
fn reduction_case(
    values: impl Strategy<Value = f64> + Clone + 'static,
) -> impl Strategy<Value = (Input, (Vec<usize>, Vec<isize>), bool)> {
    shape().prop_flat_map(move |s| {
        (
            input(s.clone(), values.clone()),
            axes(s.len()),
            any::<bool>(),
        )
    })
}

/// An input of rank >= 1 with one axis (possibly negative) along it.
fn axis_case(
    values: impl Strategy<Value = f64> + Clone + 'static,
) -> impl Strategy<Value = (Input, isize)> {
    shape_rank1().prop_flat_map(move |s| {
        let r = s.len() as isize;
        (input(s, values.clone()), -r..r)
    })
}

fn check_reduce<B: Backend>(
    cx: &Suite<B>,
    x: &Input,
    dtype: DType,
    axes: &(Vec<usize>, Vec<isize>),
    keepdims: bool,
    tol: f64,
) {
    if !cx.has(&[dtype]) {
        return;
    }
    let (tol, _) = cx.tol(dtype, tol, tol);
    let (chosen, signed) = axes;
    let all: Vec<usize> = (0..x.shape.len()).collect();
    let reduced = if chosen.is_empty() { &all } else { chosen };
    let t = x.tensor(cx, dtype);
    let vals = x.values_as(dtype);
    type Case = (ReduceOp, f64, fn(f64, f64) -> f64);
    let ops: [Case; 4] = [
        (ReduceOp::Sum, 0.0, |a, b| a + b),
        (ReduceOp::Prod, 1.0, |a, b| a * b),
        (ReduceOp::Max, f64::NEG_INFINITY, f64::max),
        (ReduceOp::Min, f64::INFINITY, f64::min),
    ];
    for (op, init, f) in ops {
        let what = format!(
            "{} {dtype} over {signed:?} of {:?} ({:?})",
            op.name(),
            x.shape,
            x.kind
        );
        let got = t.reduce(op, signed, keepdims);
        let empty = reduced.iter().any(|&a| x.shape[a] == 0);
        if empty && matches!(op, ReduceOp::Max | ReduceOp::Min) {
            assert!(got.is_err(), "{what}: expected an error");
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
        let (kept, want) = reduce_ref(&vals, &x.shape, reduced, init, f);
        let shape: Vec<usize> = if keepdims {
            kept
        } else {
            (0..x.shape.len())
                .filter(|a| !reduced.contains(a))
                .map(|a| x.shape[a])
                .collect()
        };
        assert_shape(&got, &shape, &what);
        let want: Vec<f64> = want.into_iter().map(|v| round_to(dtype, v)).collect();
        assert_close(&read(&got), &want, tol, tol, &what);
        let dense = t
            .contiguous()
            .and_then(|c| c.reduce(op, signed, keepdims))
            .expect("contiguous");
        assert_close(
            &read(&got),
            &read(&dense),
            tol,
            tol,
            &format!("{what} vs contiguous"),
        );
    }
    if dtype.is_float() {
        let got = t.mean(signed, keepdims).expect("mean");
        let count: usize = reduced.iter().map(|&a| x.shape[a]).product();
        let (_, sums) = reduce_ref(&vals, &x.shape, reduced, 0.0, |a, b| a + b);
        let want: Vec<f64> = sums.iter().map(|s| s / count as f64).collect();
        assert_close(
            &read(&got),
            &want,
            tol,
            tol,
            &format!("mean {dtype} over {signed:?}"),
        );
    }
}

/// Stable order of the entries of one lane (`descending` keeps ties in their original order).
fn stable_order(lane: &[f64], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..lane.len()).collect();
    idx.sort_by(|&i, &j| {
        let o = lane[i].partial_cmp(&lane[j]).expect("no NaN");
        if descending { o.reverse() } else { o }
    });
    idx
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

property! {
/// Float reductions over axis subsets.
fn float_reductions_over_axis_subsets(cx; (x, ax, keep) in reduction_case(reals())) {
    check_reduce(cx, &x.map(|v| v / 2.0), DType::F64, &ax, keep, 1e-12);
    check_reduce(cx, &x.map(|v| v / 2.0), DType::F32, &ax, keep, 1e-4);
}
}

property! {
/// Integer reductions are exact.
fn integer_reductions_are_exact(cx; (x, ax, keep) in reduction_case(small_ints())) {
    // Values in {-1, 0, 1} keep products from overflowing.
    check_reduce(cx, &x.map(|v| (v % 2.0).trunc()), DType::I64, &ax, keep, 0.0);
    check_reduce(cx, &x.map(|v| (v % 2.0).trunc()), DType::I32, &ax, keep, 0.0);
}
}

property! {
/// Bool sums count.
fn bool_sums_count(cx; (x, ax, keep) in reduction_case((0i32..2).prop_map(f64::from))) {
    if !cx.has(&[DType::Bool, DType::I64]) {
        return Ok(());
    }
    let got = x.tensor(cx, DType::Bool).sum(&ax.1, keep).unwrap();
    prop_assert_eq!(got.dtype(), DType::I64);
    let expect = x.tensor(cx, DType::I64).sum(&ax.1, keep).unwrap();
    assert_close(&read(&got), &read(&expect), 0.0, 0.0, "bool sum");
}
}

property! {
/// Argmax and argmin pick the first extreme.
fn argmax_and_argmin_pick_the_first_extreme(cx; (x, axis) in axis_case(small_ints()), keep in any::<bool>()) {
    let a = if axis < 0 { (axis + x.shape.len() as isize) as usize } else { axis as usize };
    for dtype in [DType::F64, DType::I64, DType::F32] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let t = x.tensor(cx, dtype);
        for max in [true, false] {
            let got = if max { t.argmax(axis, keep) } else { t.argmin(axis, keep) };
            if x.shape[a] == 0 {
                prop_assert!(got.is_err());
                continue;
            }
            let got = got.unwrap();
            prop_assert_eq!(got.dtype(), DType::I64);
            let vals = x.values();
            let mut want = Vec::new();
            lanes(&x.shape, a, |lane| {
                let mut best = 0;
                for (j, &p) in lane.iter().enumerate() {
                    let (v, b) = (vals[p], vals[lane[best]]);
                    if (max && v > b) || (!max && v < b) {
                        best = j;
                    }
                }
                want.push(best as f64);
            });
            let mut shape = x.shape.clone();
            if keep { shape[a] = 1 } else { shape.remove(a); }
            assert_shape(&got, &shape, "argmax/argmin");
            assert_close(&read(&got), &want, 0.0, 0.0, &format!("arg{} {dtype} axis {axis}", if max { "max" } else { "min" }));
        }
    }
}
}

property! {
/// Cumsum accumulates along the axis.
fn cumsum_accumulates_along_the_axis(cx; (x, axis) in axis_case(small_ints())) {
    let a = if axis < 0 { (axis + x.shape.len() as isize) as usize } else { axis as usize };
    let vals = x.values();
    let mut want = vec![0.0; vals.len()];
    lanes(&x.shape, a, |lane| {
        let mut acc = 0.0;
        for &p in &lane {
            acc += vals[p];
            want[p] = acc;
        }
    });
    for dtype in [DType::F64, DType::I64, DType::F32, DType::I32] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let got = x.tensor(cx, dtype).cumsum(axis).unwrap();
        assert_shape(&got, &x.shape, "cumsum");
        assert_close(&read(&got), &want, 0.0, 0.0, &format!("cumsum {dtype} axis {axis} {:?}", x.kind));
    }
}
}

property! {
/// Sort is stable and topk takes the extremes.
fn sort_is_stable_and_topk_takes_the_extremes(cx;
    (x, axis) in axis_case(small_ints()),
    descending in any::<bool>(),
    k_frac in 0.0f64..=1.0,
) {
    let a = if axis < 0 { (axis + x.shape.len() as isize) as usize } else { axis as usize };
    let vals = x.values();
    let (mut want_v, mut want_i) = (vec![0.0; vals.len()], vec![0.0; vals.len()]);
    lanes(&x.shape, a, |lane| {
        let lv: Vec<f64> = lane.iter().map(|&p| vals[p]).collect();
        for (j, o) in stable_order(&lv, descending).into_iter().enumerate() {
            want_v[lane[j]] = lv[o];
            want_i[lane[j]] = o as f64;
        }
    });
    for dtype in [DType::F64, DType::I64, DType::F32] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let t = x.tensor(cx, dtype);
        let (v, i) = t.sort(axis, descending).unwrap();
        let what = format!("sort {dtype} axis {axis} desc {descending} {:?}", x.kind);
        assert_close(&read(&v), &want_v, 0.0, 0.0, &what);
        assert_close(&read(&i), &want_i, 0.0, 0.0, &what);
        assert_close(&read(&t.argsort(axis, descending).unwrap()), &want_i, 0.0, 0.0, &what);

        let k = (k_frac * x.shape[a] as f64).floor() as usize;
        let (tv, ti) = t.topk(k, axis, descending).unwrap();
        let mut shape = x.shape.clone();
        shape[a] = k;
        assert_shape(&tv, &shape, "topk");
        assert_shape(&ti, &shape, "topk");
        // The values are the first k of the sorted order; the indices point at them, each once.
        // (`v` is the sorted tensor checked above, in the case's dtype.)
        let sorted = v.narrow(axis, 0, k).unwrap();
        assert_close(&read(&tv), &read(&sorted), 0.0, 0.0, &format!("topk {k} of {what}"));
        let picked = t.gather(axis, &ti).unwrap();
        assert_close(&read(&picked), &read(&tv), 0.0, 0.0, "topk indices point at their values");
        let idx = read(&ti);
        let mut out_lanes = Vec::new();
        lanes(&shape, a, |lane| out_lanes.push(lane));
        for lane in out_lanes {
            let mut seen: Vec<i64> = lane.iter().map(|&p| idx[p] as i64).collect();
            seen.sort_unstable();
            seen.dedup();
            prop_assert_eq!(seen.len(), k, "topk indices are distinct");
        }
    }
}
}
