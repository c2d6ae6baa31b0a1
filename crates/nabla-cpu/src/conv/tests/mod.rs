use super::*;
use nabla_backend_tests::properties::linalg::conv_walk;
use nabla_core::{HostData, Scalar};
use proptest::prelude::*;

/// Nested-loop cross-correlation through `Layout::offset_of`.
fn reference(x: &[f64], lx: &Layout, w: &[f64], lw: &Layout, p: &Conv2dParams) -> Vec<f64> {
    let (sx, sw) = (lx.shape(), lw.shape());
    let (n, h, wd) = (sx[0], sx[2], sx[3]);
    let (o, cg, kh, kw) = (sw[0], sw[1], sw[2], sw[3]);
    let og = o / p.groups;
    let (oh, ow) = p.output_size((h, wd), (kh, kw)).unwrap();
    let mut out = Vec::new();
    for b in 0..n {
        for oc in 0..o {
            let g = oc / og;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = 0.0;
                    for ic in 0..cg {
                        for ki in 0..kh {
                            for kj in 0..kw {
                                let iy = (oy * p.stride.0 + ki * p.dilation.0) as isize
                                    - p.padding.0 as isize;
                                let ix = (ox * p.stride.1 + kj * p.dilation.1) as isize
                                    - p.padding.1 as isize;
                                if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                    continue;
                                }
                                let xv =
                                    x[lx.offset_of(&[b, g * cg + ic, iy as usize, ix as usize])];
                                acc += xv * w[lw.offset_of(&[oc, ic, ki, kj])];
                            }
                        }
                    }
                    out.push(acc);
                }
            }
        }
    }
    out
}

fn ints(n: usize, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| ((i.wrapping_mul(0x9E3779B97F4A7C15) ^ seed) % 7) as f64 - 3.0)
        .collect()
}

/// A 4-D view of `shape`: maybe stored with H and W swapped, maybe reversed along W, maybe with the
/// batch broadcast from one image. Returns the view and the buffer length it needs.
fn view(shape: [usize; 4], bits: u8) -> (Layout, usize) {
    let [n, c, h, w] = shape;
    let stored_n = if bits & 4 != 0 { 1 } else { n };
    let mut l = if bits & 1 != 0 {
        Layout::contiguous([stored_n, c, w, h])
            .permute(&[0, 1, 3, 2])
            .unwrap()
    } else {
        Layout::contiguous([stored_n, c, h, w])
    };
    if bits & 2 != 0 {
        l = l.flip(3).unwrap();
    }
    (l.broadcast_to(&shape).unwrap(), stored_n * c * h * w)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn f64s(s: CpuStorage) -> Vec<f64> {
    f64::vec_of(s.into_host()).expect("float64 result")
}

#[derive(Debug, Clone)]
struct Case {
    x: [usize; 4],
    w: [usize; 4],
    p: Conv2dParams,
    bits: (u8, u8, u8),
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        (0usize..3, 1usize..4, 0usize..3, 0usize..3),
        (1usize..4, 1usize..4, 1usize..9, 1usize..9),
        (
            (1usize..4, 1usize..4),
            (0usize..3, 0usize..3),
            (1usize..3, 1usize..3),
        ),
        (any::<u8>(), any::<u8>(), any::<u8>()),
    )
        .prop_filter_map(
            "kernel must fit",
            |((n, groups, cg, og), (kh, kw, h, w), (stride, padding, dilation), bits)| {
                let p = Conv2dParams {
                    stride,
                    padding,
                    dilation,
                    groups,
                    precision: Default::default(),
                };
                p.output_size((h, w), (kh, kw))?;
                Some(Case {
                    x: [n, cg * groups, h, w],
                    w: [og * groups, cg, kh, kw],
                    p,
                    bits,
                })
            },
        )
}

