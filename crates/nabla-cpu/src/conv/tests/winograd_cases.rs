use super::*;

/// 3x3 convolutions of unit stride with enough channels run through Winograd's transform
/// (`winograd.rs`): exact on small integers against the reference and the adjoint identity, on
/// contiguous and strided views, odd and tiny planes, every padding the input gradient takes (and
/// one it leaves to `im2col`), and batches split into blocks of images both ways.
#[test]
fn winograd_convolutions_are_exact_on_integers() {
    let padded = |pad: usize| Conv2dParams {
        padding: (pad, pad),
        ..Default::default()
    };
    let cases = [
        ([2, 64, 6, 6], [64, 64, 3, 3], padded(1)),
        ([3, 64, 7, 5], [72, 64, 3, 3], padded(1)),
        ([1, 80, 9, 6], [64, 80, 3, 3], padded(0)),
        ([2, 64, 5, 4], [64, 64, 3, 3], padded(2)),
        ([2, 64, 4, 3], [64, 64, 3, 3], padded(3)),
        ([5, 64, 1, 1], [64, 64, 3, 3], padded(1)),
        ([2, 64, 3, 3], [65, 64, 3, 3], padded(0)),
        (
            [9, 64, 2, 2],
            [64, 64, 3, 3],
            Conv2dParams {
                padding: (1, 2),
                ..Default::default()
            },
        ),
        ([70, 64, 2, 2], [64, 64, 3, 3], padded(1)),
    ];
    for (x, w, p) in cases {
        let g = Geom {
            n: x[0],
            c: x[1],
            h: x[2],
            w: x[3],
            o: w[0],
            kh: 3,
            kw: 3,
            oh: 0,
            ow: 0,
            p,
        };
        assert!(winograd::applies(&g), "{x:?} {w:?}");
        for bits in [(0, 0, 0), (3, 1, 3), (4, 2, 1)] {
            check(&Case { x, w, p, bits });
        }
    }
}

/// Values in `[-1, 1]` from a hash of their index.
fn spread(n: usize, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            let h = (i ^ seed).wrapping_mul(0x9E3779B97F4A7C15).rotate_left(29);
            (h % 2001) as f64 / 1000.0 - 1.0
        })
        .collect()
}

/// The input and weight gradients of a convolution of the contiguous `x` (shape `sx`) with `w`
/// (shape `sw`) for the output gradient `dy`, by loops.
fn conv_grads(
    (x, w, dy): (&[f64], &[f64], &[f64]),
    (sx, sw): ([usize; 4], [usize; 4]),
    p: &Conv2dParams,
) -> (Vec<f64>, Vec<f64>) {
    let (mut dx, mut dw) = (vec![0.0; x.len()], vec![0.0; w.len()]);
    conv_walk(&sx, &sw, p, |o, i, k| {
        dx[i] += dy[o] * w[k];
        dw[k] += dy[o] * x[i];
    });
    (dx, dw)
}

/// `got` within `tol` of `want` relative to `1 + |want|`.
fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (u, v) in got.iter().zip(want) {
        assert!((u - v).abs() <= tol * (1.0 + v.abs()), "{what}: {u} {v}");
    }
}

