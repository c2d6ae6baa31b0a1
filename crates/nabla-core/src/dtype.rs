//! Runtime element types.

use std::fmt;

/// The element type of a tensor, chosen at run time.
///
/// `F16` and `BF16` are storage types: they can be created, moved, viewed and cast, while arithmetic on
/// them reports [`crate::Error::UnsupportedDType`] (cast to `F32` first).
///
/// ```
/// use nabla_core::DType;
/// assert_eq!(DType::F32.size_in_bytes(), 4);
/// assert!(DType::C64.is_complex());
/// assert_eq!(DType::C128.real(), DType::F64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// IEEE half precision (the backends store and cast it; tensor ops compute it in float32).
    F16,
    /// bfloat16 (the backends store and cast it; tensor ops compute it in float32).
    BF16,
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// Complex number with two `f32` parts.
    C64,
    /// Complex number with two `f64` parts.
    C128,
    /// 8-bit signed integer.
    I8,
    /// 16-bit signed integer.
    I16,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// 8-bit unsigned integer.
    U8,
    /// 16-bit unsigned integer.
    U16,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit unsigned integer.
    U64,
    /// Boolean.
    Bool,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 15] = [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::Bool,
    ];

    /// Bytes per element.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// Lower-case name as NumPy spells it (`float32`, `complex64`, `bool`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::Bool => "bool",
        }
    }

    /// The short name program dumps use (`"f32"`, `"i64"`, `"bool"`, ...).
    pub fn short_name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C64 => "c64",
            DType::C128 => "c128",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::Bool => "bool",
        }
    }

    /// Parses a NumPy-style name (`"float32"`, `"f32"`, `"int64"`, `"bool"`, ...).
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "float16" | "f16" | "half" => DType::F16,
            "bfloat16" | "bf16" => DType::BF16,
            "float32" | "f32" | "float" => DType::F32,
            "float64" | "f64" | "double" => DType::F64,
            "complex64" | "c64" => DType::C64,
            "complex128" | "c128" => DType::C128,
            "int8" | "i8" => DType::I8,
            "int16" | "i16" | "short" => DType::I16,
            "int32" | "i32" => DType::I32,
            "int64" | "i64" | "long" => DType::I64,
            "uint8" | "u8" => DType::U8,
            "uint16" | "u16" => DType::U16,
            "uint32" | "u32" => DType::U32,
            "uint64" | "u64" => DType::U64,
            "bool" => DType::Bool,
            _ => return None,
        })
    }

    /// `true` for every floating-point type, half precision included.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// `true` for the half-precision types (float16, bfloat16), which backend kernels store and
    /// cast but do not compute in.
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// `true` for complex types.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// `true` for integer types (bool excluded).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    /// `true` for the signed integer types.
    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// `true` for the unsigned integer types.
    pub fn is_unsigned_int(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    /// The signed integer type of `bytes` bytes (1, 2, 4 or 8).
    fn signed_of_size(bytes: usize) -> Option<DType> {
        DType::ALL
            .into_iter()
            .find(|d| d.is_signed_int() && d.size_in_bytes() == bytes)
    }

    /// `true` for the boolean type.
    pub fn is_bool(self) -> bool {
        self == DType::Bool
    }

    /// `true` for dtypes that carry derivatives (real and complex floats).
    pub fn is_differentiable(self) -> bool {
        self.is_float() || self.is_complex()
    }

    /// `true` for dtypes the backends' kernels compute in (everything but the half-precision types,
    /// which tensor ops compute in float32).
    pub fn is_computable(self) -> bool {
        !self.is_half()
    }

    /// The real counterpart of a complex type (`C64 -> F32`, `C128 -> F64`); other types map to themselves.
    pub fn real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }

    /// The complex counterpart of a real float type (`F32 -> C64`, `F64 -> C128`), if there is one.
    pub fn complex(self) -> Option<DType> {
        match self {
            DType::F32 | DType::C64 => Some(DType::C64),
            DType::F64 | DType::C128 => Some(DType::C128),
            _ => None,
        }
    }

    /// The float dtype that real-valued math (special functions, real FFTs) computes in for input of
    /// this dtype, as PyTorch promotes: `f32` and `f64` as they are, `f16`, `bf16`, integers and bool
    /// as `f32`; `None` for complex types.
    ///
    /// ```
    /// use nabla_core::DType;
    /// assert_eq!(DType::I64.real_float(), Some(DType::F32));
    /// assert_eq!(DType::F64.real_float(), Some(DType::F64));
    /// assert_eq!(DType::C64.real_float(), None);
    /// ```
    pub fn real_float(self) -> Option<DType> {
        match self {
            DType::F64 => Some(DType::F64),
            DType::C64 | DType::C128 => None,
            // The half floats, f32, every integer and bool.
            _ => Some(DType::F32),
        }
    }

    /// The kind of a dtype in the promotion lattice: bool (0) < integer (1) < float (2) < complex (3).
    pub fn category(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => 2,
            DType::C64 | DType::C128 => 3,
            // Every integer type.
            _ => 1,
        }
    }

    /// The order of a dtype within its category (wider is larger; `f16` and `bf16` tie, and a complex
    /// type ranks with its parts).
    fn width(self) -> usize {
        self.real().size_in_bytes()
    }

    /// The type two integer types of different signedness combine to: the signed one when it is
    /// wider, else the signed type twice the unsigned one's width; `uint64` with a signed type has no
    /// integer type holding both and gives `float64`, as in NumPy and JAX.
    fn promote_mixed_sign(unsigned: DType, signed: DType) -> DType {
        if signed.size_in_bytes() > unsigned.size_in_bytes() {
            return signed;
        }
        DType::signed_of_size(2 * unsigned.size_in_bytes()).unwrap_or(DType::F64)
    }

    /// The dtype two tensors of these dtypes combine to, PyTorch's promotion (`torch.promote_types`;
    /// JAX's lattice agrees on every pair nabla has): the higher category wins (bool < integer <
    /// float < complex), then the wider type; `f16` with `bf16` gives `f32`; a float with a complex
    /// type gives the complex type wide enough for both (`f64` with `complex64` is `complex128`).
    ///
    /// Integers of one signedness give the wider; a signed and an unsigned type give the signed type
    /// that holds both (`int8` with `uint8` is `int16`, `int32` with `uint32` is `int64`), and
    /// `uint64` with a signed type gives `float64` (NumPy's and JAX's rule; PyTorch refuses these
    /// pairs).
    ///
    /// | | bool | u8 | i32 | i64 | f16 | bf16 | f32 | f64 | c64 | c128 |
    /// |---|---|---|---|---|---|---|---|---|---|---|
    /// | **i8** | i8 | i16 | i32 | i64 | f16 | bf16 | f32 | f64 | c64 | c128 |
    /// | **u8** | u8 | u8 | i32 | i64 | f16 | bf16 | f32 | f64 | c64 | c128 |
    /// | **u32** | u32 | u32 | i64 | i64 | f16 | bf16 | f32 | f64 | c64 | c128 |
    /// | **u64** | u64 | u64 | f64 | f64 | f16 | bf16 | f32 | f64 | c64 | c128 |
    /// | **i64** | i64 | i64 | i64 | i64 | f16 | bf16 | f32 | f64 | c64 | c128 |
    /// | **f16** | f16 | f16 | f16 | f16 | f16 | f32 | f32 | f64 | c64 | c128 |
    /// | **f32** | f32 | f32 | f32 | f32 | f32 | f32 | f32 | f64 | c64 | c128 |
    /// | **f64** | f64 | f64 | f64 | f64 | f64 | f64 | f64 | f64 | c128 | c128 |
    /// | **c64** | c64 | c64 | c64 | c64 | c64 | c64 | c64 | c128 | c64 | c128 |
    ///
    /// ```
    /// use nabla_core::DType;
    /// assert_eq!(DType::F32.promote(DType::F64), DType::F64);
    /// assert_eq!(DType::I64.promote(DType::F32), DType::F32);
    /// assert_eq!(DType::F64.promote(DType::C64), DType::C128);
    /// assert_eq!(DType::F16.promote(DType::BF16), DType::F32);
    /// assert_eq!(DType::Bool.promote(DType::U8), DType::U8);
    /// assert_eq!(DType::I8.promote(DType::U8), DType::I16);
    /// assert_eq!(DType::U64.promote(DType::I8), DType::F64);
    /// ```
    pub fn promote(self, other: DType) -> DType {
        if self == other {
            return self;
        }
        if matches!(
            (self, other),
            (DType::F16, DType::BF16) | (DType::BF16, DType::F16)
        ) {
            return DType::F32;
        }
        match (self.is_unsigned_int(), other.is_unsigned_int()) {
            (true, false) if other.is_signed_int() => {
                return DType::promote_mixed_sign(self, other);
            }
            (false, true) if self.is_signed_int() => return DType::promote_mixed_sign(other, self),
            _ => {}
        }
        let (high, low) = if (self.category(), self.width()) >= (other.category(), other.width()) {
            (self, other)
        } else {
            (other, self)
        };
        if high.category() == 3 && low.category() == 2 && low.width() > high.width() {
            // A float wider than the complex type's parts: the wider complex type.
            return DType::C128;
        }
        high
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for dt in DType::ALL {
            assert_eq!(DType::from_name(dt.name()), Some(dt));
            assert_eq!(DType::from_name(dt.short_name()), Some(dt));
        }
        assert_eq!(DType::from_name("nope"), None);
    }

    #[test]
    fn categories_are_disjoint() {
        for dt in DType::ALL {
            let n = [dt.is_float(), dt.is_complex(), dt.is_int(), dt.is_bool()]
                .iter()
                .filter(|b| **b)
                .count();
            assert_eq!(n, 1, "{dt}");
        }
    }
}
