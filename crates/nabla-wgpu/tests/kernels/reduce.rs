//! Reductions over any axes, arg-max/min and cumulative sums.

use crate::common::{assert_close, both, random, views, with_gpu};
use nabla_core::{ArgReduceOp, Backend, DType, HostData, Layout, ReduceOp};

const OPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];

fn keep(shape: &[usize], axes: &[usize]) -> Layout {
    let s: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect();
    Layout::row_major(&s)
}

#[test]
fn reductions_over_any_axes_match_the_cpu() {
    with_gpu(|g, c| {
        let shape = [4, 5, 6];
        let axes_sets: [&[usize]; 6] = [&[], &[0], &[1], &[2], &[0, 2], &[0, 1, 2]];
        for dt in [DType::F32, DType::I32, DType::I64, DType::U8, DType::Bool] {
            for (l, need) in views(&shape) {
                let mut data = random(dt, need, 11);
                if dt == DType::F32
                    && let HostData::F32(v) = &mut data
                {
                    // Keep products in range.
                    v.iter_mut().for_each(|x| *x = 0.8 + *x / 15.0);
                }
                let (gs, cs) = both(g, c, &data);
                for op in OPS {
                    for axes in axes_sets {
                        let want = c.reduce(op, &cs, &l, axes);
                        let got = g.reduce(op, &gs, &l, axes);
                        let out = keep(&shape, axes);
                        match (got, want) {
                            (Ok(x), Ok(y)) => assert_close(
                                &format!("{op:?} {dt} {axes:?} {l:?}"),
                                &g.read(&x, &out).unwrap(),
                                &c.read(&y, &out).unwrap(),
                                1e-5,
                            ),
                            (Err(_), Err(_)) => {}
                            (x, y) => panic!("{op:?} {dt}: wgpu {x:?} vs cpu {y:?}"),
                        }
                    }
                }
            }
        }
    });
}

#[test]
fn long_and_many_reductions_use_the_tree_and_the_2d_grid() {
    with_gpu(|g, c| {
        // 70,000 outputs of 64 terms: one workgroup each, more than 65,535 workgroups (2-D grid).
        let shape = [70_000, 64];
        let data = random(DType::F32, 70_000 * 64, 12);
        let (gs, cs) = both(g, c, &data);
        let l = Layout::row_major(&shape);
        for op in [ReduceOp::Sum, ReduceOp::Max] {
            let out = keep(&shape, &[1]);
            let got = g.read(&g.reduce(op, &gs, &l, &[1]).unwrap(), &out).unwrap();
            let want = c.read(&c.reduce(op, &cs, &l, &[1]).unwrap(), &out).unwrap();
            assert_close(&format!("{op:?} rows"), &got, &want, 1e-4);
        }
        // One long reduction over everything, and a column reduction through a transposed view.
        let out = keep(&shape, &[0, 1]);
        let got = g
            .read(&g.reduce(ReduceOp::Sum, &gs, &l, &[0, 1]).unwrap(), &out)
            .unwrap();
        let want = c
            .read(&c.reduce(ReduceOp::Sum, &cs, &l, &[0, 1]).unwrap(), &out)
            .unwrap();
        assert_close("sum all", &got, &want, 1e-3);
        let t = l.permute(&[1, 0]).unwrap();
        let out = Layout::row_major(&[64, 1]);
        let got = g
            .read(&g.reduce(ReduceOp::Sum, &gs, &t, &[1]).unwrap(), &out)
            .unwrap();
        let want = c
            .read(&c.reduce(ReduceOp::Sum, &cs, &t, &[1]).unwrap(), &out)
            .unwrap();
        assert_close("column sums", &got, &want, 1e-4);
    });
}

#[test]
fn arg_reduce_and_cumsum_match_the_cpu() {
    with_gpu(|g, c| {
        let shape = [6, 7, 9];
        for dt in [DType::F32, DType::I32, DType::I64, DType::U8, DType::Bool] {
            for (l, need) in views(&shape) {
                let mut data = random(dt, need, 13);
                if let HostData::F32(v) = &mut data {
                    v[3] = f32::NAN;
                    v[10] = v[11];
                }
                let (gs, cs) = both(g, c, &data);
                for axis in 0..3 {
                    let out = keep(&shape, &[axis]);
                    for op in [ArgReduceOp::ArgMax, ArgReduceOp::ArgMin] {
                        let got = g
                            .read(&g.arg_reduce(op, &gs, &l, axis).unwrap(), &out)
                            .unwrap();
                        let want = c
                            .read(&c.arg_reduce(op, &cs, &l, axis).unwrap(), &out)
                            .unwrap();
                        assert_eq!(got, want, "{op:?} {dt} axis {axis} {l:?}");
                    }
                    let full = Layout::row_major(&shape);
                    match (g.cumsum(&gs, &l, axis), c.cumsum(&cs, &l, axis)) {
                        (Ok(x), Ok(y)) => assert_close(
                            &format!("cumsum {dt} axis {axis}"),
                            &g.read(&x, &full).unwrap(),
                            &c.read(&y, &full).unwrap(),
                            1e-6,
                        ),
                        (Err(_), Err(_)) => {}
                        (x, y) => panic!("cumsum {dt}: wgpu {x:?} vs cpu {y:?}"),
                    }
                }
            }
        }
    });
}