/// On real-valued data the transform's f32 results stay within a few units in the last place of
/// the sums' magnitude, and its f64 output and both gradients agree with loops to 1e-12.
#[test]
fn winograd_convolutions_are_accurate() {
    let (sx, sw) = ([2, 64, 6, 5], [72, 64, 3, 3]);
    let p = Conv2dParams {
        padding: (1, 1),
        ..Default::default()
    };
    let (lx, lw) = (Layout::contiguous(sx), Layout::contiguous(sw));
    let (x, w) = (spread(lx.numel(), 5), spread(lw.numel(), 9));
    let want = reference(&x, &lx, &w, &lw, &p);
    let abs = |v: &[f64]| v.iter().map(|v| v.abs()).collect::<Vec<_>>();
    let scale = reference(&abs(&x), &lx, &abs(&w), &lw, &p);
    let f32s = |v: &[f64]| CpuStorage::from_vec(v.iter().map(|&v| v as f32).collect::<Vec<_>>());
    let y32 = conv2d(&f32s(&x), &lx, &f32s(&w), &lw, &p)
        .unwrap()
        .host()
        .to_f64_vec();
    for ((got, want), scale) in y32.iter().zip(&want).zip(&scale) {
        // The inputs are exact in f32: the error is the transform's and the sums' rounding.
        assert!(
            (got - want).abs() <= 8.0 * f32::EPSILON as f64 * scale,
            "{got} {want} {scale}"
        );
    }
    let ldy = Layout::contiguous([sx[0], sw[0], sx[2], sx[3]]);
    let dy = spread(ldy.numel(), 13);
    let g = Geom {
        n: sx[0],
        c: sx[1],
        h: sx[2],
        w: sx[3],
        o: sw[0],
        kh: 3,
        kw: 3,
        oh: sx[2],
        ow: sx[3],
        p,
    };
    assert!(winograd::applies_to_input_grad(&g));
    let (dx_want, dw_want) = conv_grads((&x, &w, &dy), (sx, sw), &p);
    let store = |v: &[f64]| CpuStorage::from_vec(v.to_vec());
    let y = f64s(conv2d(&store(&x), &lx, &store(&w), &lw, &p).unwrap());
    let dx =
        f64s(conv2d_input_grad(&store(&dy), &ldy, &store(&w), &lw, (sx[2], sx[3]), &p).unwrap());
    let dw = f64s(conv2d_weight_grad(&store(&x), &lx, &store(&dy), &ldy, (3, 3), &p).unwrap());
    assert_close(&y, &want, 1e-12, "forward");
    assert_close(&dx, &dx_want, 1e-12, "input grad");
    assert_close(&dw, &dw_want, 1e-12, "weight grad");
}

/// Under f16 autocast the transform rounds every operand it reads, the inputs, the weights and the
/// output gradient, and sums in f32: the output and both gradients equal loops over the rounded
/// operands to f32's precision, and differ from the unrounded ones.
#[test]
fn winograd_convolutions_round_their_operands_in_f16() {
    let (sx, o) = ([2, 64, 5, 4], 64);
    let (lx, lw) = (Layout::contiguous(sx), Layout::contiguous([o, sx[1], 3, 3]));
    let ldy = Layout::contiguous([sx[0], o, sx[2], sx[3]]);
    let (x, w, dy) = (
        spread(lx.numel(), 21),
        spread(lw.numel(), 22),
        spread(ldy.numel(), 23),
    );
    let p = Conv2dParams {
        padding: (1, 1),
        precision: Precision::F16,
        ..Default::default()
    };
    let r = |v: &[f64]| {
        v.iter()
            .map(|&v| half::f16::from_f64(v as f32 as f64).to_f64())
            .collect::<Vec<_>>()
    };
    let want = reference(&r(&x), &lx, &r(&w), &lw, &p);
    let (dx_want, dw_want) = conv_grads((&r(&x), &r(&w), &r(&dy)), (sx, [o, sx[1], 3, 3]), &p);
    let [y, dx, dw] = f32_convolutions((&x, &w, &dy), sx, o, &p);
    for (got, want, what) in [
        (&y, &want, "forward"),
        (&dx, &dx_want, "input grad"),
        (&dw, &dw_want, "weight grad"),
    ] {
        assert_close(got, want, 2e-5, what);
    }
    let full = reference(&x, &lx, &w, &lw, &p);
    assert!(
        y.iter().zip(&full).any(|(a, b)| (a - b).abs() > 1e-3),
        "the rounding does not show"
    );
}

