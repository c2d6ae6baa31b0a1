//! PyTorch's own files: the zip archives `torch.save` has written since PyTorch 1.6 (`.pt`, `.pth`,
//! `.bin`; torchvision's and Hugging Face's `pytorch_model.bin` weights). The archive's `data.pkl`
//! is read by a restricted unpickler ([`pickle`]) that builds only containers, numbers, strings and
//! tensors, refusing every other global by name (as `torch.load(weights_only=True)` does), and each
//! tensor is a strided view of a storage file `data/<key>`, checked to lie inside it.
//!
//! Every tensor of the file is found by its path through the pickled containers, joined with dots:
//! a state dict gives its own names (`conv1.weight`), a checkpoint dictionary nests them
//! (`model.conv1.weight`, `optimizer.state.0.exp_avg`).

mod pickle;

use crate::safetensors_io::{TensorFile, clip, host_from_le, io_error, not_a_file};
use nabla_core::{Backend, Error, Result, max_allocation_bytes};
use nabla_tensor::Tensor;
use pickle::{Items, TensorRef, Unpickled, Value, unpickle};
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use zip::ZipArchive;

/// The largest `data.pkl` read (a state dict's pickle holds names and shapes, not values: GPT-2
/// XL's is about 100 KB).
const MAX_PICKLE_BYTES: u64 = 64 << 20;

/// How deeply containers may nest on the way to a tensor.
const MAX_DEPTH: usize = 64;

/// The four bytes every zip archive (and so every `torch.save` file) starts with.
pub(crate) const ZIP_MAGIC: &[u8; 4] = b"PK\x03\x04";

fn read_error(path: &Path, message: impl fmt::Display) -> Error {
    io_error(format!("reading PyTorch file {}", path.display()), message)
}

/// Loads every tensor of a `torch.save` archive onto `backend`, named by its dotted path through
/// the pickled containers (a state dict's own names). Files of PyTorch before 1.6 (not zip
/// archives), TorchScript archives, compressed or big-endian archives, globals outside a state
/// dict's (which could run code), storages of dtypes nabla cannot hold and views outside their
/// storage are each an [`Error::Io`] naming the file and the problem; nothing is executed.
///
/// ```no_run
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let file = nabla_nn::load_torch("resnet18-f37072fd.pth", &cpu)?;
/// for (name, tensor) in &file.tensors {
///     println!("{name}: {:?}", tensor.shape());
/// }
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn load_torch<B: Backend>(path: impl AsRef<Path>, backend: &B) -> Result<TensorFile<B>> {
    let path = path.as_ref();
    let error = |e: &dyn fmt::Display| read_error(path, e);
    let meta = std::fs::metadata(path).map_err(|e| error(&e))?;
    if let Some(why) = not_a_file(&meta) {
        return Err(error(&why));
    }
    if !is_zip(path).map_err(|e| error(&e))? {
        return Err(error(
            &"not a zip archive: torch.save has written zip archives since PyTorch 1.6; re-save \
              older files with a current PyTorch (torch.save(torch.load(path), path))",
        ));
    }
    let mut archive = Archive::open(path)?;
    let names = named_tensors(&archive.unpickle()?).map_err(|e| error(&e))?;
    let mut storages: HashMap<String, Vec<u8>> = HashMap::new();
    let mut tensors = Vec::with_capacity(names.len());
    for (name, t) in names {
        if !storages.contains_key(&t.storage.key) {
            let bytes = archive.storage(&t)?;
            storages.insert(t.storage.key.clone(), bytes);
        }
        let bytes = gather(&t, &storages[&t.storage.key])
            .map_err(|e| error(&format_args!("tensor `{}`: {e}", clip(&name))))?;
        let shape = t.size.iter().map(|&d| d as usize).collect::<Vec<_>>();
        let tensor = Tensor::from_host(host_from_le(t.storage.dtype, &bytes), shape, backend)
            .map_err(|e| error(&format_args!("tensor `{}`: {e}", clip(&name))))?;
        tensors.push((name, tensor));
    }
    Ok(TensorFile {
        tensors,
        metadata: HashMap::new(),
    })
}

/// An open `torch.save` archive and the folder its records lie in.
struct Archive<'a> {
    path: &'a Path,
    zip: ZipArchive<BufReader<File>>,
    /// The archive's top folder (`archive/` or the file's stem), with its slash.
    prefix: String,
}

