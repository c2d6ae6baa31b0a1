//! Matmul, sort/topk, random, convolution and max pooling.

use crate::common::{assert_close, both, random, with_gpu};
use nabla_core::{
    Backend, Conv2dParams, DType, Distribution, Generator, HostData, Layout, Pool2dParams,
};

#[test]
fn matmul_matches_the_cpu() {
    with_gpu(|g, c| {
        // Sizes for every register block (1, 2 and 4 outputs a side per invocation).
        let cases: [(&[usize], &[usize]); 6] = [
            (&[1, 1], &[1, 1]),
            (&[7, 5], &[5, 3]),
            (&[40, 50], &[50, 36]),
            (&[65, 130], &[130, 70]),
            (&[3, 17, 33], &[3, 33, 9]),
            (&[2, 64, 64], &[2, 64, 64]),
        ];
        for dt in [DType::F32, DType::I32, DType::I64, DType::U8] {
            for (sa, sb) in cases {
                let la = Layout::row_major(sa);
                let lb = Layout::row_major(sb);
                let (ga, ca) = both(g, c, &random(dt, la.numel(), 51));
                let (gb, cb) = both(g, c, &random(dt, lb.numel(), 52));
                let r = sa.len();
                let mut so = sa.to_vec();
                so[r - 1] = sb[r - 1];
                let out = Layout::row_major(&so);
                let got = g
                    .read(&g.matmul(&ga, &la, &gb, &lb).unwrap(), &out)
                    .unwrap();
                let want = c
                    .read(&c.matmul(&ca, &la, &cb, &lb).unwrap(), &out)
                    .unwrap();
                assert_close(&format!("matmul {dt} {sa:?} {sb:?}"), &got, &want, 1e-5);
            }
        }
        // Transposed operands and a broadcast batch.
        let (ga, ca) = both(g, c, &random(DType::F32, 40 * 30, 53));
        let (gb, cb) = both(g, c, &random(DType::F32, 20 * 40, 54));
        let lb = Layout::from_parts(vec![4, 40, 20], vec![0, 20, 1], 0).unwrap();
        let la3 = Layout::from_parts(vec![4, 30, 40], vec![0, 1, 30], 0).unwrap();
        let out = Layout::row_major(&[4, 30, 20]);
        let got = g
            .read(&g.matmul(&ga, &la3, &gb, &lb).unwrap(), &out)
            .unwrap();
        let want = c
            .read(&c.matmul(&ca, &la3, &cb, &lb).unwrap(), &out)
            .unwrap();
        assert_close("matmul strided", &got, &want, 1e-5);
    });
}

#[test]
fn sort_and_topk_match_the_cpu() {
    with_gpu(|g, c| {
        for dt in [DType::F32, DType::I32, DType::I64, DType::U8, DType::Bool] {
            for shape in [&[1][..], &[7, 9], &[3, 1000]] {
                let l = Layout::row_major(shape);
                let mut data = random(dt, l.numel(), 61);
                if let HostData::F32(v) = &mut data
                    && v.len() > 2
                {
                    v[0] = f32::NAN;
                    v[l.numel() - 1] = v[1];
                }
                let (gs, cs) = both(g, c, &data);
                let axis = shape.len() - 1;
                for desc in [false, true] {
                    let (gv, gi) = g.sort(&gs, &l, axis, desc).unwrap();
                    let (cv, ci) = c.sort(&cs, &l, axis, desc).unwrap();
                    assert_close(
                        &format!("sort {dt} {shape:?}"),
                        &g.read(&gv, &l).unwrap(),
                        &c.read(&cv, &l).unwrap(),
                        0.0,
                    );
                    assert_eq!(
                        g.read(&gi, &l).unwrap(),
                        c.read(&ci, &l).unwrap(),
                        "argsort {dt} {shape:?}"
                    );
                    let k = shape[axis].min(5);
                    let mut ks = shape.to_vec();
                    ks[axis] = k;
                    let lk = Layout::row_major(&ks);
                    let (gv, gi) = g.topk(&gs, &l, axis, k, desc).unwrap();
                    let (cv, ci) = c.topk(&cs, &l, axis, k, desc).unwrap();
                    assert_close(
                        &format!("topk {dt}"),
                        &g.read(&gv, &lk).unwrap(),
                        &c.read(&cv, &lk).unwrap(),
                        0.0,
                    );
                    assert_eq!(
                        g.read(&gi, &lk).unwrap(),
                        c.read(&ci, &lk).unwrap(),
                        "topk idx {dt}"
                    );
                }
            }
        }
        // Along the first axis of a transposed view.
        let (gs, cs) = both(g, c, &random(DType::F32, 300, 62));
        let l = Layout::row_major(&[20, 15]).permute(&[1, 0]).unwrap();
        let out = Layout::row_major(&[15, 20]);
        let (gv, gi) = g.sort(&gs, &l, 0, false).unwrap();
        let (cv, ci) = c.sort(&cs, &l, 0, false).unwrap();
        assert_eq!(g.read(&gv, &out).unwrap(), c.read(&cv, &out).unwrap());
        assert_eq!(g.read(&gi, &out).unwrap(), c.read(&ci, &out).unwrap());
    });
}

