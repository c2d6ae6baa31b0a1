//! Views (permute, flip, slice, broadcast, reshape, squeeze, basic indexing) against index arithmetic,
//! checked to be zero-copy; copies (pad, cat, stack) and splits; index ops (gather, index_select,
//! scatter_add, index_add, one_hot) against loops.

use super::support::*;
use nabla_core::DType;
use nabla_tensor::Indexer;

use proptest::prelude::*;

/// Python's `range(n)[start:end:step]`, written out independently of the library (CPython's rules).
fn py_slice(n: usize, start: Option<isize>, end: Option<isize>, step: isize) -> Vec<usize> {
    let n = n as isize;
    let (lower, upper) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let adjust = |v: Option<isize>, default: isize| match v {
        None => default,
        Some(v) if v < 0 => (v + n).max(lower),
        Some(v) => v.min(upper),
    };
    let start = adjust(start, if step > 0 { lower } else { upper });
    let stop = adjust(end, if step > 0 { upper } else { lower });
    let mut out = Vec::new();
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        out.push(i as usize);
        i += step;
    }
    out
}

/// Values of the cartesian product of per-axis index lists, in row-major order.
fn pick(vals: &[f64], shape: &[usize], lists: &[Vec<usize>]) -> Vec<f64> {
    let dims: Vec<usize> = lists.iter().map(|l| l.len()).collect();
    let n: usize = dims.iter().product();
    (0..n)
        .map(|i| {
            let idx: Vec<usize> = unravel(i, &dims)
                .iter()
                .zip(lists)
                .map(|(&j, l)| l[j])
                .collect();
            vals[ravel(&idx, shape)]
        })
        .collect()
}

fn bound() -> impl Strategy<Value = Option<isize>> {
    prop::option::of(-6isize..7)
}

fn step() -> impl Strategy<Value = isize> {
    prop_oneof![-3isize..0, 1isize..4]
}

/// One indexer of a basic-indexing expression, to be resolved against an axis.
#[derive(Clone, Debug)]
enum Ix {
    Select(f64),
    Range(Option<isize>, Option<isize>, isize),
    Full,
    NewAxis,
}

fn ix() -> impl Strategy<Value = Ix> {
    prop_oneof![
        (0.0f64..1.0).prop_map(Ix::Select),
        (bound(), bound(), step()).prop_map(|(a, b, s)| Ix::Range(a, b, s)),
        Just(Ix::Full),
        Just(Ix::NewAxis),
    ]
}

fn index_tensor<B: Backend>(cx: &Suite<B>, values: &[i64], shape: &[usize]) -> Tensor<B> {
    Tensor::from_slice(values, shape.to_vec(), cx.backend()).unwrap()
}

property! {
/// Permute flip and transpose are views.
fn permute_flip_and_transpose_are_views(cx;
    (x, perm, flips) in shape().prop_flat_map(|s| {
        let r = s.len();
        (input(s, reals()), Just((0..r).collect::<Vec<_>>()).prop_shuffle(), prop::collection::vec(any::<bool>(), r))
    })
) {
    let t = x.tensor(cx, cx.float());
    let vals = x.values_as(cx.float());
    let p: Vec<isize> = perm.iter().map(|&a| a as isize).collect();
    let v = t.permute(&p).unwrap();
    prop_assert!(cx.shares(&v, &t));
    let out_shape: Vec<usize> = perm.iter().map(|&a| x.shape[a]).collect();
    let want: Vec<f64> = (0..vals.len()).map(|i| {
        let o = unravel(i, &out_shape);
        let mut src = vec![0; o.len()];
        for (d, &a) in perm.iter().enumerate() { src[a] = o[d]; }
        vals[ravel(&src, &x.shape)]
    }).collect();
    assert_close(&read(&v), &want, 0.0, 0.0, "permute");

    let axes: Vec<isize> = (0..x.shape.len()).filter(|&d| flips[d]).map(|d| d as isize).collect();
    let f = t.flip(&axes).unwrap();
    prop_assert!(cx.shares(&f, &t));
    let lists: Vec<Vec<usize>> = (0..x.shape.len())
        .map(|d| if flips[d] { (0..x.shape[d]).rev().collect() } else { (0..x.shape[d]).collect() })
        .collect();
    assert_close(&read(&f), &pick(&vals, &x.shape, &lists), 0.0, 0.0, "flip");

    if x.shape.len() >= 2 {
        let tt = t.t().unwrap();
        prop_assert!(cx.shares(&tt, &t));
        let back = tt.t().unwrap();
        assert_close(&read(&back), &vals, 0.0, 0.0, "t().t()");
    }
}
}