impl<'a> Archive<'a> {
    fn open(path: &'a Path) -> Result<Self> {
        let error = |e: &dyn fmt::Display| read_error(path, e);
        let file = File::open(path).map_err(|e| error(&e))?;
        let zip = ZipArchive::new(BufReader::new(file)).map_err(|e| error(&e))?;
        let pickles: Vec<String> = zip
            .file_names()
            .filter_map(|n| n.ok())
            .filter(|n| n.ends_with("/data.pkl") && n.matches('/').count() == 1)
            .map(|n| n.into_owned())
            .collect();
        let prefix = match pickles.as_slice() {
            [one] => one.trim_end_matches("data.pkl").to_string(),
            [] => return Err(error(&"no data.pkl: not an archive written by torch.save")),
            _ => return Err(error(&"more than one data.pkl")),
        };
        if zip
            .index_for_name(&format!("{prefix}constants.pkl"))
            .is_some()
        {
            return Err(error(
                &"a TorchScript archive (torch.jit.save), which holds code; save the weights with \
                  torch.save(model.state_dict(), path)",
            ));
        }
        let mut archive = Archive { path, zip, prefix };
        if let Some(order) = archive.record("byteorder", 16)?
            && order != b"little"
        {
            return Err(error(&format_args!(
                "byte order `{}`: only little-endian archives are read",
                String::from_utf8_lossy(&order)
            )));
        }
        Ok(archive)
    }

    /// The record `name` of the archive's folder, if present, when it holds at most `limit` bytes.
    fn record(&mut self, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        let path = self.path;
        let error = |e: &dyn fmt::Display| read_error(path, format_args!("record `{name}`: {e}"));
        let full = format!("{}{name}", self.prefix);
        let Some(index) = self.zip.index_for_name(&full) else {
            return Ok(None);
        };
        let mut entry = self.zip.by_index(index).map_err(|e| error(&e))?;
        if entry.size() > limit {
            return Err(error(&format_args!(
                "{} bytes, over the limit of {limit}",
                entry.size()
            )));
        }
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        (&mut entry)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| error(&e))?;
        if bytes.len() as u64 != entry.size() {
            return Err(error(&format_args!(
                "{} bytes read, {} declared",
                bytes.len(),
                entry.size()
            )));
        }
        Ok(Some(bytes))
    }

    fn unpickle(&mut self) -> Result<Unpickled> {
        let bytes = self
            .record("data.pkl", MAX_PICKLE_BYTES)?
            .ok_or_else(|| read_error(self.path, "no data.pkl"))?;
        unpickle(&bytes).map_err(|e| read_error(self.path, format_args!("data.pkl: {e}")))
    }

    /// The bytes of the storage `t` views, checked to hold its declared elements.
    fn storage(&mut self, t: &TensorRef) -> Result<Vec<u8>> {
        let s = &t.storage;
        let name = format!("data/{}", s.key);
        let declared = s
            .numel
            .checked_mul(s.dtype.size_in_bytes() as u64)
            .filter(|&b| b <= max_allocation_bytes() as u64)
            .ok_or_else(|| {
                read_error(
                    self.path,
                    format_args!(
                        "storage `{}` of {} {} elements is over the allocation limit",
                        clip(&s.key),
                        s.numel,
                        s.dtype.name()
                    ),
                )
            })?;
        let bytes = self.record(&name, declared)?.ok_or_else(|| {
            read_error(
                self.path,
                format_args!("record `{}` is missing", clip(&name)),
            )
        })?;
        if (bytes.len() as u64) < declared {
            return Err(read_error(
                self.path,
                format_args!(
                    "record `{}` holds {} bytes, {declared} declared",
                    clip(&name),
                    bytes.len()
                ),
            ));
        }
        Ok(bytes)
    }
}

/// Every tensor reachable from the root with its dotted path (a name given twice keeps its first
/// place and its last value, as a Python dictionary does).
fn named_tensors(file: &Unpickled) -> std::result::Result<Vec<(String, TensorRef)>, String> {
    let mut found: Vec<(String, TensorRef)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut visit = |name: String, t: &TensorRef| match index.get(&name) {
        Some(&i) => found[i].1 = t.clone(),
        None => {
            index.insert(name.clone(), found.len());
            found.push((name, t.clone()));
        }
    };
    walk(file, &file.root, String::new(), 0, &mut visit)?;
    Ok(found)
}

/// Calls `visit` for each tensor under `value`, whose path is `name`.
fn walk(
    file: &Unpickled,
    value: &Value,
    name: String,
    depth: usize,
    visit: &mut dyn FnMut(String, &TensorRef),
) -> std::result::Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "containers nest deeper than {MAX_DEPTH} at `{}`",
            clip(&name)
        ));
    }
    let child = |key: &dyn fmt::Display| {
        if name.is_empty() {
            key.to_string()
        } else {
            format!("{name}.{key}")
        }
    };
    match value {
        Value::Tensor(t) => visit(name, t),
        Value::Tuple(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(file, v, child(&i), depth + 1, visit)?;
            }
        }
        Value::List(c) | Value::Dict(c) => match file.items(*c) {
            Items::List(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(file, v, child(&i), depth + 1, visit)?;
                }
            }
            Items::Dict(items) => {
                for (k, v) in items {
                    let key = match k {
                        Value::Str(s) => child(s),
                        Value::Int(i) => child(i),
                        // Keys of other kinds cannot name a tensor; values under them are skipped.
                        _ => continue,
                    };
                    walk(file, v, key, depth + 1, visit)?;
                }
            }
        },
        Value::None
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Str(_)
        | Value::Bytes(_)
        | Value::Global(_)
        | Value::Storage(_) => {}
    }
    Ok(())
}

