//! CUDA C building blocks: how each dtype is stored, loaded and computed in, the helper library every
//! kernel starts with, and the expression of every elementwise op and cast, following the CPU
//! backend's definitions (NumPy's integer division and remainder, wrapping integer arithmetic,
//! NaN-propagating maximum, NumPy `astype` casts with single roundings to the half types).
//!
//! Compute types: `float` for `float32`, `float16` and `bfloat16` (the halves are storage types, held
//! as their 16 bits and converted on load and store), `double`, the C integer type of each width, and
//! `bool`. Integer arithmetic runs in the unsigned type of its width (or `unsigned int` for narrower
//! ones) and converts back, which wraps as two's complement.

use nabla_core::{BinaryOp, CompareOp, DType, Error, HostData, Result, Scalar, UnaryOp};
use std::fmt::Write;

/// The C type a buffer of `dtype` holds.
pub(crate) fn storage_ty(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::F16 | DType::BF16 | DType::U16 => "unsigned short",
        DType::I8 => "signed char",
        DType::I16 => "short",
        DType::I32 => "int",
        DType::I64 => "long long",
        DType::U8 | DType::Bool => "unsigned char",
        DType::U32 => "unsigned int",
        DType::U64 => "unsigned long long",
        DType::C64 | DType::C128 => "void",
    }
}

/// The C type values of `dtype` are computed in.
pub(crate) fn compute_ty(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => "float",
        DType::Bool => "bool",
        DType::U16 => "unsigned short",
        d => storage_ty(d),
    }
}

/// The unsigned type an integer of `dtype` wraps in: `unsigned long long` for 64-bit types,
/// `unsigned int` for the narrower ones (C promotes those to `int`, where wrapping is undefined).
pub(crate) fn wide_unsigned(dtype: DType) -> &'static str {
    if dtype.size_in_bytes() == 8 {
        "unsigned long long"
    } else {
        "unsigned int"
    }
}

/// The name suffix of the integer helpers of `dtype` (`i8`, `u64`, ...): its short name.
fn int_suffix(dtype: DType) -> &'static str {
    dtype.short_name()
}

/// An expression reading element `off` of the buffer `buf` (of `dtype`) as its compute type.
pub(crate) fn load(dtype: DType, buf: &str, off: &str) -> String {
    match dtype {
        DType::F16 => format!("h2f({buf}[{off}])"),
        DType::BF16 => format!("bf2f({buf}[{off}])"),
        DType::Bool => format!("({buf}[{off}] != 0)"),
        _ => format!("{buf}[{off}]"),
    }
}

/// An expression converting the compute-type value `val` to the storage type of `dtype`.
pub(crate) fn store(dtype: DType, val: &str) -> String {
    match dtype {
        DType::F16 => format!("f2h({val})"),
        DType::BF16 => format!("f2bf({val})"),
        DType::Bool => format!("(unsigned char)(({val}) ? 1 : 0)"),
        d => format!("({})({val})", storage_ty(d)),
    }
}

/// A literal of `value` converted to `dtype` (as [`nabla_core::Backend::full`] converts it), in the
/// compute type; floats by their bits, so that the value is exact.
pub(crate) fn literal(value: Scalar, dtype: DType) -> Result<String> {
    Ok(match HostData::filled(dtype, 1, value) {
        HostData::F32(v) => format!("__uint_as_float(0x{:08x}u)", v[0].to_bits()),
        HostData::F16(v) => format!("__uint_as_float(0x{:08x}u)", v[0].to_f32().to_bits()),
        HostData::BF16(v) => format!("__uint_as_float(0x{:08x}u)", v[0].to_f32().to_bits()),
        HostData::F64(v) => format!("__longlong_as_double(0x{:016x}ll)", v[0].to_bits()),
        HostData::Bool(v) => (if v[0] { "true" } else { "false" }).to_string(),
        HostData::I8(v) => format!("((signed char){})", v[0]),
        HostData::I16(v) => format!("((short){})", v[0]),
        HostData::I32(v) => format!("((int)0x{:x}u)", v[0] as u32),
        HostData::I64(v) => format!("((long long)0x{:x}ull)", v[0] as u64),
        HostData::U8(v) => format!("((unsigned char){}u)", v[0]),
        HostData::U16(v) => format!("((unsigned short){}u)", v[0]),
        HostData::U32(v) => format!("({}u)", v[0]),
        HostData::U64(v) => format!("({}ull)", v[0]),
        HostData::C64(_) | HostData::C128(_) => return Err(Error::dtype("literal", dtype)),
    })
}

