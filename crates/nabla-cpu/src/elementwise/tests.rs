//! Property tests of every elementwise kernel against plain references computed element by element with
//! `Layout::offsets()` and `std` / `num_complex`, over random shapes and views (contiguous with an
//! offset, transposed, flipped, strided, negative-step, broadcast, empty).

use super::{binary, cast, compare, copy, select, unary};
use crate::CpuStorage;
use nabla_core::{
    BinaryOp, CompareOp, DType, Element, HostData, Layout, Scalar, UnaryOp, dispatch_dtype,
    half::{bf16, f16},
    num_complex::{Complex32, Complex64},
};
use proptest::prelude::*;

/// A small deterministic generator for test data.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Mostly values in `[-4, 4]`, with special values mixed in when `specials` is set.
    fn real(&mut self, specials: bool) -> f64 {
        const SPECIAL: [f64; 12] = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-310,
            1e300,
            -1e300,
            2.5,
            -0.5,
            100.0,
            -100.0,
        ];
        let r = self.next();
        if specials && r.is_multiple_of(5) {
            SPECIAL[(r >> 8) as usize % SPECIAL.len()]
        } else if r % 7 == 1 {
            ((r >> 8) % 9) as f64 - 4.0
        } else {
            8.0 * self.unit() - 4.0
        }
    }

    /// Mostly small integers, with the extremes mixed in.
    fn int(&mut self) -> i64 {
        const SPECIAL: [i64; 6] = [i64::MIN, i64::MAX, i32::MIN as i64, i32::MAX as i64, 255, 0];
        let r = self.next();
        if r.is_multiple_of(6) {
            SPECIAL[(r >> 8) as usize % SPECIAL.len()]
        } else {
            ((r >> 8) % 21) as i64 - 10
        }
    }
}

/// A buffer of `n` elements of `dtype` drawn from `seed`.
pub(super) fn host_of(dtype: DType, n: usize, seed: u64, specials: bool) -> HostData {
    let mut rng = Rng(seed);
    let complex = |r: &mut Rng| {
        let pick = |r: &mut Rng| {
            if r.next().is_multiple_of(9) {
                0.0
            } else {
                r.real(false)
            }
        };
        Complex64::new(pick(r), pick(r))
    };
    match dtype {
        DType::F16 => HostData::F16((0..n).map(|_| f16::from_f64(rng.real(specials))).collect()),
        DType::BF16 => HostData::BF16((0..n).map(|_| bf16::from_f64(rng.real(specials))).collect()),
        DType::F32 => HostData::F32((0..n).map(|_| rng.real(specials) as f32).collect()),
        DType::F64 => HostData::F64((0..n).map(|_| rng.real(specials)).collect()),
        DType::C64 => HostData::C64(
            (0..n)
                .map(|_| {
                    let z = complex(&mut rng);
                    Complex32::new(z.re as f32, z.im as f32)
                })
                .collect(),
        ),
        DType::C128 => HostData::C128((0..n).map(|_| complex(&mut rng)).collect()),
        DType::Bool => HostData::Bool((0..n).map(|_| rng.next().is_multiple_of(2)).collect()),
        // Integers wrap from the i64 draws, so every width sees its extremes' neighbourhoods.
        int => nabla_core::dispatch_dtype!(int, T, {
            int => T::into_host((0..n).map(|_| T::from_scalar(Scalar::I64(rng.int()))).collect()),
            _ => unreachable!("every other dtype has its arm"),
        }),
    }
}

