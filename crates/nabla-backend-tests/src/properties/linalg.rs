//! Matrix products (batch broadcasting, 1-D promotion, transposed operands) against a triple loop, and
//! 2-D convolution with its two gradients against nested loops.

use super::support::*;
use nabla_core::{Conv2dParams, DType, Shape};

use proptest::prelude::*;

/// Operands of a matmul: `(a, b, a_is_vector, b_is_vector)`.
fn matmul_case() -> impl Strategy<Value = (Input, Input, bool, bool)> {
    (
        prop::collection::vec(0usize..4, 0..=2),
        0usize..4,
        0usize..4,
        0usize..4,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(batch, m, k, n, av, bv)| {
            (
                broadcastable(batch.clone()),
                broadcastable(batch),
                Just((m, k, n, av, bv)),
            )
        })
        .prop_flat_map(|(ba, bb, (m, k, n, av, bv))| {
            let sa = if av {
                vec![k]
            } else {
                [ba, vec![m, k]].concat()
            };
            let sb = if bv {
                vec![k]
            } else {
                [bb, vec![k, n]].concat()
            };
            (
                input(sa, small_ints()),
                input(sb, small_ints()),
                Just(av),
                Just(bv),
            )
        })
}

/// NumPy `matmul` by loops: returns the result shape and values.
fn matmul_ref(a: &Input, b: &Input, av: bool, bv: bool) -> (Vec<usize>, Vec<f64>) {
    let (sa, sb) = (
        if av {
            vec![1, a.shape[0]]
        } else {
            a.shape.clone()
        },
        if bv {
            vec![b.shape[0], 1]
        } else {
            b.shape.clone()
        },
    );
    let (m, k, n) = (sa[sa.len() - 2], sa[sa.len() - 1], sb[sb.len() - 1]);
    let batch = Shape::broadcast("t", &sa[..sa.len() - 2], &sb[..sb.len() - 2])
        .unwrap()
        .into_dims();
    let full_a = expand(&a.values(), &sa, &[batch.clone(), vec![m, k]].concat());
    let full_b = expand(&b.values(), &sb, &[batch.clone(), vec![k, n]].concat());
    let count: usize = batch.iter().product();
    let out = batched_matmul(&full_a, &full_b, (count, m, k, n));
    let mut shape = batch;
    if !av {
        shape.push(m);
    }
    if !bv {
        shape.push(n);
    }
    (shape, out)
}

/// `[batch, m, k] x [batch, k, n]` (row-major values): the batched triple loop.
pub(crate) fn batched_matmul(
    a: &[f64],
    b: &[f64],
    (batch, m, k, n): (usize, usize, usize, usize),
) -> Vec<f64> {
    let mut out = vec![0.0; batch * m * n];
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                out[(bi * m + i) * n + j] = (0..k)
                    .map(|p| a[(bi * m + i) * k + p] * b[(bi * k + p) * n + j])
                    .sum();
            }
        }
    }
    out
}

