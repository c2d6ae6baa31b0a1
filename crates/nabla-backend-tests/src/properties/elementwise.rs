//! Elementwise families against `std`: unary math, binary ops with broadcasting, comparisons, `where_`
//! and casts, each on contiguous and strided (permuted, flipped, stepped, broadcast) inputs.

use super::support::*;
use nabla_core::{BinaryOp, CompareOp, DType, Shape, UnaryOp};

use proptest::prelude::*;

/// Maps `x` in `[-3, 3]` into the domain where `op` is finite and well conditioned.
fn domain(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Log => x.abs() + 0.1,
        UnaryOp::Log1p => x.abs() * 0.3 - 0.9,
        UnaryOp::Asin | UnaryOp::Acos | UnaryOp::Atanh => x / 3.1,
        UnaryOp::Acosh => x.abs() + 1.1,
        UnaryOp::Tan => x * 0.45,
        UnaryOp::Recip if x >= 0.0 => x + 0.25,
        UnaryOp::Recip => x - 0.25,
        _ => x,
    }
}

/// The error function by its Maclaurin series (accurate to ~1e-13 on `[-3, 3]`).
fn erf(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x * x / n as f64;
        let add = term / (2 * n + 1) as f64;
        sum += add;
        if add.abs() < 1e-17 {
            break;
        }
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

/// Reference value of a real unary op on a value of `dtype` (bool results as 0/1).
fn unary_ref(op: UnaryOp, x: f64, dtype: DType) -> f64 {
    use UnaryOp::*;
    match op {
        Neg => -x,
        Abs => x.abs(),
        Sign => {
            if x == 0.0 {
                0.0
            } else {
                x.signum()
            }
        }
        Recip => 1.0 / x,
        Square => x * x,
        Sqrt => x.sqrt(),
        Rsqrt => 1.0 / x.sqrt(),
        Exp => x.exp(),
        Expm1 => x.exp_m1(),
        Log => x.ln(),
        Log1p => x.ln_1p(),
        Sin => x.sin(),
        Cos => x.cos(),
        Tan => x.tan(),
        Asin => x.asin(),
        Acos => x.acos(),
        Atan => x.atan(),
        Sinh => x.sinh(),
        Asinh => x.asinh(),
        Acosh => x.acosh(),
        Atanh => x.atanh(),
        Cosh => x.cosh(),
        Tanh => x.tanh(),
        Sigmoid => 1.0 / (1.0 + (-x).exp()),
        Erf => erf(x),
        Floor => x.floor(),
        Ceil => x.ceil(),
        Round => x.round_ties_even(),
        Trunc => x.trunc(),
        Conj | Real => x,
        Imag => 0.0,
        IsNan => x.is_nan() as u8 as f64,
        IsFinite => x.is_finite() as u8 as f64,
        Not => (x == 0.0) as u8 as f64,
        SignBit => x.is_sign_negative() as u8 as f64,
        BitNot if dtype.is_bool() => (x == 0.0) as u8 as f64,
        // Two's complement: !x = -x - 1 (wrapped to the dtype by `round_to`).
        BitNot => -x - 1.0,
    }
}

/// Checks every unary op that applies to `dtype` on one input, against the reference and against the
/// same op on a contiguous copy.
fn check_unary<B: Backend>(cx: &Suite<B>, x: &Input, dtype: DType, rtol: f64, atol: f64) {
    if !cx.has(&[dtype]) {
        return;
    }
    let (rtol, atol) = cx.tol(dtype, rtol, atol);
    for op in UnaryOp::ALL {
        let Some(out_dtype) = op.output_dtype(dtype) else {
            continue;
        };
        let xi = x.map(|v| domain(op, v));
        let t = xi.tensor(cx, dtype);
        let got = t
            .unary(op)
            .unwrap_or_else(|e| panic!("{op:?} on {:?}: {e}", xi.kind));
        assert_eq!(got.dtype(), out_dtype);
        assert_shape(&got, &xi.shape, op.name());
        let want: Vec<f64> = xi
            .values_as(dtype)
            .iter()
            .map(|&v| round_to(out_dtype, unary_ref(op, v, dtype)))
            .collect();
        let what = format!("{} {dtype} {:?}", op.name(), xi.kind);
        assert_close(&read(&got), &want, rtol, atol, &what);
        let dense = t
            .contiguous()
            .and_then(|c| c.unary(op))
            .expect("contiguous");
        assert_close(
            &read(&got),
            &read(&dense),
            rtol,
            atol,
            &format!("{what} vs contiguous"),
        );
    }
}

/// NumPy's `%` for floats: the remainder has the sign of the divisor.
fn py_mod(a: f64, b: f64) -> f64 {
    let m = a % b;
    if m != 0.0 && ((m < 0.0) != (b < 0.0)) {
        m + b
    } else {
        m
    }
}

/// Reference of a binary op on real or integer values, per the `BinaryOp` contract.
fn binary_ref(op: BinaryOp, a: f64, b: f64, dtype: DType) -> f64 {
    use BinaryOp::*;
    let int = dtype.is_int();
    match op {
        Add if dtype.is_bool() => ((a != 0.0) || (b != 0.0)) as u8 as f64,
        Mul if dtype.is_bool() => ((a != 0.0) && (b != 0.0)) as u8 as f64,
        Add => a + b,
        Sub => a - b,
        Mul => a * b,
        Div if int && b == 0.0 => 0.0,
        Div if int => (a / b).floor(),
        Div => a / b,
        Rem if int && b == 0.0 => 0.0,
        Rem if int => a - (a / b).floor() * b,
        Rem => py_mod(a, b),
        Pow if int && b < 0.0 => match a as i64 {
            1 => 1.0,
            -1 if (b as i64) % 2 == 0 => 1.0,
            -1 => -1.0,
            _ => 0.0,
        },
        Pow => a.powf(b),
        Maximum => a.max(b),
        Minimum => a.min(b),
        Atan2 => a.atan2(b),
        And => ((a != 0.0) && (b != 0.0)) as u8 as f64,
        Or => ((a != 0.0) || (b != 0.0)) as u8 as f64,
        Xor => ((a != 0.0) != (b != 0.0)) as u8 as f64,
        BitAnd if dtype.is_bool() => binary_ref(And, a, b, dtype),
        BitOr if dtype.is_bool() => binary_ref(Or, a, b, dtype),
        BitXor if dtype.is_bool() => binary_ref(Xor, a, b, dtype),
        BitAnd => (a as i64 & b as i64) as f64,
        BitOr => (a as i64 | b as i64) as f64,
        BitXor => (a as i64 ^ b as i64) as f64,
        ShiftLeft if b < 0.0 || b >= bits(dtype) => 0.0,
        ShiftLeft => ((a as i64) << (b as i64)) as f64,
        ShiftRight if b < 0.0 || b >= bits(dtype) => {
            if a < 0.0 {
                -1.0
            } else {
                0.0
            }
        }
        ShiftRight => ((a as i64) >> (b as i64)) as f64,
        NextAfter => next_after(a, b, dtype),
    }
}

/// The width of an integer dtype in bits.
fn bits(dtype: DType) -> f64 {
    (dtype.size_in_bytes() * 8) as f64
}

/// The next float of `dtype` after `a` toward `b`.
fn next_after(a: f64, b: f64, dtype: DType) -> f64 {
    fn step<T: PartialOrd + Copy>(a: T, b: T, up: fn(T) -> T, down: fn(T) -> T) -> T {
        if a == b {
            b
        } else if a < b {
            up(a)
        } else {
            down(a)
        }
    }
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if dtype == DType::F32 {
        step(a as f32, b as f32, f32::next_up, f32::next_down) as f64
    } else {
        step(a, b, f64::next_up, f64::next_down)
    }
}

/// Maps operands into the domain where `op` is well defined for `dtype`.
fn binary_domain(op: BinaryOp, dtype: DType, a: &Input, b: &Input) -> (Input, Input) {
    match op {
        BinaryOp::Pow if dtype.is_float() => (a.map(|v| v.abs() + 0.1), b.clone()),
        BinaryOp::Pow => (a.clone(), b.map(|v| (v / 2.0).round().clamp(-3.0, 4.0))),
        // Integer division by zero is refused by the tensor API (the kernel's 0 is checked by the
        // NumPy fixtures); float divisors near 0 are moved away to keep the comparison well conditioned.
        BinaryOp::Div | BinaryOp::Rem => (
            a.clone(),
            b.map(|v| if v.abs() < 0.5 { v + 1.0 } else { v }),
        ),
        _ => (a.clone(), b.clone()),
    }
}

/// Checks every binary op supported by `dtype` on one broadcast-compatible pair.
fn check_binary<B: Backend>(
    cx: &Suite<B>,
    a: &Input,
    b: &Input,
    dtype: DType,
    rtol: f64,
    atol: f64,
) {
    if !cx.has(&[dtype]) {
        return;
    }
    let (rtol, atol) = cx.tol(dtype, rtol, atol);
    let out = Shape::broadcast("test", &a.shape, &b.shape).expect("compatible by construction");
    for op in BinaryOp::ALL {
        if !op.supports(dtype) {
            continue;
        }
        let (a, b) = binary_domain(op, dtype, a, b);
        let (ta, tb) = (a.tensor(cx, dtype), b.tensor(cx, dtype));
        let got = ta
            .binary(op, &tb)
            .unwrap_or_else(|e| panic!("{op:?} {dtype}: {e}"));
        assert_eq!(got.dtype(), dtype);
        assert_shape(&got, out.dims(), op.name());
        let ea = expand(&a.values_as(dtype), &a.shape, out.dims());
        let eb = expand(&b.values_as(dtype), &b.shape, out.dims());
        let want: Vec<f64> = ea
            .iter()
            .zip(&eb)
            .map(|(&x, &y)| round_to(dtype, binary_ref(op, x, y, dtype)))
            .collect();
        let what = format!("{} {dtype} {:?} {:?}", op.name(), a.kind, b.kind);
        assert_close(&read(&got), &want, rtol, atol, &what);
        let dense = ta
            .contiguous()
            .and_then(|x| x.binary(op, &tb.contiguous()?))
            .expect("contiguous");
        assert_close(
            &read(&got),
            &read(&dense),
            rtol,
            atol,
            &format!("{what} vs contiguous"),
        );
    }
}

/// Two inputs whose shapes broadcast together.
fn pair(
    values: impl Strategy<Value = f64> + Clone + 'static,
) -> impl Strategy<Value = (Input, Input)> {
    shape()
        .prop_flat_map(|out| (broadcastable(out.clone()), broadcastable(out)))
        .prop_flat_map(move |(sa, sb)| (input(sa, values.clone()), input(sb, values.clone())))
}

property! {
/// Unary f64 matches std.
fn unary_f64_matches_std(cx; x in shape().prop_flat_map(|s| input(s, reals()))) {
    check_unary(cx, &x, DType::F64, 1e-12, 1e-13);
}
}

property! {
/// Unary f32 matches std.
fn unary_f32_matches_std(cx; x in shape().prop_flat_map(|s| input(s, reals()))) {
    check_unary(cx, &x, DType::F32, 2e-6, 2e-6);
}
}

property! {
/// Unary integers are exact.
fn unary_integers_are_exact(cx; x in shape().prop_flat_map(|s| input(s, small_ints()))) {
    check_unary(cx, &x, DType::I64, 0.0, 0.0);
    check_unary(cx, &x, DType::I32, 0.0, 0.0);
}
}

property! {
/// Complex unary matches num complex.
fn complex_unary_matches_num_complex(cx;
    (shape, re, im) in shape().prop_flat_map(|s| {
        let n = s.iter().product::<usize>();
        (Just(s), prop::collection::vec(reals(), n), prop::collection::vec(reals(), n))
    })
) {
    use nabla_core::num_complex::Complex64;
    if !cx.has(&[DType::C128, DType::F64]) {
        return Ok(());
    }
    let z: Vec<Complex64> = re.iter().zip(&im).map(|(&a, &b)| Complex64::new(a, b)).collect();
    let t = Tensor::from_vec(z.clone(), shape.clone(), cx.backend()).unwrap().t().unwrap();
    let zt = Tensor::from_vec(z, shape.clone(), cx.backend()).unwrap().t().unwrap().contiguous().unwrap();
    let host = |t: &Tensor<B>| t.to_vec::<Complex64>().unwrap();
    type Case = (UnaryOp, fn(Complex64) -> Complex64);
    let cases: [Case; 5] = [
        (UnaryOp::Exp, |z| z.exp()),
        (UnaryOp::Conj, |z| z.conj()),
        (UnaryOp::Sqrt, |z| z.sqrt()),
        (UnaryOp::Tanh, |z| z.tanh()),
        (UnaryOp::Neg, |z| -z),
    ];
    let zs = host(&zt);
    for (op, f) in cases {
        let got = host(&t.unary(op).unwrap());
        for (g, &z) in got.iter().zip(&zs) {
            let w = f(z);
            // num_complex's tanh divides by cosh 2x + cos 2y, which cancels near the poles
            // (x = 0, y = π/2 + kπ): its own error grows by (cosh 2x + 1) / |cosh 2x + cos 2y|.
            let reference_error = match op {
                UnaryOp::Tanh => {
                    let (a, b) = ((2.0 * z.re).cosh(), (2.0 * z.im).cos());
                    ((a + 1.0) / (a + b).abs()).max(1.0)
                }
                _ => 1.0,
            };
            let tol = 1e-12 * (1.0 + w.norm()) * reference_error;
            prop_assert!((g - w).norm() <= tol, "{op:?}({z}) = {g}, want {w}");
        }
    }
    let abs = read(&t.abs().unwrap());
    let want: Vec<f64> = zs.iter().map(|z| z.norm()).collect();
    assert_close(&abs, &want, 1e-14, 0.0, "abs c128");
    assert_close(&read(&t.imag().unwrap()), &zs.iter().map(|z| z.im).collect::<Vec<_>>(), 0.0, 0.0, "imag");
}
}

property! {
/// Binary f64 broadcasts like numpy.
fn binary_f64_broadcasts_like_numpy(cx; (a, b) in pair(reals())) {
    check_binary(cx, &a, &b, DType::F64, 1e-12, 1e-13);
}
}

property! {
/// Binary f32 broadcasts like numpy.
fn binary_f32_broadcasts_like_numpy(cx; (a, b) in pair(reals())) {
    check_binary(cx, &a, &b, DType::F32, 1e-5, 1e-5);
}
}

property! {
/// Float remainder takes the divisor sign.
fn float_remainder_takes_the_divisor_sign(cx; (a, b) in pair(small_ints())) {
    let b = b.map(|v| if v == 0.0 { 4.0 } else { v });
    for dtype in [DType::F64, DType::F32] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let got = a.tensor(cx, dtype).rem(b.tensor(cx, dtype)).unwrap();
        let out = Shape::broadcast("t", &a.shape, &b.shape).unwrap();
        let want: Vec<f64> = expand(&a.values(), &a.shape, out.dims())
            .iter()
            .zip(expand(&b.values(), &b.shape, out.dims()))
            .map(|(&x, y)| py_mod(x, y))
            .collect();
        assert_close(&read(&got), &want, 0.0, 0.0, "float rem");
    }
}
}

