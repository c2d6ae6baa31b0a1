//! The bf16 products against an f64 reference over the same bf16-rounded operands, on both kernels,
//! across tile and block edges, odd `k`, strided and transposed operands, and empty sizes.

use super::{Kernel, ToBf16, View, bf16_value};
use std::mem::MaybeUninit;

/// [`super::gemm_bf16`] into an initialised buffer (whose old values it must overwrite).
fn gemm_bf16(dst: &mut [f32], a: View<'_, f32>, b: View<'_, f32>, kernel: Kernel, par: bool) {
    // SAFETY: `MaybeUninit<f32>` has `f32`'s layout, and the kernel only writes valid values.
    let uninit = unsafe { &mut *(dst as *mut [f32] as *mut [MaybeUninit<f32>]) };
    super::gemm_bf16(uninit, a, b, kernel, par);
}

/// Deterministic values in about [-2, 2) with every mantissa bit in play.
fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// The kernels this machine runs: always the rounded fallback, and `vdpbf16ps` where present.
fn kernels() -> Vec<Kernel> {
    let mut kernels = vec![Kernel::Rounded];
    if Kernel::detect() == Kernel::Dot {
        kernels.push(Kernel::Dot);
    }
    kernels
}

/// A view of `rows x cols` over `data` with the given strides and offset.
fn view(
    data: &[f32],
    offset: usize,
    rows: usize,
    cols: usize,
    rs: isize,
    cs: isize,
) -> View<'_, f32> {
    View {
        data,
        offset,
        rows,
        cols,
        rs,
        cs,
    }
}

/// Checks `gemm_bf16` against an f64 sum of the bf16-rounded products, with the f32 accumulation
/// bound `k * 2^-23 * sum |a b|` (plus a little).
fn check(a: View<'_, f32>, b: View<'_, f32>, what: &str) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    for kernel in kernels() {
        for par in [false, true] {
            let mut out = vec![f32::NAN; m * n];
            gemm_bf16(&mut out, a, b, kernel, par);
            for i in 0..m {
                for j in 0..n {
                    let (mut sum, mut size) = (0.0f64, 0.0f64);
                    for kk in 0..k {
                        let x = f64::from(bf16_value(a.at(i, kk).bf16_bits()));
                        let y = f64::from(bf16_value(b.at(kk, j).bf16_bits()));
                        sum += x * y;
                        size += (x * y).abs();
                    }
                    let bound = (k as f64 + 2.0) * f64::from(f32::EPSILON) * size + 1e-30;
                    let got = f64::from(out[i * n + j]);
                    assert!(
                        (got - sum).abs() <= bound,
                        "{what} {kernel:?} par={par} [{i}, {j}] of {m}x{k}x{n}: {got} vs {sum}"
                    );
                }
            }
        }
    }
}

#[test]
fn rounding_to_bf16_is_to_nearest_even_and_keeps_nan_and_infinity() {
    for bits in (0..u32::MAX)
        .step_by(65_521)
        .chain([0x3f80_8000, 0x3f81_8000, 0x7f7f_ffff])
    {
        let x = f32::from_bits(bits);
        let ours = x.bf16_bits();
        let reference = half::bf16::from_f32(x);
        if x.is_nan() {
            assert!(bf16_value(ours).is_nan(), "{bits:#x}");
            assert_eq!(ours & 0x8000, reference.to_bits() & 0x8000);
        } else {
            assert_eq!(ours, reference.to_bits(), "{bits:#x}");
        }
    }
    // Ties go to the even neighbour: 1 + 2^-8 rounds down to 1, 1 + 3 * 2^-8 up to 1 + 2^-6.
    assert_eq!(bf16_value(1.003_906_3f32.bf16_bits()), 1.0);
    assert_eq!(bf16_value(1.011_718_8f32.bf16_bits()), 1.015_625);
    assert_eq!(bf16_value(f32::INFINITY.bf16_bits()), f32::INFINITY);
    assert_eq!(bf16_value(f32::MAX.bf16_bits()), f32::INFINITY);
}

