//! WGSL building blocks: how each dtype is loaded and stored, the helper library every shader starts
//! with, and the expression of every elementwise op.
//!
//! Compute types: `f32` for `f32`/`f16`, `i32`, `u32` for `u8` (masked to 8 bits when stored), `bool`,
//! and `vec2<u32>` (low, high words) for `i64`.

use crate::storage::unsupported;
use nabla_core::{BinaryOp, CompareOp, DType, Result, Scalar, UnaryOp};

/// The WGSL compute type of `dtype`.
pub(crate) fn ty(dtype: DType) -> &'static str {
    match dtype {
        DType::I32 => "i32",
        DType::U8 => "u32",
        DType::Bool => "bool",
        DType::I64 => "vec2<u32>",
        _ => "f32",
    }
}

/// An expression loading element `off` of `buf` (an `array<u32>`).
pub(crate) fn load(dtype: DType, buf: &str, off: &str) -> String {
    match dtype {
        DType::I32 => format!("bitcast<i32>({buf}[{off}])"),
        DType::U8 => format!("{buf}[{off}]"),
        DType::Bool => format!("({buf}[{off}] != 0u)"),
        DType::I64 => format!("ld64_{buf}({off})"),
        _ => format!("bitcast<f32>({buf}[{off}])"),
    }
}

/// A statement storing the compute-type expression `val` as element `off` of `buf`.
pub(crate) fn store(dtype: DType, buf: &str, off: &str, val: &str) -> String {
    match dtype {
        DType::I32 => format!("{buf}[{off}] = bitcast<u32>({val});"),
        DType::U8 => format!("{buf}[{off}] = ({val}) & 255u;"),
        DType::Bool => format!("{buf}[{off}] = select(0u, 1u, {val});"),
        DType::I64 => format!(
            "{{ let sv = {val}; {buf}[2u * ({off})] = sv.x; {buf}[2u * ({off}) + 1u] = sv.y; }}"
        ),
        _ => format!("{buf}[{off}] = bitcast<u32>({val});"),
    }
}

/// The words of a scalar converted to `dtype` (NumPy casting), as the device stores them.
pub(crate) fn scalar_words(value: Scalar, dtype: DType) -> Result<Vec<u32>> {
    let host = nabla_core::HostData::filled(dtype, 1, value);
    Ok(crate::storage::host_to_words(&host)?.0)
}

/// An expression loading a scalar of `dtype` from parameter word `p` (and `p + 1` for `i64`).
pub(crate) fn param(dtype: DType, p: usize) -> String {
    match dtype {
        DType::I64 => format!("vec2<u32>(prm[{p}u], prm[{}u])", p + 1),
        _ => load(dtype, "prm", &format!("{p}u")),
    }
}

/// The zero of `dtype` in its compute type.
pub(crate) fn zero(dtype: DType) -> &'static str {
    match dtype {
        DType::I32 => "0i",
        DType::U8 => "0u",
        DType::Bool => "false",
        DType::I64 => "vec2<u32>(0u, 0u)",
        _ => "0.0",
    }
}