/// Visits every (output, input, weight) position triple of a convolution of a contiguous input of
/// shape `x` with contiguous weights of shape `w`; returns the output's shape.
pub fn conv_walk(
    x: &[usize],
    w: &[usize],
    p: &Conv2dParams,
    mut f: impl FnMut(usize, usize, usize),
) -> Vec<usize> {
    let (oh, ow) = p.output_size((x[2], x[3]), (w[2], w[3])).expect("fits");
    let out = vec![x[0], w[0], oh, ow];
    let (cin_g, cout_g) = (w[1], w[0] / p.groups);
    for b in 0..x[0] {
        for co in 0..w[0] {
            let g = co / cout_g;
            for oy in 0..oh {
                for ox in 0..ow {
                    for ci in 0..cin_g {
                        for ky in 0..w[2] {
                            for kx in 0..w[3] {
                                let iy = (oy * p.stride.0 + ky * p.dilation.0) as isize
                                    - p.padding.0 as isize;
                                let ix = (ox * p.stride.1 + kx * p.dilation.1) as isize
                                    - p.padding.1 as isize;
                                if iy < 0 || ix < 0 || iy >= x[2] as isize || ix >= x[3] as isize {
                                    continue;
                                }
                                let xi = ravel(&[b, g * cin_g + ci, iy as usize, ix as usize], x);
                                let wi = ravel(&[co, ci, ky, kx], w);
                                let oi = ravel(&[b, co, oy, ox], &out);
                                f(oi, xi, wi);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Shapes and parameters of a valid convolution.
fn conv_case() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Conv2dParams)> {
    (
        (1usize..3, 1usize..3, 1usize..3, 1usize..3),
        (1usize..7, 1usize..7, 1usize..4, 1usize..4),
        (
            1usize..3,
            1usize..3,
            0usize..2,
            0usize..2,
            1usize..3,
            1usize..3,
        ),
    )
        .prop_map(
            |((n, groups, cin_g, cout_g), (h, w, kh, kw), (sy, sx, py, px, dy, dx))| {
                let p = Conv2dParams {
                    stride: (sy, sx),
                    padding: (py, px),
                    dilation: (dy, dx),
                    groups,
                    precision: Default::default(),
                };
                (
                    vec![n, groups * cin_g, h, w],
                    vec![groups * cout_g, cin_g, kh, kw],
                    p,
                )
            },
        )
        .prop_filter("the kernel fits", |(x, w, p)| {
            p.output_size((x[2], x[3]), (w[2], w[3])).is_some()
        })
}

property! {
/// Matmul matches the triple loop.
fn matmul_matches_the_triple_loop(cx; (a, b, av, bv) in matmul_case()) {
    let (shape, want) = matmul_ref(&a, &b, av, bv);
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5), (DType::I64, 0.0), (DType::C128, 1e-12)] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let (tol, _) = cx.tol(dtype, tol, tol);
        let (ta, tb) = (a.tensor(cx, dtype), b.tensor(cx, dtype));
        let got = ta.matmul(&tb).unwrap_or_else(|e| panic!("{dtype} {:?} @ {:?}: {e}", a.shape, b.shape));
        let what = format!("{dtype} {:?} ({:?}) @ {:?} ({:?})", a.shape, a.kind, b.shape, b.kind);
        assert_shape(&got, &shape, &what);
        assert_close(&read(&got), &want, tol, tol, &what);
        let dense = ta.contiguous().unwrap().matmul(&tb.contiguous().unwrap()).unwrap();
        assert_close(&read(&got), &read(&dense), tol, tol, &format!("{what} vs contiguous"));
    }
}
}

property! {
/// Conv2d and its gradients match loops.
fn conv2d_and_its_gradients_match_loops(cx;
    (xs, ws, p, x, w, dy) in conv_case().prop_flat_map(|(xs, ws, p)| {
        let (oh, ow) = p.output_size((xs[2], xs[3]), (ws[2], ws[3])).unwrap();
        let ys = vec![xs[0], ws[0], oh, ow];
        (Just(xs.clone()), Just(ws.clone()), Just(p), input(xs, small_ints()), input(ws, small_ints()), input(ys, small_ints()))
    })
) {
    let (xv, wv, dyv) = (x.values(), w.values(), dy.values());
    let mut y = vec![0.0; dyv.len()];
    let mut dx = vec![0.0; xv.len()];
    let mut dw = vec![0.0; wv.len()];
    conv_walk(&xs, &ws, &p, |o, i, k| {
        y[o] += xv[i] * wv[k];
        dx[i] += dyv[o] * wv[k];
        dw[k] += dyv[o] * xv[i];
    });
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let (tol, _) = cx.tol(dtype, tol, tol);
        let (tx, tw, tdy) = (x.tensor(cx, dtype), w.tensor(cx, dtype), dy.tensor(cx, dtype));
        let what = format!("{dtype} x {xs:?} ({:?}) w {ws:?} ({:?}) {p:?}", x.kind, w.kind);
        let got = tx.conv2d(&tw, &p).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_shape(&got, &dy.shape, &what);
        assert_close(&read(&got), &y, tol, tol, &format!("conv2d {what}"));
        let gx = tdy.conv2d_input_grad(&tw, (xs[2], xs[3]), &p).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_shape(&gx, &xs, &what);
        assert_close(&read(&gx), &dx, tol, tol, &format!("conv2d_input_grad {what}"));
        let gw = tx.conv2d_weight_grad(&tdy, (ws[2], ws[3]), &p).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_shape(&gw, &ws, &what);
        assert_close(&read(&gw), &dw, tol, tol, &format!("conv2d_weight_grad {what}"));
    }
}
}