/// A view of `shape` built in one of several ways, and the buffer length it needs.
pub(super) fn make_view(shape: &[usize], kind: u8, seed: u64) -> (Layout, usize) {
    let bit = |ax: usize| (seed >> (ax % 64)) & 1 == 1;
    let rank = shape.len();
    let view = match kind % 6 {
        // Contiguous, at an offset.
        0 => {
            let off = (seed % 3) as usize;
            let c = Layout::contiguous(shape.to_vec());
            let l = Layout::from_parts(shape.to_vec(), c.strides().to_vec(), off).unwrap();
            return (l, shape.iter().product::<usize>() + off);
        }
        // Transposed: the buffer holds the reversed shape.
        1 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let perm: Vec<usize> = (0..rank).rev().collect();
            Layout::contiguous(rev).permute(&perm).unwrap()
        }
        // Flipped on some axes.
        2 => {
            let mut l = Layout::contiguous(shape.to_vec());
            for ax in 0..rank {
                if bit(ax) {
                    l = l.flip(ax).unwrap();
                }
            }
            l
        }
        // Every second element along each axis, forward or backward.
        3 | 4 => {
            let base: Vec<usize> = shape.iter().map(|&d| 2 * d + 1).collect();
            let mut l = Layout::contiguous(base);
            for (ax, &d) in shape.iter().enumerate() {
                l = if kind % 6 == 4 && bit(ax) {
                    l.slice(ax, 2 * d, d, -2).unwrap()
                } else {
                    l.slice(ax, (seed >> 40) as usize % 2, d, 2).unwrap()
                };
            }
            l
        }
        // Broadcast from size 1 along some axes.
        _ => {
            let small: Vec<usize> = shape
                .iter()
                .enumerate()
                .map(|(ax, &d)| if bit(ax) { 1 } else { d })
                .collect();
            Layout::contiguous(small).broadcast_to(shape).unwrap()
        }
    };
    let len = if view.numel() == 0 {
        0
    } else {
        view.max_offset() as usize + 1
    };
    (view, len)
}

/// The elements of a view in row-major order.
pub(super) fn gather<T: Copy>(v: &[T], l: &Layout) -> Vec<T> {
    l.offsets().map(|o| v[o]).collect()
}

/// Units in the last place between two values of `dtype` (`f32` or `f64`) given as `f64`.
fn ulps(a: f64, b: f64, dtype: DType) -> u64 {
    let key = |v: f64| -> i128 {
        let (bits, sign) = if dtype == DType::F32 {
            ((v as f32).to_bits() as i128, 1i128 << 31)
        } else {
            (v.to_bits() as i128, 1i128 << 63)
        };
        if bits < sign { bits } else { sign - bits }
    };
    (key(a) - key(b)).unsigned_abs() as u64
}

/// `true` when `got` matches `want` within `tol` ulp (NaN matches NaN, the zeros match each other).
pub(super) fn close(got: f64, want: f64, tol: u64, dtype: DType) -> bool {
    let want = if dtype == DType::F32 {
        want as f32 as f64
    } else {
        want
    };
    (got.is_nan() && want.is_nan())
        || got == want
        || (got.is_finite() && want.is_finite() && ulps(got, want, dtype) <= tol)
}

/// `true` when each part of `got` equals that of `want` (NaN matching NaN), or `got` is within a relative
/// distance `tol` of `want`.
pub(super) fn close_complex(got: Complex64, want: Complex64, tol: f64) -> bool {
    let part = |g: f64, w: f64| (g.is_nan() && w.is_nan()) || g == w;
    (part(got.re, want.re) && part(got.im, want.im)) || (got - want).norm() <= tol * want.norm()
}

/// The plain reference of a real unary op, in `f64`.
fn ref_real(op: UnaryOp, x: f64) -> f64 {
    use UnaryOp as U;
    match op {
        U::Neg => -x,
        U::Abs => x.abs(),
        U::Sign if x.is_nan() => x,
        U::Sign => (x > 0.0) as i32 as f64 - ((x < 0.0) as i32 as f64),
        U::Recip => 1.0 / x,
        U::Square => x * x,
        U::Sqrt => x.sqrt(),
        U::Rsqrt => 1.0 / x.sqrt(),
        U::Exp => x.exp(),
        U::Expm1 => x.exp_m1(),
        U::Log => x.ln(),
        U::Log1p => x.ln_1p(),
        U::Sin => x.sin(),
        U::Cos => x.cos(),
        U::Tan => x.tan(),
        U::Asin => x.asin(),
        U::Acos => x.acos(),
        U::Atan => x.atan(),
        U::Sinh => x.sinh(),
        U::Asinh => x.asinh(),
        U::Acosh => x.acosh(),
        U::Atanh => x.atanh(),
        U::Cosh => x.cosh(),
        U::Tanh => x.tanh(),
        U::Sigmoid if x >= 0.0 => 1.0 / (1.0 + (-x).exp()),
        U::Sigmoid => x.exp() / (1.0 + x.exp()),
        U::Erf => super::erf::erf_f64(x),
        U::Floor => x.floor(),
        U::Ceil => x.ceil(),
        U::Round => x.round_ties_even(),
        U::Trunc => x.trunc(),
        U::Conj | U::Real => x,
        U::Imag => 0.0,
        U::IsNan => x.is_nan() as u8 as f64,
        U::IsFinite => x.is_finite() as u8 as f64,
        U::SignBit => x.is_sign_negative() as u8 as f64,
        U::Not | U::BitNot => f64::NAN,
    }
}