/// The shared helper library (views, 64-bit integers, careful float functions), appended to every
/// shader when its pipeline is compiled.
pub(crate) const PRELUDE: &str = r#"
fn view_off(p: u32, i: u32) -> u32 {
    let r = prm[p];
    var rem = i;
    var off = bitcast<i32>(prm[p + 1u]);
    for (var d = r; d > 0u; d = d - 1u) {
        let s = prm[p + 1u + d];
        let c = rem % s;
        rem = rem / s;
        off = off + i32(c) * bitcast<i32>(prm[p + 1u + r + d]);
    }
    return u32(off);
}
fn isnan_f(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn isfinite_f(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn max_f(a: f32, b: f32) -> f32 { if (a >= b || isnan_f(a)) { return a; } return b; }
fn min_f(a: f32, b: f32) -> f32 { if (a <= b || isnan_f(a)) { return a; } return b; }
fn gt_f(a: f32, b: f32) -> bool { return (isnan_f(a) && !isnan_f(b)) || (!isnan_f(b) && a > b); }
fn lt_f(a: f32, b: f32) -> bool { return (isnan_f(a) && !isnan_f(b)) || (!isnan_f(b) && a < b); }
fn sortlt_f(a: f32, b: f32) -> bool { return !isnan_f(a) && (isnan_f(b) || a < b); }
fn asinh_f(x: f32) -> f32 {
    let a = abs(x);
    let r = select(log(a) + 0.6931471805599453, log(a + sqrt(a * a + 1.0)), a < 1e18);
    return select(-r, r, x >= 0.0 || isnan_f(x));
}
fn acosh_f(x: f32) -> f32 {
    if (isnan_f(x) || x < 1.0) { return bitcast<f32>(0x7fc00000u); }
    return select(log(x) + 0.6931471805599453, log(x + sqrt(x - 1.0) * sqrt(x + 1.0)), x < 1e18);
}
fn atanh_f(x: f32) -> f32 {
    if (isnan_f(x) || abs(x) > 1.0) { return bitcast<f32>(0x7fc00000u); }
    if (abs(x) == 1.0) { return x / 0.0; }
    return 0.5 * log((1.0 + x) / (1.0 - x));
}
fn nextafter_f(a: f32, b: f32) -> f32 {
    if (isnan_f(a) || isnan_f(b)) { return bitcast<f32>(0x7fc00000u); }
    if (a == b) { return b; }
    if (a == 0.0) { return select(bitcast<f32>(1u), bitcast<f32>(0x80000001u), b < 0.0); }
    let bits = bitcast<u32>(a);
    return bitcast<f32>(select(bits - 1u, bits + 1u, (a < b) == (a > 0.0)));
}
fn shl_i(a: i32, b: i32) -> i32 { return select(0i, a << u32(b & 31i), b >= 0i && b < 32i); }
fn shr_i(a: i32, b: i32) -> i32 { return select(select(0i, -1i, a < 0i), a >> u32(b & 31i), b >= 0i && b < 32i); }
fn i64_shl(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (b.y != 0u || b.x >= 64u) { return vec2<u32>(0u, 0u); }
    if (b.x >= 32u) { return vec2<u32>(0u, a.x << (b.x - 32u)); }
    if (b.x == 0u) { return a; }
    return vec2<u32>(a.x << b.x, (a.y << b.x) | (a.x >> (32u - b.x)));
}
fn i64_shr(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let fill = select(0u, 0xffffffffu, bitcast<i32>(a.y) < 0i);
    if (b.y != 0u || b.x >= 64u) { return vec2<u32>(fill, fill); }
    if (b.x >= 32u) { return vec2<u32>(bitcast<u32>(bitcast<i32>(a.y) >> (b.x - 32u)), fill); }
    if (b.x == 0u) { return a; }
    return vec2<u32>((a.x >> b.x) | (a.y << (32u - b.x)), bitcast<u32>(bitcast<i32>(a.y) >> b.x));
}
fn i64_from_i32(v: i32) -> vec2<u32> { return vec2<u32>(bitcast<u32>(v), select(0u, 0xffffffffu, v < 0i)); }
fn i64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn i64_neg(a: vec2<u32>) -> vec2<u32> { return i64_add(vec2<u32>(~a.x, ~a.y), vec2<u32>(1u, 0u)); }
fn i64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return i64_add(a, i64_neg(b)); }
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
    let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}
