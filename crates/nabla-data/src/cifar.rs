//! CIFAR-10 and CIFAR-100 in their binary format (the `cifar-10-batches-bin` and
//! `cifar-100-binary` archives' files): fixed-size records of a label byte (CIFAR-100: a coarse
//! and a fine label byte) then 3,072 pixel bytes, the red, green and blue 32x32 planes in turn.

use crate::dataset::TensorDataset;
use crate::source::{Input, bad_input};
use nabla_core::{Backend, DType, Error, Result, check_allocation};
use nabla_tensor::Tensor;
use std::path::{Path, PathBuf};

/// Pixels of one image: three planes of 32 x 32.
const PIXELS: usize = 3 * 32 * 32;

/// Which CIFAR data set, and so which files and labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CifarVariant {
    /// 10 classes; training files `data_batch_1.bin` to `data_batch_5.bin`, test `test_batch.bin`.
    Cifar10,
    /// 100 classes (the fine labels; the coarse ones are skipped); `train.bin` and `test.bin`.
    Cifar100,
}

impl CifarVariant {
    /// The number of classes.
    pub fn classes(self) -> usize {
        match self {
            CifarVariant::Cifar10 => 10,
            CifarVariant::Cifar100 => 100,
        }
    }

    /// Label bytes before each image's pixels.
    fn label_bytes(self) -> usize {
        match self {
            CifarVariant::Cifar10 => 1,
            CifarVariant::Cifar100 => 2,
        }
    }

    /// The files of a split, in order.
    pub fn files(self, train: bool) -> Vec<String> {
        match (self, train) {
            (CifarVariant::Cifar10, true) => {
                (1..=5).map(|i| format!("data_batch_{i}.bin")).collect()
            }
            (CifarVariant::Cifar10, false) => vec!["test_batch.bin".into()],
            (CifarVariant::Cifar100, true) => vec!["train.bin".into()],
            (CifarVariant::Cifar100, false) => vec!["test.bin".into()],
        }
    }

    /// The folder the official archive unpacks to.
    fn archive_dir(self) -> &'static str {
        match self {
            CifarVariant::Cifar10 => "cifar-10-batches-bin",
            CifarVariant::Cifar100 => "cifar-100-binary",
        }
    }
}

/// A split of CIFAR-10 or CIFAR-100.
///
/// ```no_run
/// use nabla_cpu::CpuBackend;
/// use nabla_data::{Cifar, CifarVariant};
/// let train = Cifar::load("data/cifar-10-batches-bin", CifarVariant::Cifar10, true, &CpuBackend::new())?;
/// assert_eq!(train.images.shape(), &[50000, 3, 32, 32]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Cifar<B: Backend> {
    /// Images `[N, 3, 32, 32]`, `f32` in `[0, 1]`.
    pub images: Tensor<B>,
    /// Labels `[N]`, `i64` in `0..classes`.
    pub labels: Tensor<B>,
}

/// The image and label bytes of one file's records.
fn parse_records(bytes: &[u8], name: &str, variant: CifarVariant) -> Result<(Vec<u8>, Vec<u8>)> {
    let skip = variant.label_bytes();
    let record = skip + PIXELS;
    if bytes.is_empty() || !bytes.len().is_multiple_of(record) {
        return Err(bad_input(
            name,
            bytes.len() - bytes.len() % record,
            format!(
                "{} bytes is not a whole number of {record}-byte records ({} label byte{} and \
                 3,072 pixels each)",
                bytes.len(),
                skip,
                if skip == 1 { "" } else { "s" }
            ),
        ));
    }
    let n = bytes.len() / record;
    let (mut pixels, mut labels) = (Vec::with_capacity(n * PIXELS), Vec::with_capacity(n));
    for (i, r) in bytes.chunks_exact(record).enumerate() {
        let label = r[skip - 1];
        if usize::from(label) >= variant.classes() {
            return Err(bad_input(
                name,
                i * record + skip - 1,
                format!(
                    "record {i} has label {label}, outside the {} classes",
                    variant.classes()
                ),
            ));
        }
        labels.push(label);
        pixels.extend_from_slice(&r[skip..]);
    }
    Ok((pixels, labels))
}

/// The folder holding `variant`'s files: `dir`, or the archive's folder inside it.
fn data_dir(dir: &Path, variant: CifarVariant) -> PathBuf {
    let first = &variant.files(false)[0];
    let nested = dir.join(variant.archive_dir());
    if !dir.join(first).is_file() && nested.join(first).is_file() {
        nested
    } else {
        dir.to_path_buf()
    }
}

