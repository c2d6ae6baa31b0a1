//! The data sets of the command line and the reading of `predict`'s input files.

use clap::ValueEnum;
use nabla_core::{DType, Error, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_data::transforms::{Compose, RandomCrop, RandomHorizontalFlip};
use nabla_data::{
    Cifar, CifarVariant, CsvHeader, CsvOptions, CsvReader, Dataset, Digits, Mnist, NpyReader,
    TensorDataset, random_permutation,
};
use nabla_tensor::Tensor;
use std::path::{Path, PathBuf};

/// Where the Debian package `dataset-fashion-mnist` installs its IDX files.
pub const FASHION_MNIST_DIR: &str = "/usr/share/datasets/fashion-mnist";

/// The seed of the fixed splits: the embedded digits' 80/20 train/test split (so `eval` sees the same
/// test set) and the validation split of every data set.
pub const SPLIT_SEED: u64 = 0;

/// The data sets `--dataset` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DatasetKind {
    /// The UCI optical digits embedded in nabla (1,797 8x8 images, 10 classes); a fixed, seeded
    /// 80/20 train/test split. Needs no files.
    Digits,
    /// MNIST (28x28 handwritten digits) from IDX files in `--data-dir` (raw or `.gz`).
    Mnist,
    /// Fashion-MNIST (28x28 clothing images) from IDX files in `--data-dir`, by default
    /// /usr/share/datasets/fashion-mnist (Debian package dataset-fashion-mnist).
    FashionMnist,
    /// CIFAR-10 (32x32 colour images, 10 classes) from the binary files in `--data-dir`
    /// (`data_batch_1.bin` to `data_batch_5.bin`, `test_batch.bin`), trained with random crops
    /// (padding 4) and horizontal flips.
    Cifar10,
    /// CIFAR-100 (32x32 colour images, 100 classes: the fine labels) from `train.bin` and
    /// `test.bin` in `--data-dir`, trained with random crops and flips.
    Cifar100,
}

impl DatasetKind {
    /// The name used on the command line and in checkpoints.
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::Digits => "digits",
            DatasetKind::Mnist => "mnist",
            DatasetKind::FashionMnist => "fashion-mnist",
            DatasetKind::Cifar10 => "cifar10",
            DatasetKind::Cifar100 => "cifar100",
        }
    }

    /// The number of classes.
    pub fn classes(self) -> usize {
        match self {
            DatasetKind::Digits | DatasetKind::Mnist | DatasetKind::FashionMnist => 10,
            DatasetKind::Cifar10 => CifarVariant::Cifar10.classes(),
            DatasetKind::Cifar100 => CifarVariant::Cifar100.classes(),
        }
    }

    /// The training augmentation: random 32x32 crops of the image padded by 4 and horizontal flips
    /// for CIFAR (the usual recipe), nothing for the others.
    pub fn augmentation(self) -> Result<Compose<CpuBackend>> {
        Ok(match self {
            DatasetKind::Cifar10 | DatasetKind::Cifar100 => Compose::new(vec![
                Box::new(RandomCrop::new((32, 32), 4)),
                Box::new(RandomHorizontalFlip::new(0.5)?),
            ]),
            DatasetKind::Digits | DatasetKind::Mnist | DatasetKind::FashionMnist => {
                Compose::new(Vec::new())
            }
        })
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Result<Self> {
        DatasetKind::from_str(name, true).map_err(|_| {
            Error::invalid(
                "dataset",
                format!(
                    "unknown data set `{name}` (expected digits, mnist, fashion-mnist, cifar10 or \
                     cifar100)"
                ),
            )
        })
    }
}

/// The share of the training examples held out for the per-epoch validation figures (the test set is
/// kept apart for the final result, as in scikit-learn's and Keras's practice).
pub const VALIDATION_FRACTION: f64 = 0.1;

/// CIFAR's per-channel means and standard deviations over the training images (the usual
/// normalisation).
const CIFAR_MEAN: [f32; 3] = [0.4914, 0.4822, 0.4465];
const CIFAR_STD: [f32; 3] = [0.2470, 0.2435, 0.2616];

/// A data set split into training, validation and test examples.
pub struct Splits {
    /// Training examples `(image [C, H, W], label)`.
    pub train: TensorDataset<CpuBackend>,
    /// Validation examples, held out of the training split (the per-epoch figures).
    pub val: TensorDataset<CpuBackend>,
    /// Test examples (the final result only).
    pub test: TensorDataset<CpuBackend>,
    /// `[C, H, W]`.
    pub input_shape: Vec<usize>,
    /// The number of classes.
    pub classes: usize,
}

