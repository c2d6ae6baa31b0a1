//! Pad, concat, gather, index_select, scatter_add and one_hot, with index range errors.

use crate::common::{DTYPES, assert_close, both, random, views, with_gpu};
use nabla_core::{Backend, DType, Error, HostData, Layout, Scalar};

#[test]
fn pad_and_concat_match_the_cpu() {
    with_gpu(|g, c| {
        let shape = [5, 6];
        for dt in DTYPES {
            for (l, need) in views(&shape) {
                let (gs, cs) = both(g, c, &random(dt, need, 21));
                let pads = [(1, 2), (0, 3)];
                let out = Layout::row_major(&[8, 9]);
                let got = g.pad(&gs, &l, &pads, Scalar::F64(-1.0)).unwrap();
                let want = c.pad(&cs, &l, &pads, Scalar::F64(-1.0)).unwrap();
                assert_eq!(
                    g.read(&got, &out).unwrap(),
                    c.read(&want, &out).unwrap(),
                    "pad {dt}"
                );
                let (g2, c2) = both(g, c, &random(dt, 5 * 4, 22));
                let l2 = Layout::row_major(&[5, 4]);
                let got = g.concat(&[(&gs, &l), (&g2, &l2), (&gs, &l)], 1).unwrap();
                let want = c.concat(&[(&cs, &l), (&c2, &l2), (&cs, &l)], 1).unwrap();
                let out = Layout::row_major(&[5, 16]);
                assert_eq!(
                    g.read(&got, &out).unwrap(),
                    c.read(&want, &out).unwrap(),
                    "concat {dt}"
                );
            }
        }
    });
}

fn indices(n: usize, hi: i64, seed: u64, signed: bool) -> HostData {
    let mut r = crate::common::Rng::new(seed);
    let lo = if signed { -hi } else { 0 };
    HostData::I64((0..n).map(|_| r.int(lo, hi)).collect())
}

#[test]
fn gather_index_select_and_scatter_add_match_the_cpu() {
    with_gpu(|g, c| {
        let shape = [6, 5];
        for dt in DTYPES {
            for (l, need) in views(&shape) {
                let (gx, cx) = both(g, c, &random(dt, need, 31));
                for axis in 0..2 {
                    let n = shape[axis] as i64;
                    let mut ishape = shape.to_vec();
                    ishape[axis] = 4;
                    let li = Layout::row_major(&ishape);
                    let (gi, ci) = both(g, c, &indices(li.numel(), n, 32, true));
                    let got = g.gather(&gx, &l, axis, &gi, &li).unwrap();
                    let want = c.gather(&cx, &l, axis, &ci, &li).unwrap();
                    assert_eq!(
                        g.read(&got, &li).unwrap(),
                        c.read(&want, &li).unwrap(),
                        "gather {dt}"
                    );

                    let l1 = Layout::row_major(&[9]);
                    let (g1, c1) = both(g, c, &indices(9, n, 33, true));
                    let mut oshape = shape.to_vec();
                    oshape[axis] = 9;
                    let out = Layout::row_major(&oshape);
                    let got = g.index_select(&gx, &l, axis, &g1, &l1).unwrap();
                    let want = c.index_select(&cx, &l, axis, &c1, &l1).unwrap();
                    assert_eq!(
                        g.read(&got, &out).unwrap(),
                        c.read(&want, &out).unwrap(),
                        "index_select {dt}"
                    );

                    let (gsrc, csrc) = both(g, c, &random(dt, li.numel(), 34));
                    let got = g.scatter_add(&gx, &l, axis, &gi, &li, &gsrc, &li);
                    let want = c.scatter_add(&cx, &l, axis, &ci, &li, &csrc, &li);
                    let out = Layout::row_major(&shape);
                    match (got, want) {
                        (Ok(x), Ok(y)) => assert_close(
                            &format!("scatter_add {dt}"),
                            &g.read(&x, &out).unwrap(),
                            &c.read(&y, &out).unwrap(),
                            1e-6,
                        ),
                        (Err(_), Err(_)) => {}
                        (x, y) => panic!("scatter_add {dt}: wgpu {x:?} vs cpu {y:?}"),
                    }
                }
            }
        }
    });
}

#[test]
fn one_hot_matches_the_cpu() {
    with_gpu(|g, c| {
        let data = indices(70, 5, 41, false);
        let (gi, ci) = both(g, c, &data);
        let l = Layout::row_major(&[7, 10]);
        let t = l.permute(&[1, 0]).unwrap();
        for dt in DTYPES {
            for view in [&l, &t] {
                let out = Layout::row_major(&[view.shape()[0], view.shape()[1], 5]);
                let got = g.one_hot(&gi, view, 5, dt).unwrap();
                let want = c.one_hot(&ci, view, 5, dt).unwrap();
                assert_eq!(
                    g.read(&got, &out).unwrap(),
                    c.read(&want, &out).unwrap(),
                    "one_hot {dt}"
                );
            }
        }
    });
}

#[test]
fn out_of_range_indices_are_errors() {
    with_gpu(|g, c| {
        let x = HostData::F32(vec![1.0; 12]);
        let (gx, _) = both(g, c, &x);
        let l = Layout::row_major(&[3, 4]);
        let li = Layout::row_major(&[3, 1]);
        // From an upload (bounds known on the host) and from a cast (checked on the device).
        let bad = g.upload(HostData::I64(vec![0, 4, 1])).unwrap();
        let on_device = g
            .cast(
                &g.upload(HostData::F32(vec![0.0, -5.0, 1.0])).unwrap(),
                &Layout::row_major(&[3]),
                DType::I64,
            )
            .unwrap();
        for (idx, value) in [(&bad, 4), (&on_device, -5)] {
            let e = g.gather(&gx, &l, 1, idx, &li).unwrap_err();
            assert_eq!(
                e,
                Error::IndexOutOfBounds {
                    op: "gather",
                    index: value,
                    size: 4
                }
            );
            let e = g
                .index_select(&gx, &l, 1, idx, &Layout::row_major(&[3]))
                .unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::IndexOutOfBounds {
                        op: "index_select",
                        ..
                    }
                ),
                "{e}"
            );
            let src = g.upload(HostData::F32(vec![1.0; 3])).unwrap();
            let e = g.scatter_add(&gx, &l, 1, idx, &li, &src, &li).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::IndexOutOfBounds {
                        op: "scatter_add",
                        ..
                    }
                ),
                "{e}"
            );
            let e = g
                .one_hot(idx, &Layout::row_major(&[3]), 4, DType::F32)
                .unwrap_err();
            assert!(
                matches!(e, Error::IndexOutOfBounds { op: "one_hot", .. }),
                "{e}"
            );
        }
        // Valid indices computed on the device pass the device check.
        let ok = g
            .cast(
                &g.upload(HostData::F32(vec![0.0, -4.0, 3.0])).unwrap(),
                &Layout::row_major(&[3]),
                DType::I64,
            )
            .unwrap();
        let got = g.gather(&gx, &l, 1, &ok, &li).unwrap();
        assert_eq!(g.read(&got, &li).unwrap(), HostData::F32(vec![1.0; 3]));
    });
}