/// The plain reference of a complex unary op, in `Complex64` (real results have a zero imaginary part).
fn ref_complex(op: UnaryOp, z: Complex64) -> Complex64 {
    use UnaryOp as U;
    let one = Complex64::new(1.0, 0.0);
    let real = |v: f64| Complex64::new(v, 0.0);
    match op {
        U::Neg => -z,
        U::Abs => real(z.norm()),
        U::Sign if z.norm() == 0.0 => real(0.0),
        U::Sign => z / z.norm(),
        U::Recip | U::Rsqrt if z.norm() == 0.0 => Complex64::new(f64::INFINITY, f64::NAN),
        U::Recip => one / z,
        U::Square => z * z,
        U::Sqrt => z.sqrt(),
        U::Rsqrt => one / z.sqrt(),
        U::Exp => z.exp(),
        // e^x cos y - 1 = expm1(x) - 2 e^x sin^2(y / 2), free of cancellation near 0.
        U::Expm1 => Complex64::new(
            z.re.exp_m1() - 2.0 * z.re.exp() * (z.im / 2.0).sin().powi(2),
            z.re.exp() * z.im.sin(),
        ),
        U::Log => z.ln(),
        // |1 + z|^2 = (1 + x)^2 (1 + (y / (1 + x))^2), free of cancellation near 0.
        U::Log1p if z.re > -1.0 => Complex64::new(
            z.re.ln_1p() + 0.5 * (z.im / (1.0 + z.re)).powi(2).ln_1p(),
            z.im.atan2(1.0 + z.re),
        ),
        U::Log1p => (one + z).ln(),
        U::Sin => z.sin(),
        U::Cos => z.cos(),
        U::Tan => z.tan(),
        U::Sinh => z.sinh(),
        U::Cosh => z.cosh(),
        U::Tanh => z.tanh(),
        U::Asin => z.asin(),
        U::Acos => z.acos(),
        U::Atan => z.atan(),
        U::Asinh => z.asinh(),
        U::Acosh => z.acosh(),
        U::Atanh => z.atanh(),
        U::Sigmoid => one / (one + (-z).exp()),
        U::Conj => z.conj(),
        U::Real => real(z.re),
        U::Imag => real(z.im),
        U::IsNan => real((z.re.is_nan() || z.im.is_nan()) as u8 as f64),
        U::IsFinite => real((z.re.is_finite() && z.im.is_finite()) as u8 as f64),
        _ => real(f64::NAN),
    }
}

/// The plain reference of an integer unary op, exact in `i128` (the caller wraps to the dtype).
fn ref_int(op: UnaryOp, x: i128) -> i128 {
    use UnaryOp as U;
    match op {
        U::Neg => -x,
        U::Abs => x.abs(),
        U::Sign => x.signum(),
        U::Square => x * x,
        U::Imag | U::IsNan => 0,
        U::IsFinite => 1,
        U::SignBit => (x < 0) as i128,
        U::BitNot => !x,
        _ => x,
    }
}

/// Every element of a host buffer as a complex number (reals have a zero imaginary part).
pub(super) fn as_complex(h: &HostData) -> Vec<Complex64> {
    dispatch_dtype!(h.dtype(), T => {
        T::slice_of(h).unwrap().iter().map(|v| v.to_scalar().to_c128()).collect()
    })
}

/// Every element of a host buffer as an exact integer (integers and bool only).
fn as_i128(h: &HostData) -> Vec<i128> {
    dispatch_dtype!(h.dtype(), T => {
        T::slice_of(h).unwrap().iter().map(|v| v.to_scalar().to_i64() as i128).collect()
    })
}