property! {
/// Slices follow python.
fn slices_follow_python(cx;
    (x, axis, start, end, st) in shape_rank1().prop_flat_map(|s| {
        let r = s.len();
        (input(s, reals()), 0..r, bound(), bound(), step())
    })
) {
    let t = x.tensor(cx, cx.float());
    let v = t.slice(axis as isize, start, end, st).unwrap();
    prop_assert!(cx.shares(&v, &t));
    let mut lists: Vec<Vec<usize>> = x.shape.iter().map(|&n| (0..n).collect()).collect();
    lists[axis] = py_slice(x.shape[axis], start, end, st);
    assert_close(&read(&v), &pick(&x.values_as(cx.float()), &x.shape, &lists), 0.0, 0.0,
        &format!("[{start:?}:{end:?}:{st}] on axis {axis} of {:?}", x.shape));
}
}

property! {
/// Basic indexing matches per axis selection.
fn basic_indexing_matches_per_axis_selection(cx;
    (x, ixs) in shape().prop_flat_map(|s| {
        let r = s.len();
        (input(s, reals()), prop::collection::vec(ix(), 0..=r + 1))
    })
) {
    let t = x.tensor(cx, cx.float());
    let mut indexers = Vec::new();
    let mut lists = Vec::new();
    let mut out_shape = Vec::new();
    let mut axis = 0;
    for i in &ixs {
        match *i {
            Ix::NewAxis => { indexers.push(Indexer::NewAxis); out_shape.push(1); }
            _ if axis >= x.shape.len() => {}
            Ix::Select(_) if x.shape[axis] == 0 => {}
            Ix::Select(frac) => {
                let n = x.shape[axis];
                let j = (frac * (2 * n) as f64) as isize - n as isize; // in -n..n
                let j = j.clamp(-(n as isize), n as isize - 1);
                indexers.push(Indexer::Select(j));
                lists.push(vec![if j < 0 { (j + n as isize) as usize } else { j as usize }]);
                axis += 1;
            }
            Ix::Range(a, b, s) => {
                indexers.push(Indexer::Range { start: a, end: b, step: s });
                // The bounds name positions low to high; a negative step walks them from the top.
                let mut l = py_slice(x.shape[axis], a, b, 1);
                if s < 0 {
                    l.reverse();
                }
                let l: Vec<usize> = l.into_iter().step_by(s.unsigned_abs()).collect();
                out_shape.push(l.len());
                lists.push(l);
                axis += 1;
            }
            Ix::Full => {
                indexers.push(Indexer::Full);
                out_shape.push(x.shape[axis]);
                lists.push((0..x.shape[axis]).collect());
                axis += 1;
            }
        }
    }
    for d in axis..x.shape.len() {
        out_shape.push(x.shape[d]);
        lists.push((0..x.shape[d]).collect());
    }
    let v = t.i(indexers.clone()).unwrap_or_else(|e| panic!("{indexers:?} on {:?}: {e}", x.shape));
    prop_assert!(cx.shares(&v, &t));
    assert_shape(&v, &out_shape, &format!("{indexers:?}"));
    assert_close(&read(&v), &pick(&x.values_as(cx.float()), &x.shape, &lists), 0.0, 0.0, &format!("{indexers:?}"));
}
}