impl Splits {
    /// The number of examples in each split: training, validation and test.
    pub fn sizes(&self) -> [usize; 3] {
        [&self.train, &self.val, &self.test].map(Dataset::len)
    }
}

/// The directory of an IDX data set: `data_dir`, or the data set's default.
fn idx_dir(kind: DatasetKind, data_dir: Option<&Path>) -> Result<PathBuf> {
    match (data_dir, kind) {
        (Some(d), _) => Ok(d.to_path_buf()),
        (None, DatasetKind::FashionMnist) => Ok(PathBuf::from(FASHION_MNIST_DIR)),
        (None, _) => Err(Error::invalid(
            "dataset",
            format!(
                "--dataset {} needs --data-dir DIR holding train-images-idx3-ubyte, \
                 train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (or .gz)",
                kind.name()
            ),
        )),
    }
}

/// The rows `indices` of every tensor of `data`.
fn pick(data: &TensorDataset<CpuBackend>, indices: &[usize]) -> Result<TensorDataset<CpuBackend>> {
    let cpu = data.tensors()[0].backend();
    let idx: Vec<i64> = indices.iter().map(|&i| i as i64).collect();
    let idx = Tensor::from_vec(idx, [indices.len()], cpu)?;
    TensorDataset::new(
        data.tensors()
            .iter()
            .map(|t| t.index_select(0, &idx))
            .collect::<Result<_>>()?,
    )
}

/// Splits a seeded (fixed, so every run and `eval` agree) [`VALIDATION_FRACTION`] of `train` off as a
/// validation set; the training set must have at least two examples.
fn split_validation(
    train: TensorDataset<CpuBackend>,
    what: &str,
) -> Result<(TensorDataset<CpuBackend>, TensorDataset<CpuBackend>)> {
    let n = train.len();
    if n < 2 {
        return Err(Error::invalid(
            "dataset",
            format!(
                "{what} has {n} training examples; at least 2 are needed (one is held out for validation)"
            ),
        ));
    }
    let n_val = ((VALIDATION_FRACTION * n as f64).ceil() as usize).clamp(1, n - 1);
    let perm = random_permutation(n, &mut Generator::new(SPLIT_SEED));
    Ok((pick(&train, &perm[n_val..])?, pick(&train, &perm[..n_val])?))
}

/// Fails unless every label of `labels` (the `split` of data set `what`) lies in `0..classes`.
fn check_labels(
    labels: &Tensor<CpuBackend>,
    classes: usize,
    split: &str,
    what: &str,
) -> Result<()> {
    let values = labels.to_vec::<i64>()?;
    match values
        .iter()
        .position(|&l| !(0..classes as i64).contains(&l))
    {
        None => Ok(()),
        Some(i) => Err(Error::invalid(
            "dataset",
            format!(
                "{what}: {split} label {} (example {i}) is outside the {classes} classes 0..={}",
                values[i],
                classes - 1
            ),
        )),
    }
}

/// CIFAR's training and test sets from `data_dir`, normalised per channel.
fn load_cifar(
    kind: DatasetKind,
    variant: CifarVariant,
    data_dir: Option<&Path>,
    cpu: &CpuBackend,
) -> Result<(TensorDataset<CpuBackend>, TensorDataset<CpuBackend>, String)> {
    let dir = data_dir.ok_or_else(|| {
        Error::invalid(
            "dataset",
            format!(
                "--dataset {} needs --data-dir DIR holding the binary version's files ({})",
                kind.name(),
                [variant.files(true), variant.files(false)]
                    .concat()
                    .join(", ")
            ),
        )
    })?;
    let mean = Tensor::from_vec(CIFAR_MEAN.to_vec(), [1, 3, 1, 1], cpu)?;
    let std = Tensor::from_vec(CIFAR_STD.to_vec(), [1, 3, 1, 1], cpu)?;
    let split = |train: bool| -> Result<TensorDataset<CpuBackend>> {
        let set = Cifar::load(dir, variant, train, cpu)?;
        let images = set.images.sub(&mean)?.div(&std)?;
        TensorDataset::new(vec![images, set.labels])
    };
    Ok((
        split(true)?,
        split(false)?,
        format!("{} in {}", kind.name(), dir.display()),
    ))
}

