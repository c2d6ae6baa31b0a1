//! Tensors on disk in the safetensors format (what `safetensors.torch.save_file(model.state_dict())`
//! writes), with atomic writes: a file is written next to its destination, flushed, then renamed over
//! it, so a crash or a full disk never leaves a half-written file under the real name.
//!
//! Reading checks the header before any tensor is built: a truncated file, a header length past the
//! end or over the 100 MB limit of the format, a tensor name that appears twice, offsets outside the
//! data or a shape that does not match its offsets are each one error naming the file and what was
//! expected.

use crate::module::Module;
use crate::state::{LoadReport, Strictness, load_state_dict};
use nabla_core::{Backend, Error, HostData, Result, max_allocation_bytes};
use nabla_tensor::Tensor;
use safetensors::SafeTensorError;
use safetensors::tensor::Dtype;
use serde::de::{Deserialize, Deserializer, IntoDeserializer, MapAccess, Visitor};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{Read, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

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

/// Builds tensor `name` of the file at `path` from its dtype, shape and little-endian bytes.
fn from_view<B: Backend>(
    path: &Path,
    name: &str,
    (dtype, shape, data): (Dtype, &[usize], &[u8]),
    backend: &B,
) -> Result<Tensor<B>> {
    let host = match dtype {
        Dtype::F16 => HostData::F16(from_le(data, half::f16::from_le_bytes)),
        Dtype::BF16 => HostData::BF16(from_le(data, half::bf16::from_le_bytes)),
        Dtype::F32 => HostData::F32(from_le(data, f32::from_le_bytes)),
        Dtype::F64 => HostData::F64(from_le(data, f64::from_le_bytes)),
        Dtype::I32 => HostData::I32(from_le(data, i32::from_le_bytes)),
        Dtype::I64 => HostData::I64(from_le(data, i64::from_le_bytes)),
        Dtype::U8 => HostData::U8(data.to_vec()),
        Dtype::BOOL => HostData::Bool(data.iter().map(|&b| b != 0).collect()),
        other => {
            return Err(read_error(
                path,
                format!(
                    "tensor `{}` has dtype {other:?}, which nabla cannot hold (supported: F16, \
                     BF16, F32, F64, I32, I64, U8, BOOL)",
                    clip(name)
                ),
            ));
        }
    };
    Tensor::from_host(host, shape.to_vec(), backend)
        .map_err(|e| read_error(path, format!("tensor `{}`: {e}", clip(name))))
}

fn io_error(context: String, err: impl fmt::Display) -> Error {
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
fn clip(text: &str) -> String {
    let one_line = |t: &str| t.replace('\r', "\\r").replace('\n', "\\n");
    match text.char_indices().nth(CLIP_CHARS) {
        None => one_line(text),
        Some((cut, _)) => format!("{}…({} bytes)", one_line(&text[..cut]), text.len()),
    }
}

/// Why `meta` is not a regular file (a directory, a device, a pipe or a socket), if it is not one.
fn not_a_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    if meta.is_dir() {
        Some("it is a directory, not a file")
    } else if !meta.is_file() {
        Some("it is not a regular file (a device, a pipe or a socket)")
    } else {
        None
    }
}

/// The stem of temporary files that [`write_atomic`] writes for `file_name`: `.NAME.tmp-`, followed
/// by the writing process's id.
fn temp_prefix(file_name: &std::ffi::OsStr) -> String {
    format!(".{}.tmp-", file_name.to_string_lossy())
}

/// Whether the process `pid`, which left a temporary file behind, has ended. On Linux that is
/// `/proc/PID` missing (where `/proc` is mounted); elsewhere only this process's own leftovers count.
fn left_by_ended_process(pid: u32) -> bool {
    if pid == std::process::id() {
        return !cfg!(target_os = "linux");
    }
    cfg!(target_os = "linux")
        && Path::new("/proc/self").exists()
        && !Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes the temporary files `.NAME.tmp-PID` in `dir` that saves killed before their rename left
/// behind: those whose process has ended (see [`left_by_ended_process`]). Failures are ignored: a
/// leftover costs disk space, not correctness.
fn remove_stale_temp_files(dir: &Path, file_name: &std::ffi::OsStr) {
    let prefix = temp_prefix(file_name);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(left_by_ended_process) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes `bytes` to `path` atomically: a temporary file `.NAME.tmp-PID` in the same directory,
/// flushed to disk, then renamed over `path`.
///
/// A save killed before its rename leaves its temporary file behind; each call removes the leftovers
/// for the same `path` whose process has ended (on Linux, where `/proc/PID` no longer exists; on other
/// platforms only this process's own). A directory on a shared file system written from several
/// machines should not rely on this, since another machine's process ids are not visible here.
/// A `path` that exists but is not a regular file (a directory, a device such as `/dev/null`) is an
/// error, and is left alone.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let context = || format!("writing {}", path.display());
    if let Ok(meta) = std::fs::metadata(path)
        && let Some(why) = not_a_file(&meta)
    {
        return Err(io_error(context(), why));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| io_error(context(), "the path names no file"))?;
    remove_stale_temp_files(&dir, file_name);
    let tmp = dir.join(format!("{}{}", temp_prefix(file_name), std::process::id()));
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
    let mut seen = HashSet::new();
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
    let encoded = safetensors::serialize(views, metadata).map_err(|e| {
        io_error(
            format!("encoding {}", path.display()),
            describe(e, &FileLayout::default()),
        )
    })?;
    write_atomic(path, &encoded)
}

/// The size of the header length field that starts every safetensors file.
const LEN_BYTES: usize = 8;

/// The largest header the safetensors format accepts.
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// Reads the regular file at `path` whole; a directory, a device or a pipe, or a file larger than the
/// allocation limit, is an error naming it.
fn read_regular_file(path: &Path) -> Result<Vec<u8>> {
    let error = |e: &dyn fmt::Display| read_error(path, e);
    let meta = std::fs::metadata(path).map_err(|e| error(&e))?;
    if let Some(why) = not_a_file(&meta) {
        return Err(error(&why));
    }
    let limit = max_allocation_bytes();
    let too_large = |len: u64| {
        error(&format_args!(
            "the file has {len} bytes, over the allocation limit of {limit} bytes \
             (NABLA_MAX_ALLOC_BYTES or nabla_core::set_max_allocation_bytes raises it)"
        ))
    };
    if meta.len() > limit as u64 {
        return Err(too_large(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| error(&e))?;
    let mut buffer = Vec::with_capacity(meta.len() as usize);
    file.take(limit as u64 + 1)
        .read_to_end(&mut buffer)
        .map_err(|e| error(&e))?;
    if buffer.len() > limit {
        return Err(too_large(buffer.len() as u64));
    }
    Ok(buffer)
}

/// One tensor's entry in a safetensors header, as written.
#[derive(serde::Deserialize)]
struct RawInfo {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: (usize, usize),
}

/// The entries of a JSON object in file order, duplicates kept.
struct Pairs<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Pairs<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct PairsVisitor<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for PairsVisitor<V> {
            type Value = Pairs<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Pairs<V>, A::Error> {
                let mut pairs = Vec::new();
                while let Some((key, value)) = map.next_entry()? {
                    pairs.push((key, value));
                }
                Ok(Pairs(pairs))
            }
        }
        deserializer.deserialize_map(PairsVisitor(PhantomData))
    }
}

/// A value of the header object: the `__metadata__` string map or a tensor entry.
enum HeaderValue {
    Metadata(Pairs<String>),
    Tensor(RawInfo),
}

/// A safetensors header as written: its entries in file order, duplicates kept (a `HashMap`, as the
/// safetensors crate uses, would keep only the last of two entries with one name).
struct RawHeader(Vec<(String, HeaderValue)>);

impl<'de> Deserialize<'de> for RawHeader {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct HeaderVisitor;
        impl<'de> Visitor<'de> for HeaderVisitor {
            type Value = RawHeader;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object of tensor entries")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<RawHeader, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value = if key == "__metadata__" {
                        HeaderValue::Metadata(map.next_value()?)
                    } else {
                        HeaderValue::Tensor(map.next_value()?)
                    };
                    entries.push((key, value));
                }
                Ok(RawHeader(entries))
            }
        }
        deserializer.deserialize_map(HeaderVisitor)
    }
}

