//! The IDX format of MNIST and Fashion-MNIST, and the `Mnist` loader.

use crate::array::{HostArray, checked_size, decode, short_shape};
use crate::dataset::TensorDataset;
use crate::source::Input;
use nabla_core::{Backend, DType, Error, HostData, Result, check_allocation};
use nabla_tensor::Tensor;
use std::path::{Path, PathBuf};

/// Parses an IDX file held in memory (raw, or gzip-compressed: detected by its magic bytes).
///
/// The format: two zero bytes, a dtype code (`0x08` u8, `0x09` i8, `0x0B` i16, `0x0C` i32, `0x0D` f32,
/// `0x0E` f64), the number of dimensions, each dimension as a big-endian `u32`, then the elements,
/// big-endian, in row-major order, each read as the nabla dtype of its name. `name` (usually the file name) appears
/// in errors, with the byte offset of the problem.
///
/// ```
/// use nabla_core::HostData;
/// use nabla_data::parse_idx;
/// let bytes = [0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 1, 7, 9];
/// let a = parse_idx(&bytes, "tiny.idx")?;
/// assert_eq!(a.shape, vec![2, 1]);
/// assert_eq!(a.data, HostData::U8(vec![7, 9]));
/// let err = parse_idx(&bytes[..13], "tiny.idx").unwrap_err().to_string();
/// assert!(err.contains("tiny.idx") && err.contains("offset 12"), "{err}");
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn parse_idx(bytes: &[u8], name: &str) -> Result<HostArray> {
    read_idx_from(Input::from_bytes(name, bytes))
}

/// Reads an IDX file (raw or gzip); errors name the file and the byte offset. See [`parse_idx`].
///
/// The header is read first; the data it declares is checked against the allocation limit
/// ([`nabla_core::check_allocation`]) before it is read, and a gzip file is decompressed only as far
/// as the header declares (one byte more shows trailing data, an error as in a raw file).
pub fn read_idx(path: impl AsRef<Path>) -> Result<HostArray> {
    read_idx_from(Input::open(path.as_ref())?)
}

/// Parses IDX from a stream of raw (decompressed) bytes.
fn read_idx_from(mut c: Input<'_>) -> Result<HostArray> {
    let magic = c.array::<4>("the magic number")?;
    if magic[0] != 0 || magic[1] != 0 {
        return Err(c.error_at(
            0,
            format!(
                "not an IDX file: magic number starts with {:#04x} {:#04x}, expected 0x00 0x00",
                magic[0], magic[1]
            ),
        ));
    }
    let dtype = match magic[2] {
        0x08 => DType::U8,
        0x09 => DType::I8,
        0x0B => DType::I16,
        0x0C => DType::I32,
        0x0D => DType::F32,
        0x0E => DType::F64,
        code => {
            return Err(c.error_at(
                2,
                format!(
                    "unknown IDX dtype code {code:#04x} (expected 0x08, 0x09, 0x0b, 0x0c, 0x0d or \
                     0x0e)"
                ),
            ));
        }
    };
    let rank = magic[3] as usize;
    let mut shape = Vec::with_capacity(rank);
    for i in 0..rank {
        let d = c.array::<4>(&format!("dimension {i}"))?;
        shape.push(u32::from_be_bytes(d) as usize);
    }
    let size = checked_size(&shape, dtype, &c.name, c.pos, "read_idx")?;
    let start = c.pos;
    let data = c.take(size, &format!("the data of shape {}", short_shape(&shape)))?;
    c.expect_end()?;
    let data = decode(dtype, data, true, &c.name, start)?;
    Ok(HostArray { shape, data })
}

