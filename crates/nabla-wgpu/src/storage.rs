//! Device buffers and their host encoding.
//!
//! Every element lives in 32-bit words so that one shader template reads every dtype from an
//! `array<u32>`: `f32` and `i32` as their bits, `u8` and `bool` as one word each (0..=255, 0 or 1),
//! `f16` widened to its exact `f32` value (so no `SHADER_F16` feature is needed; every cast into `f16`
//! rounds to the nearest `f16`), and `i64` as two words, low then high (WGSL has no 64-bit integers).
//! `f64`, `bf16` and the complex types are not supported.

use crate::context::Ctx;
use half::f16;
use nabla_core::{DType, Error, HostData, Result};
use std::fmt;
use std::sync::Arc;

/// A handle to a buffer on a wgpu device: cheap to clone, returned to the device's pool when the last
/// handle is dropped.
#[derive(Clone)]
pub struct WgpuStorage {
    inner: Arc<Inner>,
}

struct Inner {
    buffer: Option<wgpu::Buffer>,
    ctx: Arc<Ctx>,
    dtype: DType,
    len: usize,
    /// For `i64` buffers: known lower and upper bounds of every value, when the producer knows them
    /// (uploads, and kernels that write positions). Index-consuming kernels skip their device-side
    /// range check when the bounds already prove every index valid.
    bounds: Bounds,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            self.ctx.recycle(b);
        }
    }
}

/// Two handles are equal when they share one device buffer (a view or a clone), whatever its contents.
impl PartialEq for WgpuStorage {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for WgpuStorage {}

impl fmt::Debug for WgpuStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WgpuStorage")
            .field("dtype", &self.inner.dtype)
            .field("len", &self.inner.len)
            .finish()
    }
}

impl WgpuStorage {
    pub(crate) fn new(ctx: &Arc<Ctx>, buffer: wgpu::Buffer, dtype: DType, len: usize) -> Self {
        WgpuStorage {
            inner: Arc::new(Inner {
                buffer: Some(buffer),
                ctx: ctx.clone(),
                dtype,
                len,
                bounds: None,
            }),
        }
    }

    /// Marks an `i64` buffer whose values all lie in `lo..=hi`.
    pub(crate) fn with_bounds(self, lo: i64, hi: i64) -> Self {
        match Arc::try_unwrap(self.inner) {
            Ok(mut inner) => {
                inner.bounds = Some((lo, hi));
                WgpuStorage {
                    inner: Arc::new(inner),
                }
            }
            Err(inner) => WgpuStorage { inner },
        }
    }

    /// The wgpu buffer.
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        self.inner
            .buffer
            .as_ref()
            .unwrap_or_else(|| unreachable!("a live storage always holds its buffer"))
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// `true` when the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// Known value bounds of an `i64` buffer.
    pub(crate) fn bounds(&self) -> Bounds {
        self.inner.bounds
    }
}

/// 32-bit words per element of `dtype`.
pub(crate) fn words_per(dtype: DType) -> usize {
    if dtype == DType::I64 { 2 } else { 1 }
}

/// The error for a dtype this backend cannot hold.
pub(crate) fn unsupported(op: &'static str, dtype: DType) -> Error {
    Error::dtype(op, dtype).with_hint(format!(
        "the wgpu backend does not support {dtype} ({op}); it holds float32, float16, int32, int64, \
         uint8 and bool (cast on the CPU first)"
    ))
}

/// Fails with a clear message for the dtypes this backend cannot hold.
pub(crate) fn check_dtype(op: &'static str, dtype: DType) -> Result<()> {
    match dtype {
        DType::F32 | DType::F16 | DType::I32 | DType::I64 | DType::U8 | DType::Bool => Ok(()),
        DType::F64
        | DType::BF16
        | DType::C64
        | DType::C128
        | DType::I8
        | DType::I16
        | DType::U16
        | DType::U32
        | DType::U64 => Err(unsupported(op, dtype)),
    }
}

/// Known lower and upper bounds of the values of an `i64` buffer.
pub(crate) type Bounds = Option<(i64, i64)>;

/// Encodes host data as 32-bit words; also returns the value bounds of `i64` data.
pub(crate) fn host_to_words(data: &HostData) -> Result<(Vec<u32>, Bounds)> {
    Ok(match data {
        HostData::F32(v) => (v.iter().map(|x| x.to_bits()).collect(), None),
        HostData::F16(v) => (v.iter().map(|x| x.to_f32().to_bits()).collect(), None),
        HostData::I32(v) => (v.iter().map(|&x| x as u32).collect(), None),
        HostData::U8(v) => (v.iter().map(|&x| x as u32).collect(), None),
        HostData::Bool(v) => (v.iter().map(|&x| x as u32).collect(), None),
        HostData::I64(v) => {
            let bounds = v
                .iter()
                .fold(None, |acc: Option<(i64, i64)>, &x| match acc {
                    None => Some((x, x)),
                    Some((lo, hi)) => Some((lo.min(x), hi.max(x))),
                });
            let words = v
                .iter()
                .flat_map(|&x| [x as u64 as u32, ((x as u64) >> 32) as u32])
                .collect();
            (words, bounds)
        }
        other => return Err(unsupported("upload", other.dtype())),
    })
}

/// Decodes `words` holding elements of `dtype`.
pub(crate) fn words_to_host(dtype: DType, words: &[u32]) -> Result<HostData> {
    Ok(match dtype {
        DType::F32 => HostData::F32(words.iter().map(|&w| f32::from_bits(w)).collect()),
        DType::F16 => HostData::F16(
            words
                .iter()
                .map(|&w| f16::from_f32(f32::from_bits(w)))
                .collect(),
        ),
        DType::I32 => HostData::I32(words.iter().map(|&w| w as i32).collect()),
        DType::U8 => HostData::U8(words.iter().map(|&w| w as u8).collect()),
        DType::Bool => HostData::Bool(words.iter().map(|&w| w != 0).collect()),
        DType::I64 => HostData::I64(
            words
                .chunks_exact(2)
                .map(|c| ((c[1] as u64) << 32 | c[0] as u64) as i64)
                .collect(),
        ),
        other => return Err(unsupported("read", other)),
    })
}