/// The first name of `names` that appears twice.
fn first_duplicate<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = HashSet::new();
    names.into_iter().find(|n| !seen.insert(*n))
}

/// What is known of a file's layout, for error messages.
#[derive(Default)]
struct FileLayout {
    file_len: usize,
    header_len: u64,
}

impl FileLayout {
    /// The bytes after the header.
    fn data_len(&self) -> u64 {
        (self.file_len as u64).saturating_sub(LEN_BYTES as u64 + self.header_len)
    }
}

/// Checks the header length and the header of a safetensors file (`buffer`, the whole file) and
/// returns its layout, or what is wrong.
fn check_header(buffer: &[u8]) -> std::result::Result<FileLayout, String> {
    let file_len = buffer.len();
    let Some(len_bytes) = buffer.first_chunk::<LEN_BYTES>() else {
        return Err(format!(
            "truncated: the file has {file_len} bytes, but a safetensors file starts with an \
             8-byte header length"
        ));
    };
    let header_len = u64::from_le_bytes(*len_bytes);
    if header_len > MAX_HEADER_BYTES {
        return Err(format!(
            "header length {header_len} is larger than the 100 MB limit of the safetensors format"
        ));
    }
    let after = file_len - LEN_BYTES;
    if header_len > after as u64 {
        return Err(format!(
            "truncated: the header length says {header_len} bytes but the file has only {after} \
             bytes after it"
        ));
    }
    let layout = FileLayout {
        file_len,
        header_len,
    };
    let header = &buffer[LEN_BYTES..LEN_BYTES + header_len as usize];
    let header = std::str::from_utf8(header).map_err(|e| {
        format!(
            "the header is not UTF-8 (invalid byte at file offset {})",
            LEN_BYTES + e.valid_up_to()
        )
    })?;
    let RawHeader(entries) = serde_json::from_str(header).map_err(|e| {
        format!(
            "the header is not a safetensors JSON header: {}",
            clip(&e.to_string())
        )
    })?;
    if let Some(name) = first_duplicate(entries.iter().map(|(n, _)| n.as_str())) {
        return Err(format!(
            "the header names tensor `{}` twice (which one is meant is ambiguous)",
            clip(name)
        ));
    }
    let mut tensors = Vec::new();
    for (name, value) in &entries {
        match value {
            HeaderValue::Tensor(info) => tensors.push((name.as_str(), info)),
            HeaderValue::Metadata(Pairs(pairs)) => {
                if let Some(key) = first_duplicate(pairs.iter().map(|(k, _)| k.as_str())) {
                    return Err(format!(
                        "the header's __metadata__ has the key `{}` twice",
                        clip(key)
                    ));
                }
            }
        }
    }
    check_tensors(tensors, layout.data_len())?;
    Ok(layout)
}