/// Checks the forward pass against the reference and both gradients through the adjoint identity,
/// with small integers so that every sum is exact.
fn check(case: &Case) {
    let Case {
        x: sx,
        w: sw,
        p,
        bits,
    } = case;
    let (lx, nx) = view(*sx, bits.0);
    let (lw, nw) = view(*sw, bits.1 & 3);
    let (x, w) = (ints(nx, 1), ints(nw, 2));
    let (xs, ws) = (
        CpuStorage::from_vec(x.clone()),
        CpuStorage::from_vec(w.clone()),
    );
    let y = f64s(conv2d(&xs, &lx, &ws, &lw, p).unwrap());
    assert_eq!(y, reference(&x, &lx, &w, &lw, p), "{case:?}");
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
    let y32 = conv2d(
        &CpuStorage::from_vec(x32),
        &lx,
        &CpuStorage::from_vec(w32),
        &lw,
        p,
    )
    .unwrap();
    assert_eq!(y32.host().to_f64_vec(), y);
    // Adjoint identity: <conv(x, w), dy> = <x, input_grad(dy, w)> = <w, weight_grad(x, dy)>.
    let (oh, ow) = p.output_size((sx[2], sx[3]), (sw[2], sw[3])).unwrap();
    let (ldy, ndy) = view([sx[0], sw[0], oh, ow], bits.2);
    let dy = ints(ndy, 3);
    let dys = CpuStorage::from_vec(dy.clone());
    let dy_dense: Vec<f64> = ldy.offsets().map(|o| dy[o]).collect();
    let x_dense: Vec<f64> = lx.offsets().map(|o| x[o]).collect();
    let w_dense: Vec<f64> = lw.offsets().map(|o| w[o]).collect();
    let lhs = dot(&y, &dy_dense);
    let dx = f64s(conv2d_input_grad(&dys, &ldy, &ws, &lw, (sx[2], sx[3]), p).unwrap());
    let dw = f64s(conv2d_weight_grad(&xs, &lx, &dys, &ldy, (sw[2], sw[3]), p).unwrap());
    assert_eq!(dx.len(), x_dense.len());
    assert_eq!(dw.len(), w_dense.len());
    // With a broadcast batch the input view repeats one image; the identity pairs dense copies.
    assert_eq!(lhs, dot(&x_dense, &dx), "input grad {case:?}");
    assert_eq!(lhs, dot(&w_dense, &dw), "weight grad {case:?}");
    // The f32 kernels (their own run copies and adds) give the same exact sums.
    let f32s = |v: &[f64]| CpuStorage::from_vec(v.iter().map(|&v| v as f32).collect::<Vec<_>>());
    let (x32, w32, dy32) = (f32s(&x), f32s(&w), f32s(&dy));
    let dx32 = conv2d_input_grad(&dy32, &ldy, &w32, &lw, (sx[2], sx[3]), p).unwrap();
    let dw32 = conv2d_weight_grad(&x32, &lx, &dy32, &ldy, (sw[2], sw[3]), p).unwrap();
    assert_eq!(dx32.host().to_f64_vec(), dx, "f32 input grad {case:?}");
    assert_eq!(dw32.host().to_f64_vec(), dw, "f32 weight grad {case:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn matches_reference_and_adjoint_identity(case in arb_case()) {
        check(&case);
    }
}

#[test]
fn input_grad_of_a_larger_input() {
    // With stride 2 a 6x6 and a 7x7 input both give a 3x3 output from a 2x2 kernel; the last row and
    // column of the 7x7 input are never read and get zero gradient.
    let p = Conv2dParams {
        stride: (2, 2),
        ..Default::default()
    };
    let dy = CpuStorage::from_vec(vec![1.0f64; 9]);
    let w = CpuStorage::from_vec(vec![1.0f64, 2.0, 3.0, 4.0]);
    let (ldy, lw) = (
        Layout::contiguous([1, 1, 3, 3]),
        Layout::contiguous([1, 1, 2, 2]),
    );
    let dx = f64s(conv2d_input_grad(&dy, &ldy, &w, &lw, (7, 7), &p).unwrap());
    assert_eq!(dx.len(), 49);
    for i in 0..7 {
        for j in 0..7 {
            let want = if i == 6 || j == 6 {
                0.0
            } else {
                [[1.0, 2.0], [3.0, 4.0]][i % 2][j % 2]
            };
            assert_eq!(dx[i * 7 + j], want, "({i}, {j})");
        }
    }
    for (h, w, dil, pad) in [(9, 8, 1, 1), (11, 12, 2, 0), (10, 10, 1, 2)] {
        let p = Conv2dParams {
            stride: (3, 2),
            dilation: (dil, dil),
            padding: (pad, pad),
            groups: 1,
            precision: Default::default(),
        };
        check(&Case {
            x: [2, 2, h, w],
            w: [3, 2, 3, 2],
            p,
            bits: (0, 0, 0),
        });
    }
}

