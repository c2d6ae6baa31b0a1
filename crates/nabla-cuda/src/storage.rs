//! [`CudaStorage`]: a handle to a device buffer of one dtype, and the byte images of host data that
//! uploads and reads move.

use crate::memory::DeviceBlock;
use nabla_core::{DType, Error, HostData, Result};
use std::fmt;
use std::sync::Arc;

/// A buffer on a CUDA device: `len` elements of `dtype`, row-major. Cloning shares the buffer; two
/// handles are equal when they are clones of one buffer.
#[derive(Clone)]
pub struct CudaStorage {
    pub(crate) block: Arc<DeviceBlock>,
    pub(crate) dtype: DType,
    pub(crate) len: usize,
}

impl CudaStorage {
    /// Dtype of the elements.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` for a buffer of no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of element 0 (for DLPack and foreign kernels).
    pub fn device_ptr(&self) -> u64 {
        self.block.ptr
    }
}

impl PartialEq for CudaStorage {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.block, &other.block)
    }
}

impl fmt::Debug for CudaStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CudaStorage({} x {}, {:#x})",
            self.len, self.dtype, self.block.ptr
        )
    }
}

/// The dtypes this backend holds; complex types are not yet among them.
pub(crate) fn check_dtype(op: &'static str, dtype: DType) -> Result<()> {
    if dtype.is_complex() {
        return Err(complex_refused(op, dtype));
    }
    Ok(())
}

/// The error for a complex dtype, which the backend does not hold.
fn complex_refused(op: &'static str, dtype: DType) -> Error {
    Error::dtype(op, dtype)
        .with_hint("the CUDA backend does not hold complex tensors yet; use the CPU backend")
}

/// The bytes of `data` as the device stores them (bools as one byte, 0 or 1).
pub(crate) fn host_bytes(data: &HostData) -> Result<&[u8]> {
    fn bytes_of<T>(v: &[T]) -> &[u8] {
        // SAFETY: every element type below is plain data without padding (bool is one byte, 0 or 1).
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
    }
    Ok(match data {
        HostData::F32(v) => bytes_of(v),
        HostData::F64(v) => bytes_of(v),
        HostData::F16(v) => bytes_of(v),
        HostData::BF16(v) => bytes_of(v),
        HostData::I8(v) => bytes_of(v),
        HostData::I16(v) => bytes_of(v),
        HostData::I32(v) => bytes_of(v),
        HostData::I64(v) => bytes_of(v),
        HostData::U8(v) => bytes_of(v),
        HostData::U16(v) => bytes_of(v),
        HostData::U32(v) => bytes_of(v),
        HostData::U64(v) => bytes_of(v),
        HostData::Bool(v) => bytes_of(v),
        HostData::C64(_) | HostData::C128(_) => {
            return Err(complex_refused("upload", data.dtype()));
        }
    })
}

/// Host data of `dtype` from the bytes the device stored.
pub(crate) fn from_bytes(dtype: DType, bytes: &[u8]) -> Result<HostData> {
    fn vec_of<T: Copy + Default>(bytes: &[u8]) -> Vec<T> {
        let n = bytes.len() / std::mem::size_of::<T>();
        let mut out = vec![T::default(); n];
        // SAFETY: `out` has room for `n` elements of plain data, which any bit pattern is.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                out.as_mut_ptr().cast::<u8>(),
                n * std::mem::size_of::<T>(),
            )
        };
        out
    }
    Ok(match dtype {
        DType::F32 => HostData::F32(vec_of(bytes)),
        DType::F64 => HostData::F64(vec_of(bytes)),
        DType::F16 => HostData::F16(vec_of(bytes)),
        DType::BF16 => HostData::BF16(vec_of(bytes)),
        DType::I8 => HostData::I8(vec_of(bytes)),
        DType::I16 => HostData::I16(vec_of(bytes)),
        DType::I32 => HostData::I32(vec_of(bytes)),
        DType::I64 => HostData::I64(vec_of(bytes)),
        DType::U8 => HostData::U8(vec_of(bytes)),
        DType::U16 => HostData::U16(vec_of(bytes)),
        DType::U32 => HostData::U32(vec_of(bytes)),
        DType::U64 => HostData::U64(vec_of(bytes)),
        DType::Bool => HostData::Bool(bytes.iter().map(|&b| b != 0).collect()),
        DType::C64 | DType::C128 => return Err(complex_refused("read", dtype)),
    })
}