property! {
/// Binary integers floor divide and wrap.
fn binary_integers_floor_divide_and_wrap(cx; (a, b) in pair(small_ints())) {
    check_binary(cx, &a, &b, DType::I64, 0.0, 0.0);
    check_binary(cx, &a, &b, DType::I32, 0.0, 0.0);
}
}

property! {
/// Binary bools are logic.
fn binary_bools_are_logic(cx; (a, b) in pair((0i32..2).prop_map(f64::from))) {
    check_binary(cx, &a, &b, DType::Bool, 0.0, 0.0);
}
}

property! {
/// Comparisons broadcast.
fn comparisons_broadcast(cx; (a, b) in pair(small_ints())) {
    let out = Shape::broadcast("t", &a.shape, &b.shape).unwrap();
    for dtype in [DType::F64, DType::F32, DType::I64, DType::U8] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let (a, b) = if dtype == DType::U8 { (a.map(f64::abs), b.map(f64::abs)) } else { (a.clone(), b.clone()) };
        let (ta, tb) = (a.tensor(cx, dtype), b.tensor(cx, dtype));
        let ea = expand(&a.values(), &a.shape, out.dims());
        let eb = expand(&b.values(), &b.shape, out.dims());
        for op in CompareOp::ALL {
            let got = ta.compare(op, &tb).unwrap();
            prop_assert_eq!(got.dtype(), DType::Bool);
            let want: Vec<f64> = ea.iter().zip(&eb).map(|(&x, &y)| {
                let r = match op {
                    CompareOp::Eq => x == y,
                    CompareOp::Ne => x != y,
                    CompareOp::Lt => x < y,
                    CompareOp::Le => x <= y,
                    CompareOp::Gt => x > y,
                    CompareOp::Ge => x >= y,
                };
                r as u8 as f64
            }).collect();
            assert_close(&read(&got), &want, 0.0, 0.0, &format!("{} {dtype}", op.name()));
        }
    }
}
}