#[test]
fn large_convolutions_take_every_path() {
    let cases = [
        // Batch split across threads, im2col.
        (
            [4, 8, 16, 16],
            [8, 8, 3, 3],
            Conv2dParams {
                padding: (1, 1),
                ..Default::default()
            },
        ),
        // One image: faer parallelises.
        ([1, 16, 20, 20], [32, 16, 3, 3], Conv2dParams::default()),
        // Pointwise on strided and contiguous inputs.
        ([3, 16, 12, 12], [16, 16, 1, 1], Conv2dParams::default()),
        ([1, 64, 24, 24], [64, 64, 1, 1], Conv2dParams::default()),
        // Many groups (depthwise), strided.
        (
            [2, 32, 20, 20],
            [32, 1, 3, 3],
            Conv2dParams {
                stride: (2, 2),
                groups: 32,
                ..Default::default()
            },
        ),
        (
            [1, 16, 30, 30],
            [32, 4, 3, 3],
            Conv2dParams {
                dilation: (2, 2),
                groups: 4,
                ..Default::default()
            },
        ),
    ];
    // Unpadded, unit column stride: image-row runs of 11, 27 and 36 (copied and added in blocks).
    let runs = [
        ([2, 3, 13, 13], [4, 3, 3, 3], Conv2dParams::default()),
        (
            [2, 2, 30, 29],
            [3, 2, 3, 3],
            Conv2dParams {
                stride: (2, 1),
                ..Default::default()
            },
        ),
        (
            [1, 2, 20, 44],
            [2, 2, 3, 5],
            Conv2dParams {
                dilation: (1, 2),
                ..Default::default()
            },
        ),
    ];
    // Small output planes: several images share one product (stride 2 halving 8x8 to 4x4, a 1x1
    // shortcut of stride 2, a last chunk shorter than the others, few images on faer's threads).
    let stride2 = Conv2dParams {
        stride: (2, 2),
        padding: (1, 1),
        ..Default::default()
    };
    let batched = [
        ([32, 16, 8, 8], [32, 16, 3, 3], stride2),
        (
            [16, 8, 8, 8],
            [16, 8, 1, 1],
            Conv2dParams {
                stride: (2, 2),
                ..Default::default()
            },
        ),
        ([40, 4, 5, 5], [4, 4, 3, 3], Conv2dParams::default()),
        (
            [3, 8, 4, 4],
            [8, 8, 3, 3],
            Conv2dParams {
                padding: (1, 1),
                ..Default::default()
            },
        ),
    ];
    for (x, w, p) in cases.into_iter().chain(runs).chain(batched) {
        for bits in [(0, 0, 0), (3, 1, 3)] {
            check(&Case { x, w, p, bits });
        }
    }
}