property! {
/// Broadcast reshape and squeeze.
fn broadcast_reshape_and_squeeze(cx;
    (x, to, pos) in shape().prop_flat_map(|s| {
        let r = s.len();
        (Just(s.clone()), 0..=r, prop::collection::vec(0usize..3, 0..2))
            .prop_flat_map(|(s, pos, lead)| {
                // A target `lead + s'` where s' keeps s's dims and may grow its 1s.
                let src = s.clone();
                (input(s, reals()), prop::collection::vec(1usize..4, src.len()), Just(lead), Just(pos))
                    .prop_map(move |(x, grow, lead, pos)| {
                        let mut to = lead.clone();
                        to.extend(src.iter().zip(&grow).map(|(&d, &g)| if d == 1 { g } else { d }));
                        (x, to, pos)
                    })
            })
    })
) {
    let t = x.tensor(cx, cx.float());
    let vals = x.values_as(cx.float());
    let b = t.broadcast_to(to.clone()).unwrap();
    prop_assert!(cx.shares(&b, &t));
    assert_close(&read(&b), &expand(&vals, &x.shape, &to), 0.0, 0.0, "broadcast_to");

    let n = vals.len();
    let flat = t.reshape([n]).unwrap();
    assert_close(&read(&flat), &vals, 0.0, 0.0, "reshape to 1-D");
    assert_close(&read(&t.flatten_all().unwrap()), &vals, 0.0, 0.0, "flatten_all");
    if t.is_contiguous() {
        prop_assert!(cx.shares(&flat, &t), "reshaping a contiguous tensor is a view");
    }
    let mut dims: Vec<isize> = x.shape.iter().map(|&d| d as isize).collect();
    if !dims.is_empty() && n > 0 {
        let p = pos.min(dims.len() - 1);
        dims[p] = -1;
        let r = t.reshape(dims).unwrap();
        assert_shape(&r, &x.shape, "reshape with -1");
    }
    let u = t.unsqueeze(pos as isize).unwrap();
    prop_assert!(cx.shares(&u, &t));
    prop_assert_eq!(u.shape()[pos], 1);
    let back = u.squeeze(pos as isize).unwrap();
    assert_shape(&back, &x.shape, "squeeze(unsqueeze)");
    assert_close(&read(&back), &vals, 0.0, 0.0, "squeeze(unsqueeze)");
    let sq = u.squeeze_all().unwrap();
    let kept: Vec<usize> = x.shape.iter().copied().filter(|&d| d != 1).collect();
    assert_shape(&sq, &kept, "squeeze_all");
    assert_close(&read(&sq), &vals, 0.0, 0.0, "squeeze_all");
}
}

property! {
/// Pad surrounds with the value.
fn pad_surrounds_with_the_value(cx;
    (x, pads, value) in shape().prop_flat_map(|s| {
        let r = s.len();
        (input(s, small_ints()), prop::collection::vec((0usize..3, 0usize..3), r), -5i32..5)
    })
) {
    for dtype in [DType::F64, DType::I32, DType::F32] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let got = x.tensor(cx, dtype).pad(&pads, value).unwrap();
        let out: Vec<usize> = x.shape.iter().zip(&pads).map(|(d, (a, b))| d + a + b).collect();
        assert_shape(&got, &out, "pad");
        let vals = x.values();
        let want: Vec<f64> = (0..out.iter().product()).map(|i| {
            let o = unravel(i, &out);
            let inside = o.iter().zip(&pads).zip(&x.shape).all(|((&j, &(a, _)), &d)| j >= a && j < a + d);
            if inside {
                let src: Vec<usize> = o.iter().zip(&pads).map(|(&j, &(a, _))| j - a).collect();
                vals[ravel(&src, &x.shape)]
            } else {
                value as f64
            }
        }).collect();
        assert_close(&read(&got), &want, 0.0, 0.0, &format!("pad {dtype} {pads:?}"));
    }
}
}