#[test]
fn random_draws_follow_the_cpu() {
    with_gpu(|g, c| {
        let mut gen_ = Generator::new(1234);
        gen_.next_key(4_294_967_000); // a counter whose low word wraps inside the draw
        let key = gen_.next_key(70_000);
        let l = Layout::contiguous([70_000]);
        for dt in [
            DType::F32,
            DType::I32,
            DType::I64,
            DType::U8,
            DType::Bool,
            DType::F16,
        ] {
            let d = Distribution::Bernoulli { p: 0.3 };
            let got = g.read(&g.random(d, 70_000, dt, key).unwrap(), &l).unwrap();
            let want = c.read(&c.random(d, 70_000, dt, key).unwrap(), &l).unwrap();
            assert_eq!(got, want, "bernoulli {dt}");
        }
        let cases = [
            (
                Distribution::Uniform {
                    low: -2.0,
                    high: 3.0,
                },
                1e-6,
            ),
            (
                Distribution::Normal {
                    mean: 1.0,
                    std: 2.0,
                },
                1e-5,
            ),
        ];
        for (d, tol) in cases {
            for dt in [DType::F32, DType::F16] {
                let got = g.read(&g.random(d, 70_000, dt, key).unwrap(), &l).unwrap();
                let want = c.read(&c.random(d, 70_000, dt, key).unwrap(), &l).unwrap();
                let tol = if dt == DType::F16 { 1e-3 } else { tol };
                assert_close(&format!("{d:?} {dt}"), &got, &want, tol);
            }
        }
        assert!(
            g.random(
                Distribution::Normal {
                    mean: 0.0,
                    std: 1.0
                },
                3,
                DType::I32,
                key
            )
            .is_err()
        );
    });
}

