//! Hand-written cases: NumPy semantics of integer division, remainder and powers, rounding, NaN
//! propagation, casting, numerically delicate complex functions, large (parallel) views, and the message
//! of every error path.

use super::tests::{close, close_complex, gather};
use super::{binary, cast, compare, copy, select, unary};
use crate::CpuStorage;
use nabla_core::{
    BinaryOp, CompareOp, DType, Element, HostData, Layout, UnaryOp,
    half::{bf16, f16},
    num_complex::{Complex32, Complex64},
};

fn vec1<T: Element>(v: Vec<T>) -> (CpuStorage, Layout) {
    let l = Layout::contiguous([v.len()]);
    (CpuStorage::from_vec(v), l)
}

fn bin<T: Element>(op: BinaryOp, a: Vec<T>, b: Vec<T>) -> Vec<T> {
    let ((sa, la), (sb, lb)) = (vec1(a), vec1(b));
    T::vec_of(binary(op, &sa, &la, &sb, &lb).unwrap().into_host()).unwrap()
}

fn un<T: Element, U: Element>(op: UnaryOp, x: Vec<T>) -> Vec<U> {
    let (s, l) = vec1(x);
    U::vec_of(unary(op, &s, &l).unwrap().into_host()).unwrap()
}

fn cast_to<T: Element, U: Element>(x: Vec<T>) -> Vec<U> {
    let (s, l) = vec1(x);
    U::vec_of(cast(&s, &l, U::DTYPE).unwrap().into_host()).unwrap()
}