property! {
/// Cat stack split and chunk.
fn cat_stack_split_and_chunk(cx;
    (parts, axis, size) in shape_rank1().prop_flat_map(|s| {
        let r = s.len();
        (Just(s), 0..r, 1usize..4)
    }).prop_flat_map(|(s, axis, size)| {
        let sizes = prop::collection::vec(0usize..4, 1..4);
        (Just(s), Just(axis), sizes, Just(size))
    }).prop_flat_map(|(s, axis, sizes, size)| {
        let parts: Vec<_> = sizes.iter().map(|&k| {
            let mut p = s.clone();
            p[axis] = k;
            input(p, reals())
        }).collect();
        (parts, Just(axis), Just(size))
    })
) {
    let ts: Vec<Tensor<B>> = parts.iter().map(|p| p.tensor(cx, cx.float())).collect();
    let refs: Vec<&Tensor<B>> = ts.iter().collect();
    let got = Tensor::cat(&refs, axis as isize).unwrap();
    let mut out = parts[0].shape.clone();
    out[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    assert_shape(&got, &out, "cat");
    let want: Vec<f64> = (0..out.iter().product()).map(|i| {
        let mut o = unravel(i, &out);
        let mut k = 0;
        while o[axis] >= parts[k].shape[axis] {
            o[axis] -= parts[k].shape[axis];
            k += 1;
        }
        parts[k].values_as(cx.float())[ravel(&o, &parts[k].shape)]
    }).collect();
    assert_close(&read(&got), &want, 0.0, 0.0, "cat");

    // Pieces of `size` along the axis are views that join back into the whole.
    let pieces = got.split(size, axis as isize).unwrap();
    prop_assert_eq!(pieces.len(), out[axis].div_ceil(size));
    prop_assert!(pieces.iter().all(|p| cx.shares(p, &got)));
    if !pieces.is_empty() {
        let again = Tensor::cat(&pieces.iter().collect::<Vec<_>>(), axis as isize).unwrap();
        assert_close(&read(&again), &want, 0.0, 0.0, "cat(split)");
    }
    let chunks = got.chunk(size, axis as isize).unwrap();
    prop_assert!(chunks.len() <= size);
    prop_assert_eq!(chunks.iter().map(|c| c.shape()[axis]).sum::<usize>(), out[axis]);

    // Stacking copies of the first part puts each at its own index of a new axis.
    let first = &ts[0];
    let stacked = Tensor::stack(&[first, first, first], axis as isize).unwrap();
    let mut sshape = parts[0].shape.clone();
    sshape.insert(axis, 3);
    assert_shape(&stacked, &sshape, "stack");
    for j in 0..3 {
        let slice = stacked.select_index(axis as isize, j).unwrap();
        assert_close(&read(&slice), &parts[0].values_as(cx.float()), 0.0, 0.0, "stack slice");
    }
}
}

property! {
/// Gather and index select.
fn gather_and_index_select(cx;
    (x, axis, m, fracs, bcast) in shape_rank1().prop_flat_map(|s| {
        let r = s.len();
        (input(s, reals()), 0..r, 0usize..4, prop::collection::vec(0.0f64..1.0, 256), prop::collection::vec(any::<bool>(), r))
    })
) {
    let n = x.shape[axis];
    let m = if n == 0 { 0 } else { m };
    let signed = |f: f64| -> i64 { ((f * (2 * n) as f64) as i64 - n as i64).clamp(-(n as i64), n as i64 - 1) };
    let resolve = |i: i64| -> usize { if i < 0 { (i + n as i64) as usize } else { i as usize } };
    let t = x.tensor(cx, cx.float());
    let vals = x.values_as(cx.float());

    // gather: index dims equal x's (or 1, broadcasting) except on the axis.
    let ishape: Vec<usize> = x.shape.iter().enumerate()
        .map(|(d, &k)| if d == axis { m } else if bcast[d] { 1 } else { k })
        .collect();
    let icount: usize = ishape.iter().product();
    let idx: Vec<i64> = fracs.iter().cycle().take(icount).map(|&f| signed(f)).collect();
    let got = t.gather(axis as isize, &index_tensor(cx, &idx, &ishape)).unwrap();
    let mut out = x.shape.clone();
    out[axis] = m;
    assert_shape(&got, &out, "gather");
    let want: Vec<f64> = (0..out.iter().product()).map(|i| {
        let o = unravel(i, &out);
        let io: Vec<usize> = o.iter().zip(&ishape).map(|(&j, &d)| if d == 1 { 0 } else { j }).collect();
        let mut src = o.clone();
        src[axis] = resolve(idx[ravel(&io, &ishape)]);
        vals[ravel(&src, &x.shape)]
    }).collect();
    assert_close(&read(&got), &want, 0.0, 0.0, &format!("gather axis {axis}"));

    // index_select with a 1-D index (given as int32 to exercise the conversion).
    if !cx.has(&[DType::I32]) {
        return Ok(());
    }
    let sel: Vec<i64> = fracs.iter().take(m).map(|&f| signed(f)).collect();
    let sel32: Vec<i32> = sel.iter().map(|&v| v as i32).collect();
    let got = t.index_select(axis as isize, &Tensor::from_vec(sel32, [m], cx.backend()).unwrap()).unwrap();
    let mut lists: Vec<Vec<usize>> = x.shape.iter().map(|&k| (0..k).collect()).collect();
    lists[axis] = sel.iter().map(|&i| resolve(i)).collect();
    assert_close(&read(&got), &pick(&vals, &x.shape, &lists), 0.0, 0.0, "index_select");
}
}

property! {
/// Scatter add and index add accumulate.
fn scatter_add_and_index_add_accumulate(cx;
    (dst, axis, m, fracs) in shape_rank1().prop_flat_map(|s| {
        let r = s.len();
        (input(s, small_ints()), 0..r, 0usize..5, prop::collection::vec(0.0f64..1.0, 512))
    }),
    src_vals in prop::collection::vec(small_ints(), 512),
) {
    let n = dst.shape[axis];
    let m = if n == 0 { 0 } else { m };
    let signed = |f: f64| -> i64 { ((f * (2 * n) as f64) as i64 - n as i64).clamp(-(n as i64), n as i64 - 1) };
    let resolve = |i: i64| -> usize { if i < 0 { (i + n as i64) as usize } else { i as usize } };
    let mut ishape = dst.shape.clone();
    ishape[axis] = m;
    let count: usize = ishape.iter().product();
    let idx: Vec<i64> = fracs.iter().take(count).map(|&f| signed(f)).collect();
    let src: Vec<f64> = src_vals.iter().cycle().take(count).copied().collect();
    for dtype in [DType::F64, DType::I64, DType::F32] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let d = dst.tensor(cx, dtype);
        let got = d.scatter_add(axis as isize, &index_tensor(cx, &idx, &ishape), &tensor(cx, &src, &ishape, dtype)).unwrap();
        let mut want = dst.values();
        for (i, (&j, &v)) in idx.iter().zip(&src).enumerate() {
            let mut o = unravel(i, &ishape);
            o[axis] = resolve(j);
            want[ravel(&o, &dst.shape)] += v;
        }
        assert_close(&read(&got), &want, 0.0, 0.0, &format!("scatter_add {dtype}"));

        // index_add: one index per slice of src along the axis.
        let sel: Vec<i64> = idx.iter().take(m).copied().collect();
        let sel = if sel.len() < m { vec![0; m] } else { sel };
        let got = d.index_add(axis as isize, &index_tensor(cx, &sel, &[m]), &tensor(cx, &src, &ishape, dtype)).unwrap();
        let mut want = dst.values();
        for (i, &v) in src.iter().enumerate() {
            let mut o = unravel(i, &ishape);
            o[axis] = resolve(sel[o[axis]]);
            want[ravel(&o, &dst.shape)] += v;
        }
        assert_close(&read(&got), &want, 0.0, 0.0, &format!("index_add {dtype}"));
    }
}
}

property! {
/// One hot marks the class.
fn one_hot_marks_the_class(cx; (x, classes) in (1usize..6).prop_flat_map(|c| {
    (shape().prop_flat_map(move |s| input(s, (0..c as i64).prop_map(|v| v as f64))), Just(c))
})) {
    let labels = x.tensor(cx, DType::I64);
    for dtype in [DType::F32, DType::I64, DType::Bool] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let got = labels.one_hot(classes, dtype).unwrap();
        prop_assert_eq!(got.dtype(), dtype);
        let mut shape = x.shape.clone();
        shape.push(classes);
        assert_shape(&got, &shape, "one_hot");
        let want: Vec<f64> = x.values().iter()
            .flat_map(|&l| (0..classes).map(move |c| (c as f64 == l) as u8 as f64))
            .collect();
        assert_close(&read(&got), &want, 0.0, 0.0, "one_hot");
    }
}
}