/// Wraps an exact integer into `dtype` the way the kernels do (two's complement).
fn wrap(v: i128, dtype: DType) -> i128 {
    match dtype {
        DType::I32 => v as i32 as i128,
        DType::I64 => v as i64 as i128,
        DType::U8 => v as u8 as i128,
        _ => v,
    }
}

const TRANSCENDENTAL: [UnaryOp; 19] = [
    UnaryOp::Rsqrt,
    UnaryOp::Exp,
    UnaryOp::Expm1,
    UnaryOp::Log,
    UnaryOp::Log1p,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Tan,
    UnaryOp::Asin,
    UnaryOp::Acos,
    UnaryOp::Atan,
    UnaryOp::Sinh,
    UnaryOp::Cosh,
    UnaryOp::Tanh,
    UnaryOp::Asinh,
    UnaryOp::Acosh,
    UnaryOp::Atanh,
    UnaryOp::Sigmoid,
    UnaryOp::Erf,
];

/// Checks every unary op on `dtype` over one view against the references.
fn check_unary(dtype: DType, l: &Layout, len: usize, seed: u64) -> Result<(), TestCaseError> {
    let host = host_of(dtype, len, seed, true);
    let x = CpuStorage::new(host.clone());
    for op in UnaryOp::ALL {
        let Some(out_dtype) = op.output_dtype(dtype) else {
            let err = unary(op, &x, l).unwrap_err().to_string();
            prop_assert!(
                err.starts_with(&format!("{}: not supported for dtype", op.name())),
                "{err}"
            );
            continue;
        };
        let got = unary(op, &x, l).unwrap().into_host();
        prop_assert_eq!(got.dtype(), out_dtype, "{:?} on {}", op, dtype);
        prop_assert_eq!(got.len(), l.numel());
        let input = gather(&as_complex(&host), l);
        if dtype.is_float() {
            let tol = if TRANSCENDENTAL.contains(&op) { 4 } else { 0 };
            for (g, x) in got.to_f64_vec().iter().zip(&input) {
                let want = ref_real(op, x.re);
                prop_assert!(
                    close(*g, want, tol, out_dtype),
                    "{:?}({}) = {} want {} ({})",
                    op,
                    x.re,
                    g,
                    want,
                    dtype
                );
            }
        } else if dtype.is_complex() {
            let tol = if dtype == DType::C64 { 2e-5 } else { 1e-12 };
            for (g, z) in as_complex(&got).iter().zip(&input) {
                let want = ref_complex(op, *z);
                // On a branch cut (a part exactly zero) the principal value follows the sign of
                // that zero (C99, NumPy), which num_complex's reference does not.
                let inverse = [
                    UnaryOp::Asin,
                    UnaryOp::Acos,
                    UnaryOp::Atan,
                    UnaryOp::Asinh,
                    UnaryOp::Acosh,
                    UnaryOp::Atanh,
                ];
                if inverse.contains(&op) && (z.re == 0.0 || z.im == 0.0) {
                    continue;
                }
                // Near a pole the result is ill-conditioned; single precision cannot match there.
                if dtype == DType::C64
                    && matches!(op, UnaryOp::Tan | UnaryOp::Tanh | UnaryOp::Sigmoid)
                    && want.norm() > 10.0
                {
                    continue;
                }
                // num_complex's tangents divide by `cos 2y + cosh 2x`, which cancels near a pole:
                // the reference itself is off by about |tan|² rounding errors there (at
                // tanh(-1.5736855314229024i) it is off by 3e-12 where the kernel is exact).
                let near_pole = matches!(op, UnaryOp::Tan | UnaryOp::Tanh | UnaryOp::Sigmoid);
                let tol = if near_pole {
                    tol * want.norm_sqr().max(1.0)
                } else {
                    tol
                };
                prop_assert!(
                    close_complex(*g, want, tol),
                    "{:?}({}) = {} want {} ({})",
                    op,
                    z,
                    g,
                    want,
                    dtype
                );
            }
        } else if dtype.is_int() {
            let input = gather(&as_i128(&host), l);
            for (g, x) in as_i128(&got).iter().zip(&input) {
                let want = wrap(ref_int(op, *x), out_dtype);
                prop_assert_eq!(*g, want, "{:?}({}) on {}", op, x, dtype);
            }
        } else {
            let input = gather(&as_i128(&host), l);
            for (g, x) in as_i128(&got).iter().zip(&input) {
                prop_assert_eq!(*g, 1 - x, "not({})", x);
            }
        }
    }
    Ok(())
}