/// Loads `kind` (IDX data sets from `data_dir`) and checks it before any training: labels within
/// the classes, test images of the training images' size, and at least one test example.
pub fn load(kind: DatasetKind, data_dir: Option<&Path>, cpu: &CpuBackend) -> Result<Splits> {
    let (train, test, what) = match kind {
        DatasetKind::Digits => {
            let digits = Digits::load(cpu)?;
            let (train, test) = digits.train_test_split(0.2, SPLIT_SEED)?;
            (train, test, "the embedded digits".to_string())
        }
        DatasetKind::Mnist | DatasetKind::FashionMnist => {
            let dir = idx_dir(kind, data_dir)?;
            if !dir.is_dir() {
                return Err(Error::Io {
                    context: format!("loading {}", kind.name()),
                    message: format!("directory {} does not exist", dir.display()),
                });
            }
            let train = Mnist::load(&dir, true, cpu)?.into_dataset()?;
            let test = Mnist::load(&dir, false, cpu)?.into_dataset()?;
            (train, test, format!("{} in {}", kind.name(), dir.display()))
        }
        DatasetKind::Cifar10 => load_cifar(kind, CifarVariant::Cifar10, data_dir, cpu)?,
        DatasetKind::Cifar100 => load_cifar(kind, CifarVariant::Cifar100, data_dir, cpu)?,
    };
    let classes = kind.classes();
    let input_shape = train.tensors()[0].shape()[1..].to_vec();
    let test_shape = &test.tensors()[0].shape()[1..];
    if test_shape != input_shape.as_slice() {
        return Err(Error::invalid(
            "dataset",
            format!(
                "{what}: the test images are {test_shape:?} but the training images are {input_shape:?}"
            ),
        ));
    }
    if test.is_empty() {
        return Err(Error::invalid(
            "dataset",
            format!("{what} has no test examples"),
        ));
    }
    check_labels(&train.tensors()[1], classes, "training", &what)?;
    check_labels(&test.tensors()[1], classes, "test", &what)?;
    let (train, val) = split_validation(train, &what)?;
    Ok(Splits {
        train,
        val,
        test,
        input_shape,
        classes,
    })
}

