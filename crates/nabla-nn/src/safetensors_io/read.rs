//! Reading safetensors files: the file read whole (or its header alone), the header length and the
//! header checked entry by entry before any tensor is built, and tensors built one by one.

use super::atomic::not_a_file;
use super::{clip, read_error};
use nabla_core::num_complex::{Complex32, Complex64};
use nabla_core::{Backend, DType, HostData, Result, max_allocation_bytes};
use nabla_tensor::Tensor;
use safetensors::SafeTensorError;
use safetensors::tensor::Dtype;
use serde::de::{Deserialize, Deserializer, IntoDeserializer, MapAccess, Visitor};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// The size of the header length field that starts every safetensors file.
pub(super) const LEN_BYTES: usize = 8;

/// The largest header the safetensors format accepts.
pub(super) const MAX_HEADER_BYTES: u64 = 100_000_000;

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
pub(super) struct FileLayout {
    file_len: usize,
    header_len: u64,
}

impl FileLayout {
    /// The bytes after the header.
    fn data_len(&self) -> u64 {
        (self.file_len as u64).saturating_sub(LEN_BYTES as u64 + self.header_len)
    }
}

/// Checks the header length and the header of a safetensors file of `file_len` bytes and returns its
/// layout and its `__metadata__`, or what is wrong. `buffer` is the start of the file: the whole
/// file, or at least the length field and the header when the length is within the format's limit
/// and the file.
fn check_header(
    buffer: &[u8],
    file_len: usize,
) -> std::result::Result<(FileLayout, HashMap<String, String>), String> {
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
    let mut metadata = HashMap::new();
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
                metadata.extend(pairs.iter().cloned());
            }
        }
    }
    check_tensors(tensors, layout.data_len())?;
    Ok((layout, metadata))
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
pub(super) fn describe(err: SafeTensorError, layout: &FileLayout) -> String {
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

/// Elements of `dtype` from their little-endian bytes (a whole number of elements; booleans are
/// any nonzero byte), as safetensors and `torch.save` store them.
pub(crate) fn host_from_le(dtype: DType, data: &[u8]) -> HostData {
    match dtype {
        DType::F16 => HostData::F16(from_le(data, half::f16::from_le_bytes)),
        DType::BF16 => HostData::BF16(from_le(data, half::bf16::from_le_bytes)),
        DType::F32 => HostData::F32(from_le(data, f32::from_le_bytes)),
        DType::F64 => HostData::F64(from_le(data, f64::from_le_bytes)),
        DType::C64 => HostData::C64(from_le(data, |b: [u8; 8]| {
            let [re, im] = [&b[..4], &b[4..]].map(|p| f32::from_le_bytes(p.try_into().expect("4")));
            Complex32::new(re, im)
        })),
        DType::C128 => HostData::C128(from_le(data, |b: [u8; 16]| {
            let [re, im] = [&b[..8], &b[8..]].map(|p| f64::from_le_bytes(p.try_into().expect("8")));
            Complex64::new(re, im)
        })),
        DType::I8 => HostData::I8(from_le(data, i8::from_le_bytes)),
        DType::I16 => HostData::I16(from_le(data, i16::from_le_bytes)),
        DType::I32 => HostData::I32(from_le(data, i32::from_le_bytes)),
        DType::I64 => HostData::I64(from_le(data, i64::from_le_bytes)),
        DType::U8 => HostData::U8(data.to_vec()),
        DType::U16 => HostData::U16(from_le(data, u16::from_le_bytes)),
        DType::U32 => HostData::U32(from_le(data, u32::from_le_bytes)),
        DType::U64 => HostData::U64(from_le(data, u64::from_le_bytes)),
        DType::Bool => HostData::Bool(data.iter().map(|&b| b != 0).collect()),
    }
}

/// Reads `N`-byte little-endian elements.
fn from_le<T, const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .map(|c| f(c.try_into().expect("chunks_exact yields N bytes")))
        .collect()
}

/// One tensor of a [`RawFile`]: its name, dtype, shape and where its bytes lie in the data.
pub(crate) struct RawEntry {
    /// The tensor's name.
    pub(crate) name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    offsets: (usize, usize),
}

/// A safetensors file read whole, its header checked, before any tensor is built.
pub(crate) struct RawFile {
    path: PathBuf,
    buffer: Vec<u8>,
    data_start: usize,
    /// The tensors, sorted by name.
    pub(crate) entries: Vec<RawEntry>,
    /// The header's `__metadata__` string map.
    pub(crate) metadata: HashMap<String, String>,
}