#[test]
fn errors_name_the_op_and_shapes() {
    let s = CpuStorage::from_vec(vec![0.0f32; 64]);
    let p = Conv2dParams::default();
    let conv = |sx: &[usize], sw: &[usize], p: &Conv2dParams| {
        conv2d(
            &s,
            &Layout::contiguous(sx.to_vec()),
            &s,
            &Layout::contiguous(sw.to_vec()),
            p,
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        conv(&[1, 2, 4], &[1, 2, 1, 1], &p),
        "conv2d: expected a 4-D input [N, C_in, H, W], got shape [1, 2, 4]"
    );
    assert_eq!(
        conv(&[1, 2, 4, 4], &[1, 2, 1], &p),
        "conv2d: expected 4-D weights [C_out, C_in / groups, KH, KW], got shape [1, 2, 1]"
    );
    assert_eq!(
        conv(&[1, 2, 4, 4], &[1, 3, 1, 1], &p),
        "conv2d: shape mismatch between [1, 2, 4, 4] and [1, 3, 1, 1] (the weights take 3 channels per group but the input has 2 channels in 1 groups)"
    );
    let g2 = Conv2dParams { groups: 2, ..p };
    assert_eq!(
        conv(&[1, 3, 4, 4], &[2, 1, 1, 1], &g2),
        "conv2d: shape mismatch between [1, 3, 4, 4] and [2, 1, 1, 1] (3 input channels and 2 output channels must both be divisible by groups = 2)"
    );
    assert_eq!(
        conv(&[1, 1, 4, 4], &[1, 1, 5, 3], &p),
        "conv2d: a 5x3 kernel with dilation (1, 1) does not fit an input of 4x4 with padding (0, 0)"
    );
    assert_eq!(
        conv(
            &[1, 1, 4, 4],
            &[1, 1, 1, 1],
            &Conv2dParams { groups: 0, ..p }
        ),
        "conv2d: groups must be at least 1"
    );
    assert_eq!(
        conv(
            &[1, 1, 4, 4],
            &[1, 1, 1, 1],
            &Conv2dParams {
                stride: (0, 1),
                ..p
            }
        ),
        "conv2d: stride (0, 1) and dilation (1, 1) must be positive"
    );
    let i = CpuStorage::from_vec(vec![0i32; 16]);
    let l = Layout::contiguous([1, 1, 4, 4]);
    assert_eq!(
        conv2d(&i, &l, &i, &l, &p).unwrap_err().to_string(),
        "conv2d: not supported for dtype int32"
    );
    let d = CpuStorage::from_vec(vec![0.0f64; 16]);
    assert!(
        conv2d(&s, &l, &d, &l, &p)
            .unwrap_err()
            .to_string()
            .starts_with("conv2d: dtype mismatch between float32 and float64")
    );
    let h = CpuStorage::new(HostData::filled(DType::F16, 16, Scalar::F64(0.0)));
    assert!(
        conv2d(&h, &l, &h, &l, &p)
            .unwrap_err()
            .to_string()
            .contains("cast to float32")
    );

    let (ldy, lw) = (
        Layout::contiguous([1, 1, 2, 2]),
        Layout::contiguous([1, 1, 3, 3]),
    );
    assert_eq!(
        conv2d_input_grad(&s, &ldy, &s, &lw, (5, 5), &p)
            .unwrap_err()
            .to_string(),
        "conv2d_input_grad: shape mismatch between [1, 1, 2, 2] and [1, 1, 3, 3] (an input of 5x5 gives an output of 3x3, not 2x2)"
    );
    assert_eq!(
        conv2d_input_grad(&s, &Layout::contiguous([1, 2, 2, 2]), &s, &lw, (4, 4), &p)
            .unwrap_err()
            .to_string(),
        "conv2d_input_grad: shape mismatch between [1, 2, 2, 2] and [1, 1, 3, 3] (the gradient has 2 channels but the weights have 1 output channels)"
    );
    assert!(
        conv2d_input_grad(&s, &ldy, &s, &lw, (1, 1), &p)
            .unwrap_err()
            .to_string()
            .contains("does not fit")
    );
    let lx = Layout::contiguous([2, 1, 4, 4]);
    assert_eq!(
        conv2d_weight_grad(&s, &lx, &s, &ldy, (3, 3), &p)
            .unwrap_err()
            .to_string(),
        "conv2d_weight_grad: shape mismatch between [2, 1, 4, 4] and [1, 1, 2, 2] (an input batch of 2 with a 3x3 kernel gives an output gradient of [2, 1, 2, 2])"
    );
    assert!(
        conv2d_weight_grad(&s, &lx, &s, &Layout::contiguous([2, 1, 2]), (3, 3), &p)
            .unwrap_err()
            .to_string()
            .contains("output gradient [N, C_out, H_out, W_out]")
    );
    assert!(
        conv2d_weight_grad(&s, &lx, &s, &Layout::contiguous([2, 1, 2, 2]), (0, 3), &p)
            .unwrap_err()
            .to_string()
            .contains("does not fit")
    );
}

/// Convolutions through Winograd's transform (`winograd.rs`).
mod winograd_cases;