#[test]
fn integer_division_and_remainder_follow_numpy() {
    let a = vec![-7i64, -7, 7, 7, 7, -8, i64::MIN, i64::MIN, 0, 5];
    let b = vec![2i64, -2, 2, -2, 0, 2, -1, 1, 3, 0];
    assert_eq!(
        bin(BinaryOp::Div, a.clone(), b.clone()),
        vec![-4, 3, 3, -4, 0, -4, i64::MIN, i64::MIN, 0, 0]
    );
    assert_eq!(
        bin(BinaryOp::Rem, a, b),
        vec![1, -1, 1, -1, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        bin(BinaryOp::Div, vec![-7i32, i32::MIN], vec![2, -1]),
        vec![-4, i32::MIN]
    );
    assert_eq!(bin(BinaryOp::Rem, vec![-7i32, 7], vec![2, -3]), vec![1, -2]);
    assert_eq!(
        bin(BinaryOp::Div, vec![7u8, 200, 9], vec![2, 7, 0]),
        vec![3, 28, 0]
    );
    assert_eq!(
        bin(BinaryOp::Rem, vec![7u8, 200, 9], vec![2, 7, 0]),
        vec![1, 4, 0]
    );
}

#[test]
fn float_remainder_has_the_sign_of_the_divisor() {
    let got = bin(
        BinaryOp::Rem,
        vec![7.5f64, -7.5, -4.0, 4.0, 1.0, -5.0, 5.0, f64::INFINITY],
        vec![
            -2.0,
            2.0,
            2.0,
            -2.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            2.0,
        ],
    );
    assert_eq!(got[..2], [-0.5, 0.5]);
    assert!(got[2] == 0.0 && got[2].is_sign_positive());
    assert!(got[3] == 0.0 && got[3].is_sign_negative());
    assert!(got[4].is_nan());
    assert_eq!(got[5..7], [f64::INFINITY, f64::NEG_INFINITY]);
    assert!(got[7].is_nan());
    assert_eq!(bin(BinaryOp::Rem, vec![-1.0f32], vec![3.0]), vec![2.0]);
    // Float division is IEEE.
    let d = bin(BinaryOp::Div, vec![1.0f32, -1.0, 0.0], vec![0.0, 0.0, 0.0]);
    assert_eq!(d[..2], [f32::INFINITY, f32::NEG_INFINITY]);
    assert!(d[2].is_nan());
}

#[test]
fn integer_powers_wrap_and_handle_negative_exponents() {
    let base = vec![2i64, 3, 1, -1, -1, 5, 0, 2, 3, -2];
    let exp = vec![10i64, -1, -5, -3, -4, 0, 0, 64, 40, 3];
    assert_eq!(
        bin(BinaryOp::Pow, base, exp),
        vec![1024, 0, 1, -1, 1, 1, 1, 0, 3i64.wrapping_pow(40), -8]
    );
    assert_eq!(
        bin(BinaryOp::Pow, vec![2u8, 3, 255], vec![8, 5, 2]),
        vec![0, 243, 1]
    );
    assert_eq!(
        bin(BinaryOp::Pow, vec![-3i32, 7], vec![3, i32::MAX]),
        vec![-27, 7i32.wrapping_pow(i32::MAX as u32)]
    );
}

#[test]
fn integer_unary_ops_wrap() {
    assert_eq!(
        un::<i32, i32>(UnaryOp::Neg, vec![i32::MIN, 5]),
        vec![i32::MIN, -5]
    );
    assert_eq!(
        un::<i64, i64>(UnaryOp::Abs, vec![i64::MIN, -3]),
        vec![i64::MIN, 3]
    );
    assert_eq!(un::<i32, i32>(UnaryOp::Square, vec![65536, -3]), vec![0, 9]);
    assert_eq!(un::<u8, u8>(UnaryOp::Neg, vec![1, 0]), vec![255, 0]);
    assert_eq!(un::<u8, u8>(UnaryOp::Sign, vec![0, 7]), vec![0, 1]);
    assert_eq!(
        un::<i64, i64>(UnaryOp::Sign, vec![-9, 0, 4]),
        vec![-1, 0, 1]
    );
    assert_eq!(
        un::<i64, bool>(UnaryOp::IsFinite, vec![1, 2]),
        vec![true, true]
    );
    assert_eq!(un::<u8, bool>(UnaryOp::IsNan, vec![1]), vec![false]);
    assert_eq!(un::<i32, i32>(UnaryOp::Imag, vec![4, 5]), vec![0, 0]);
}

#[test]
fn bool_arithmetic_is_logical() {
    let (a, b) = (
        vec![false, false, true, true],
        vec![false, true, false, true],
    );
    assert_eq!(
        bin(BinaryOp::Add, a.clone(), b.clone()),
        vec![false, true, true, true]
    );
    assert_eq!(
        bin(BinaryOp::Mul, a.clone(), b.clone()),
        vec![false, false, false, true]
    );
    assert_eq!(
        bin(BinaryOp::Maximum, a.clone(), b.clone()),
        vec![false, true, true, true]
    );
    assert_eq!(
        bin(BinaryOp::Minimum, a.clone(), b.clone()),
        vec![false, false, false, true]
    );
    assert_eq!(
        bin(BinaryOp::Xor, a.clone(), b.clone()),
        vec![false, true, true, false]
    );
    assert_eq!(
        un::<bool, bool>(UnaryOp::Not, a),
        vec![true, true, false, false]
    );
}

#[test]
fn rounding_sign_and_nan_propagation() {
    assert_eq!(
        un::<f64, f64>(UnaryOp::Round, vec![0.5, 1.5, 2.5, -1.5, -2.5, 3.7]),
        vec![0.0, 2.0, 2.0, -2.0, -2.0, 4.0]
    );
    assert!(un::<f32, f32>(UnaryOp::Round, vec![-0.5])[0].is_sign_negative());
    let s = un::<f32, f32>(
        UnaryOp::Sign,
        vec![f32::NAN, -0.0, 3.0, -2.0, f32::NEG_INFINITY],
    );
    assert!(s[0].is_nan());
    assert_eq!(s[1..], [0.0, 1.0, -1.0, -1.0]);
    let m = bin(
        BinaryOp::Maximum,
        vec![f64::NAN, 1.0, 2.0],
        vec![1.0, f64::NAN, 1.0],
    );
    assert!(m[0].is_nan() && m[1].is_nan());
    assert_eq!(m[2], 2.0);
    let m = bin(
        BinaryOp::Minimum,
        vec![f32::NAN, 1.0, 2.0],
        vec![1.0, f32::NAN, 1.0],
    );
    assert!(m[0].is_nan() && m[1].is_nan());
    assert_eq!(m[2], 1.0);
    assert_eq!(
        un::<f64, bool>(UnaryOp::IsNan, vec![f64::NAN, 1.0]),
        vec![true, false]
    );
    assert_eq!(
        un::<f32, bool>(UnaryOp::IsFinite, vec![f32::INFINITY, 1.0, f32::NAN]),
        vec![false, true, false]
    );
}

#[test]
fn sigmoid_is_finite_at_large_magnitudes() {
    assert_eq!(
        un::<f32, f32>(UnaryOp::Sigmoid, vec![-1e4, 1e4, 0.0]),
        vec![0.0, 1.0, 0.5]
    );
    assert_eq!(
        un::<f64, f64>(UnaryOp::Sigmoid, vec![-1e4, 1e4, 0.0]),
        vec![0.0, 1.0, 0.5]
    );
    let s = un::<f64, f64>(UnaryOp::Sigmoid, vec![-700.0]);
    assert!(close(s[0], (-700.0f64).exp(), 4, DType::F64));
    let z = un::<Complex64, Complex64>(
        UnaryOp::Sigmoid,
        vec![Complex64::new(-1e4, 1.0), Complex64::new(1e4, 1.0)],
    );
    assert_eq!(z, vec![Complex64::new(0.0, 0.0), Complex64::new(1.0, 0.0)]);
}

#[test]
fn complex_functions_keep_accuracy() {
    let z = Complex64::new(1e-10, 1e-10);
    let e = un::<Complex64, Complex64>(UnaryOp::Expm1, vec![z])[0];
    // expm1(z) = z + z^2 / 2 + ...: the real part is 1e-10 + 0 (the z^2 term is purely imaginary).
    assert!(
        close_complex(e, Complex64::new(1e-10, 1e-10 + 1e-20), 1e-15),
        "{e}"
    );
    let l = un::<Complex64, Complex64>(UnaryOp::Log1p, vec![Complex64::new(1e-12, 0.0)])[0];
    assert!(
        close_complex(l, Complex64::new(1e-12 - 5e-25, 0.0), 1e-15),
        "{l}"
    );
    let big = Complex64::new(1e300, 1e300);
    assert_eq!(
        bin(BinaryOp::Div, vec![big], vec![big]),
        vec![Complex64::new(1.0, 0.0)]
    );
    let r = un::<Complex32, Complex32>(UnaryOp::Recip, vec![Complex32::new(0.0, 2.0)]);
    assert_eq!(r, vec![Complex32::new(0.0, -0.5)]);
    // Integer powers are exact, like NumPy's.
    let i = Complex64::new(1.0, 1.0);
    let zero = Complex64::new(0.0, 0.0);
    let p = bin(
        BinaryOp::Pow,
        vec![i, zero, i, i],
        vec![
            Complex64::new(2.0, 0.0),
            Complex64::new(2.0, 0.0),
            zero,
            Complex64::new(-2.0, 0.0),
        ],
    );
    assert_eq!(
        p[..3],
        [Complex64::new(0.0, 2.0), zero, Complex64::new(1.0, 0.0)]
    );
    assert_eq!(p[3], Complex64::new(0.0, -0.5));
    assert_eq!(
        un::<Complex64, Complex64>(UnaryOp::Sign, vec![zero, Complex64::new(3.0, 4.0)]),
        vec![zero, Complex64::new(0.6, 0.8)]
    );
    assert_eq!(
        un::<Complex32, f32>(UnaryOp::Abs, vec![Complex32::new(3.0, 4.0)]),
        vec![5.0]
    );
    assert_eq!(
        un::<Complex64, f64>(UnaryOp::Imag, vec![Complex64::new(3.0, 4.0)]),
        vec![4.0]
    );
    assert_eq!(un::<f64, f64>(UnaryOp::Imag, vec![3.0]), vec![0.0]);
    assert_eq!(un::<f64, f64>(UnaryOp::Conj, vec![3.0]), vec![3.0]);
}

#[test]
fn complex_maximum_is_lexicographic_like_numpy() {
    let c = |re, im| Complex64::new(re, im);
    let a = vec![c(1.0, 5.0), c(2.0, 0.0), c(f64::NAN, 0.0), c(1.0, 1.0)];
    let b = vec![c(1.0, 6.0), c(1.0, 9.0), c(1.0, 1.0), c(1.0, f64::NAN)];
    let max = bin(BinaryOp::Maximum, a.clone(), b.clone());
    assert_eq!(max[..2], [c(1.0, 6.0), c(2.0, 0.0)]);
    assert!(max[2].re.is_nan() && max[3].im.is_nan());
    let min = bin(BinaryOp::Minimum, a, b);
    assert_eq!(min[..2], [c(1.0, 5.0), c(1.0, 9.0)]);
    assert!(min[2].re.is_nan() && min[3].im.is_nan());
}

#[test]
fn casts_follow_astype() {
    assert_eq!(
        cast_to::<f32, i32>(vec![2.7, -2.7, 1e10, f32::NAN]),
        vec![2, -2, i32::MAX, 0]
    );
    // An integer -1 wraps to 255; a float -1.0 saturates to 0 (Rust `as`; NumPy leaves it undefined).
    assert_eq!(cast_to::<i64, u8>(vec![-1, 300]), vec![255, 44]);
    assert_eq!(
        cast_to::<f32, u8>(vec![-1.0, 300.0, 254.9]),
        vec![0, 255, 254]
    );
    assert_eq!(
        cast_to::<f64, i64>(vec![f64::NAN, -1e300, 1e300]),
        vec![0, i64::MIN, i64::MAX]
    );
    assert_eq!(
        cast_to::<i64, bool>(vec![3, 0, -1]),
        vec![true, false, true]
    );
    assert_eq!(
        cast_to::<f64, bool>(vec![0.0, -0.0, f64::NAN, 0.1]),
        vec![false, false, true, true]
    );
    assert_eq!(cast_to::<bool, f32>(vec![true, false]), vec![1.0, 0.0]);
    assert_eq!(cast_to::<bool, i64>(vec![true, false]), vec![1, 0]);
    assert_eq!(cast_to::<i64, i32>(vec![1 << 32 | 5, -1]), vec![5, -1]);
    assert_eq!(
        cast_to::<Complex32, f32>(vec![Complex32::new(1.5, 2.0)]),
        vec![1.5]
    );
    assert_eq!(
        cast_to::<Complex64, i32>(vec![Complex64::new(-2.5, 9.0)]),
        vec![-2]
    );
    assert_eq!(
        cast_to::<Complex64, bool>(vec![Complex64::new(0.0, 1.0), Complex64::new(0.0, 0.0)]),
        vec![true, false]
    );
    assert_eq!(
        cast_to::<f64, Complex64>(vec![2.5]),
        vec![Complex64::new(2.5, 0.0)]
    );
    assert_eq!(
        cast_to::<Complex64, Complex32>(vec![Complex64::new(0.1, 0.2)]),
        vec![Complex32::new(0.1, 0.2)]
    );
    assert_eq!(
        cast_to::<i64, f32>(vec![(1 << 60) + 1]),
        vec![(1u64 << 60) as f32]
    );
    assert_eq!(cast_to::<i64, f64>(vec![i64::MAX]), vec![i64::MAX as f64]);
    // Half precision: exactly representable values survive a round trip; others round to nearest.
    let xs = vec![0.0f32, -2.5, 65504.0, 6.1035156e-5, 1.0 / 1024.0];
    assert_eq!(cast_to::<f16, f32>(cast_to::<f32, f16>(xs.clone())), xs);
    assert_eq!(
        cast_to::<bf16, f32>(cast_to::<f32, bf16>(vec![1.0f32, -3.0, 1e38])),
        vec![1.0, -3.0, bf16::from_f32(1e38).to_f32()]
    );
    assert_eq!(
        cast_to::<f32, f16>(vec![1e5, 1.0 + 1.0 / 4096.0]),
        vec![f16::INFINITY, f16::ONE]
    );
    assert_eq!(cast_to::<f16, i32>(vec![f16::from_f32(-3.75)]), vec![-3]);
    assert_eq!(
        cast_to::<f16, bf16>(vec![f16::from_f32(1.5)]),
        vec![bf16::from_f32(1.5)]
    );
    assert_eq!(cast_to::<u8, f16>(vec![255]), vec![f16::from_f32(255.0)]);
    // Same-dtype casts copy.
    assert_eq!(cast_to::<i32, i32>(vec![1, 2]), vec![1, 2]);
}

#[test]
fn every_primitive_pair_casts_like_rust_as() {
    macro_rules! row {
        ($s:ty, $vals:expr; $($d:ty),*) => {$(
            let want: Vec<$d> = $vals.iter().map(|&v| v as $d).collect();
            assert_eq!(cast_to::<$s, $d>($vals.clone()), want, "{} -> {}", stringify!($s), stringify!($d));
        )*};
    }
    let f: Vec<f64> = vec![
        0.0,
        -0.0,
        1.5,
        -2.5,
        1e10,
        -1e10,
        3e38,
        1e-40,
        f64::NAN,
        f64::INFINITY,
        255.9,
        -129.0,
    ];
    let f32s: Vec<f32> = f.iter().map(|&v| v as f32).collect();
    let i: Vec<i64> = vec![
        0,
        1,
        -1,
        255,
        256,
        -129,
        i32::MAX as i64 + 1,
        i64::MIN,
        i64::MAX,
        16_777_217,
    ];
    let i32s: Vec<i32> = i.iter().map(|&v| v as i32).collect();
    let u8s: Vec<u8> = vec![0, 1, 127, 128, 255];
    // Compare floats by bits so that NaN counts as equal to NaN.
    let bits32 = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let bits64 = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits32(cast_to::<f64, f32>(f.clone())),
        bits32(f.iter().map(|&v| v as f32).collect())
    );
    assert_eq!(
        bits64(cast_to::<f32, f64>(f32s.clone())),
        bits64(f32s.iter().map(|&v| v as f64).collect())
    );
    row!(f64, f; i32, i64, u8);
    row!(f32, f32s; i32, i64, u8);
    row!(i64, i; f32, f64, i32, u8);
    row!(i32, i32s; f32, f64, i64, u8);
    row!(u8, u8s; f32, f64, i32, i64);
}