/// The plain reference of a real binary op, in `f64`.
fn ref_real_binary(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        // NumPy's mod through Euclidean remainder: for b > 0 they agree; for b < 0 mirror.
        BinaryOp::Rem if b > 0.0 => a.rem_euclid(b),
        BinaryOp::Rem if b < 0.0 => -(-a).rem_euclid(-b),
        BinaryOp::Rem => f64::NAN,
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Maximum | BinaryOp::Minimum if a.is_nan() || b.is_nan() => f64::NAN,
        BinaryOp::Maximum => a.max(b),
        BinaryOp::Minimum => a.min(b),
        BinaryOp::Atan2 => a.atan2(b),
        BinaryOp::NextAfter if a.is_nan() || b.is_nan() => f64::NAN,
        BinaryOp::NextAfter if a == b => b,
        BinaryOp::NextAfter if a < b => a.next_up(),
        BinaryOp::NextAfter => a.next_down(),
        _ => f64::NAN,
    }
}

/// The plain reference of an integer binary op (exact; the caller wraps).
fn ref_int_binary(op: BinaryOp, a: i128, b: i128, dtype: DType) -> i128 {
    let width = (dtype.size_in_bytes() * 8) as i128;
    match op {
        BinaryOp::BitAnd => a & b,
        BinaryOp::BitOr => a | b,
        BinaryOp::BitXor => a ^ b,
        BinaryOp::ShiftLeft if b < 0 || b >= width => 0,
        BinaryOp::ShiftLeft => a << b,
        BinaryOp::ShiftRight if b < 0 || b >= width => -((a < 0) as i128),
        BinaryOp::ShiftRight => a >> b,
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div | BinaryOp::Rem if b == 0 => 0,
        BinaryOp::Div => (a - ((a % b) + b) % b) / b,
        BinaryOp::Rem => ((a % b) + b) % b,
        BinaryOp::Pow if b < 0 => match a {
            1 => 1,
            -1 => 1 - 2 * (b & 1),
            _ => 0,
        },
        BinaryOp::Pow => {
            // std's wrapping_pow on 64 bits, split so that exponents beyond u32 work too.
            let (base, e) = (a as i64, b as u64);
            let high = base
                .wrapping_pow((e >> 32) as u32)
                .wrapping_pow(1 << 31)
                .wrapping_pow(2);
            high.wrapping_mul(base.wrapping_pow(e as u32)) as i128
        }
        BinaryOp::Maximum => a.max(b),
        BinaryOp::Minimum => a.min(b),
        _ => 0,
    }
}

/// The plain reference of a complex binary op.
fn ref_complex_binary(op: BinaryOp, a: Complex64, b: Complex64) -> Complex64 {
    let lex_ge = (a.re, a.im) >= (b.re, b.im);
    let zero = Complex64::new(0.0, 0.0);
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div if b == zero => Complex64::new(a.re / 0.0, a.im / 0.0),
        BinaryOp::Div => a / b,
        BinaryOp::Pow if b == zero => Complex64::new(1.0, 0.0),
        BinaryOp::Pow if a == zero && b.re > 0.0 && b.im == 0.0 => zero,
        BinaryOp::Pow if a == zero => Complex64::new(f64::NAN, f64::NAN),
        BinaryOp::Pow => a.powc(b),
        BinaryOp::Maximum => {
            if lex_ge {
                a
            } else {
                b
            }
        }
        BinaryOp::Minimum => {
            if lex_ge && a != b {
                b
            } else {
                a
            }
        }
        _ => Complex64::new(f64::NAN, 0.0),
    }
}

