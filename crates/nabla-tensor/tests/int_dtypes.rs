//! The integer dtypes of every width and signedness (i8, i16, i32, i64, u8, u16, u32, u64) through the
//! tensor API: arithmetic wraps as Rust's `wrapping_*` does, division floors and the remainder takes
//! the divisor's sign (NumPy's `//` and `%`), sorting and reductions order by value across the whole
//! range, casts follow `astype`, and a u64 above `i64::MAX` reads back and prints exactly.

use nabla_core::{DType, Element, HostData, Result, Scalar};
use nabla_cpu::CpuBackend;
use nabla_tensor::Tensor;

type T = Tensor<CpuBackend>;

/// Floor division and the remainder with the divisor's sign, in `i128` (exact for every pair of
/// 64-bit operands but `i64::MIN / -1`, which the caller wraps).
fn floor_div_rem(a: i128, b: i128) -> (i128, i128) {
    let (q, r) = (a / b, a % b);
    if r != 0 && ((r < 0) != (b < 0)) {
        (q - 1, r + b)
    } else {
        (q, r)
    }
}

macro_rules! check_type {
    ($t:ty) => {{
        let cpu = CpuBackend::new();
        let a: Vec<$t> = vec![
            <$t>::MIN,
            <$t>::MAX,
            0,
            1,
            2,
            7,
            <$t>::MAX - 3,
            <$t>::MIN + 5,
        ];
        let b: Vec<$t> = vec![3, 2, <$t>::MAX, 1, <$t>::MAX, 2, <$t>::MIN + 1, 3];
        let dtype = <$t as Element>::DTYPE;
        let (x, y) = (
            T::from_vec(a.clone(), [8], &cpu)?,
            T::from_vec(b.clone(), [8], &cpu)?,
        );
        assert_eq!(x.dtype(), dtype);
        let zip =
            |f: fn($t, $t) -> $t| -> Vec<$t> { a.iter().zip(&b).map(|(&p, &q)| f(p, q)).collect() };
        assert_eq!(
            x.add(&y)?.to_vec::<$t>()?,
            zip(<$t>::wrapping_add),
            "{dtype} add"
        );
        assert_eq!(
            x.sub(&y)?.to_vec::<$t>()?,
            zip(<$t>::wrapping_sub),
            "{dtype} sub"
        );
        assert_eq!(
            x.mul(&y)?.to_vec::<$t>()?,
            zip(<$t>::wrapping_mul),
            "{dtype} mul"
        );
        assert_eq!(
            x.maximum(&y)?.to_vec::<$t>()?,
            zip(|p, q| p.max(q)),
            "{dtype} maximum"
        );
        assert_eq!(
            x.bitwise_xor(&y)?.to_vec::<$t>()?,
            zip(|p, q| p ^ q),
            "{dtype} xor"
        );
        let (quotients, remainders): (Vec<$t>, Vec<$t>) = a
            .iter()
            .zip(&b)
            .map(|(&p, &q)| {
                let (d, r) = floor_div_rem(p as i128, q as i128);
                (d as $t, r as $t)
            })
            .unzip();
        assert_eq!(
            x.div(&y)?.to_vec::<$t>()?,
            quotients,
            "{dtype} floor division"
        );
        assert_eq!(x.rem(&y)?.to_vec::<$t>()?, remainders, "{dtype} remainder");
        assert_eq!(
            x.neg()?.to_vec::<$t>()?,
            a.iter().map(|v| v.wrapping_neg()).collect::<Vec<_>>()
        );
        // Order by value over the whole range: sort, max, argmax, comparisons.
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(x.sort(0, false)?.0.to_vec::<$t>()?, sorted, "{dtype} sort");
        assert_eq!(x.max(&[0], false)?.to_vec::<$t>()?, vec![<$t>::MAX]);
        assert_eq!(x.argmax(0, false)?.to_vec::<i64>()?, vec![1]);
        assert_eq!(
            x.lt(&y)?.to_vec::<bool>()?,
            a.iter().zip(&b).map(|(p, q)| p < q).collect::<Vec<_>>()
        );
        // Sums wrap in the dtype; the cumulative sum too.
        let total = a.iter().fold(0 as $t, |s, &v| s.wrapping_add(v));
        assert_eq!(
            x.sum(&[0], false)?.to_vec::<$t>()?,
            vec![total],
            "{dtype} sum"
        );
        let running: Vec<$t> = a
            .iter()
            .scan(0 as $t, |s, &v| {
                *s = s.wrapping_add(v);
                Some(*s)
            })
            .collect();
        assert_eq!(x.cumsum(0)?.to_vec::<$t>()?, running, "{dtype} cumsum");
        // A 2x4 @ 4x2 product, wrapping.
        let m = x
            .reshape([2, 4])?
            .matmul(&y.reshape([4, 2])?)?
            .to_vec::<$t>()?;
        let mut want = vec![0 as $t; 4];
        for i in 0..2 {
            for j in 0..2 {
                for k in 0..4 {
                    want[i * 2 + j] =
                        want[i * 2 + j].wrapping_add(a[i * 4 + k].wrapping_mul(b[k * 2 + j]));
                }
            }
        }
        assert_eq!(m, want, "{dtype} matmul");
        // Casts to every integer dtype wrap as Rust's `as` does; to f64 they round to nearest.
        assert_eq!(
            x.cast(DType::I8)?.to_vec::<i8>()?,
            a.iter().map(|&v| v as i8).collect::<Vec<_>>()
        );
        assert_eq!(
            x.cast(DType::U64)?.to_vec::<u64>()?,
            a.iter().map(|&v| v as u64).collect::<Vec<_>>()
        );
        assert_eq!(
            x.cast(DType::F64)?.to_vec::<f64>()?,
            a.iter().map(|&v| v as f64).collect::<Vec<_>>()
        );
        // The gather of every element, through an index tensor of this dtype.
        let index = T::from_vec(vec![7 as $t, 0, 3], [3], &cpu)?;
        assert_eq!(
            x.index_select(0, &index)?.to_vec::<$t>()?,
            vec![a[7], a[0], a[3]]
        );
    }};
}

