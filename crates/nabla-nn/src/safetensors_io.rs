//! Tensors on disk in the safetensors format (what `safetensors.torch.save_file(model.state_dict())`
//! writes), with atomic writes: a file is written next to its destination, flushed, then renamed over
//! it, so a crash or a full disk never leaves a half-written file under the real name.

use crate::module::Module;
use crate::state::{LoadReport, Strictness, load_state_dict};
use nabla_core::{Backend, Error, HostData, Result};
use nabla_tensor::Tensor;
use safetensors::tensor::{Dtype, TensorView};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// Named tensors with the file's free-form metadata.
pub struct TensorFile<B: Backend> {
    /// Tensors in the file's order (sorted by name, as safetensors stores them).
    pub tensors: Vec<(String, Tensor<B>)>,
    /// The `__metadata__` string map of the header.
    pub metadata: HashMap<String, String>,
}

/// Little-endian bytes of one tensor, with its safetensors dtype.
struct Bytes {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl safetensors::View for &Bytes {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// Flattens `values` to little-endian bytes with `to_le` per element.
fn le_bytes<T: Copy, const N: usize>(values: &[T], to_le: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| to_le(v)).collect()
}

fn to_bytes<B: Backend>(name: &str, tensor: &Tensor<B>) -> Result<Bytes> {
    let (dtype, data) = match tensor.contiguous()?.to_host()? {
        HostData::F16(v) => (Dtype::F16, le_bytes(&v, |x| x.to_le_bytes())),
        HostData::BF16(v) => (Dtype::BF16, le_bytes(&v, |x| x.to_le_bytes())),
        HostData::F32(v) => (Dtype::F32, le_bytes(&v, f32::to_le_bytes)),
        HostData::F64(v) => (Dtype::F64, le_bytes(&v, f64::to_le_bytes)),
        HostData::I32(v) => (Dtype::I32, le_bytes(&v, i32::to_le_bytes)),
        HostData::I64(v) => (Dtype::I64, le_bytes(&v, i64::to_le_bytes)),
        HostData::U8(v) => (Dtype::U8, v),
        HostData::Bool(v) => (Dtype::BOOL, v.into_iter().map(u8::from).collect()),
        HostData::C64(_) | HostData::C128(_) => {
            return Err(Error::UnsupportedDType {
                op: "save_safetensors",
                dtype: tensor.dtype(),
                hint: Some(format!(
                    "tensor `{name}`: safetensors has no complex dtype; save the real and imaginary \
                     parts as two float tensors"
                )),
            });
        }
    };
    Ok(Bytes {
        dtype,
        shape: tensor.shape().to_vec(),
        data,
    })
}

/// Reads `N`-byte little-endian elements.
fn from_le<T, const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .map(|c| f(c.try_into().expect("chunks_exact yields N bytes")))
        .collect()
}

fn from_view<B: Backend>(
    path: &Path,
    name: &str,
    view: &TensorView<'_>,
    backend: &B,
) -> Result<Tensor<B>> {
    let data = view.data();
    let host = match view.dtype() {
        Dtype::F16 => HostData::F16(from_le(data, half::f16::from_le_bytes)),
        Dtype::BF16 => HostData::BF16(from_le(data, half::bf16::from_le_bytes)),
        Dtype::F32 => HostData::F32(from_le(data, f32::from_le_bytes)),
        Dtype::F64 => HostData::F64(from_le(data, f64::from_le_bytes)),
        Dtype::I32 => HostData::I32(from_le(data, i32::from_le_bytes)),
        Dtype::I64 => HostData::I64(from_le(data, i64::from_le_bytes)),
        Dtype::U8 => HostData::U8(data.to_vec()),
        Dtype::BOOL => HostData::Bool(data.iter().map(|&b| b != 0).collect()),
        other => {
            return Err(Error::Io {
                context: format!("reading safetensors file {}", path.display()),
                message: format!(
                    "tensor `{name}` has dtype {other:?}, which nabla cannot hold (supported: F16, \
                     BF16, F32, F64, I32, I64, U8, BOOL)"
                ),
            });
        }
    };
    Tensor::from_host(host, view.shape().to_vec(), backend)
}