#[test]
fn products_across_tile_and_block_edges_match_the_rounded_reference() {
    // Tiles are 8 x 48 and blocks 256 rows, 192 pairs of k and 1536 columns: partial tiles, odd k,
    // two and three k blocks with an odd tail (k = 515, 771), a second row block and a second
    // column block.
    for &(m, k, n) in &[
        (1, 1, 1),
        (7, 3, 5),
        (8, 2, 48),
        (9, 17, 49),
        (33, 515, 97),
        (17, 771, 50),
        (70, 64, 1600),
        (20, 301, 1600),
        (300, 40, 20),
    ] {
        let (x, y) = (values(m * k, 1), values(k * n, 2));
        check(
            view(&x, 0, m, k, k as isize, 1),
            view(&y, 0, k, n, n as isize, 1),
            "row-major",
        );
    }
}

#[test]
fn transposed_strided_and_offset_operands() {
    let (m, k, n) = (19, 37, 53);
    let (x, y) = (values(m * k * 2 + 3, 3), values(k * n * 2 + 5, 4));
    // Column-major (transposed) operands.
    check(
        view(&x, 0, m, k, 1, m as isize),
        view(&y, 0, k, n, 1, k as isize),
        "transposed",
    );
    // Every other element, from an offset.
    check(
        view(&x, 3, m, k, 2 * k as isize, 2),
        view(&y, 5, k, n, 2 * n as isize, 2),
        "strided",
    );
    // A broadcast row (stride 0) on the left, a reversed right operand.
    let last = (k - 1) * n;
    check(
        view(&x, 0, m, k, 0, 1),
        view(&y, last, k, n, -(n as isize), 1),
        "broadcast and reversed",
    );
    // Transposed operands over several row blocks, threads' tasks and k blocks (the left operand
    // packed across lines, the right one along k), and again with more than one column block,
    // where the left operand is packed whole.
    for (m3, k3, n3) in [(300, 301, 100), (40, 301, 1600)] {
        let (x3, y3) = (values(m3 * k3, 7), values(k3 * n3, 8));
        check(
            view(&x3, 0, m3, k3, 1, m3 as isize),
            view(&y3, 0, k3, n3, 1, k3 as isize),
            "transposed, several blocks",
        );
    }
    // Exactly the tile width with rows contiguous across lines (the right operand's fast packing).
    let (k2, n2) = (10, 96);
    let z = values(k2 * n2, 5);
    let w = values(13 * k2, 6);
    check(
        view(&w, 0, 13, k2, k2 as isize, 1),
        view(&z, 0, k2, n2, n2 as isize, 1),
        "whole panels",
    );
}

#[test]
fn empty_products_and_an_empty_inner_dimension() {
    for kernel in kernels() {
        let mut out = vec![f32::NAN; 6];
        gemm_bf16(
            &mut out,
            view(&[], 0, 2, 0, 0, 1),
            view(&[], 0, 0, 3, 3, 1),
            kernel,
            true,
        );
        assert_eq!(out, vec![0.0; 6]);
        let mut none: Vec<f32> = Vec::new();
        gemm_bf16(
            &mut none,
            view(&[], 0, 0, 4, 4, 1),
            view(&[0.0; 12], 0, 4, 3, 3, 1),
            kernel,
            true,
        );
    }
}

#[test]
fn special_values_propagate() {
    let x = [1.0f32, f32::INFINITY, 2.0, 3.0];
    let y = [1.0f32, f32::NAN, 1.0, 1.0];
    for kernel in kernels() {
        let mut out = vec![0.0f32; 4];
        gemm_bf16(
            &mut out,
            view(&x, 0, 2, 2, 2, 1),
            view(&y, 0, 2, 2, 2, 1),
            kernel,
            false,
        );
        assert_eq!(out[0], f32::INFINITY, "{kernel:?}");
        assert!(out[1].is_nan() && out[3].is_nan(), "{kernel:?}: {out:?}");
        assert_eq!(out[2], 5.0, "{kernel:?}");
    }
}