impl<B: Backend> Cifar<B> {
    /// Reads the training (`train = true`) or test split of `variant` from `dir` (or from the
    /// archive's folder inside it, `cifar-10-batches-bin` / `cifar-100-binary`). Every file of the
    /// split must be there; each must hold whole records whose labels lie within the classes. Errors
    /// name the file and the byte offset.
    pub fn load(
        dir: impl AsRef<Path>,
        variant: CifarVariant,
        train: bool,
        backend: &B,
    ) -> Result<Self> {
        let dir = data_dir(dir.as_ref(), variant);
        let files = variant.files(train);
        let missing: Vec<&str> = files
            .iter()
            .filter(|f| !dir.join(f).is_file())
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(Error::Io {
                context: format!("loading {variant:?} from {}", dir.display()),
                message: format!("missing {}", missing.join(", ")),
            });
        }
        let (mut pixels, mut labels) = (Vec::new(), Vec::new());
        for file in &files {
            let path = dir.join(file);
            let name = path.display().to_string();
            let bytes = Input::open(&path)?.read_rest("the records")?;
            let (p, l) = parse_records(&bytes, &name, variant)?;
            pixels.extend_from_slice(&p);
            labels.extend_from_slice(&l);
        }
        Cifar::from_bytes(&pixels, &labels, backend)
    }

    /// Builds a split from its pixel bytes (`n` images of 3 x 32 x 32, planes in turn) and labels.
    pub fn from_bytes(pixels: &[u8], labels: &[u8], backend: &B) -> Result<Self> {
        let n = labels.len();
        if pixels.len() != n * PIXELS {
            return Err(Error::invalid(
                "Cifar",
                format!(
                    "{} pixel bytes for {n} labels; expected {}",
                    pixels.len(),
                    n * PIXELS
                ),
            ));
        }
        check_allocation("Cifar", &[n, 3, 32, 32], DType::F32)?;
        let scaled: Vec<f32> = pixels.iter().map(|&p| f32::from(p) / 255.0).collect();
        Ok(Cifar {
            images: Tensor::from_vec(scaled, [n, 3, 32, 32], backend)?,
            labels: Tensor::from_vec(labels.iter().map(|&l| i64::from(l)).collect(), [n], backend)?,
        })
    }

    /// A data set of `(image, label)` rows: items `vec![image [3, 32, 32], label []]`.
    pub fn into_dataset(self) -> Result<TensorDataset<B>> {
        TensorDataset::new(vec![self.images, self.labels])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_cpu::CpuBackend;

    fn record(label: &[u8], pixel: u8) -> Vec<u8> {
        let mut r = label.to_vec();
        r.extend(std::iter::repeat_n(pixel, PIXELS));
        r
    }

    #[test]
    fn records_parse_and_bad_files_are_refused_by_offset() {
        let mut bytes = record(&[3], 10);
        bytes.extend(record(&[9], 255));
        let (pixels, labels) = parse_records(&bytes, "b.bin", CifarVariant::Cifar10).unwrap();
        assert_eq!(labels, vec![3, 9]);
        assert_eq!((pixels[0], pixels[PIXELS]), (10, 255));
        let cpu = CpuBackend::new();
        let set = Cifar::from_bytes(&pixels, &labels, &cpu).unwrap();
        assert_eq!(set.images.shape(), &[2, 3, 32, 32]);
        assert_eq!(set.images.to_vec::<f32>().unwrap()[PIXELS], 1.0);

        let (_, fine) =
            parse_records(&record(&[1, 77], 0), "t.bin", CifarVariant::Cifar100).unwrap();
        assert_eq!(fine, vec![77]);
        let err = parse_records(&bytes[..100], "b.bin", CifarVariant::Cifar10)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("b.bin") && err.contains("not a whole number of 3073-byte records"),
            "{err}"
        );
        let err = parse_records(&record(&[10], 0), "b.bin", CifarVariant::Cifar10)
            .unwrap_err()
            .to_string();
        assert!(err.contains("record 0 has label 10"), "{err}");
        let err = parse_records(&[], "e.bin", CifarVariant::Cifar10)
            .unwrap_err()
            .to_string();
        assert!(err.contains("0 bytes"), "{err}");
    }
}