/// The bits of `value` converted to `dtype`, as a fused kernel receives a constant (floats by their
/// bits; half types as the bits of their `float` value; integers sign- or zero-extended).
pub(crate) fn constant_bits(value: Scalar, dtype: DType) -> Result<u64> {
    Ok(match HostData::filled(dtype, 1, value) {
        HostData::F32(v) => v[0].to_bits().into(),
        HostData::F16(v) => v[0].to_f32().to_bits().into(),
        HostData::BF16(v) => v[0].to_f32().to_bits().into(),
        HostData::F64(v) => v[0].to_bits(),
        HostData::Bool(v) => v[0].into(),
        HostData::I8(v) => v[0] as i64 as u64,
        HostData::I16(v) => v[0] as i64 as u64,
        HostData::I32(v) => v[0] as i64 as u64,
        HostData::I64(v) => v[0] as u64,
        HostData::U8(v) => v[0].into(),
        HostData::U16(v) => v[0].into(),
        HostData::U32(v) => v[0].into(),
        HostData::U64(v) => v[0],
        HostData::C64(_) | HostData::C128(_) => return Err(Error::dtype("constant", dtype)),
    })
}

/// The expression reading constant `k` of `dtype` from the kernel's `Consts cs` argument.
pub(crate) fn constant_arg(dtype: DType, k: usize) -> String {
    let b = format!("cs.b[{k}]");
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => format!("__uint_as_float((unsigned int){b})"),
        DType::F64 => format!("__longlong_as_double((long long){b})"),
        DType::Bool => format!("({b} != 0ull)"),
        d => format!("(({}){b})", compute_ty(d)),
    }
}

/// The helper library: half conversions, careful float functions and the integer helpers of every
/// width.
pub(crate) fn prelude() -> &'static str {
    static PRELUDE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PRELUDE.get_or_init(|| {
        let mut s = String::from(FLOAT_PRELUDE);
        for dtype in DType::ALL.into_iter().filter(|d| d.is_int()) {
            s += &int_helpers(dtype);
        }
        s
    })
}

const FLOAT_PRELUDE: &str = r#"
#define DEV static __device__ __forceinline__
DEV float h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
DEV unsigned short f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
DEV float bf2f(unsigned short b) { return __uint_as_float(((unsigned int)b) << 16); }
DEV unsigned short f2bf(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}
DEV bool isnan_f(float x) { return x != x; }
DEV bool isnan_d(double x) { return x != x; }
DEV bool isfinite_f(float x) { return fabsf(x) <= 3.40282346638528859812e+38f; }
DEV bool isfinite_d(double x) { return fabs(x) <= 1.79769313486231570815e+308; }
DEV bool signbit_f(float x) { return (__float_as_uint(x) >> 31) != 0u; }
DEV bool signbit_d(double x) { return __double_as_longlong(x) < 0ll; }
/* Round to odd: the value truncated toward zero, with its last bit set when inexact. Rounding that
   again to a half type gives the correctly rounded half. */
