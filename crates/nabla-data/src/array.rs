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

/// Decodes `bytes` (a whole number of elements of `dtype`) that start at byte `offset` of the input
/// `name`.
pub(crate) fn decode(
    dtype: DType,
    bytes: Vec<u8>,
    big_endian: bool,
    name: &str,
    offset: usize,
) -> Result<HostData> {
    Ok(match dtype {
        // Bytes are kept as they are, without a copy.
        DType::U8 => HostData::U8(bytes),
        DType::I8 => HostData::I8(bytes.iter().map(|&b| b as i8).collect()),
        DType::I16 => HostData::I16(decode_endian!(&bytes, big_endian, i16)),
        DType::U16 => HostData::U16(decode_endian!(&bytes, big_endian, u16)),
        DType::U32 => HostData::U32(decode_endian!(&bytes, big_endian, u32)),
        DType::U64 => HostData::U64(decode_endian!(&bytes, big_endian, u64)),
        DType::I32 => HostData::I32(decode_endian!(&bytes, big_endian, i32)),
        DType::I64 => HostData::I64(decode_endian!(&bytes, big_endian, i64)),
        DType::F16 => HostData::F16(decode_endian!(&bytes, big_endian, f16)),
        DType::F32 => HostData::F32(decode_endian!(&bytes, big_endian, f32)),
        DType::F64 => HostData::F64(decode_endian!(&bytes, big_endian, f64)),
        DType::Bool => {
            if let Some(i) = bytes.iter().position(|&b| b > 1) {
                return Err(bad_input(
                    name,
                    offset + i,
                    format!("a boolean element has byte value {} (not 0 or 1)", bytes[i]),
                ));
            }
            HostData::Bool(bytes.iter().map(|&b| b == 1).collect())
        }
        DType::BF16 | DType::C64 | DType::C128 => {
            return Err(bad_input(
                name,
                offset,
                format!("no reader of this file format holds {dtype} elements"),
            ));
        }
    })
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
    dtype: DType,
    name: &str,
    offset: usize,
    op: &'static str,
) -> Result<usize> {
    if let Ok(numel) = check_allocation(op, shape, dtype) {
        // Cannot overflow: the decoded size was checked.
        return Ok(numel * dtype.size_in_bytes());
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