/// The forward convolution and both gradients of the contiguous `[n, c, h, w]` `x` (shape `sx`)
/// with `o` kernels `w` and the output gradient `dy` (output of the input's size), run in f32.
fn f32_convolutions(
    (x, w, dy): (&[f64], &[f64], &[f64]),
    sx: [usize; 4],
    o: usize,
    p: &Conv2dParams,
) -> [Vec<f64>; 3] {
    let lx = Layout::contiguous(sx);
    let lw = Layout::contiguous([o, sx[1], 3, 3]);
    let ldy = Layout::contiguous([sx[0], o, sx[2], sx[3]]);
    let f32s = |v: &[f64]| CpuStorage::from_vec(v.iter().map(|&v| v as f32).collect::<Vec<_>>());
    let (x, w, dy) = (f32s(x), f32s(w), f32s(dy));
    let host = |s: CpuStorage| s.host().to_f64_vec();
    [
        host(conv2d(&x, &lx, &w, &lw, p).unwrap()),
        host(conv2d_input_grad(&dy, &ldy, &w, &lw, (sx[2], sx[3]), p).unwrap()),
        host(conv2d_weight_grad(&x, &lx, &dy, &ldy, (3, 3), p).unwrap()),
    ]
}

/// Winograd's `Bᵀ`, `G` and `Aᵀ` for F(2x2, 3x3), written out for the reference below.
const BT: [[f64; 4]; 4] = [
    [1.0, 0.0, -1.0, 0.0],
    [0.0, 1.0, 1.0, 0.0],
    [0.0, -1.0, 1.0, 0.0],
    [0.0, 1.0, 0.0, -1.0],
];
const G: [[f64; 3]; 4] = [
    [1.0, 0.0, 0.0],
    [0.5, 0.5, 0.5],
    [0.5, -0.5, 0.5],
    [0.0, 0.0, 1.0],
];
const AT: [[f64; 4]; 2] = [[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, -1.0, -1.0]];

fn transpose<const R: usize, const C: usize>(m: &[[f64; C]; R]) -> [[f64; R]; C] {
    std::array::from_fn(|j| std::array::from_fn(|i| m[i][j]))
}

/// `l m lᵀ` for `l` of `P x Q` and `m` of `Q x Q`.
fn sandwich<const P: usize, const Q: usize>(l: &[[f64; Q]; P], m: &[[f64; Q]; Q]) -> [[f64; P]; P] {
    std::array::from_fn(|i| {
        std::array::from_fn(|j| {
            let mut acc = 0.0;
            for a in 0..Q {
                for b in 0..Q {
                    acc += l[i][a] * m[a][b] * l[j][b];
                }
            }
            acc
        })
    })
}

fn bf16_4x4(m: [[f64; 4]; 4]) -> [[f64; 4]; 4] {
    m.map(|row| row.map(|v| half::bf16::from_f32(v as f32).to_f64()))
}

/// The `k x k` window of channel `ch` of image `img` of the contiguous `[n, c, h, w]` `x` whose
/// top-left entry is at row `y0`, column `x0` (zero outside the plane).
fn window<const K: usize>(
    x: &[f64],
    [_, c, h, w]: [usize; 4],
    img: usize,
    ch: usize,
    (y0, x0): (isize, isize),
) -> [[f64; K]; K] {
    std::array::from_fn(|i| {
        std::array::from_fn(|j| {
            let (y, xx) = (y0 + i as isize, x0 + j as isize);
            let inside = (0..h as isize).contains(&y) && (0..w as isize).contains(&xx);
            match inside {
                true => x[((img * c + ch) * h + y as usize) * w + xx as usize],
                false => 0.0,
            }
        })
    })
}