/// Where `predict`'s examples come from.
enum InputSource {
    /// A `.npy` array, read a chunk of elements at a time.
    Npy(NpyReader<'static>),
    /// A `.csv` table, read a chunk of rows at a time.
    Csv(CsvReader<'static>),
}

/// `predict`'s input read batch by batch, so that memory is bounded by the batch, not the file: a
/// `.npy` array (any shape whose size is a multiple of one example) or a `.csv` table with one
/// example of `prod(input_shape)` values per row. The first row of a `.csv` file is a header when
/// `header` says so or when none of its fields is a number ([`CsvHeader::Detect`]); a malformed
/// number in any row is an error naming the row and column.
pub struct PredictInput {
    path: PathBuf,
    source: InputSource,
    input_shape: Vec<usize>,
    /// Values per example.
    features: usize,
    /// Examples returned so far.
    examples: usize,
}

impl PredictInput {
    /// Opens `path` and checks what its header or first row says: its kind (by extension), that it
    /// holds whole examples of `input_shape`, and for a `.csv` file its number of columns.
    pub fn open(path: &Path, input_shape: &[usize], header: bool) -> Result<Self> {
        if !path.is_file() {
            return Err(Error::Io {
                context: format!("reading {}", path.display()),
                message: "no such file".to_string(),
            });
        }
        let features: usize = input_shape.iter().product::<usize>().max(1);
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let source = match ext.to_ascii_lowercase().as_str() {
            "npy" => {
                let reader = NpyReader::open(path)?;
                let total = reader.numel();
                if !total.is_multiple_of(features) {
                    return Err(Error::invalid(
                        "predict",
                        format!(
                            "{} holds {total} values, not a multiple of the {features} values of \
                             one {input_shape:?} example",
                            path.display()
                        ),
                    ));
                }
                InputSource::Npy(reader)
            }
            "csv" => {
                let rule = if header {
                    CsvHeader::Present
                } else {
                    CsvHeader::Detect
                };
                let reader = CsvReader::open(path, &CsvOptions::default().header(rule))?;
                if let Some(cols) = reader.cols().filter(|&c| c != features) {
                    return Err(Error::invalid(
                        "predict",
                        format!(
                            "{} has {cols} columns, but the model takes {features} values per \
                             example ({input_shape:?})",
                            path.display()
                        ),
                    ));
                }
                InputSource::Csv(reader)
            }
            _ => {
                return Err(Error::invalid(
                    "predict",
                    format!("cannot read {}: use a .npy or .csv file", path.display()),
                ));
            }
        };
        Ok(PredictInput {
            path: path.to_path_buf(),
            source,
            input_shape: input_shape.to_vec(),
            features,
            examples: 0,
        })
    }

    /// The next examples, at most `batch` of them, as a `[n, C, H, W]` `f32` tensor on `cpu`, or
    /// `None` after the last. Every value must be a finite number in `[0, 1]`; a file without any
    /// example is an error.
    pub fn next_batch(
        &mut self,
        batch: usize,
        cpu: &CpuBackend,
    ) -> Result<Option<Tensor<CpuBackend>>> {
        let batch = batch.max(1);
        let flat = match &mut self.source {
            InputSource::Npy(reader) => {
                let data = reader.read(batch.saturating_mul(self.features))?;
                let n = data.len() / self.features;
                Tensor::from_host(data, [n, self.features], cpu)?.cast(DType::F32)?
            }
            InputSource::Csv(reader) => {
                reader.read_rows(batch)?.features_tensor(DType::F32, cpu)?
            }
        };
        let n = flat.shape()[0];
        if n == 0 {
            if self.examples == 0 {
                return Err(Error::invalid(
                    "predict",
                    format!("{} holds no examples", self.path.display()),
                ));
            }
            return Ok(None);
        }
        check_pixels(
            &flat.to_vec::<f32>()?,
            self.features,
            self.examples,
            &self.path,
        )?;
        self.examples += n;
        let mut shape = vec![n];
        shape.extend_from_slice(&self.input_shape);
        flat.reshape(shape).map(Some)
    }
}

/// Fails unless every value of `pixels` (examples of `features` values each, read from `path`, the
/// first of them example number `first`) is a finite number in `[0, 1]`, the scale every model of
/// the command line is trained on.
fn check_pixels(pixels: &[f32], features: usize, first: usize, path: &Path) -> Result<()> {
    let Some(i) = pixels
        .iter()
        .position(|p| !p.is_finite() || !(0.0..=1.0).contains(p))
    else {
        return Ok(());
    };
    let (value, example) = (pixels[i], first + i / features.max(1));
    let why = if value.is_finite() {
        "pixels must be scaled to [0, 1] as in training (MNIST: divide bytes by 255; the digits: \
         divide the 0..16 counts by 16)"
    } else {
        "inputs must be finite numbers"
    };
    Err(Error::invalid(
        "predict",
        format!("{}: example {example} holds {value}; {why}", path.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` file of `f32` values with the given shape.
    fn npy_bytes(values: &[f32], shape: &str) -> Vec<u8> {
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        for v in values {
            out.extend(v.to_le_bytes());
        }
        out
    }

    /// Every example of `path` read `batch` at a time: the shape of each batch, and all the values.
    fn read_inputs(
        path: &Path,
        input_shape: &[usize],
        batch: usize,
    ) -> Result<(Vec<Vec<usize>>, Vec<f32>)> {
        let cpu = CpuBackend::new();
        let mut input = PredictInput::open(path, input_shape, false)?;
        let (mut shapes, mut values) = (Vec::new(), Vec::new());
        while let Some(x) = input.next_batch(batch, &cpu)? {
            shapes.push(x.shape().to_vec());
            values.extend(x.to_vec::<f32>()?);
        }
        Ok((shapes, values))
    }

    #[test]
    fn reads_npy_and_csv_inputs_and_rejects_bad_ones() -> Result<()> {
        let dir = std::env::temp_dir();
        let tag = std::process::id();
        let npy = dir.join(format!("nabla-cli-data-{tag}.npy"));
        let values: Vec<f32> = (0..8).map(|i| i as f32 / 8.0).collect();
        let io = |e: std::io::Error| Error::invalid("test", e.to_string());
        std::fs::write(&npy, npy_bytes(&values, "(2, 1, 2, 2)")).map_err(io)?;
        let (shapes, x) = read_inputs(&npy, &[1, 2, 2], 256)?;
        assert_eq!((shapes, &x), (vec![vec![2, 1, 2, 2]], &values));
        let (shapes, x) = read_inputs(&npy, &[1, 2, 2], 1)?;
        assert_eq!((shapes, &x), (vec![vec![1, 1, 2, 2]; 2], &values));
        assert!(read_inputs(&npy, &[1, 3, 3], 1).is_err());
        let csv = dir.join(format!("nabla-cli-data-{tag}.csv"));
        std::fs::write(&csv, "a,b,c,d\n0,0.125,0.25,0.375\n0.5,0.625,0.75,0.875\n").map_err(io)?;
        assert_eq!(read_inputs(&csv, &[1, 2, 2], 1)?.1, values);
        assert!(read_inputs(&csv, &[1, 1, 2], 1).is_err());
        let txt = dir.join(format!("nabla-cli-data-{tag}.txt"));
        std::fs::write(&txt, "0").map_err(io)?;
        assert!(read_inputs(&txt, &[1], 1).is_err());
        assert!(read_inputs(&dir.join("nabla-missing.npy"), &[1], 1).is_err());
        for p in [npy, csv, txt] {
            std::fs::remove_file(p).ok();
        }
        Ok(())
    }
}