fn io_error(context: String, err: impl std::fmt::Display) -> Error {
    Error::Io {
        context,
        message: err.to_string(),
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to disk, then
/// renamed over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let context = || format!("writing {}", path.display());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| io_error(context(), "the path names no file"))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(context(), e));
    }
    Ok(())
}

/// Saves named tensors (and string metadata) as a safetensors file, atomically.
///
/// ```
/// use nabla_nn::{save_safetensors, load_safetensors};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let path = std::env::temp_dir().join(format!("nabla-doc-{}.safetensors", std::process::id()));
/// let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], &cpu)?;
/// save_safetensors(&path, &[("w".to_string(), w)], &Default::default())?;
/// let file = load_safetensors(&path, &cpu)?;
/// assert_eq!(file.tensors[0].1.to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn save_safetensors<B: Backend>(
    path: impl AsRef<Path>,
    tensors: &[(String, Tensor<B>)],
    metadata: &HashMap<String, String>,
) -> Result<()> {
    let path = path.as_ref();
    let mut seen = std::collections::HashSet::new();
    for (name, _) in tensors {
        if !seen.insert(name.as_str()) {
            return Err(Error::invalid(
                "save_safetensors",
                format!("tensor name `{name}` appears twice"),
            ));
        }
    }
    let bytes = tensors
        .iter()
        .map(|(n, t)| Ok((n.clone(), to_bytes(n, t)?)))
        .collect::<Result<Vec<_>>>()?;
    let views = bytes.iter().map(|(n, b)| (n.as_str(), b));
    let metadata = (!metadata.is_empty()).then(|| metadata.clone());
    let encoded = safetensors::serialize(views, metadata)
        .map_err(|e| io_error(format!("encoding {}", path.display()), e))?;
    write_atomic(path, &encoded)
}

/// Loads every tensor of a safetensors file onto `backend`. A missing file, a truncated or corrupt
/// header, or an unsupported dtype is an [`Error::Io`] naming the file (and the tensor).
pub fn load_safetensors<B: Backend>(path: impl AsRef<Path>, backend: &B) -> Result<TensorFile<B>> {
    let path = path.as_ref();
    let context = || format!("reading safetensors file {}", path.display());
    let buffer = std::fs::read(path).map_err(|e| io_error(context(), e))?;
    let (_, header) = safetensors::SafeTensors::read_metadata(&buffer)
        .map_err(|e| io_error(context(), format!("{e:?}")))?;
    let metadata = header.metadata().clone().unwrap_or_default();
    let file = safetensors::SafeTensors::deserialize(&buffer)
        .map_err(|e| io_error(context(), format!("{e:?}")))?;
    let mut tensors = file
        .tensors()
        .into_iter()
        .map(|(name, view)| Ok((name.clone(), from_view(path, &name, &view, backend)?)))
        .collect::<Result<Vec<_>>>()?;
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(TensorFile { tensors, metadata })
}

/// Saves a module's parameters and buffers by dotted name (PyTorch's
/// `save_file(model.state_dict(), path)`), atomically.
pub fn save_module<B: Backend, M: Module<B> + ?Sized>(
    module: &M,
    path: impl AsRef<Path>,
) -> Result<()> {
    save_safetensors(path, &module.state_dict(), &HashMap::new())
}

/// Loads a module's parameters and buffers from a safetensors file by dotted name; see
/// [`load_state_dict`] for the matching rules and errors.
pub fn load_module<B: Backend, M: Module<B> + ?Sized>(
    module: &M,
    path: impl AsRef<Path>,
    backend: &B,
    strictness: Strictness,
) -> Result<LoadReport> {
    let file = load_safetensors(path, backend)?;
    load_state_dict(module, &file.tensors, strictness)
}
