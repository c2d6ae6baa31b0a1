//! The data sets of the command line and the reading of `predict`'s input files.

use clap::ValueEnum;
use nabla_core::{DType, Error, Result};
use nabla_cpu::CpuBackend;
use nabla_data::{CsvOptions, Digits, Mnist, TensorDataset, read_csv, read_npy};
use nabla_tensor::Tensor;
use std::path::{Path, PathBuf};

/// Where the Debian package `dataset-fashion-mnist` installs its IDX files.
pub const FASHION_MNIST_DIR: &str = "/usr/share/datasets/fashion-mnist";

/// The seed of the fixed 80/20 split of the embedded digits (so `eval` sees the same test set).
pub const DIGITS_SPLIT_SEED: u64 = 0;

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
}

impl DatasetKind {
    /// The name used on the command line and in checkpoints.
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::Digits => "digits",
            DatasetKind::Mnist => "mnist",
            DatasetKind::FashionMnist => "fashion-mnist",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Result<Self> {
        DatasetKind::from_str(name, true).map_err(|_| {
            Error::invalid(
                "dataset",
                format!("unknown data set `{name}` (expected digits, mnist or fashion-mnist)"),
            )
        })
    }
}

/// A data set split into training and test examples.
pub struct Splits {
    /// Training examples `(image [C, H, W], label)`.
    pub train: TensorDataset<CpuBackend>,
    /// Test examples.
    pub test: TensorDataset<CpuBackend>,
    /// `[C, H, W]`.
    pub input_shape: Vec<usize>,
    /// The number of classes.
    pub classes: usize,
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

/// Loads `kind` (IDX data sets from `data_dir`).
pub fn load(kind: DatasetKind, data_dir: Option<&Path>, cpu: &CpuBackend) -> Result<Splits> {
    match kind {
        DatasetKind::Digits => {
            let digits = Digits::load(cpu)?;
            let (train, test) = digits.train_test_split(0.2, DIGITS_SPLIT_SEED)?;
            Ok(Splits {
                train,
                test,
                input_shape: vec![1, 8, 8],
                classes: Digits::<CpuBackend>::CLASSES,
            })
        }
        DatasetKind::Mnist | DatasetKind::FashionMnist => {
            let dir = idx_dir(kind, data_dir)?;
            if !dir.is_dir() {
                return Err(Error::Io {
                    context: format!("loading {}", kind.name()),
                    message: format!("directory {} does not exist", dir.display()),
                });
            }
            let train = Mnist::load(&dir, true, cpu)?;
            let test = Mnist::load(&dir, false, cpu)?;
            let input_shape = train.images.shape()[1..].to_vec();
            let classes = 1 + train
                .labels
                .max_all()?
                .cast(DType::I64)?
                .item::<i64>()?
                .max(1) as usize;
            Ok(Splits {
                train: train.into_dataset()?,
                test: test.into_dataset()?,
                input_shape,
                classes,
            })
        }
    }
}

/// Reads `predict`'s input: a `.npy` array or a headerless (or one-header-row) `.csv` table whose
/// rows are examples with `prod(input_shape)` values each. Returns `[N, C, H, W]` `f32` inputs.
pub fn read_inputs(
    path: &Path,
    input_shape: &[usize],
    cpu: &CpuBackend,
) -> Result<Tensor<CpuBackend>> {
    if !path.is_file() {
        return Err(Error::Io {
            context: format!("reading {}", path.display()),
            message: "no such file".to_string(),
        });
    }
    let features: usize = input_shape.iter().product();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let flat = match ext.as_str() {
        "npy" => {
            let array = read_npy(path)?;
            let total: usize = array.shape.iter().product();
            let t = array.into_tensor(cpu)?.cast(DType::F32)?;
            t.reshape([total / features.max(1), features])
                .ok()
                .filter(|_| total.is_multiple_of(features.max(1)))
                .ok_or_else(|| {
                    Error::invalid(
                        "predict",
                        format!(
                            "{} holds {total} values, not a multiple of the {features} values of one \
                             {input_shape:?} example",
                            path.display()
                        ),
                    )
                })?
        }
        "csv" => {
            let table = read_csv(path, &CsvOptions::default()).or_else(|first| {
                read_csv(path, &CsvOptions::default().has_header(true)).map_err(|_| first)
            })?;
            if table.cols != features {
                return Err(Error::invalid(
                    "predict",
                    format!(
                        "{} has {} columns, but the model takes {features} values per example ({input_shape:?})",
                        path.display(),
                        table.cols
                    ),
                ));
            }
            table.features_tensor(DType::F32, cpu)?
        }
        _ => {
            return Err(Error::invalid(
                "predict",
                format!("cannot read {}: use a .npy or .csv file", path.display()),
            ));
        }
    };
    let n = flat.shape()[0];
    let mut shape = vec![n];
    shape.extend_from_slice(input_shape);
    flat.reshape(shape)
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

    #[test]
    fn reads_npy_and_csv_inputs_and_rejects_bad_ones() -> Result<()> {
        let cpu = CpuBackend::new();
        let dir = std::env::temp_dir();
        let tag = std::process::id();
        let npy = dir.join(format!("nabla-cli-data-{tag}.npy"));
        let values: Vec<f32> = (0..8).map(|i| i as f32).collect();
        let io = |e: std::io::Error| Error::invalid("test", e.to_string());
        std::fs::write(&npy, npy_bytes(&values, "(2, 1, 2, 2)")).map_err(io)?;
        let x = read_inputs(&npy, &[1, 2, 2], &cpu)?;
        assert_eq!(x.shape(), &[2, 1, 2, 2]);
        assert_eq!(x.to_vec::<f32>()?, values);
        assert!(read_inputs(&npy, &[1, 3, 3], &cpu).is_err());
        let csv = dir.join(format!("nabla-cli-data-{tag}.csv"));
        std::fs::write(&csv, "a,b,c,d\n0,1,2,3\n4,5,6,7\n").map_err(io)?;
        assert_eq!(
            read_inputs(&csv, &[1, 2, 2], &cpu)?.to_vec::<f32>()?,
            values
        );
        assert!(read_inputs(&csv, &[1, 1, 2], &cpu).is_err());
        let txt = dir.join(format!("nabla-cli-data-{tag}.txt"));
        std::fs::write(&txt, "0").map_err(io)?;
        assert!(read_inputs(&txt, &[1], &cpu).is_err());
        assert!(read_inputs(&dir.join("nabla-missing.npy"), &[1], &cpu).is_err());
        for p in [npy, csv, txt] {
            std::fs::remove_file(p).ok();
        }
        Ok(())
    }
}