/// The little-endian bytes of `t`'s elements in row-major order, read through its strides; an
/// error when an element lies outside the storage.
fn gather(t: &TensorRef, storage: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let esize = t.storage.dtype.size_in_bytes();
    let numel = t
        .size
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .filter(|&n| n.saturating_mul(esize as u64) <= max_allocation_bytes() as u64)
        .ok_or_else(|| format!("size {:?} is over the allocation limit", t.size))?;
    if numel == 0 {
        return Ok(Vec::new());
    }
    t.size
        .iter()
        .zip(&t.stride)
        .try_fold(t.offset, |at, (&d, &s)| {
            at.checked_add((d - 1).checked_mul(s)?)
        })
        // Within the declared storage and within the bytes read: another tensor may have declared
        // the same storage smaller, or of another dtype.
        .filter(|&last| {
            last < t.storage.numel
                && (last + 1)
                    .checked_mul(esize as u64)
                    .is_some_and(|end| end <= storage.len() as u64)
        })
        .ok_or_else(|| {
            format!(
                "size {:?}, stride {:?} and offset {} reach past the {} elements of its storage",
                t.size, t.stride, t.offset, t.storage.numel
            )
        })?;
    let mut out = Vec::with_capacity(numel as usize * esize);
    if is_row_major(&t.size, &t.stride) {
        let start = t.offset as usize * esize;
        out.extend_from_slice(&storage[start..start + numel as usize * esize]);
        return Ok(out);
    }
    let rank = t.size.len();
    let mut index = vec![0u64; rank];
    for _ in 0..numel {
        let at = t.offset + index.iter().zip(&t.stride).map(|(i, s)| i * s).sum::<u64>();
        let at = at as usize * esize;
        out.extend_from_slice(&storage[at..at + esize]);
        for axis in (0..rank).rev() {
            index[axis] += 1;
            if index[axis] < t.size[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Ok(out)
}

/// `true` when `stride` is the row-major layout of `size` (axes of length 1 may have any stride).
fn is_row_major(size: &[u64], stride: &[u64]) -> bool {
    let mut expected = 1u64;
    for (&d, &s) in size.iter().zip(stride).rev() {
        if d != 1 && s != expected {
            return false;
        }
        expected = expected.saturating_mul(d);
    }
    true
}

/// Whether the file at `path` starts like a zip archive (a `torch.save` file) rather than a
/// safetensors file (one shorter than the magic bytes does not).
pub(crate) fn is_zip(path: &Path) -> std::io::Result<bool> {
    let mut head = [0u8; 4];
    match File::open(path)?.read_exact(&mut head) {
        Ok(()) => Ok(&head == ZIP_MAGIC),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::pickle::{StorageRef, TensorRef};
    use super::*;
    use nabla_core::DType;

    fn view(size: &[u64], stride: &[u64], offset: u64, numel: u64) -> TensorRef {
        TensorRef {
            storage: StorageRef {
                key: "0".into(),
                dtype: DType::U8,
                numel,
            },
            offset,
            size: size.to_vec(),
            stride: stride.to_vec(),
        }
    }

    #[test]
    fn gathers_strided_views_and_refuses_views_outside_their_storage() {
        let storage: Vec<u8> = (0..12).collect();
        // A transposed 3 x 4 matrix.
        let t = view(&[4, 3], &[1, 4], 0, 12);
        assert_eq!(
            gather(&t, &storage).unwrap(),
            vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
        );
        assert_eq!(
            gather(&view(&[2], &[1], 10, 12), &storage).unwrap(),
            vec![10, 11]
        );
        assert_eq!(
            gather(&view(&[0, 5], &[5, 1], 99, 12), &storage).unwrap(),
            Vec::<u8>::new()
        );
        let err = gather(&view(&[2], &[1], 11, 12), &storage).unwrap_err();
        assert!(err.contains("reach past the 12 elements"), "{err}");
        // A storage another tensor declared (and so read) smaller than this one declares it.
        let err = gather(&view(&[4], &[1], 6, 12), &storage[..8]).unwrap_err();
        assert!(err.contains("reach past"), "{err}");
        let err = gather(&view(&[2, 2], &[u64::MAX, 1], 0, 12), &storage).unwrap_err();
        assert!(err.contains("reach past"), "{err}");
    }
}