property! {
/// Where selects with three way broadcasting.
fn where_selects_with_three_way_broadcasting(cx;
    (c, a, b) in shape()
        .prop_flat_map(|out| (broadcastable(out.clone()), broadcastable(out.clone()), broadcastable(out)))
        .prop_flat_map(|(sc, sa, sb)| (
            input(sc, (0i32..2).prop_map(f64::from)),
            input(sa, reals()),
            input(sb, reals()),
        ))
) {
    if !cx.has(&[DType::Bool, DType::F64, DType::I32]) {
        return Ok(());
    }
    let out = Shape::broadcast("t", &c.shape, &a.shape).unwrap();
    let out = Shape::broadcast("t", out.dims(), &b.shape).unwrap();
    let got = c.tensor(cx, DType::Bool).where_(a.tensor(cx, DType::F64), b.tensor(cx, DType::F64)).unwrap();
    assert_shape(&got, out.dims(), "where");
    let ec = expand(&c.values(), &c.shape, out.dims());
    let ea = expand(&a.values(), &a.shape, out.dims());
    let eb = expand(&b.values(), &b.shape, out.dims());
    let want: Vec<f64> = (0..ec.len()).map(|i| if ec[i] != 0.0 { ea[i] } else { eb[i] }).collect();
    assert_close(&read(&got), &want, 0.0, 0.0, "where");
    // A number branch adopts the other branch's dtype.
    let got = c.tensor(cx, DType::Bool).where_(a.tensor(cx, DType::I32), 5).unwrap();
    prop_assert_eq!(got.dtype(), DType::I32);
}
}