/// MNIST or Fashion-MNIST (same file layout): images `[N, 1, 28, 28]` `f32` scaled to `[0, 1]` and
/// labels `[N]` `i64`.
///
/// ```no_run
/// use nabla_cpu::CpuBackend;
/// use nabla_data::Mnist;
/// let train = Mnist::load("/usr/share/datasets/fashion-mnist", true, &CpuBackend::new())?;
/// assert_eq!(train.images.shape(), &[60000, 1, 28, 28]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Mnist<B: Backend> {
    /// Images `[N, 1, H, W]`, `f32` in `[0, 1]`.
    pub images: Tensor<B>,
    /// Labels `[N]`, `i64`.
    pub labels: Tensor<B>,
}

/// The file stem for a split: `train` or `t10k`.
fn split_prefix(train: bool) -> &'static str {
    if train { "train" } else { "t10k" }
}

/// Finds `<stem>` or `<stem>.gz` in `dir`; the also-common `train-images.idx3-ubyte` spelling counts too.
fn find_file(dir: &Path, stem: &str) -> Result<PathBuf> {
    let dotted = stem.replacen("-idx", ".idx", 1);
    let candidates = [
        stem.to_string(),
        format!("{stem}.gz"),
        dotted.clone(),
        format!("{dotted}.gz"),
    ];
    candidates
        .iter()
        .map(|c| dir.join(c))
        .find(|p| p.is_file())
        .ok_or_else(|| Error::Io {
            context: format!("loading MNIST from {}", dir.display()),
            message: format!("neither {stem} nor {stem}.gz exists there"),
        })
}

impl<B: Backend> Mnist<B> {
    /// Reads the training (`train = true`: `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`) or
    /// test (`t10k-...`) split from `dir`; each file may be gzip-compressed (`.gz`).
    pub fn load(dir: impl AsRef<Path>, train: bool, backend: &B) -> Result<Self> {
        let dir = dir.as_ref();
        let prefix = split_prefix(train);
        let image_path = find_file(dir, &format!("{prefix}-images-idx3-ubyte"))?;
        let label_path = find_file(dir, &format!("{prefix}-labels-idx1-ubyte"))?;
        let images = read_idx(&image_path)?;
        let labels = read_idx(&label_path)?;
        Mnist::from_arrays(images, labels, backend).map_err(|e| Error::Io {
            context: format!(
                "loading {} and {}",
                image_path.display(),
                label_path.display()
            ),
            message: e.to_string(),
        })
    }

    /// Builds the data set from parsed IDX arrays: `u8` images `[N, H, W]` and `u8` labels `[N]`.
    pub fn from_arrays(images: HostArray, labels: HostArray, backend: &B) -> Result<Self> {
        let (HostData::U8(pixels), [n, h, w]) = (&images.data, images.shape.as_slice()) else {
            return Err(Error::invalid(
                "Mnist",
                format!(
                    "images must be u8 of rank 3 [N, H, W], got {} of shape {:?}",
                    images.dtype(),
                    images.shape
                ),
            ));
        };
        let HostData::U8(label_bytes) = &labels.data else {
            return Err(Error::invalid(
                "Mnist",
                format!("labels must be u8, got {}", labels.dtype()),
            ));
        };
        if labels.shape != [*n] {
            return Err(Error::shapes("Mnist", &images.shape, &labels.shape)
                .with_hint("expected one label per image"));
        }
        check_allocation("Mnist", &[*n, *h, *w], DType::F32)?;
        let scaled: Vec<f32> = pixels.iter().map(|&p| f32::from(p) / 255.0).collect();
        let images = Tensor::from_vec(scaled, [*n, 1, *h, *w], backend)?;
        let labels: Vec<i64> = label_bytes.iter().map(|&l| i64::from(l)).collect();
        let labels = Tensor::from_vec(labels, [*n], backend)?;
        Ok(Mnist { images, labels })
    }

    /// The number of examples.
    pub fn len(&self) -> usize {
        self.labels.shape()[0]
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A data set of `(image, label)` rows: items `vec![image [1, H, W], label []]`.
    pub fn into_dataset(self) -> Result<TensorDataset<B>> {
        TensorDataset::new(vec![self.images, self.labels])
    }
}