#[test]
fn large_views_take_the_parallel_paths() {
    let n = 300 * 200;
    let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 30.0).collect();
    let b: Vec<f32> = (0..n).map(|i| i as f32 * 1e-3).collect();
    let lt = Layout::contiguous([200, 300]).permute(&[1, 0]).unwrap();
    let lc = Layout::contiguous([300, 200]);
    let (sa, sb) = (
        CpuStorage::from_vec(a.clone()),
        CpuStorage::from_vec(b.clone()),
    );
    let got = f32::vec_of(
        binary(BinaryOp::Add, &sa, &lt, &sb, &lc)
            .unwrap()
            .into_host(),
    )
    .unwrap();
    let want: Vec<f32> = gather(&a, &lt).iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(got, want);
    let got = f32::vec_of(unary(UnaryOp::Exp, &sa, &lc).unwrap().into_host()).unwrap();
    for (g, x) in got.iter().zip(&a) {
        assert!(
            close(*g as f64, (*x as f64).exp(), 1, DType::F32),
            "exp({x}) = {g}"
        );
    }
    let HostData::Bool(c) = compare(CompareOp::Gt, &sa, &lt, &sb, &lc)
        .unwrap()
        .into_host()
    else {
        panic!("compare gives bool")
    };
    let cs = CpuStorage::from_vec(c.clone());
    let sel = f32::vec_of(select(&cs, &lc, &sa, &lt, &sb, &lc).unwrap().into_host()).unwrap();
    let want: Vec<f32> = c
        .iter()
        .zip(gather(&a, &lt))
        .zip(&b)
        .map(|((&c, x), &y)| if c { x } else { y })
        .collect();
    assert_eq!(sel, want);
    assert_eq!(
        f32::vec_of(copy(&sa, &lt).unwrap().into_host()).unwrap(),
        gather(&a, &lt)
    );
}

