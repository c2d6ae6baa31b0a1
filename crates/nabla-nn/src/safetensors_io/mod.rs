//! Tensors on disk in the safetensors format (what `safetensors.torch.save_file(model.state_dict())`
//! writes), with atomic writes: a file is written next to its destination, flushed, then renamed over
//! it, so a crash or a full disk never leaves a half-written file under the real name. The temporary
//! file is created exclusively under a fresh name, and the destination may not be a symbolic link,
//! so a write never goes through a link. A file the reader would refuse (a header over the format's
//! 100 MB limit) is never written.
//!
//! Reading checks the header before any tensor is built: a truncated file, a header length past the
//! end or over the 100 MB limit of the format, a tensor name that appears twice, offsets outside the
//! data or a shape that does not match its offsets are each one error naming the file and what was
//! expected.

mod atomic;
mod read;

use crate::module::Module;
use crate::state::{LoadReport, Strictness, load_state_dict};
pub(crate) use atomic::not_a_file;
pub use atomic::{create_temp_file, destination_problem, remove_stale_temp_files, write_atomic};
use nabla_core::{Backend, DType, Error, HostData, Result, max_allocation_bytes};
use nabla_tensor::Tensor;
use read::{FileLayout, LEN_BYTES, MAX_HEADER_BYTES, describe};

pub(crate) use read::{RawFile, host_from_le, read_metadata};
use safetensors::tensor::Dtype;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

/// Named tensors with the file's free-form metadata.
pub struct TensorFile<B: Backend> {
    /// Tensors in the file's order (sorted by name, as safetensors stores them).
    pub tensors: Vec<(String, Tensor<B>)>,
    /// The `__metadata__` string map of the header.
    pub metadata: HashMap<String, String>,
}

/// Little-endian bytes of one tensor, with its safetensors dtype.
pub(crate) struct Bytes {
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

impl Bytes {
    /// `data` as a 1-D `U8` tensor (a blob of text, such as JSON).
    pub(crate) fn blob(data: Vec<u8>) -> Self {
        Bytes {
            dtype: Dtype::U8,
            shape: vec![data.len()],
            data,
        }
    }
}

/// Whether every value of `host` is finite (integers and booleans always are; a complex value needs
/// both parts finite).
pub(crate) fn all_finite(host: &HostData) -> bool {
    match host {
        HostData::F16(v) => v.iter().all(|x| x.is_finite()),
        HostData::BF16(v) => v.iter().all(|x| x.is_finite()),
        HostData::F32(v) => v.iter().all(|x| x.is_finite()),
        HostData::F64(v) => v.iter().all(|x| x.is_finite()),
        HostData::C64(v) => v.iter().all(|z| z.re.is_finite() && z.im.is_finite()),
        HostData::C128(v) => v.iter().all(|z| z.re.is_finite() && z.im.is_finite()),
        // Integers and booleans are always finite.
        _ => true,
    }
}

/// The bytes of tensor `name` for a file, from its values `host` (contiguous) and its shape.
fn to_bytes(name: &str, host: HostData, shape: &[usize]) -> Result<Bytes> {
    let dtype = match host.dtype() {
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::U8 => Dtype::U8,
        DType::U16 => Dtype::U16,
        DType::U32 => Dtype::U32,
        DType::U64 => Dtype::U64,
        DType::Bool => Dtype::BOOL,
        DType::C64 | DType::C128 => {
            return Err(Error::UnsupportedDType {
                op: "save_safetensors",
                dtype: host.dtype(),
                hint: Some(format!(
                    "tensor `{name}`: safetensors has no complex dtype; save the real and imaginary \
                     parts as two float tensors"
                )),
            });
        }
    };
    let data = host.to_le_bytes();
    Ok(Bytes {
        dtype,
        shape: shape.to_vec(),
        data,
    })
}

/// The bytes of named tensors for a file; `check` sees each tensor's name and values first and may
/// refuse it.
pub(crate) fn encode_tensors<B: Backend>(
    tensors: &[(String, Tensor<B>)],
    mut check: impl FnMut(&str, &HostData) -> Result<()>,
) -> Result<Vec<(String, Bytes)>> {
    tensors
        .iter()
        .map(|(name, t)| {
            let host = t.contiguous()?.to_host()?;
            check(name, &host)?;
            Ok((name.clone(), to_bytes(name, host, t.shape())?))
        })
        .collect()
}

/// Writes `entries` and `metadata` as a safetensors file at `path`, atomically, unless the reader
/// would refuse the file: a name given twice, a header over the format's 100 MB limit, or a file over
/// the allocation limit are errors, and nothing is written.
pub(crate) fn write_entries(
    path: &Path,
    entries: &[(String, Bytes)],
    metadata: &HashMap<String, String>,
) -> Result<()> {
    let mut seen = HashSet::new();
    if let Some((name, _)) = entries.iter().find(|(n, _)| !seen.insert(n.as_str())) {
        return Err(Error::invalid(
            "save_safetensors",
            format!("tensor name `{name}` appears twice"),
        ));
    }
    let context = || format!("writing {}", path.display());
    let views = entries.iter().map(|(n, b)| (n.as_str(), b));
    let metadata = (!metadata.is_empty()).then(|| metadata.clone());
    let encoded = safetensors::serialize(views, metadata)
        .map_err(|e| io_error(context(), describe(e, &FileLayout::default())))?;
    let header_len = encoded
        .first_chunk::<LEN_BYTES>()
        .map_or(0, |b| u64::from_le_bytes(*b));
    if header_len > MAX_HEADER_BYTES {
        return Err(io_error(
            context(),
            format!(
                "the header would take {header_len} bytes, over the 100 MB limit of the \
                 safetensors format that readers enforce: nothing was written (keep large \
                 metadata in a tensor)"
            ),
        ));
    }
    let limit = max_allocation_bytes();
    if encoded.len() > limit {
        return Err(io_error(
            context(),
            format!(
                "the file would take {} bytes, over the allocation limit of {limit} bytes under \
                 which it is read back (NABLA_MAX_ALLOC_BYTES or \
                 nabla_core::set_max_allocation_bytes raises it): nothing was written",
                encoded.len()
            ),
        ));
    }
    write_atomic(path, &encoded)
}

/// An [`Error::Io`] while doing `context`.
pub(crate) fn io_error(context: String, err: impl fmt::Display) -> Error {
    Error::Io {
        context,
        message: err.to_string(),
    }
}

/// An error reading the safetensors file at `path`.
fn read_error(path: &Path, message: impl fmt::Display) -> Error {
    io_error(
        format!("reading safetensors file {}", path.display()),
        message,
    )
}

/// How many characters of text from a file an error message echoes.
const CLIP_CHARS: usize = 200;

/// `text` (from a file) for a one-line error message: line breaks escaped, cut after 200 characters
/// with its full length noted.
pub(crate) fn clip(text: &str) -> String {
    let one_line = |t: &str| t.replace('\r', "\\r").replace('\n', "\\n");
    match text.char_indices().nth(CLIP_CHARS) {
        None => one_line(text),
        Some((cut, _)) => format!("{}…({} bytes)", one_line(&text[..cut]), text.len()),
    }
}

/// Saves named tensors (and string metadata) as a safetensors file, atomically. A name given twice,
/// or metadata too large for the header (over the format's 100 MB limit), is an error.
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
    let entries = encode_tensors(tensors, |_, _| Ok(()))?;
    write_entries(path.as_ref(), &entries, metadata)
}