property! {
/// Casts round trip.
fn casts_round_trip(cx; x in shape().prop_flat_map(|s| input(s, reals()))) {
    // From the widest float the backend has (f64, else f32) to every dtype and back.
    let fd = cx.float();
    let t = x.tensor(cx, fd);
    let vals = x.values_as(fd);
    let expect = |f: &dyn Fn(f64) -> f64| vals.iter().map(|&v| f(v)).collect::<Vec<_>>();
    type Trip = (DType, DType, fn(f64) -> f64, &'static str);
    let trips: [Trip; 7] = [
        (DType::F32, fd, |v| v as f32 as f64, "->f32->"),
        (DType::F16, fd, |v| round_to(DType::F16, v), "->f16->"),
        (DType::BF16, DType::F32, |v| round_to(DType::BF16, v), "->bf16->f32"),
        (DType::C128, fd, |v| v, "->c128->real"),
        (DType::I64, fd, f64::trunc, "->i64 truncates"),
        (DType::I32, DType::I64, f64::trunc, "->i32->i64"),
        (DType::Bool, DType::F32, |v| (v != 0.0) as u8 as f64, "->bool->f32"),
    ];
    for (a, b, f, what) in trips {
        if cx.has(&[a, b]) {
            let got = read(&t.cast(a).and_then(|y| y.cast(b)).expect("cast"));
            assert_close(&got, &expect(&f), 0.0, 0.0, &format!("{fd}{what}"));
        }
    }
    prop_assert!(cx.shares(&t.cast(fd).unwrap(), &t), "same-dtype cast is free");
    if cx.has(&[DType::I64, DType::U8]) {
        let ints = x.map(|v| (v * 50.0).round());
        let ti = ints.tensor(cx, DType::I64);
        let wrapped: Vec<f64> = ints.values().iter().map(|&v| (v as i64 as u8) as f64).collect();
        assert_close(&read(&ti.cast(DType::U8).unwrap()), &wrapped, 0.0, 0.0, "i64->u8 wraps");
        assert_close(&read(&ti.cast(fd).unwrap().cast(DType::I64).unwrap()), &ints.values(), 0.0, 0.0, "i64 round trip");
    }
}
}