/// bf16 Winograd by its definition, in f64: the `[n, o, oh, ow]` convolution of the contiguous
/// `x` (shape `sx`) with the kernels `kernel(out, in)`, padded by `pad`, where each tile's
/// transformed window `Bᵀ d B` and each transformed kernel `G g Gᵀ` round to bf16 before their
/// elementwise product.
fn bf16_winograd_forward(
    x: &[f64],
    sx: [usize; 4],
    (o, kernel): (usize, impl Fn(usize, usize) -> [[f64; 3]; 3]),
    pad: (usize, usize),
    (oh, ow): (usize, usize),
) -> Vec<f64> {
    let [n, c, _, _] = sx;
    let u: Vec<_> = (0..o * c)
        .map(|k| bf16_4x4(sandwich(&G, &kernel(k / c, k % c))))
        .collect();
    let mut y = vec![0.0; n * o * oh * ow];
    for img in 0..n {
        for (ty, tx) in
            (0..oh.div_ceil(2)).flat_map(|ty| (0..ow.div_ceil(2)).map(move |tx| (ty, tx)))
        {
            let at = (
                2 * ty as isize - pad.0 as isize,
                2 * tx as isize - pad.1 as isize,
            );
            let v: Vec<_> = (0..c)
                .map(|ch| bf16_4x4(sandwich(&BT, &window::<4>(x, sx, img, ch, at))))
                .collect();
            for oc in 0..o {
                let m: [[f64; 4]; 4] = std::array::from_fn(|i| {
                    std::array::from_fn(|j| {
                        (0..c).map(|ch| u[oc * c + ch][i][j] * v[ch][i][j]).sum()
                    })
                });
                let tile = sandwich(&AT, &m);
                for (a, b) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    let (yy, xx) = (2 * ty + a, 2 * tx + b);
                    if yy < oh && xx < ow {
                        y[((img * o + oc) * oh + yy) * ow + xx] = tile[a][b];
                    }
                }
            }
        }
    }
    y
}

/// The weight gradient of [`bf16_winograd_forward`]'s convolution with `o` output channels by its
/// definition: `dg = Gᵀ (Σ P ⊙ V) G` over every tile, with `P = A dY Aᵀ` and `V = Bᵀ d B` rounded
/// to bf16.
fn bf16_winograd_weight_grad(
    x: &[f64],
    sx: [usize; 4],
    dy: &[f64],
    o: usize,
    pad: (usize, usize),
) -> Vec<f64> {
    let [n, c, h, w] = sx;
    let sdy = [n, o, h, w];
    let mut du = vec![[[0.0; 4]; 4]; o * c];
    let a = transpose(&AT);
    for img in 0..n {
        for (ty, tx) in (0..h.div_ceil(2)).flat_map(|ty| (0..w.div_ceil(2)).map(move |tx| (ty, tx)))
        {
            let at = (
                2 * ty as isize - pad.0 as isize,
                2 * tx as isize - pad.1 as isize,
            );
            let out = (2 * ty as isize, 2 * tx as isize);
            for oc in 0..o {
                let p = bf16_4x4(sandwich(&a, &window::<2>(dy, sdy, img, oc, out)));
                for ch in 0..c {
                    let v = bf16_4x4(sandwich(&BT, &window::<4>(x, sx, img, ch, at)));
                    for (i, j) in (0..4).flat_map(|i| (0..4).map(move |j| (i, j))) {
                        du[oc * c + ch][i][j] += p[i][j] * v[i][j];
                    }
                }
            }
        }
    }
    let gt = transpose(&G);
    du.iter()
        .flat_map(|m| sandwich(&gt, m).into_iter().flatten())
        .collect()
}

/// Root-mean-square difference.
fn rms(a: &[f64], b: &[f64]) -> f64 {
    (a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() / a.len() as f64).sqrt()
}