fn conv_case(
    g: &nabla_wgpu::WgpuBackend,
    c: &nabla_cpu::CpuBackend,
    xs: [usize; 4],
    ws: [usize; 4],
    p: Conv2dParams,
) {
    let lx = Layout::row_major(&xs);
    let lw = Layout::row_major(&ws);
    let (gx, cx) = both(g, c, &random(DType::F32, lx.numel(), 71));
    let (gw, cw) = both(g, c, &random(DType::F32, lw.numel(), 72));
    let (oh, ow) = p.output_size((xs[2], xs[3]), (ws[2], ws[3])).unwrap();
    let ly = Layout::row_major(&[xs[0], ws[0], oh, ow]);
    let got = g
        .read(&g.conv2d(&gx, &lx, &gw, &lw, &p).unwrap(), &ly)
        .unwrap();
    let want = c
        .read(&c.conv2d(&cx, &lx, &cw, &lw, &p).unwrap(), &ly)
        .unwrap();
    assert_close(&format!("conv2d {xs:?} {ws:?} {p:?}"), &got, &want, 1e-5);
    let (gd, cd) = both(g, c, &random(DType::F32, ly.numel(), 73));
    let got = g
        .conv2d_input_grad(&gd, &ly, &gw, &lw, (xs[2], xs[3]), &p)
        .unwrap();
    let want = c
        .conv2d_input_grad(&cd, &ly, &cw, &lw, (xs[2], xs[3]), &p)
        .unwrap();
    assert_close(
        "conv2d_input_grad",
        &g.read(&got, &lx).unwrap(),
        &c.read(&want, &lx).unwrap(),
        1e-4,
    );
    let got = g
        .conv2d_weight_grad(&gx, &lx, &gd, &ly, (ws[2], ws[3]), &p)
        .unwrap();
    let want = c
        .conv2d_weight_grad(&cx, &lx, &cd, &ly, (ws[2], ws[3]), &p)
        .unwrap();
    assert_close(
        "conv2d_weight_grad",
        &g.read(&got, &lw).unwrap(),
        &c.read(&want, &lw).unwrap(),
        2e-4, // sums of up to 864 products of values in [-3, 3), in another order
    );
}

#[test]
fn convolutions_and_their_gradients_match_the_cpu() {
    with_gpu(|g, c| {
        conv_case(g, c, [2, 3, 9, 8], [4, 3, 3, 3], Conv2dParams::default());
        conv_case(
            g,
            c,
            [1, 4, 11, 10],
            [6, 2, 3, 2],
            Conv2dParams {
                stride: (2, 1),
                padding: (1, 2),
                dilation: (2, 1),
                groups: 2,
                precision: Default::default(),
            },
        );
        conv_case(
            g,
            c,
            [4, 1, 12, 12],
            [8, 1, 5, 5],
            Conv2dParams {
                padding: (2, 2),
                ..Default::default()
            },
        );
        // Large enough for 64-wide tiles and a weight gradient split into several `k` chunks.
        conv_case(
            g,
            c,
            [6, 8, 12, 12],
            [64, 8, 3, 3],
            Conv2dParams {
                padding: (1, 1),
                ..Default::default()
            },
        );
        conv_case(
            g,
            c,
            [9, 4, 15, 14],
            [32, 2, 3, 3],
            Conv2dParams {
                stride: (2, 2),
                groups: 2,
                ..Default::default()
            },
        );
    });
}

#[test]
fn max_pool2d_matches_the_cpu() {
    with_gpu(|g, c| {
        let shape = [2, 3, 9, 10];
        let l = Layout::row_major(&shape);
        for dt in [DType::F32, DType::I32, DType::I64, DType::U8] {
            let mut data = random(dt, l.numel(), 81);
            if let HostData::F32(v) = &mut data {
                v[5] = f32::NAN;
            }
            let (gs, cs) = both(g, c, &data);
            let params = [
                Pool2dParams::square(2),
                Pool2dParams {
                    kernel: (3, 3),
                    stride: (2, 2),
                    padding: (1, 1),
                    dilation: (1, 1),
                    ceil_mode: true,
                },
                Pool2dParams {
                    kernel: (2, 3),
                    stride: (1, 2),
                    padding: (0, 1),
                    dilation: (2, 1),
                    ceil_mode: false,
                },
            ];
            for p in params {
                let (oh, ow) = p.output_size((9, 10)).unwrap();
                let out = Layout::row_major(&[2, 3, oh, ow]);
                let (gv, gi) = g.max_pool2d(&gs, &l, &p).unwrap();
                let (cv, ci) = c.max_pool2d(&cs, &l, &p).unwrap();
                assert_close(
                    &format!("pool {dt} {p:?}"),
                    &g.read(&gv, &out).unwrap(),
                    &c.read(&cv, &out).unwrap(),
                    0.0,
                );
                assert_eq!(
                    g.read(&gi, &out).unwrap(),
                    c.read(&ci, &out).unwrap(),
                    "pool idx {dt} {p:?}"
                );
            }
        }
    });
}