/// Checks every binary op and comparison on `dtype` over two views of one shape.
fn check_binary(
    dtype: DType,
    la: &Layout,
    lena: usize,
    lb: &Layout,
    lenb: usize,
    seed: u64,
) -> Result<(), TestCaseError> {
    let (ha, hb) = (
        host_of(dtype, lena, seed, true),
        host_of(dtype, lenb, seed ^ 0x55, true),
    );
    let (a, b) = (CpuStorage::new(ha.clone()), CpuStorage::new(hb.clone()));
    let (ca, cb) = (gather(&as_complex(&ha), la), gather(&as_complex(&hb), lb));
    for op in BinaryOp::ALL {
        if !op.supports(dtype) {
            let err = binary(op, &a, la, &b, lb).unwrap_err().to_string();
            prop_assert!(
                err.starts_with(&format!("{}: not supported for dtype {dtype}", op.name())),
                "{err}"
            );
            continue;
        }
        let got = binary(op, &a, la, &b, lb).unwrap().into_host();
        prop_assert_eq!(got.dtype(), dtype);
        if dtype.is_float() {
            let tol = if matches!(op, BinaryOp::Pow | BinaryOp::Atan2) {
                2
            } else {
                0
            };
            for ((g, x), y) in got.to_f64_vec().iter().zip(&ca).zip(&cb) {
                let want = match op {
                    // The neighbour of an f32 is an f32 step away, not an f64 one.
                    BinaryOp::NextAfter if dtype == DType::F32 => {
                        let (a, b) = (x.re as f32, y.re as f32);
                        (if a.is_nan() || b.is_nan() {
                            f32::NAN
                        } else if a == b {
                            b
                        } else if a < b {
                            a.next_up()
                        } else {
                            a.next_down()
                        }) as f64
                    }
                    _ => ref_real_binary(op, x.re, y.re),
                };
                prop_assert!(
                    close(*g, want, tol, dtype),
                    "{:?}({}, {}) = {} want {} ({})",
                    op,
                    x.re,
                    y.re,
                    g,
                    want,
                    dtype
                );
            }
        } else if dtype.is_complex() {
            let tol = if dtype == DType::C64 { 1e-5 } else { 1e-12 };
            for ((g, x), y) in as_complex(&got).iter().zip(&ca).zip(&cb) {
                let want = ref_complex_binary(op, *x, *y);
                prop_assert!(
                    close_complex(*g, want, tol),
                    "{:?}({}, {}) = {} want {} ({})",
                    op,
                    x,
                    y,
                    g,
                    want,
                    dtype
                );
            }
        } else {
            let (ia, ib) = (gather(&as_i128(&ha), la), gather(&as_i128(&hb), lb));
            for ((g, x), y) in as_i128(&got).iter().zip(&ia).zip(&ib) {
                let want = if dtype.is_bool() {
                    match op {
                        BinaryOp::Add | BinaryOp::Maximum | BinaryOp::Or | BinaryOp::BitOr => x | y,
                        BinaryOp::Mul | BinaryOp::Minimum | BinaryOp::And | BinaryOp::BitAnd => {
                            x & y
                        }
                        _ => x ^ y,
                    }
                } else {
                    wrap(ref_int_binary(op, *x, *y, dtype), dtype)
                };
                prop_assert_eq!(*g, want, "{:?}({}, {}) on {}", op, x, y, dtype);
            }
        }
    }
    for op in CompareOp::ALL {
        if !op.supports(dtype) {
            prop_assert!(compare(op, &a, la, &b, lb).is_err());
            continue;
        }
        let HostData::Bool(got) = compare(op, &a, la, &b, lb).unwrap().into_host() else {
            return Err(TestCaseError::fail("compare must give bool"));
        };
        fn reference<T: PartialOrd>(op: CompareOp, x: T, y: T) -> bool {
            match op {
                CompareOp::Eq => x == y,
                CompareOp::Ne => x != y,
                CompareOp::Lt => x < y,
                CompareOp::Le => x <= y,
                CompareOp::Gt => x > y,
                CompareOp::Ge => x >= y,
            }
        }
        if dtype.is_complex() {
            for ((g, x), y) in got.iter().zip(&ca).zip(&cb) {
                prop_assert_eq!(*g, if op == CompareOp::Eq { x == y } else { x != y });
            }
        } else if dtype.is_float() {
            for ((g, x), y) in got.iter().zip(&ca).zip(&cb) {
                prop_assert_eq!(
                    *g,
                    reference(op, x.re, y.re),
                    "{:?}({}, {})",
                    op,
                    x.re,
                    y.re
                );
            }
        } else {
            let (ia, ib) = (gather(&as_i128(&ha), la), gather(&as_i128(&hb), lb));
            for ((g, x), y) in got.iter().zip(&ia).zip(&ib) {
                prop_assert_eq!(
                    *g,
                    reference(op, x, y),
                    "{:?}({}, {}) on {}",
                    op,
                    x,
                    y,
                    dtype
                );
            }
        }
    }
    Ok(())
}