/// `shape` for an error message: in full up to rank 8, else its first dimensions and its rank.
fn short_shape(shape: &[usize]) -> String {
    if shape.len() <= 8 {
        format!("{shape:?}")
    } else {
        format!("{:?}…(rank {})", &shape[..4], shape.len())
    }
}

/// Checks that the tensors' dtypes are known, that their shapes match their data offsets, and that
/// the offsets tile the `data_len` bytes of data exactly, in order, as the format requires.
fn check_tensors(
    mut tensors: Vec<(&str, &RawInfo)>,
    data_len: u64,
) -> std::result::Result<(), String> {
    tensors.sort_by_key(|(_, info)| info.data_offsets);
    let mut end = 0u64;
    for (name, info) in tensors {
        let name = clip(name);
        let (start, stop) = info.data_offsets;
        let offsets = format!("data offsets [{start}, {stop}]");
        if stop < start {
            return Err(format!(
                "tensor `{name}` has {offsets}, which end before they start"
            ));
        }
        if stop as u64 > data_len {
            return Err(format!(
                "tensor `{name}` has {offsets} outside the data of {data_len} bytes (the file is \
                 truncated or the header is wrong)"
            ));
        }
        if start as u64 != end {
            return Err(format!(
                "tensor `{name}` has {offsets}, but the tensor data before it ends at byte {end} \
                 (tensors must follow each other without gaps or overlaps)"
            ));
        }
        let dtype = Dtype::deserialize(info.dtype.as_str().into_deserializer()).map_err(
            |_: serde::de::value::Error| {
                format!("tensor `{name}` has unknown dtype `{}`", clip(&info.dtype))
            },
        )?;
        let shape = short_shape(&info.shape);
        // The element count, then the bits, as the safetensors crate computes them.
        let bits = info
            .shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .and_then(|n| n.checked_mul(dtype.bitsize()))
            .ok_or_else(|| format!("tensor `{name}` has shape {shape}, whose size overflows"))?;
        if bits % 8 != 0 {
            return Err(format!(
                "tensor `{name}` of dtype {dtype:?} and shape {shape} does not fill whole bytes"
            ));
        }
        if bits / 8 != stop - start {
            return Err(format!(
                "tensor `{name}` of dtype {dtype:?} and shape {shape} needs {} bytes, but its \
                 {offsets} hold {}",
                bits / 8,
                stop - start
            ));
        }
        end = stop as u64;
    }
    if end != data_len {
        return Err(format!(
            "the tensors' data ends at byte {end}, but the file has {data_len} bytes of data after \
             the header ({} unexpected trailing bytes)",
            data_len - end
        ));
    }
    Ok(())
}