#[test]
fn empty_views_give_empty_results() {
    let l = Layout::contiguous([0, 3]);
    let x = CpuStorage::from_vec(Vec::<f32>::new());
    assert_eq!(unary(UnaryOp::Exp, &x, &l).unwrap().len(), 0);
    assert_eq!(binary(BinaryOp::Add, &x, &l, &x, &l).unwrap().len(), 0);
    assert_eq!(cast(&x, &l, DType::F16).unwrap().len(), 0);
    assert_eq!(copy(&x, &l).unwrap().len(), 0);
}

#[test]
fn error_messages_name_the_op_and_operands() {
    let msg = |r: nabla_core::Result<CpuStorage>| r.unwrap_err().to_string();
    let (f, lf) = vec1(vec![1.0f32, 2.0]);
    let (d, ld) = vec1(vec![1.0f64, 2.0]);
    let (i, li) = vec1(vec![1i64, 2]);
    let (h, lh) = vec1(vec![f16::ONE, f16::ONE]);
    let (c, lc) = vec1(vec![Complex32::new(1.0, 0.0); 2]);
    let (b, lb) = vec1(vec![true, false]);
    assert_eq!(
        msg(unary(UnaryOp::Exp, &i, &li)),
        "exp: not supported for dtype int64"
    );
    assert_eq!(
        msg(unary(UnaryOp::Exp, &h, &lh)),
        "exp: not supported for dtype float16 (half-precision types are for storage; cast to float32 first)"
    );
    assert_eq!(
        msg(unary(UnaryOp::Not, &f, &lf)),
        "logical_not: not supported for dtype float32"
    );
    assert_eq!(
        msg(unary(UnaryOp::Erf, &c, &lc)),
        "erf: not supported for dtype complex64"
    );
    assert_eq!(
        msg(unary(UnaryOp::Neg, &b, &lb)),
        "neg: not supported for dtype bool"
    );
    assert_eq!(
        msg(binary(BinaryOp::Add, &f, &lf, &d, &ld)),
        "add: dtype mismatch between float32 and float64 (cast one operand with .cast(...))"
    );
    let l23 = Layout::contiguous([2, 3]);
    let (f6, _) = vec1(vec![0.0f32; 6]);
    assert_eq!(
        msg(binary(
            BinaryOp::Mul,
            &f6,
            &l23,
            &f6,
            &Layout::contiguous([3, 2])
        )),
        "mul: shape mismatch between [2, 3] and [3, 2]"
    );
    assert_eq!(
        msg(binary(BinaryOp::And, &f, &lf, &f, &lf)),
        "logical_and: not supported for dtype float32"
    );
    assert_eq!(
        msg(binary(BinaryOp::Atan2, &i, &li, &i, &li)),
        "atan2: not supported for dtype int64"
    );
    assert_eq!(
        msg(binary(BinaryOp::Sub, &b, &lb, &b, &lb)),
        "sub: not supported for dtype bool"
    );
    assert_eq!(
        msg(binary(BinaryOp::Rem, &c, &lc, &c, &lc)),
        "rem: not supported for dtype complex64"
    );
    assert_eq!(
        msg(binary(BinaryOp::Add, &h, &lh, &h, &lh))
            .split(" (")
            .next(),
        Some("add: not supported for dtype float16")
    );
    assert_eq!(
        msg(compare(CompareOp::Lt, &c, &lc, &c, &lc)),
        "lt: not supported for dtype complex64"
    );
    assert_eq!(
        msg(compare(CompareOp::Eq, &f, &lf, &i, &li)),
        "eq: dtype mismatch between float32 and int64 (cast one operand with .cast(...))"
    );
    assert_eq!(
        msg(select(&f, &lf, &f, &lf, &f, &lf)),
        "where: not supported for dtype float32 (the condition must be bool; compare or cast it first)"
    );
    assert_eq!(
        msg(select(&b, &lb, &f, &lf, &d, &ld)),
        "where: dtype mismatch between float32 and float64 (cast one operand with .cast(...))"
    );
    let (b6, _) = vec1(vec![true; 6]);
    assert_eq!(
        msg(select(&b6, &l23, &f, &lf, &f, &lf)),
        "where: shape mismatch between [2, 3] and [2] (the condition and the branches must have one shape)"
    );
    assert_eq!(
        msg(select(&b, &lb, &f6, &l23, &f, &lf)),
        "where: shape mismatch between [2, 3] and [2]"
    );
    // Half types can still be copied, selected and cast.
    assert_eq!(
        select(&b, &lb, &h, &lh, &h, &lh).unwrap().dtype(),
        DType::F16
    );
    assert_eq!(cast(&h, &lh, DType::BF16).unwrap().dtype(), DType::BF16);
}
