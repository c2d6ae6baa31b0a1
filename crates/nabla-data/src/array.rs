//! A host-side n-dimensional array: what the file readers return before upload to a device.

use crate::source::bad_input;
use nabla_core::half::f16;
use nabla_core::{
    Backend, DType, Element, HostData, Result, check_allocation, max_allocation_bytes,
    with_host_data,
};
use nabla_tensor::Tensor;

/// An array read from a file: its shape and its elements in row-major (C) order.
///
/// ```
/// use nabla_core::HostData;
/// use nabla_data::HostArray;
/// let a = HostArray { shape: vec![2, 2], data: HostData::U8(vec![1, 2, 3, 4]) };
/// let t = a.into_tensor(&nabla_cpu::CpuBackend::new())?;
/// assert_eq!(t.shape(), &[2, 2]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HostArray {
    /// The dimensions.
    pub shape: Vec<usize>,
    /// The elements, row-major.
    pub data: HostData,
}

impl HostArray {
    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// Uploads the array to `backend` as a tensor of the same shape and dtype.
    pub fn into_tensor<B: Backend>(self, backend: &B) -> Result<Tensor<B>> {
        Tensor::from_host(self.data, self.shape, backend)
    }
}

/// Element types the binary readers decode. Types without a nabla dtype widen exactly: `i8`, `i16`
/// and `u16` to `i32`, `u32` to `i64`; `u64` becomes `i64` (a value over `i64::MAX` is an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Elem {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    F32,
    F64,
    Bool,
}

/// Decodes fixed-size chunks with `f`.
fn decode_with<T, const N: usize>(bytes: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            f(a)
        })
        .collect()
}

/// Picks the big- or little-endian decoder of a numeric type.
macro_rules! decode_endian {
    ($bytes:expr, $big:expr, $t:ty) => {
        if $big {
            decode_with($bytes, <$t>::from_be_bytes)
        } else {
            decode_with($bytes, <$t>::from_le_bytes)
        }
    };
}

impl Elem {
    /// Bytes per element.
    pub(crate) fn size(self) -> usize {
        match self {
            Elem::U8 | Elem::I8 | Elem::Bool => 1,
            Elem::I16 | Elem::U16 | Elem::F16 => 2,
            Elem::I32 | Elem::U32 | Elem::F32 => 4,
            Elem::I64 | Elem::U64 | Elem::F64 => 8,
        }
    }

    /// The dtype the elements decode to (see [`Elem`] for the widened ones).
    pub(crate) fn dtype(self) -> DType {
        match self {
            Elem::U8 => DType::U8,
            Elem::I8 | Elem::I16 | Elem::U16 | Elem::I32 => DType::I32,
            Elem::I64 | Elem::U32 | Elem::U64 => DType::I64,
            Elem::F16 => DType::F16,
            Elem::F32 => DType::F32,
            Elem::F64 => DType::F64,
            Elem::Bool => DType::Bool,
        }
    }

    /// Decodes `bytes` (a whole number of elements) that start at byte `offset` of the input `name`.
    pub(crate) fn decode(
        self,
        bytes: Vec<u8>,
        big_endian: bool,
        name: &str,
        offset: usize,
    ) -> Result<HostData> {
        Ok(match self {
            // Bytes are kept as they are, without a copy.
            Elem::U8 => HostData::U8(bytes),
            Elem::I8 => HostData::I32(bytes.iter().map(|&b| b as i8 as i32).collect()),
            Elem::I16 => {
                let v: Vec<i16> = decode_endian!(&bytes, big_endian, i16);
                HostData::I32(v.into_iter().map(i32::from).collect())
            }
            Elem::U16 => {
                let v: Vec<u16> = decode_endian!(&bytes, big_endian, u16);
                HostData::I32(v.into_iter().map(i32::from).collect())
            }
            Elem::U32 => {
                let v: Vec<u32> = decode_endian!(&bytes, big_endian, u32);
                HostData::I64(v.into_iter().map(i64::from).collect())
            }
            Elem::U64 => HostData::I64(decode_u64(&bytes, big_endian, name, offset)?),
            Elem::I32 => HostData::I32(decode_endian!(&bytes, big_endian, i32)),
            Elem::I64 => HostData::I64(decode_endian!(&bytes, big_endian, i64)),
            Elem::F16 => HostData::F16(decode_endian!(&bytes, big_endian, f16)),
            Elem::F32 => HostData::F32(decode_endian!(&bytes, big_endian, f32)),
            Elem::F64 => HostData::F64(decode_endian!(&bytes, big_endian, f64)),
            Elem::Bool => {
                if let Some(i) = bytes.iter().position(|&b| b > 1) {
                    return Err(bad_input(
                        name,
                        offset + i,
                        format!("a boolean element has byte value {} (not 0 or 1)", bytes[i]),
                    ));
                }
                HostData::Bool(bytes.iter().map(|&b| b == 1).collect())
            }
        })
    }
}

/// Decodes `u64` elements as `i64`: exact up to `i64::MAX`, and an error naming the element above.
fn decode_u64(bytes: &[u8], big_endian: bool, name: &str, offset: usize) -> Result<Vec<i64>> {
    let v: Vec<u64> = decode_endian!(bytes, big_endian, u64);
    v.into_iter()
        .enumerate()
        .map(|(i, x)| {
            i64::try_from(x).map_err(|_| {
                bad_input(
                    name,
                    offset + 8 * i,
                    format!(
                        "a uint64 element is {x}, over the largest int64 ({})",
                        i64::MAX
                    ),
                )
            })
        })
        .collect()
}

/// The elements `range` of `data`, copied.
pub(crate) fn slice_host(data: &HostData, range: std::ops::Range<usize>) -> HostData {
    with_host_data!(data, v => Element::into_host(v[range].to_vec()))
}

/// `shape` for an error message: in full up to rank 8, else its first and last dimensions and its rank.
pub(crate) fn short_shape(shape: &[usize]) -> String {
    if shape.len() <= 8 {
        return format!("{shape:?}");
    }
    let head: Vec<String> = shape[..4].iter().map(usize::to_string).collect();
    let tail: Vec<String> = shape[shape.len() - 2..]
        .iter()
        .map(usize::to_string)
        .collect();
    format!(
        "[{}, …, {}] (rank {})",
        head.join(", "),
        tail.join(", "),
        shape.len()
    )
}

/// The byte size of the data of `shape`, read by `op` from the input `name` whose header ends at
/// `offset`: an error naming the input when the element count overflows or the decoded array would
/// exceed the allocation limit ([`nabla_core::check_allocation`]), so a header declaring a huge
/// shape is refused before anything is read or allocated.
pub(crate) fn checked_size(
    shape: &[usize],
    elem: Elem,
    name: &str,
    offset: usize,
    op: &'static str,
) -> Result<usize> {
    let dtype = elem.dtype();
    if let Ok(numel) = check_allocation(op, shape, dtype) {
        // Cannot overflow: the decoded size, at least as large, was checked.
        return Ok(numel * elem.size());
    }
    let bytes = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .and_then(|n| n.checked_mul(dtype.size_in_bytes()));
    let needs = match bytes {
        Some(bytes) => format!("needs {bytes} bytes"),
        None => "needs more bytes than a usize can count".to_string(),
    };
    Err(bad_input(
        name,
        offset,
        format!(
            "the header declares shape {} of {dtype}, which {needs}, over the allocation limit of \
             {} bytes (NABLA_MAX_ALLOC_BYTES or nabla_core::set_max_allocation_bytes raises it)",
            short_shape(shape),
            max_allocation_bytes()
        ),
    ))
}