DEV float d2f_odd(double v) {
    float f = __double2float_rz(v);
    if ((double)f != v && v == v) f = __uint_as_float(__float_as_uint(f) | 1u);
    return f;
}
DEV float ll2f_odd(long long v) {
    float f = __ll2float_rz(v);
    if ((long long)f != v) f = __uint_as_float(__float_as_uint(f) | 1u);
    return f;
}
DEV float ull2f_odd(unsigned long long v) {
    float f = __ull2float_rz(v);
    if ((unsigned long long)f != v) f = __uint_as_float(__float_as_uint(f) | 1u);
    return f;
}
DEV float max_f(float a, float b) { return (a >= b || a != a) ? a : b; }
DEV float min_f(float a, float b) { return (a <= b || a != a) ? a : b; }
DEV double max_d(double a, double b) { return (a >= b || a != a) ? a : b; }
DEV double min_d(double a, double b) { return (a <= b || a != a) ? a : b; }
DEV float sign_f(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x)); }
DEV double sign_d(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : (x == 0.0 ? 0.0 : x)); }
DEV float rem_f(float a, float b) {
    float m = fmodf(a, b);
    if (m == 0.0f) return copysignf(0.0f, b);
    return ((b < 0.0f) != (m < 0.0f)) ? m + b : m;
}
DEV double rem_d(double a, double b) {
    double m = fmod(a, b);
    if (m == 0.0) return copysign(0.0, b);
    return ((b < 0.0) != (m < 0.0)) ? m + b : m;
}
DEV float sigmoid_f(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float z = expf(x);
    return z / (1.0f + z);
}
DEV double sigmoid_d(double x) {
    if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
    double z = exp(x);
    return z / (1.0 + z);
}
DEV float nextafter_f(float a, float b) {
    if (a != a || b != b) return a + b;
    if (a == b) return b;
    if (a == 0.0f) return b > 0.0f ? __uint_as_float(1u) : __uint_as_float(0x80000001u);
    unsigned int u = __float_as_uint(a);
    return __uint_as_float(((a < b) == (a > 0.0f)) ? u + 1u : u - 1u);
}
DEV double nextafter_d(double a, double b) {
    if (a != a || b != b) return a + b;
    if (a == b) return b;
    if (a == 0.0) return b > 0.0 ? __longlong_as_double(1ll) : __longlong_as_double((long long)0x8000000000000001ull);
    long long u = __double_as_longlong(a);
    return __longlong_as_double(((a < b) == (a > 0.0)) ? u + 1 : u - 1);
}
"#;