/// Under bf16 autocast the 16 products run on the bf16 kernel, which rounds the transformed
/// operands: on values whose transforms are exact in f32 (multiples of 1/256), the output and both
/// gradients equal the definition with `U`, `V` and `P` rounded to bf16, to f32's sums, and not the
/// rounded operands' loops. On values that round as operands, the error against the unrounded
/// convolution stays within 2.5x the rounded operands' (`im2col`'s bf16 products).
#[test]
fn bf16_winograd_rounds_the_transformed_operands() {
    let (sx, o) = ([2, 64, 5, 4], 72);
    let (c, pad) = (sx[1], (1, 1));
    let p = Conv2dParams {
        padding: pad,
        precision: Precision::Bf16,
        ..Default::default()
    };
    let dyadic = |v: Vec<f64>| {
        v.into_iter()
            .map(|v| (v * 256.0).round() / 256.0)
            .collect::<Vec<_>>()
    };
    let x = dyadic(spread(sx.iter().product(), 31));
    let w = dyadic(spread(o * c * 9, 32));
    let dy = dyadic(spread(sx[0] * o * sx[2] * sx[3], 33));
    let tap =
        |w: &[f64], oc: usize, ic: usize, i: usize, j: usize| w[((oc * c + ic) * 3 + i) * 3 + j];
    let forward = bf16_winograd_forward(
        &x,
        sx,
        (o, |oc, ic| {
            std::array::from_fn(|i| std::array::from_fn(|j| tap(&w, oc, ic, i, j)))
        }),
        pad,
        (sx[2], sx[3]),
    );
    // The input gradient: the output gradient convolved with the flipped kernels, channels swapped.
    let sdy = [sx[0], o, sx[2], sx[3]];
    let flipped = |ic: usize, oc: usize| {
        std::array::from_fn(|i| std::array::from_fn(|j| tap(&w, oc, ic, 2 - i, 2 - j)))
    };
    let input_grad = bf16_winograd_forward(
        &dy,
        sdy,
        (c, flipped),
        (2 - pad.0, 2 - pad.1),
        (sx[2], sx[3]),
    );
    let weight_grad = bf16_winograd_weight_grad(&x, sx, &dy, o, pad);
    let got = f32_convolutions((&x, &w, &dy), sx, o, &p);
    let lx = Layout::contiguous(sx);
    let lw = Layout::contiguous([o, c, 3, 3]);
    let (dx_loops, dw_loops) = conv_grads((&x, &w, &dy), (sx, [o, c, 3, 3]), &p);
    let loops = [reference(&x, &lx, &w, &lw, &p), dx_loops, dw_loops];
    for ((got, want), (loops, what)) in got
        .iter()
        .zip([forward, input_grad, weight_grad])
        .zip(loops.iter().zip(["forward", "input grad", "weight grad"]))
    {
        assert_close(got, &want, 2e-5, what);
        // The transformed operands' rounding shows against the unrounded convolution, ten times
        // past the tolerance.
        assert!(
            got.iter()
                .zip(loops)
                .any(|(u, v)| (u - v).abs() > 2e-4 * (1.0 + v.abs())),
            "{what}: the rounding does not show"
        );
    }

    // Operands that round: the error against the unrounded convolution, next to the rounded
    // operands' (what `im2col` computes).
    let (x, w, dy) = (
        spread(sx.iter().product(), 41),
        spread(o * c * 9, 42),
        spread(sx[0] * o * sx[2] * sx[3], 43),
    );
    let r = |v: &[f64]| {
        v.iter()
            .map(|&v| half::bf16::from_f64(v).to_f64())
            .collect::<Vec<_>>()
    };
    let got = f32_convolutions((&x, &w, &dy), sx, o, &p);
    let (dx, dw) = conv_grads((&x, &w, &dy), (sx, [o, c, 3, 3]), &p);
    let exact = [reference(&x, &lx, &w, &lw, &p), dx, dw];
    let (rdx, rdw) = conv_grads((&r(&x), &r(&w), &r(&dy)), (sx, [o, c, 3, 3]), &p);
    let rounded = [reference(&r(&x), &lx, &r(&w), &lw, &p), rdx, rdw];
    for (i, what) in ["forward", "input grad", "weight grad"]
        .into_iter()
        .enumerate()
    {
        let (ours, operands) = (rms(&got[i], &exact[i]), rms(&rounded[i], &exact[i]));
        eprintln!(
            "{what}: rms error {ours:.3e}, rounded operands' {operands:.3e}, ratio {:.2}",
            ours / operands
        );
        assert!(
            ours <= 2.5 * operands,
            "{what}: {ours} against the rounded operands' {operands}"
        );
    }
}
