use super::*;
use nabla_core::{HostData, Scalar};
use num_complex::{Complex32, Complex64};
use proptest::prelude::*;

/// Advances a row-major multi-index; returns `false` after the last one.
fn next_index(idx: &mut [usize], shape: &[usize]) -> bool {
    for a in (0..idx.len()).rev() {
        idx[a] += 1;
        if idx[a] < shape[a] {
            return true;
        }
        idx[a] = 0;
    }
    false
}

/// Triple loop over every batch item through `Layout::offset_of`.
fn reference<T: Arith>(a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Vec<T> {
    let r = la.rank();
    let batch = &la.shape()[..r - 2];
    let (m, k, n) = (la.shape()[r - 2], la.shape()[r - 1], lb.shape()[r - 1]);
    let mut out = Vec::new();
    if batch.iter().product::<usize>() == 0 {
        return out;
    }
    let mut bi = vec![0usize; r - 2];
    loop {
        for i in 0..m {
            for j in 0..n {
                let mut acc = T::zero();
                for p in 0..k {
                    let ia: Vec<usize> = bi.iter().copied().chain([i, p]).collect();
                    let ib: Vec<usize> = bi.iter().copied().chain([p, j]).collect();
                    acc = acc.add(a[la.offset_of(&ia)].mul(b[lb.offset_of(&ib)]));
                }
                out.push(acc);
            }
        }
        if !next_index(&mut bi, batch) {
            return out;
        }
    }
}

/// A `[batch..., rows, cols]` view: maybe stored transposed, maybe every other row of a taller matrix,
/// maybe reversed along either matrix axis, maybe broadcast along some batch axes. Returns the view and
/// the buffer length it needs.
fn operand(batch: &[usize], rows: usize, cols: usize, bits: u32) -> (Layout, usize) {
    let bit = |i: u32| bits >> i & 1 == 1;
    let stored_batch: Vec<usize> = batch
        .iter()
        .enumerate()
        .map(|(i, &d)| if bit(8 + i as u32) { 1 } else { d })
        .collect();
    let tall = if bit(1) && rows > 0 {
        2 * rows - 1
    } else {
        rows
    };
    let r = batch.len();
    let mut l = if bit(0) {
        let dims: Vec<usize> = stored_batch.iter().copied().chain([cols, tall]).collect();
        let mut perm: Vec<usize> = (0..r).collect();
        perm.extend([r + 1, r]);
        Layout::contiguous(dims).permute(&perm).unwrap()
    } else {
        Layout::contiguous(
            stored_batch
                .iter()
                .copied()
                .chain([tall, cols])
                .collect::<Vec<_>>(),
        )
    };
    if tall != rows {
        l = l.slice(r, 0, rows, 2).unwrap();
    }
    if bit(2) {
        l = l.flip(r).unwrap();
    }
    if bit(3) {
        l = l.flip(r + 1).unwrap();
    }
    let full: Vec<usize> = batch.iter().copied().chain([rows, cols]).collect();
    let len = stored_batch.iter().product::<usize>() * tall * cols;
    (l.broadcast_to(&full).unwrap(), len)
}

fn values<T: Element>(n: usize, seed: u64, f: impl Fn(u64) -> Scalar) -> Vec<T> {
    (0..n as u64)
        .map(|i| T::from_scalar(f(i.wrapping_mul(0x9E3779B97F4A7C15) ^ seed)))
        .collect()
}

fn run<T: Element>(a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Result<Vec<T>> {
    let out = matmul(
        &CpuStorage::from_vec(a.to_vec()),
        la,
        &CpuStorage::from_vec(b.to_vec()),
        lb,
    )?;
    Ok(T::vec_of(out.into_host()).expect("matmul keeps the dtype"))
}

/// Small integers, so that float products are exact and comparable bit for bit.
fn check_exact<T: Arith>(la: &Layout, na: usize, lb: &Layout, nb: usize, seed: u64) {
    let a: Vec<T> = values(na, seed, |v| Scalar::I64((v % 9) as i64 - 4));
    let b: Vec<T> = values(nb, seed ^ 1, |v| Scalar::I64((v % 7) as i64 - 3));
    assert_eq!(
        run(&a, la, &b, lb).unwrap(),
        reference(&a, la, &b, lb),
        "{la:?} x {lb:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn matches_reference_on_strided_views(
        batch in prop::collection::vec(0usize..4, 0..3),
        m in 0usize..12, k in 0usize..12, n in 0usize..12,
        bits_a in any::<u32>(), bits_b in any::<u32>(), seed in any::<u64>(),
    ) {
        let (la, na) = operand(&batch, m, k, bits_a);
        let (lb, nb) = operand(&batch, k, n, bits_b);
        check_exact::<f32>(&la, na, &lb, nb, seed);
        check_exact::<f64>(&la, na, &lb, nb, seed);
        check_exact::<Complex32>(&la, na, &lb, nb, seed);
        check_exact::<Complex64>(&la, na, &lb, nb, seed);
        check_exact::<u8>(&la, na, &lb, nb, seed);
        // Large integers wrap.
        let a: Vec<i64> = values(na, seed, |v| Scalar::I64(v as i64));
        let b: Vec<i64> = values(nb, seed ^ 1, |v| Scalar::I64(v as i64));
        prop_assert_eq!(run(&a, &la, &b, &lb).unwrap(), reference(&a, &la, &b, &lb));
    }

    #[test]
    fn larger_products_take_the_blocked_path(
        m in 17usize..70, k in 17usize..70, n in 17usize..70,
        bits_a in any::<u32>(), bits_b in any::<u32>(), seed in any::<u64>(),
    ) {
        let (la, na) = operand(&[2], m, k, bits_a);
        let (lb, nb) = operand(&[2], k, n, bits_b);
        check_exact::<f32>(&la, na, &lb, nb, seed);
        check_exact::<Complex64>(&la, na, &lb, nb, seed);
        check_exact::<i32>(&la, na, &lb, nb, seed);
    }
}

#[test]
fn big_and_batched_products() {
    // Products large enough to be cut into row blocks (m >= n) and column blocks (m < n) that run on
    // every thread, a batch of small ones split across threads, and a broadcast (stride 0) batch operand.
    for (batch, m, k, n, bits_a, bits_b) in [
        (vec![], 300, 200, 250, 0, 0),
        (vec![], 257, 130, 190, 1, 5),
        (vec![], 70, 300, 261, 1, 0),
        (vec![], 129, 260, 517, 0, 5),
        (vec![40], 24, 33, 20, 0, 1),
        (vec![6, 7], 30, 31, 32, 1 << 8, 1 << 9),
        (vec![3], 100, 90, 80, 1 << 8, 0),
    ] {
        let (la, na) = operand(&batch, m, k, bits_a);
        let (lb, nb) = operand(&batch, k, n, bits_b);
        check_exact::<f32>(&la, na, &lb, nb, 11);
        check_exact::<f64>(&la, na, &lb, nb, 12);
        check_exact::<i64>(&la, na, &lb, nb, 13);
    }
}

#[test]
fn rows_broadcast_inside_a_matrix() {
    // A matrix whose rows all alias one row (row stride 0).
    let la = Layout::contiguous([1, 40]).broadcast_to(&[50, 40]).unwrap();
    let lb = Layout::contiguous([40, 60]);
    check_exact::<f32>(&la, 40, &lb, 2400, 5);
    check_exact::<f64>(
        &lb.permute(&[1, 0]).unwrap(),
        2400,
        &Layout::contiguous([40, 1]).broadcast_to(&[40, 70]).unwrap(),
        40,
        6,
    );
}

#[test]
fn empty_products() {
    let z: Vec<f32> = vec![];
    // k = 0: zeros.
    assert_eq!(
        run(
            &z,
            &Layout::contiguous([2, 3, 0]),
            &z,
            &Layout::contiguous([2, 0, 4])
        )
        .unwrap(),
        vec![0.0; 24]
    );
    let zi: Vec<i32> = vec![];
    assert_eq!(
        run(
            &zi,
            &Layout::contiguous([3, 0]),
            &zi,
            &Layout::contiguous([0, 2])
        )
        .unwrap(),
        vec![0; 6]
    );
    // m = 0 or n = 0 or an empty batch: empty.
    let a = vec![1.0f64; 6];
    assert!(
        run(
            &[],
            &Layout::contiguous([0, 3]),
            &a,
            &Layout::contiguous([3, 2])
        )
        .unwrap()
        .is_empty()
    );
    assert!(
        run(
            &a,
            &Layout::contiguous([2, 3]),
            &[],
            &Layout::contiguous([3, 0])
        )
        .unwrap()
        .is_empty()
    );
    assert!(
        run::<f32>(
            &[],
            &Layout::contiguous([0, 2, 3]),
            &[],
            &Layout::contiguous([0, 3, 2])
        )
        .unwrap()
        .is_empty()
    );
}

#[test]
fn errors_name_matmul_and_both_shapes() {
    let s = CpuStorage::from_vec(vec![1.0f32; 24]);
    let err = |la: &[usize], lb: &[usize]| {
        matmul(
            &s,
            &Layout::contiguous(la.to_vec()),
            &s,
            &Layout::contiguous(lb.to_vec()),
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        err(&[2, 3], &[4, 2]),
        "matmul: shape mismatch between [2, 3] and [4, 2] (inner dimensions 3 and 4 differ)"
    );
    assert_eq!(
        err(&[6], &[6, 4]),
        "matmul: shape mismatch between [6] and [6, 4] (both operands need at least two dimensions, [..., m, k] and [..., k, n])"
    );
    assert_eq!(
        err(&[2, 3, 4], &[3, 4, 2]),
        "matmul: shape mismatch between [2, 3, 4] and [3, 4, 2] (batch dimensions [2] and [3] differ (broadcast them to one shape first))"
    );
    assert!(err(&[2, 2, 3], &[3, 2]).contains("batch dimensions [2] and [] differ"));
    let d = CpuStorage::from_vec(vec![1.0f64; 24]);
    let l = Layout::contiguous([2, 2]);
    assert_eq!(
        matmul(&s, &l, &d, &l).unwrap_err().to_string(),
        "matmul: dtype mismatch between float32 and float64 (cast one operand with .cast(...))"
    );
    let b = CpuStorage::new(HostData::Bool(vec![true; 4]));
    assert_eq!(
        matmul(&b, &l, &b, &l).unwrap_err().to_string(),
        "matmul: not supported for dtype bool"
    );
    let h = CpuStorage::new(HostData::filled(
        nabla_core::DType::F16,
        4,
        Scalar::F64(1.0),
    ));
    assert!(
        matmul(&h, &l, &h, &l)
            .unwrap_err()
            .to_string()
            .starts_with("matmul: not supported for dtype float16")
    );
}

#[test]
fn host_gemm_uninit_checks_its_destination() {
    use faer::MatRef;
    use std::mem::MaybeUninit;
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let (lhs, rhs) = (
        MatRef::from_row_major_slice(&a, 2, 3),
        MatRef::from_row_major_slice(&a, 3, 2),
    );
    let mut short = [MaybeUninit::<f32>::uninit(); 3];
    let err = super::host_gemm_uninit("demo", &mut short, lhs, rhs).unwrap_err();
    assert!(err.to_string().contains("demo"), "{err}");
    // Mismatched inner sizes.
    let mut dst = [MaybeUninit::<f32>::uninit(); 9];
    assert!(super::host_gemm_uninit("demo", &mut dst, lhs, lhs).is_err());
    // No columns in the left operand: zeros.
    let empty: [f32; 0] = [];
    let (l0, r0) = (
        MatRef::from_row_major_slice(&empty, 2, 0),
        MatRef::from_row_major_slice(&empty, 0, 2),
    );
    super::host_gemm_uninit("demo", &mut dst, l0, r0).unwrap();
    // SAFETY: the product wrote the first four elements.
    let zeros: Vec<f32> = dst[..4]
        .iter()
        .map(|v| unsafe { v.assume_init() })
        .collect();
    assert_eq!(zeros, [0.0; 4]);
    // The product itself.
    super::host_gemm_uninit("demo", &mut dst, lhs, rhs).unwrap();
    // SAFETY: as above.
    let c: Vec<f32> = dst[..4]
        .iter()
        .map(|v| unsafe { v.assume_init() })
        .collect();
    assert_eq!(c, [22.0, 28.0, 49.0, 64.0]);
}