/// A message for every error of the safetensors crate, naming what was expected.
fn describe(err: SafeTensorError, layout: &FileLayout) -> String {
    let FileLayout {
        file_len,
        header_len,
    } = *layout;
    match err {
        SafeTensorError::InvalidHeader(e) => format!(
            "the header is not UTF-8 (invalid byte at file offset {})",
            LEN_BYTES + e.valid_up_to()
        ),
        SafeTensorError::InvalidHeaderStart => "the header does not start with `{`".to_string(),
        SafeTensorError::InvalidHeaderDeserialization(e) | SafeTensorError::JsonError(e) => {
            format!(
                "the header is not a safetensors JSON header: {}",
                clip(&e.to_string())
            )
        }
        SafeTensorError::HeaderTooLarge => format!(
            "header length {header_len} is larger than the 100 MB limit of the safetensors format"
        ),
        SafeTensorError::HeaderTooSmall => format!(
            "truncated: the file has {file_len} bytes, but a safetensors file starts with an \
             8-byte header length"
        ),
        SafeTensorError::InvalidHeaderLength => format!(
            "truncated: the header length says {header_len} bytes but the file has only {} bytes \
             after it",
            file_len.saturating_sub(LEN_BYTES)
        ),
        SafeTensorError::TensorNotFound(name) => {
            format!("there is no tensor `{}` in the file", clip(&name))
        }
        SafeTensorError::TensorInvalidInfo => {
            "a tensor's shape and dtype do not match the length of its data offsets".to_string()
        }
        SafeTensorError::InvalidOffset(name) => format!(
            "tensor `{}` has data offsets that do not start where the previous tensor ends",
            clip(&name)
        ),
        SafeTensorError::IoError(e) => e.to_string(),
        SafeTensorError::InvalidTensorView(dtype, shape, len) => format!(
            "a tensor of dtype {dtype:?} and shape {} cannot hold {len} bytes",
            short_shape(&shape)
        ),
        SafeTensorError::MetadataIncompleteBuffer => format!(
            "the tensors' data offsets do not cover the {} bytes of data after the header",
            layout.data_len()
        ),
        SafeTensorError::ValidationOverflow => {
            "a tensor's shape overflows when its size is computed".to_string()
        }
        SafeTensorError::MisalignedSlice => {
            "a tensor of a sub-byte dtype does not fill whole bytes".to_string()
        }
    }
}

/// Loads every tensor of a safetensors file onto `backend`. A missing file or one that is not a
/// regular file, a truncated or corrupt header, a tensor name that appears twice, offsets that do not
/// match the shapes or the data, or an unsupported dtype is an [`Error::Io`] naming the file (and
/// the tensor) and what was expected.
pub fn load_safetensors<B: Backend>(path: impl AsRef<Path>, backend: &B) -> Result<TensorFile<B>> {
    let path = path.as_ref();
    let buffer = read_regular_file(path)?;
    let layout = check_header(&buffer).map_err(|m| read_error(path, m))?;
    // The header is known good; the safetensors crate's own checks remain as a second line.
    let (header_len, header) = safetensors::SafeTensors::read_metadata(&buffer)
        .map_err(|e| read_error(path, describe(e, &layout)))?;
    let data = &buffer[LEN_BYTES + header_len..];
    let mut tensors = header
        .tensors()
        .into_iter()
        .map(|(name, info)| {
            let (start, stop) = info.data_offsets;
            let bytes = data.get(start..stop).ok_or_else(|| {
                read_error(
                    path,
                    format!("tensor `{}` lies outside the data", clip(&name)),
                )
            })?;
            let tensor = from_view(path, &name, (info.dtype, &info.shape, bytes), backend)?;
            Ok((name, tensor))
        })
        .collect::<Result<Vec<_>>>()?;
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    let metadata = header.metadata().clone().unwrap_or_default();
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
