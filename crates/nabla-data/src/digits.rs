//! The embedded UCI optical-digits data set.

use crate::csv_table::{CsvOptions, parse_csv};
use crate::dataset::{TensorDataset, random_permutation};
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_tensor::Tensor;

/// `digits.csv.gz` as shipped by scikit-learn: 1,797 rows of 64 pixels (0..16) and a label.
static DIGITS_CSV_GZ: &[u8] = include_bytes!("../data/digits.csv.gz");

/// The UCI ML optical recognition of handwritten digits data set (Alpaydin & Kaynak, 1998; CC BY 4.0),
/// embedded in the crate: 1,797 images of 8x8 pixels, 10 classes. See `data/README.md` for the
/// attribution.
///
/// ```
/// use nabla_cpu::CpuBackend;
/// use nabla_data::Digits;
/// let d = Digits::load(&CpuBackend::new())?;
/// assert_eq!(d.images.shape(), &[1797, 1, 8, 8]);
/// assert_eq!(d.labels.shape(), &[1797]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Digits<B: Backend> {
    /// Images `[1797, 1, 8, 8]`, `f32`, pixel counts 0..16 scaled to `[0, 1]`.
    pub images: Tensor<B>,
    /// Labels `[1797]`, `i64` in `0..10`.
    pub labels: Tensor<B>,
}

impl<B: Backend> Digits<B> {
    /// The number of examples.
    pub const LEN: usize = 1797;
    /// The number of classes.
    pub const CLASSES: usize = 10;

    /// Decodes the embedded data onto `backend`.
    pub fn load(backend: &B) -> Result<Self> {
        let table = parse_csv(
            DIGITS_CSV_GZ,
            "embedded digits.csv.gz",
            &CsvOptions::default().label_column(Some(64)),
        )?;
        if table.cols != 64 {
            return Err(Error::invalid(
                "Digits::load",
                format!("expected 64 pixel columns, got {}", table.cols),
            ));
        }
        let images =
            (table.features_tensor(DType::F32, backend)? / 16.0)?.reshape([table.rows, 1, 8, 8])?;
        let labels = table.labels_tensor(backend)?;
        Ok(Digits { images, labels })
    }

    /// All examples as a data set: items `vec![image [1, 8, 8], label []]`.
    pub fn dataset(&self) -> Result<TensorDataset<B>> {
        TensorDataset::new(vec![self.images.clone(), self.labels.clone()])
    }

    /// A seeded random split into training and test sets, the test set holding
    /// `round(test_fraction * 1797)` examples (like scikit-learn's `train_test_split`, which rounds up).
    pub fn train_test_split(
        &self,
        test_fraction: f64,
        seed: u64,
    ) -> Result<(TensorDataset<B>, TensorDataset<B>)> {
        if !(0.0..1.0).contains(&test_fraction) {
            return Err(Error::invalid(
                "Digits::train_test_split",
                format!("test_fraction must lie in [0, 1), got {test_fraction}"),
            ));
        }
        let n = self.labels.shape()[0];
        let n_test = (test_fraction * n as f64).ceil() as usize;
        let perm = random_permutation(n, &mut Generator::new(seed));
        let pick = |idx: &[usize]| -> Result<TensorDataset<B>> {
            let idx: Vec<i64> = idx.iter().map(|&i| i as i64).collect();
            let idx = Tensor::from_vec(idx.clone(), [idx.len()], self.labels.backend())?;
            TensorDataset::new(vec![
                self.images.index_select(0, &idx)?,
                self.labels.index_select(0, &idx)?,
            ])
        };
        Ok((pick(&perm[n_test..])?, pick(&perm[..n_test])?))
    }
}