impl RawFile {
    /// Reads the file at `path` and checks its header; see
    /// [`load_safetensors`](super::load_safetensors) for what is refused.
    pub(crate) fn read(path: &Path) -> Result<Self> {
        let buffer = read_regular_file(path)?;
        let (layout, metadata) =
            check_header(&buffer, buffer.len()).map_err(|m| read_error(path, m))?;
        // The header is known good; the safetensors crate's own checks remain as a second line.
        let (header_len, header) = safetensors::SafeTensors::read_metadata(&buffer)
            .map_err(|e| read_error(path, describe(e, &layout)))?;
        let mut entries: Vec<RawEntry> = header
            .tensors()
            .into_iter()
            .map(|(name, info)| RawEntry {
                name,
                dtype: info.dtype,
                shape: info.shape.clone(),
                offsets: info.data_offsets,
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(RawFile {
            path: path.to_path_buf(),
            buffer,
            data_start: LEN_BYTES + header_len,
            entries,
            metadata,
        })
    }

    /// The little-endian bytes of `entry`.
    pub(crate) fn bytes(&self, entry: &RawEntry) -> Result<&[u8]> {
        let (start, stop) = entry.offsets;
        self.buffer[self.data_start..]
            .get(start..stop)
            .ok_or_else(|| {
                read_error(
                    &self.path,
                    format!("tensor `{}` lies outside the data", clip(&entry.name)),
                )
            })
    }

    /// The values of `entry`, on the host; a dtype nabla cannot hold is an error naming it.
    pub(crate) fn host(&self, entry: &RawEntry) -> Result<HostData> {
        let data = self.bytes(entry)?;
        let dtype = match entry.dtype {
            Dtype::F16 => DType::F16,
            Dtype::BF16 => DType::BF16,
            Dtype::F32 => DType::F32,
            Dtype::F64 => DType::F64,
            Dtype::I8 => DType::I8,
            Dtype::I16 => DType::I16,
            Dtype::I32 => DType::I32,
            Dtype::I64 => DType::I64,
            Dtype::U8 => DType::U8,
            Dtype::U16 => DType::U16,
            Dtype::U32 => DType::U32,
            Dtype::U64 => DType::U64,
            Dtype::BOOL => DType::Bool,
            other => {
                return Err(read_error(
                    &self.path,
                    format!(
                        "tensor `{}` has dtype {other:?}, which nabla cannot hold (supported: F16, \
                         BF16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, BOOL)",
                        clip(&entry.name)
                    ),
                ));
            }
        };
        Ok(host_from_le(dtype, data))
    }

    /// Builds `entry` on `backend` from its values `host` (from [`RawFile::host`]).
    pub(crate) fn tensor<B: Backend>(
        &self,
        entry: &RawEntry,
        host: HostData,
        backend: &B,
    ) -> Result<Tensor<B>> {
        Tensor::from_host(host, entry.shape.clone(), backend)
            .map_err(|e| read_error(&self.path, format!("tensor `{}`: {e}", clip(&entry.name))))
    }
}

/// The `__metadata__` of the safetensors file at `path`, reading only its length field and header,
/// which are checked as [`RawFile::read`] checks them.
pub(crate) fn read_metadata(path: &Path) -> Result<HashMap<String, String>> {
    let error = |e: &dyn fmt::Display| read_error(path, e);
    let meta = std::fs::metadata(path).map_err(|e| error(&e))?;
    if let Some(why) = not_a_file(&meta) {
        return Err(error(&why));
    }
    let file_len = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    let mut file = File::open(path).map_err(|e| error(&e))?;
    let mut start = vec![0u8; LEN_BYTES.min(file_len)];
    file.read_exact(&mut start).map_err(|e| error(&e))?;
    if let Some(len) = start.first_chunk::<LEN_BYTES>() {
        let header_len = u64::from_le_bytes(*len);
        if header_len <= MAX_HEADER_BYTES && header_len <= (file_len - LEN_BYTES) as u64 {
            start.resize(LEN_BYTES + header_len as usize, 0);
            file.read_exact(&mut start[LEN_BYTES..])
                .map_err(|e| error(&e))?;
        }
    }
    check_header(&start, file_len)
        .map(|(_, metadata)| metadata)
        .map_err(|m| error(&m))
}