fn i64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let p = mul_wide(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}
fn i64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    let ah = bitcast<i32>(a.y); let bh = bitcast<i32>(b.y);
    return ah < bh || (ah == bh && a.x < b.x);
}
fn i64_eq(a: vec2<u32>, b: vec2<u32>) -> bool { return a.x == b.x && a.y == b.y; }
fn i64_neg_p(a: vec2<u32>) -> bool { return bitcast<i32>(a.y) < 0i; }
fn i64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, i64_lt(a, b)); }
fn i64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, i64_lt(b, a)); }
fn i64_abs(a: vec2<u32>) -> vec2<u32> { return select(a, i64_neg(a), i64_neg_p(a)); }
fn i64_sign(a: vec2<u32>) -> vec2<u32> {
    if (i64_neg_p(a)) { return vec2<u32>(0xffffffffu, 0xffffffffu); }
    return vec2<u32>(select(0u, 1u, a.x != 0u || a.y != 0u), 0u);
}
fn u64_lt(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }
fn u64_divmod(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    for (var i = 63u; i < 64u; i = i - 1u) {
        let word = select(n.x, n.y, i >= 32u);
        let bit = (word >> (i & 31u)) & 1u;
        r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
        if (!u64_lt(r, d)) {
            r = i64_sub(r, d);
            if (i >= 32u) { q.y = q.y | (1u << (i - 32u)); } else { q.x = q.x | (1u << i); }
        }
    }
    return vec4<u32>(q, r);
}
fn i64_divmod_floor(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {
    if (b.x == 0u && b.y == 0u) { return vec4<u32>(0u); }
    let qr = u64_divmod(i64_abs(a), i64_abs(b));
    var q = select(qr.xy, i64_neg(qr.xy), i64_neg_p(a) != i64_neg_p(b));
    var r = select(qr.zw, i64_neg(qr.zw), i64_neg_p(a));
    if ((r.x != 0u || r.y != 0u) && i64_neg_p(r) != i64_neg_p(b)) {
        q = i64_sub(q, vec2<u32>(1u, 0u));
        r = i64_add(r, b);
    }
    return vec4<u32>(q, r);
}
fn pow_l(base: vec2<u32>, e: vec2<u32>) -> vec2<u32> {
    let one = vec2<u32>(1u, 0u);
    if (i64_neg_p(e)) {
        if (i64_eq(base, one)) { return one; }
        if (base.x == 0xffffffffu && base.y == 0xffffffffu) { return select(one, base, (e.x & 1u) == 1u); }
        return vec2<u32>(0u, 0u);
    }
    var acc = one; var b = base; var k = e;
    loop {
        if (k.x == 0u && k.y == 0u) { break; }
        if ((k.x & 1u) == 1u) { acc = i64_mul(acc, b); }
        k = vec2<u32>((k.x >> 1u) | (k.y << 31u), k.y >> 1u);
        b = i64_mul(b, b);
    }
    return acc;
}
fn u64_to_f32(a: vec2<u32>) -> f32 { return f32(a.y) * 4294967296.0 + f32(a.x); }
fn i64_to_f32(a: vec2<u32>) -> f32 {
    if (i64_neg_p(a)) { return -u64_to_f32(i64_neg(a)); }
    return u64_to_f32(a);
}
fn f32_to_i64(x: f32) -> vec2<u32> {
    if (isnan_f(x)) { return vec2<u32>(0u, 0u); }
    if (x >= 9223372036854775807.0) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    if (x <= -9223372036854775808.0) { return vec2<u32>(0u, 0x80000000u); }
    let t = abs(trunc(x));
    let hi = floor(t / 4294967296.0);
    let lo = t - hi * 4294967296.0;
    let m = vec2<u32>(u32(lo), u32(hi));
    return select(m, i64_neg(m), x < 0.0);
}
fn f32_to_i32(x: f32) -> i32 {
    if (isnan_f(x)) { return 0i; }
    if (x >= 2147483647.0) { return 2147483647i; }
    if (x <= -2147483648.0) { return -2147483647i - 1i; }
    return i32(x);
}
fn f32_to_u8(x: f32) -> u32 {
    if (isnan_f(x) || x <= 0.0) { return 0u; }
    if (x >= 255.0) { return 255u; }
    return u32(x);
}
fn round_f16(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    let s = b & 0x80000000u;
    let a = b & 0x7fffffffu;
    if (a >= 0x7f800000u) { return x; }
    if (a >= 0x477ff000u) { return bitcast<f32>(s | 0x7f800000u); }
    if (a < 0x38800000u) {
        let r = round(bitcast<f32>(a) * 16777216.0) / 16777216.0;
        return bitcast<f32>(s | bitcast<u32>(r));
    }
    let r = (a + 0xfffu + ((a >> 13u) & 1u)) & 0xffffe000u;
    return bitcast<f32>(s | r);
}
fn expm1_f(x: f32) -> f32 {
    if (abs(x) < 0.01) { return x * (1.0 + x * (0.5 + x * (0.16666667 + x * (0.041666668 + x * 0.008333334)))); }
    return exp(x) - 1.0;
}
// Exponent `e` and significand `m` in [1, 2) of a positive finite `x` = m * 2^e, subnormals included
// (normalised from their bits: the built-in `log2` and exponent fields treat them as 2^-127).
fn split_f(x: f32) -> vec2<f32> {
    let b = bitcast<u32>(x);
    var e = i32((b >> 23u) & 0xffu) - 127i;
    var m = b & 0x007fffffu;
    if (e == -127i && m != 0u) {
        let p = 31u - countLeadingZeros(m);
        m = (m << (23u - p)) & 0x007fffffu;
        e = i32(p) - 149i;
    }
    return vec2<f32>(f32(e), bitcast<f32>(m | 0x3f800000u));
}
// `log2` of a positive finite `x`, exact in its exponent for subnormals too.
fn log2_f(x: f32) -> f32 {
    if ((bitcast<u32>(x) & 0x7f800000u) != 0u) { return log2(x); }
    let em = split_f(x);
    return em.x + log2(em.y);
}
// Signs and zeros are read from the bits: a device that flushes subnormals (NVIDIA's) compares
// 1e-40 equal to zero, yet its logarithm is -92.1.
fn log_f(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if (isnan_f(x) || bits > 0x80000000u) { return bitcast<f32>(0x7fc00000u); }
    if ((bits & 0x7fffffffu) == 0u) { return bitcast<f32>(0xff800000u); }
    if (!isfinite_f(x)) { return x; }
    let em = split_f(x);
    var e = i32(em.x);
    var m = em.y;
    if (m > 1.4142135) { m = 0.5 * m; e = e + 1i; }
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    let l = 2.0 * s * (1.0 + z * (0.33333334 + z * (0.2 + z * (0.14285715 + z * 0.11111111))));
    return f32(e) * 0.6931472 + l;
}
fn log1p_f(x: f32) -> f32 {
    if (abs(x) < 0.01) { return x * (1.0 + x * (-0.5 + x * (0.33333334 + x * (-0.25 + x * 0.2)))); }
    return log_f(1.0 + x);
}
fn copysign_f(m: f32, s: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(m) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}
fn atan_f(v: f32) -> f32 {
    let a = abs(v);
    var x = a;
    var y = 0.0;
    if (a > 2.4142137) { y = 1.5707964; x = -1.0 / a; }
    else if (a > 0.41421357) { y = 0.7853982; x = (a - 1.0) / (a + 1.0); }
    let z = x * x;
    y = y + ((((0.080537446 * z - 0.13877685) * z + 0.19977711) * z - 0.3333295) * z * x + x);
    if (isnan_f(v)) { return v; }
    return copysign_f(y, v);
}
fn atan2_f(y: f32, x: f32) -> f32 {
    if (isnan_f(x) || isnan_f(y)) { return x + y; }
    let pi = 3.1415927;
    let xneg = (bitcast<u32>(x) & 0x80000000u) != 0u;
    var r = 0.0;
    if (y == 0.0) { r = select(0.0, pi, xneg); }
    else if (x == 0.0) { r = 0.5 * pi; }
    else if (!isfinite_f(x)) {
        if (!isfinite_f(y)) { r = select(0.25 * pi, 0.75 * pi, xneg); } else { r = select(0.0, pi, xneg); }
    }
    else if (!isfinite_f(y)) { r = 0.5 * pi; }
    else { let t = atan_f(abs(div_f(y, x))); r = select(t, pi - t, xneg); }
    return copysign_f(r, y);
}
fn cos_turn(u: f32) -> f32 {
    var t = abs(u - floor(u + 0.5));
    var s = 1.0;
    if (t > 0.25) { t = 0.5 - t; s = -1.0; }
    if (t > 0.125) {
        let x = 6.2831855 * (0.25 - t);
        let z = x * x;
        return s * x * (1.0 + z * (-0.16666667 + z * (0.008333334 + z * (-0.0001984127 + z * 2.7557319e-6))));
    }
    let x = 6.2831855 * t;
    let z = x * x;
    return s * (1.0 + z * (-0.5 + z * (0.041666668 + z * (-0.0013888889 + z * 2.4801588e-5))));
}
fn asin_f(x: f32) -> f32 {
    if (!(abs(x) <= 1.0)) { return bitcast<f32>(0x7fc00000u); }
    return atan2_f(x, sqrt((1.0 - x) * (1.0 + x)));
}
fn acos_f(x: f32) -> f32 {
    if (!(abs(x) <= 1.0)) { return bitcast<f32>(0x7fc00000u); }
    return atan2_f(sqrt((1.0 - x) * (1.0 + x)), x);
}
fn sigmoid_f(x: f32) -> f32 {
    if (x >= 0.0) { return 1.0 / (1.0 + exp(-x)); }
    let e = exp(x);
    return e / (1.0 + e);
}
fn tanh_f(x: f32) -> f32 {
    if (abs(x) > 15.0) { return sign(x); }
    return tanh(x);
}
fn erf_f(x: f32) -> f32 {
    let a = abs(x);
    if (a > 4.0) { return sign(x); }
    if (a < 0.5) {
        let z = x * x;
        return x * (1.1283791671 + z * (-0.3761263890 + z * (0.1128379167 + z * (-0.0268661706
            + z * (0.0052239776 + z * -0.0008548327)))));
    }
    let t = 1.0 / (1.0 + 0.5 * a);
    let y = t * exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277)))))))));
    return sign(x) * (1.0 - y);
}
// C `fmod` (Rust's `%`), exact: |a| = ma * 2^ea and |b| = mb * 2^eb with integer significands below
// 2^24, so |a| mod |b| = ((ma * 2^(ea - eb)) mod mb) * 2^eb, reduced eight bits at a time in `u32`.
// Works on bit patterns only, so subnormals are exact even where the device flushes them in arithmetic.
fn fmod_f(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let sa = ua & 0x80000000u;
    let xa = ua & 0x7fffffffu;
    let xb = bitcast<u32>(b) & 0x7fffffffu;
    if (xb == 0u || xa >= 0x7f800000u || xb > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    if (xa < xb) { return a; }
    let ba = xa >> 23u;
    let bb = xb >> 23u;
    let ma = select(xa & 0x007fffffu, (xa & 0x007fffffu) | 0x00800000u, ba != 0u);
    let mb = select(xb & 0x007fffffu, (xb & 0x007fffffu) | 0x00800000u, bb != 0u);
    var d = max(ba, 1u) - max(bb, 1u);
    var r = ma % mb;
    loop {
        if (d == 0u || r == 0u) { break; }
        let s = min(d, 8u);
        r = (r << s) % mb;
        d = d - s;
    }
    if (r == 0u) { return bitcast<f32>(sa); }
    // r * 2^eb with eb = max(bb, 1) - 150: normalise the leading bit of r to bit 23.
    let p = 31u - countLeadingZeros(r);
    let e = i32(max(bb, 1u)) + i32(p) - 23i;
    if (e >= 1i) { return bitcast<f32>(sa | (u32(e) << 23u) | ((r << (23u - p)) & 0x007fffffu)); }
    return bitcast<f32>(sa | (r << (max(bb, 1u) - 1u)));
}
// Vulkan bounds a / b's error only for 2^-126 <= |b| <= 2^126; above, NVIDIA's driver returns 0
// (3e38 / 3e38 = 0). A quarter of each operand keeps the quotient and brings |b| into range.
fn div_f(a: f32, b: f32) -> f32 {
    if (abs(b) > 8.507059e37) { return (a * 0.25) / (b * 0.25); }
    return a / b;
}
// NumPy's `%`: the remainder of `fmod` moved to the sign of the divisor (what the CPU backend does).
fn rem_f(a: f32, b: f32) -> f32 {
    let m = fmod_f(a, b);
    let um = bitcast<u32>(m);
    if ((um & 0x7fffffffu) == 0u) { return bitcast<f32>(bitcast<u32>(b) & 0x80000000u); }
    if (!isnan_f(m) && ((bitcast<u32>(b) >> 31u) != (um >> 31u))) { return m + b; }
    return m;
}
fn pow_f(x: f32, y: f32) -> f32 {
    if (y == 0.0 || x == 1.0) { return 1.0; }
    if (isnan_f(x) || isnan_f(y)) { return x + y; }
    let ay = abs(y);
    let yint = trunc(y) == y;
    let odd = yint && ay < 16777216.0 && (u32(ay) & 1u) == 1u;
    // Zero and sign from the bits, as in `log_f`: a subnormal base is neither zero nor signless.
    if ((bitcast<u32>(x) & 0x7fffffffu) == 0u) {
        if (y > 0.0) { return select(0.0, x, odd); }
        return select(bitcast<f32>(0x7f800000u), copysign_f(bitcast<f32>(0x7f800000u), x), odd);
    }
    if (x == -1.0 && !isfinite_f(y)) { return 1.0; }
    if (!isfinite_f(x)) {
        if (x > 0.0) { return select(0.0, x, y > 0.0); }
        let m = select(0.0, -x, y > 0.0);
        return select(m, -m, odd);
    }
    if ((bitcast<u32>(x) >> 31u) == 1u) {
        if (!yint) { return bitcast<f32>(0x7fc00000u); }
        let m = exp2(y * log2_f(bitcast<f32>(bitcast<u32>(x) & 0x7fffffffu)));
        return select(m, -m, odd);
    }
    return exp2(y * log2_f(x));
}
fn floordiv_i(a: i32, b: i32) -> i32 {
    if (b == 0i) { return 0i; }
    let q = a / b; let r = a % b;
    if (r != 0i && ((r < 0i) != (b < 0i))) { return q - 1i; }
    return q;
}
fn rem_i(a: i32, b: i32) -> i32 {
    if (b == 0i) { return 0i; }
    let r = a % b;
    if (r != 0i && ((r < 0i) != (b < 0i))) { return r + b; }
    return r;
}
fn pow_i(base: i32, e: i32) -> i32 {
    if (e < 0i) {
        if (base == 1i) { return 1i; }
        if (base == -1i) { return select(1i, -1i, (e & 1i) != 0i); }
        return 0i;
    }
    var acc = 1i; var b = base; var k = u32(e);
    loop { if (k == 0u) { break; } if ((k & 1u) == 1u) { acc = acc * b; } k = k >> 1u; b = b * b; }
    return acc;
}
fn pow_u(base: u32, e: u32) -> u32 {
    var acc = 1u; var b = base; var k = e;
    loop { if (k == 0u) { break; } if ((k & 1u) == 1u) { acc = acc * b; } k = k >> 1u; b = b * b; }
    return acc;
}
fn div_u(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a / b; }
fn rem_u(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a % b; }
"#;

/// The binding declarations (parameters, `n_in` inputs, `n_out` outputs). The helper library
/// ([`PRELUDE`]) is added when the pipeline is compiled, so that it is neither built nor hashed per
/// dispatch.
pub(crate) fn header(n_in: usize, n_out: usize) -> String {
    let mut s = String::from("@group(0) @binding(0) var<storage, read> prm: array<u32>;\n");
    for i in 0..n_in {
        s += &format!(
            "@group(0) @binding({}) var<storage, read> in{i}: array<u32>;\n",
            i + 1
        );
    }
    for i in 0..n_out {
        s += &format!(
            "@group(0) @binding({}) var<storage, read_write> out{i}: array<u32>;\n",
            i + 1 + n_in
        );
    }
    let names = (0..n_in)
        .map(|i| format!("in{i}"))
        .chain((0..n_out).map(|i| format!("out{i}")));
    for b in names {
        s += &format!(
            "fn ld64_{b}(o: u32) -> vec2<u32> {{ return vec2<u32>({b}[2u * o], {b}[2u * o + 1u]); }}\n"
        );
    }
    s
}

/// `x` is `dtype`; the expression of `op` on it (in the output dtype's compute type).
pub(crate) fn unary_expr(op: UnaryOp, dtype: DType, x: &str) -> Result<String> {
    use UnaryOp as U;
    let e = match (dtype, op) {
        (DType::Bool, U::Not | U::BitNot) => format!("!{x}"),
        (DType::F32, _) => match op {
            U::Neg => format!("-{x}"),
            U::Abs => format!("abs({x})"),
            U::Sign => format!(
                "select(select(select({x}, 0.0, {x} == 0.0), -1.0, {x} < 0.0), 1.0, {x} > 0.0)"
            ),
            U::Recip => format!("1.0 / {x}"),
            U::Square => format!("{x} * {x}"),
            U::Sqrt => format!("sqrt({x})"),
            U::Rsqrt => format!("1.0 / sqrt({x})"),
            U::Exp => format!("exp({x})"),
            U::Expm1 => format!("expm1_f({x})"),
            U::Log => format!("log_f({x})"),
            U::Log1p => format!("log1p_f({x})"),
            U::Sin => format!("sin({x})"),
            U::Cos => format!("cos({x})"),
            U::Tan => format!("tan({x})"),
            U::Asin => format!("asin_f({x})"),
            U::Acos => format!("acos_f({x})"),
            U::Atan => format!("atan_f({x})"),
            U::Sinh => format!("sinh({x})"),
            U::Cosh => format!("cosh({x})"),
            U::Tanh => format!("tanh_f({x})"),
            U::Asinh => format!("asinh_f({x})"),
            U::Acosh => format!("acosh_f({x})"),
            U::Atanh => format!("atanh_f({x})"),
            U::Sigmoid => format!("sigmoid_f({x})"),
            U::Erf => format!("erf_f({x})"),
            U::Floor => format!("floor({x})"),
            U::Ceil => format!("ceil({x})"),
            U::Round => format!("round({x})"),
            U::Trunc => format!("trunc({x})"),
            U::Conj | U::Real => x.to_string(),
            U::Imag => "0.0".into(),
            U::IsNan => format!("isnan_f({x})"),
            U::IsFinite => format!("isfinite_f({x})"),
            U::SignBit => format!("(bitcast<u32>({x}) >> 31u) == 1u"),
            U::Not | U::BitNot => return Err(unsupported_op(op.name(), dtype)),
        },
        (DType::I32 | DType::U8 | DType::I64, _) => {
            let (neg, abs, sign, sq) = match dtype {
                DType::I32 => (
                    format!("-{x}"),
                    format!("abs({x})"),
                    format!("sign({x})"),
                    format!("{x} * {x}"),
                ),
                DType::U8 => (
                    format!("0u - {x}"),
                    x.to_string(),
                    format!("select(0u, 1u, {x} > 0u)"),
                    format!("{x} * {x}"),
                ),
                _ => (
                    format!("i64_neg({x})"),
                    format!("i64_abs({x})"),
                    format!("i64_sign({x})"),
                    format!("i64_mul({x}, {x})"),
                ),
            };
            match op {
                U::Neg => neg,
                U::Abs => abs,
                U::Sign => sign,
                U::Square => sq,
                U::Floor | U::Ceil | U::Round | U::Trunc | U::Conj | U::Real => x.to_string(),
                U::Imag => zero(dtype).to_string(),
                U::IsNan => "false".into(),
                U::IsFinite => "true".into(),
                U::SignBit => match dtype {
                    DType::I32 => format!("{x} < 0i"),
                    DType::U8 => "false".into(),
                    _ => format!("i64_neg_p({x})"),
                },
                U::BitNot => format!("~{x}"),
                _ => return Err(unsupported_op(op.name(), dtype)),
            }
        }
        _ => return Err(unsupported_op(op.name(), dtype)),
    };
    Ok(e)
}

/// The error for an op this backend (or the op itself) does not define for `dtype`.
pub(crate) fn unsupported_op(op: &'static str, dtype: DType) -> nabla_core::Error {
    if matches!(dtype, DType::F64 | DType::BF16 | DType::C64 | DType::C128) {
        unsupported(op, dtype)
    } else {
        nabla_core::Error::dtype(op, dtype)
    }
}

/// The expression of `op` on `a` and `b` of `dtype`.
pub(crate) fn binary_expr(op: BinaryOp, dtype: DType, a: &str, b: &str) -> Result<String> {
    use BinaryOp as B;
    let e = match dtype {
        DType::F32 => match op {
            B::Add => format!("{a} + {b}"),
            B::Sub => format!("{a} - {b}"),
            B::Mul => format!("{a} * {b}"),
            B::Div => format!("div_f({a}, {b})"),
            B::Rem => format!("rem_f({a}, {b})"),
            B::Pow => format!("pow_f({a}, {b})"),
            B::Maximum => format!("max_f({a}, {b})"),
            B::Minimum => format!("min_f({a}, {b})"),
            B::Atan2 => format!("atan2_f({a}, {b})"),
            B::NextAfter => format!("nextafter_f({a}, {b})"),
            _ => return Err(unsupported_op(op.name(), dtype)),
        },
        DType::I32 => match op {
            B::Add => format!("{a} + {b}"),
            B::Sub => format!("{a} - {b}"),
            B::Mul => format!("{a} * {b}"),
            B::Div => format!("floordiv_i({a}, {b})"),
            B::Rem => format!("rem_i({a}, {b})"),
            B::Pow => format!("pow_i({a}, {b})"),
            B::Maximum => format!("max({a}, {b})"),
            B::Minimum => format!("min({a}, {b})"),
            B::BitAnd => format!("{a} & {b}"),
            B::BitOr => format!("{a} | {b}"),
            B::BitXor => format!("{a} ^ {b}"),
            B::ShiftLeft => format!("shl_i({a}, {b})"),
            B::ShiftRight => format!("shr_i({a}, {b})"),
            _ => return Err(unsupported_op(op.name(), dtype)),
        },
        DType::U8 => match op {
            B::Add => format!("{a} + {b}"),
            B::Sub => format!("{a} - {b}"),
            B::Mul => format!("{a} * {b}"),
            B::Div => format!("div_u({a}, {b})"),
            B::Rem => format!("rem_u({a}, {b})"),
            B::Pow => format!("pow_u({a}, {b})"),
            B::Maximum => format!("max({a}, {b})"),
            B::Minimum => format!("min({a}, {b})"),
            B::BitAnd => format!("{a} & {b}"),
            B::BitOr => format!("{a} | {b}"),
            B::BitXor => format!("{a} ^ {b}"),
            B::ShiftLeft => format!("select(0u, {a} << ({b} & 7u), {b} < 8u)"),
            B::ShiftRight => format!("select(0u, {a} >> ({b} & 7u), {b} < 8u)"),
            _ => return Err(unsupported_op(op.name(), dtype)),
        },
        DType::I64 => match op {
            B::Add => format!("i64_add({a}, {b})"),
            B::Sub => format!("i64_sub({a}, {b})"),
            B::Mul => format!("i64_mul({a}, {b})"),
            B::Maximum => format!("i64_max({a}, {b})"),
            B::Minimum => format!("i64_min({a}, {b})"),
            B::Div => format!("i64_divmod_floor({a}, {b}).xy"),
            B::Rem => format!("i64_divmod_floor({a}, {b}).zw"),
            B::Pow => format!("pow_l({a}, {b})"),
            B::BitAnd => format!("{a} & {b}"),
            B::BitOr => format!("{a} | {b}"),
            B::BitXor => format!("{a} ^ {b}"),
            B::ShiftLeft => format!("i64_shl({a}, {b})"),
            B::ShiftRight => format!("i64_shr({a}, {b})"),
            _ => return Err(unsupported_op(op.name(), dtype)),
        },
        DType::Bool => match op {
            B::Add | B::Maximum | B::Or | B::BitOr => format!("{a} || {b}"),
            B::Mul | B::Minimum | B::And | B::BitAnd => format!("{a} && {b}"),
            B::Xor | B::BitXor => format!("{a} != {b}"),
            _ => return Err(unsupported_op(op.name(), dtype)),
        },
        _ => return Err(unsupported_op(op.name(), dtype)),
    };
    Ok(e)
}

/// The boolean expression comparing `a` and `b` of `dtype`.
pub(crate) fn compare_expr(op: CompareOp, dtype: DType, a: &str, b: &str) -> Result<String> {
    let (a, b) = match dtype {
        DType::Bool => (
            format!("select(0u, 1u, {a})"),
            format!("select(0u, 1u, {b})"),
        ),
        DType::F32 | DType::I32 | DType::U8 | DType::I64 => (a.to_string(), b.to_string()),
        _ => return Err(unsupported_op(op.name(), dtype)),
    };
    Ok(if dtype == DType::I64 {
        match op {
            CompareOp::Eq => format!("i64_eq({a}, {b})"),
            CompareOp::Ne => format!("!i64_eq({a}, {b})"),
            CompareOp::Lt => format!("i64_lt({a}, {b})"),
            CompareOp::Le => format!("!i64_lt({b}, {a})"),
            CompareOp::Gt => format!("i64_lt({b}, {a})"),
            CompareOp::Ge => format!("!i64_lt({a}, {b})"),
        }
    } else {
        let sym = match op {
            CompareOp::Eq => "==",
            // `!=` may compile to an ordered comparison (false when either side is NaN).
            CompareOp::Ne => return Ok(format!("!({a} == {b})")),
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
        };
        format!("({a} {sym} {b})")
    })
}

/// The expression converting `x` of dtype `from` to dtype `to` with NumPy `astype` semantics.
pub(crate) fn cast_expr(from: DType, to: DType, x: &str) -> String {
    use DType::*;
    let float = |d: DType| matches!(d, F32 | F16);
    match (from, to) {
        (a, b) if a == b => x.to_string(),
        (Bool, F32 | F16) => format!("select(0.0, 1.0, {x})"),
        (Bool, I32) => format!("select(0i, 1i, {x})"),
        (Bool, U8) => format!("select(0u, 1u, {x})"),
        (Bool, I64) => format!("vec2<u32>(select(0u, 1u, {x}), 0u)"),
        (f, Bool) if float(f) => format!("((bitcast<u32>({x}) & 0x7fffffffu) != 0u)"),
        (I32, Bool) => format!("({x} != 0i)"),
        (U8, Bool) => format!("({x} != 0u)"),
        (I64, Bool) => format!("({x}.x != 0u || {x}.y != 0u)"),
        (F32, F16) => format!("round_f16({x})"),
        (F16, F32) => x.to_string(),
        (f, I32) if float(f) => format!("f32_to_i32({x})"),
        (f, U8) if float(f) => format!("f32_to_u8({x})"),
        (f, I64) if float(f) => format!("f32_to_i64({x})"),
        (I32, F32) => format!("f32({x})"),
        (I32, F16) => format!("round_f16(f32({x}))"),
        (I32, U8) => format!("bitcast<u32>({x})"),
        (I32, I64) => format!("i64_from_i32({x})"),
        (U8, F32 | F16) => format!("f32({x})"),
        (U8, I32) => format!("i32({x})"),
        (U8, I64) => format!("vec2<u32>({x}, 0u)"),
        (I64, F32) => format!("i64_to_f32({x})"),
        (I64, F16) => format!("round_f16(i64_to_f32({x}))"),
        (I64, I32) => format!("bitcast<i32>({x}.x)"),
        (I64, U8) => format!("{x}.x"),
        _ => x.to_string(),
    }
}