/// Loads every tensor of a safetensors file onto `backend`. A missing file or one that is not a
/// regular file, a truncated or corrupt header, a tensor name that appears twice, offsets that do not
/// match the shapes or the data, or an unsupported dtype is an [`Error::Io`] naming the file (and
/// the tensor) and what was expected.
pub fn load_safetensors<B: Backend>(path: impl AsRef<Path>, backend: &B) -> Result<TensorFile<B>> {
    let file = RawFile::read(path.as_ref())?;
    let tensors = file
        .entries
        .iter()
        .map(|entry| {
            let tensor = file.tensor(entry, file.host(entry)?, backend)?;
            Ok((entry.name.clone(), tensor))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(TensorFile {
        tensors,
        metadata: file.metadata,
    })
}

/// Saves a module's parameters and buffers by dotted name (PyTorch's
/// `save_file(model.state_dict(), path)`), atomically.
pub fn save_module<B: Backend, M: Module<B> + ?Sized>(
    module: &M,
    path: impl AsRef<Path>,
) -> Result<()> {
    save_safetensors(path, &module.state_dict(), &HashMap::new())
}

/// Every tensor of a file of either format nabla reads, told apart by their first bytes: a
/// `torch.save` archive (`.pt`, `.pth`, `.bin`; see [`load_torch`](crate::load_torch)) or a
/// safetensors file ([`load_safetensors`]).
pub fn load_tensors<B: Backend>(path: impl AsRef<Path>, backend: &B) -> Result<TensorFile<B>> {
    let path = path.as_ref();
    // A file that cannot be opened is left to the safetensors reader, whose error names it.
    if crate::torch_io::is_zip(path).unwrap_or(false) {
        crate::torch_io::load_torch(path, backend)
    } else {
        load_safetensors(path, backend)
    }
}

/// Loads a module's parameters and buffers by dotted name from a safetensors file or a
/// `torch.save` archive ([`load_tensors`]); see [`load_state_dict`] for the matching rules and
/// errors.
pub fn load_module<B: Backend, M: Module<B> + ?Sized>(
    module: &M,
    path: impl AsRef<Path>,
    backend: &B,
    strictness: Strictness,
) -> Result<LoadReport> {
    let file = load_tensors(path, backend)?;
    load_state_dict(module, &file.tensors, strictness)
}