#[test]
fn every_integer_dtype_wraps_floors_and_orders() -> Result<()> {
    check_type!(i8);
    check_type!(i16);
    check_type!(i32);
    check_type!(i64);
    check_type!(u8);
    check_type!(u16);
    check_type!(u32);
    check_type!(u64);
    Ok(())
}

#[test]
fn mixed_signs_promote_to_a_type_holding_both() -> Result<()> {
    let cpu = CpuBackend::new();
    let a = T::from_vec(vec![-128i8, 127], [2], &cpu)?;
    let b = T::from_vec(vec![255u8, 1], [2], &cpu)?;
    let sum = a.add(&b)?;
    assert_eq!(sum.dtype(), DType::I16);
    assert_eq!(sum.to_vec::<i16>()?, vec![127, 128]);
    let big = T::from_vec(vec![u64::MAX], [1], &cpu)?;
    let signed = T::from_vec(vec![-1i64], [1], &cpu)?;
    let mixed = big.add(&signed)?;
    assert_eq!(mixed.dtype(), DType::F64);
    assert_eq!(mixed.to_vec::<f64>()?, vec![u64::MAX as f64 - 1.0]);
    // A Python-style number stays weak: the u8 tensor keeps its dtype and wraps.
    assert_eq!(b.add(10i64)?.to_vec::<u8>()?, vec![9, 11]);
    Ok(())
}

#[test]
fn uint64_above_int64_reads_back_and_prints_exactly() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = T::from_host(HostData::U64(vec![u64::MAX, 1 << 63, 5]), [3], &cpu)?;
    assert_eq!(x.to_host()?.get(0), Some(Scalar::U64(u64::MAX)));
    assert_eq!(x.to_host()?.get(2), Some(Scalar::I64(5)));
    let shown = format!("{x}");
    assert!(
        shown.contains("18446744073709551615") && shown.contains("9223372036854775808"),
        "{shown}"
    );
    assert!(shown.contains("uint64"), "{shown}");
    let filled = T::full([2], Scalar::U64(u64::MAX - 1), DType::U64, &cpu)?;
    assert_eq!(filled.to_vec::<u64>()?, vec![u64::MAX - 1; 2]);
    Ok(())
}

#[test]
fn integer_tensors_are_not_differentiable() -> Result<()> {
    let cpu = CpuBackend::new();
    for dtype in DType::ALL.into_iter().filter(|d| d.is_int()) {
        let x = T::zeros([2], dtype, &cpu)?;
        let err = x.leaf().map(|_| ()).unwrap_err().to_string();
        assert!(err.contains(dtype.name()), "{dtype}: {err}");
    }
    Ok(())
}