/// The integer helpers of one dtype: wrapping arithmetic, NumPy's floor division and remainder,
/// powers, shifts and the saturating conversion from a float.
fn int_helpers(dtype: DType) -> String {
    let t = storage_ty(dtype);
    let s = int_suffix(dtype);
    let bits = dtype.size_in_bytes() * 8;
    let w = wide_unsigned(dtype);
    let signed = dtype.is_signed_int();
    let (min, max) = int_range(dtype);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"
DEV {t} neg_{s}({t} a) {{ return ({t})(({w})0 - ({w})a); }}
DEV {t} add_{s}({t} a, {t} b) {{ return ({t})(({w})a + ({w})b); }}
DEV {t} sub_{s}({t} a, {t} b) {{ return ({t})(({w})a - ({w})b); }}
DEV {t} mul_{s}({t} a, {t} b) {{ return ({t})(({w})a * ({w})b); }}
DEV {t} pow_{s}({t} base, {t} e) {{
    {neg_exp}
    {w} acc = 1, b = ({w})base;
    unsigned long long n = (unsigned long long)e;
    while (n) {{ if (n & 1ull) acc = acc * b; n >>= 1; if (n) b = b * b; }}
    return ({t})acc;
}}
DEV {t} f2i_{s}(double v) {{
    double t = trunc(v);
    if (t != t) return 0;
    if (t <= {min}) return ({t}){min_lit};
    if (t >= {max}) return ({t}){max_lit};
    return ({t})t;
}}
"#,
        neg_exp = if signed {
            format!(
                "if (e < 0) {{ if (base == 1) return 1; if (base == ({t})-1) return (e & 1) ? ({t})-1 : ({t})1; return 0; }}"
            )
        } else {
            String::new()
        },
        min = min.0,
        max = max.0,
        min_lit = min.1,
        max_lit = max.1,
    );
    if signed {
        let _ = write!(
            out,
            r#"
DEV {t} abs_{s}({t} a) {{ return a < 0 ? neg_{s}(a) : a; }}
DEV {t} floordiv_{s}({t} a, {t} b) {{
    if (b == 0) return 0;
    if (b == ({t})-1) return neg_{s}(a);
    {t} q = ({t})(a / b), r = ({t})(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? ({t})(q - 1) : q;
}}
DEV {t} rem_{s}({t} a, {t} b) {{
    if (b == 0 || b == ({t})-1) return 0;
    {t} r = ({t})(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? add_{s}(r, b) : r;
}}
DEV {t} shl_{s}({t} a, {t} b) {{ return (b < 0 || b >= {bits}) ? ({t})0 : ({t})(({w})a << b); }}
DEV {t} shr_{s}({t} a, {t} b) {{ return (b < 0 || b >= {bits}) ? (a < 0 ? ({t})-1 : ({t})0) : ({t})(a >> b); }}
"#
        );
    } else {
        let _ = write!(
            out,
            r#"
DEV {t} abs_{s}({t} a) {{ return a; }}
DEV {t} floordiv_{s}({t} a, {t} b) {{ return b == 0 ? ({t})0 : ({t})(a / b); }}
DEV {t} rem_{s}({t} a, {t} b) {{ return b == 0 ? ({t})0 : ({t})(a % b); }}
DEV {t} shl_{s}({t} a, {t} b) {{ return b >= {bits} ? ({t})0 : ({t})(({w})a << b); }}
DEV {t} shr_{s}({t} a, {t} b) {{ return b >= {bits} ? ({t})0 : ({t})(a >> b); }}
"#
        );
    }
    out
}

/// The smallest and largest values of an integer dtype: as a double bound for the saturating
/// conversion (values at or beyond it saturate) and as a C literal.
fn int_range(dtype: DType) -> ((String, String), (String, String)) {
    let (lo, hi): (i128, i128) = match dtype {
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::I64 => (i64::MIN.into(), i64::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::U32 => (0, u32::MAX.into()),
        _ => (0, u64::MAX.into()),
    };
    // The double nearest each bound: for 64-bit types the maximum rounds up to 2^63 or 2^64, which
    // no in-range value reaches after truncation, so `>=` still saturates exactly the values beyond.
    let bound = |v: i128| format!("{:.1}", v as f64);
    let lit = |v: i128| match dtype {
        DType::I64 => format!("0x{:x}ull", v as i64 as u64),
        DType::U64 => format!("0x{:x}ull", v as u64),
        _ => format!("{v}"),
    };
    ((bound(lo), lit(lo)), (bound(hi), lit(hi)))
}

/// The float suffix of helpers and whether the C math functions take the `f` form.
fn float_kind(dtype: DType) -> (&'static str, &'static str) {
    if dtype == DType::F64 {
        ("d", "")
    } else {
        ("f", "f")
    }
}

/// The expression of unary `op` on the compute value `x` of `dtype`.
pub(crate) fn unary(op: UnaryOp, dtype: DType, x: &str) -> Result<String> {
    use UnaryOp as U;
    if op.output_dtype(dtype).is_none() || dtype.is_complex() {
        return Err(Error::dtype(op.name(), dtype));
    }
    if dtype == DType::Bool {
        return Ok(format!("(!{x})"));
    }
    if dtype.is_int() {
        let s = int_suffix(dtype);
        let t = compute_ty(dtype);
        return Ok(match op {
            U::Neg => format!("neg_{s}({x})"),
            U::Abs => format!("abs_{s}({x})"),
            U::Sign if dtype.is_signed_int() => format!("({t})(({x} > 0) - ({x} < 0))"),
            U::Sign => format!("({t})({x} > 0)"),
            U::Square => format!("mul_{s}({x}, {x})"),
            U::Floor | U::Ceil | U::Round | U::Trunc | U::Conj | U::Real => x.to_string(),
            U::Imag => format!("({t})0"),
            U::IsNan => "false".to_string(),
            U::IsFinite => "true".to_string(),
            U::SignBit if dtype.is_signed_int() => format!("({x} < 0)"),
            U::SignBit => "false".to_string(),
            U::BitNot => format!("({t})(~{x})"),
            _ => return Err(Error::dtype(op.name(), dtype)),
        });
    }
    let (h, f) = float_kind(dtype);
    let one = if f.is_empty() { "1.0" } else { "1.0f" };
    Ok(match op {
        U::Neg => format!("(-{x})"),
        U::Abs => format!("fabs{f}({x})"),
        U::Sign => format!("sign_{h}({x})"),
        U::Recip => format!("({one} / {x})"),
        U::Square => format!("({x} * {x})"),
        U::Sqrt => format!("sqrt{f}({x})"),
        U::Rsqrt => format!("({one} / sqrt{f}({x}))"),
        U::Sigmoid => format!("sigmoid_{h}({x})"),
        U::Round => format!("rint{f}({x})"),
        U::Conj | U::Real => x.to_string(),
        U::Imag => format!("0.0{f}"),
        U::IsNan => format!("isnan_{h}({x})"),
        U::IsFinite => format!("isfinite_{h}({x})"),
        U::SignBit => format!("signbit_{h}({x})"),
        U::Exp
        | U::Expm1
        | U::Log
        | U::Log1p
        | U::Sin
        | U::Cos
        | U::Tan
        | U::Asin
        | U::Acos
        | U::Atan
        | U::Sinh
        | U::Cosh
        | U::Tanh
        | U::Asinh
        | U::Acosh
        | U::Atanh
        | U::Erf
        | U::Floor
        | U::Ceil
        | U::Trunc => {
            let name = match op {
                U::Exp => "exp",
                U::Expm1 => "expm1",
                U::Log => "log",
                U::Log1p => "log1p",
                U::Sin => "sin",
                U::Cos => "cos",
                U::Tan => "tan",
                U::Asin => "asin",
                U::Acos => "acos",
                U::Atan => "atan",
                U::Sinh => "sinh",
                U::Cosh => "cosh",
                U::Tanh => "tanh",
                U::Asinh => "asinh",
                U::Acosh => "acosh",
                U::Atanh => "atanh",
                U::Erf => "erf",
                U::Floor => "floor",
                U::Ceil => "ceil",
                _ => "trunc",
            };
            format!("{name}{f}({x})")
        }
        U::Not | U::BitNot => return Err(Error::dtype(op.name(), dtype)),
    })
}

/// The expression of binary `op` on compute values `a` and `b` of `dtype`.
pub(crate) fn binary(op: BinaryOp, dtype: DType, a: &str, b: &str) -> Result<String> {
    use BinaryOp as B;
    if !op.supports(dtype) || dtype.is_complex() {
        return Err(Error::dtype(op.name(), dtype));
    }
    if dtype == DType::Bool {
        return Ok(match op {
            B::Add | B::Maximum | B::Or | B::BitOr => format!("({a} || {b})"),
            B::Mul | B::Minimum | B::And | B::BitAnd => format!("({a} && {b})"),
            B::Xor | B::BitXor => format!("({a} != {b})"),
            _ => return Err(Error::dtype(op.name(), dtype)),
        });
    }
    if dtype.is_int() {
        let s = int_suffix(dtype);
        let t = compute_ty(dtype);
        return Ok(match op {
            B::Add => format!("add_{s}({a}, {b})"),
            B::Sub => format!("sub_{s}({a}, {b})"),
            B::Mul => format!("mul_{s}({a}, {b})"),
            B::Div => format!("floordiv_{s}({a}, {b})"),
            B::Rem => format!("rem_{s}({a}, {b})"),
            B::Pow => format!("pow_{s}({a}, {b})"),
            B::Maximum => format!("({a} >= {b} ? {a} : {b})"),
            B::Minimum => format!("({a} <= {b} ? {a} : {b})"),
            B::BitAnd => format!("({t})({a} & {b})"),
            B::BitOr => format!("({t})({a} | {b})"),
            B::BitXor => format!("({t})({a} ^ {b})"),
            B::ShiftLeft => format!("shl_{s}({a}, {b})"),
            B::ShiftRight => format!("shr_{s}({a}, {b})"),
            _ => return Err(Error::dtype(op.name(), dtype)),
        });
    }
    let (h, f) = float_kind(dtype);
    Ok(match op {
        B::Add => format!("({a} + {b})"),
        B::Sub => format!("({a} - {b})"),
        B::Mul => format!("({a} * {b})"),
        B::Div => format!("({a} / {b})"),
        B::Rem => format!("rem_{h}({a}, {b})"),
        B::Pow => format!("pow{f}({a}, {b})"),
        B::Maximum => format!("max_{h}({a}, {b})"),
        B::Minimum => format!("min_{h}({a}, {b})"),
        B::Atan2 => format!("atan2{f}({a}, {b})"),
        B::NextAfter => format!("nextafter_{h}({a}, {b})"),
        _ => return Err(Error::dtype(op.name(), dtype)),
    })
}

/// The expression of comparison `op` on compute values of `dtype` (IEEE for floats).
pub(crate) fn compare(op: CompareOp, dtype: DType, a: &str, b: &str) -> Result<String> {
    if !op.supports(dtype) || dtype.is_complex() {
        return Err(Error::dtype(op.name(), dtype));
    }
    let sym = match op {
        CompareOp::Eq => "==",
        CompareOp::Ne => "!=",
        CompareOp::Lt => "<",
        CompareOp::Le => "<=",
        CompareOp::Gt => ">",
        CompareOp::Ge => ">=",
    };
    Ok(format!("({a} {sym} {b})"))
}

/// The expression converting the compute value `x` of `from` to the compute type of `to` (NumPy
/// `astype`, see `nabla_core::CastFrom`). A value cast to a half type is rounded to it here, not
/// only when stored, so that a fused kernel's later steps see the rounded value as the CPU's do.
pub(crate) fn cast(from: DType, to: DType, x: &str) -> Result<String> {
    crate::storage::check_dtype("cast", from)?;
    crate::storage::check_dtype("cast", to)?;
    if from == to {
        return Ok(x.to_string());
    }
    let wide = cast_to_compute(from, to, x);
    Ok(match to {
        DType::F16 => format!("h2f(f2h({wide}))"),
        DType::BF16 => format!("bf2f(f2bf({wide}))"),
        _ => wide,
    })
}

/// [`cast`] before the rounding to a half type: the value in `to`'s compute type.
fn cast_to_compute(from: DType, to: DType, x: &str) -> String {
    let float = |d: DType| d.is_float() || d.is_half();
    match (from, to) {
        (_, DType::Bool) => format!("({x} != 0)"),
        (DType::Bool, DType::F64) => format!("({x} ? 1.0 : 0.0)"),
        (DType::Bool, t) if float(t) => format!("({x} ? 1.0f : 0.0f)"),
        (DType::Bool, t) => format!("({})({x} ? 1 : 0)", compute_ty(t)),
        // float32, float16 and bfloat16 share the compute type `float`; the store rounds.
        (f, t) if float(f) && float(t) && f != DType::F64 && t != DType::F64 => x.to_string(),
        (DType::F64, t) if t.is_half() => format!("d2f_odd({x})"),
        (f, t) if float(f) && float(t) => format!("({})({x})", compute_ty(t)),
        (f, t) if float(f) => format!("f2i_{}((double)({x}))", int_suffix(t)),
        (f, t) if t.is_half() && f.size_in_bytes() >= 4 => {
            if f.is_signed_int() {
                format!("ll2f_odd((long long)({x}))")
            } else {
                format!("ull2f_odd((unsigned long long)({x}))")
            }
        }
        (_, t) => format!("({})({x})", compute_ty(t)),
    }
}