fn arb_case() -> impl Strategy<Value = (Vec<usize>, u8, u8, u8, u64)> {
    (
        prop::collection::vec(0usize..5, 0..=4),
        0u8..6,
        0u8..6,
        0u8..6,
        any::<u64>(),
    )
}

const COMPUTABLE: [DType; 8] = [
    DType::F32,
    DType::F64,
    DType::C64,
    DType::C128,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::Bool,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn unary_matches_reference((shape, k, _, _, seed) in arb_case()) {
        let (l, len) = make_view(&shape, k, seed);
        for dtype in COMPUTABLE {
            check_unary(dtype, &l, len, seed)?;
        }
    }

    #[test]
    fn binary_and_compare_match_reference((shape, ka, kb, _, seed) in arb_case()) {
        let (la, lena) = make_view(&shape, ka, seed);
        let (lb, lenb) = make_view(&shape, kb, seed.rotate_left(17));
        for dtype in COMPUTABLE {
            check_binary(dtype, &la, lena, &lb, lenb, seed)?;
        }
    }

    #[test]
    fn copy_select_and_cast_match_reference((shape, kc, kt, kf, seed) in arb_case()) {
        let (lc, lenc) = make_view(&shape, kc, seed);
        let (lt, lent) = make_view(&shape, kt, seed.rotate_left(7));
        let (lf, lenf) = make_view(&shape, kf, seed.rotate_left(29));
        let HostData::Bool(cond) = host_of(DType::Bool, lenc, seed, false) else { unreachable!() };
        let c = CpuStorage::from_vec(cond.clone());
        let cond = gather(&cond, &lc);
        for dtype in DType::ALL {
            let (ht, hf) = (host_of(dtype, lent, seed, true), host_of(dtype, lenf, !seed, true));
            let (t, f) = (CpuStorage::new(ht.clone()), CpuStorage::new(hf.clone()));
            dispatch_dtype!(dtype, T => {
                let (vt, vf) = (T::slice_of(&ht).unwrap(), T::slice_of(&hf).unwrap());
                let copied = copy(&t, &lt).unwrap().into_host();
                prop_assert_eq!(format!("{:?}", T::slice_of(&copied).unwrap()), format!("{:?}", gather(vt, &lt)));
                let chosen = select(&c, &lc, &t, &lt, &f, &lf).unwrap().into_host();
                let want: Vec<T> = cond.iter().zip(gather(vt, &lt)).zip(gather(vf, &lf))
                    .map(|((&c, x), y)| if c { x } else { y }).collect();
                // Compare bit patterns so that NaN payloads count as equal.
                prop_assert_eq!(format!("{:?}", T::slice_of(&chosen).unwrap()), format!("{want:?}"));
                for to in DType::ALL {
                    let out = cast(&t, &lt, to).unwrap().into_host();
                    prop_assert_eq!(out.dtype(), to);
                    let want = gather(vt, &lt);
                    dispatch_dtype!(to, D => {
                        let got = D::slice_of(&out).unwrap();
                        for (g, x) in got.iter().zip(&want) {
                            let w = <D as nabla_core::CastFrom>::cast_from(x.to_scalar());
                            prop_assert!(format!("{g:?}") == format!("{w:?}"), "{:?} -> {}: {:?} vs {:?}", x, to, g, w);
                        }
                    });
                }
            });
        }
    }
}
