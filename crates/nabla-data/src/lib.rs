//! Owns data sets and loading: `Dataset`, `DataLoader`, sampler, file readers, transforms, digits.
//! Must not depend on a concrete backend or on `nabla-nn`: only `nabla-core` and `nabla-tensor`.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! Data sets and data loading for nabla, after `torch.utils.data` and `torchvision`.
//!
//! - [`Dataset`] (indexable examples), [`TensorDataset`], [`Subset`], [`random_split`] and the
//!   [`Collate`] step that stacks examples into a batch;
//! - [`DataLoader`]: batching, seeded per-epoch shuffling, `drop_last`, and background worker
//!   threads that prefetch batches;
//! - readers for CIFAR-10/100's binary format ([`Cifar`]), the IDX format of MNIST /
//!   Fashion-MNIST ([`read_idx`], [`Mnist`]), CSV
//!   ([`read_csv`]) and NumPy `.npy` ([`read_npy`]), raw or gzip-compressed, and chunked readers
//!   whose memory is bounded by the chunk ([`CsvReader`], [`NpyReader`]); bad or truncated input
//!   gives an error naming the file and the byte offset;
//! - [`transforms`]: `Normalize`, `RandomCrop`, `RandomHorizontalFlip`, `Compose`;
//! - [`Digits`]: the UCI optical digits set (1,797 8x8 images), embedded in the crate.
//!
//! ```
//! use nabla_cpu::CpuBackend;
//! use nabla_data::{DataLoader, Dataset, Digits};
//! let cpu = CpuBackend::new();
//! let digits = Digits::load(&cpu)?;
//! let (train, test) = digits.train_test_split(0.2, 0)?;
//! let mut loader = DataLoader::new(train, 64)?.shuffle(true).seed(1);
//! let batch = loader.iter().next().unwrap()?;
//! assert_eq!(batch[0].shape(), &[64, 1, 8, 8]);
//! assert_eq!(batch[1].shape(), &[64]);
//! assert_eq!(test.len(), 360); // ceil(0.2 * 1797)
//! # Ok::<(), nabla_core::Error>(())
//! ```
#![warn(missing_docs)]

mod array;
mod cifar;
mod csv_table;
mod dataset;
mod digits;
mod idx;
mod loader;
mod npy;
mod sampler;
mod source;
pub mod transforms;

pub use array::HostArray;
pub use cifar::{Cifar, CifarVariant};
pub use csv_table::{CsvHeader, CsvOptions, CsvReader, CsvTable, parse_csv, read_csv};
pub use dataset::{
    Collate, Dataset, MapDataset, Subset, TensorDataset, random_permutation, random_split,
};
pub use digits::Digits;
pub use idx::{Mnist, parse_idx, read_idx};
pub use loader::{DataLoader, DataLoaderIter};
pub use npy::{NpyReader, parse_npy, read_npy};
pub use sampler::DistributedSampler;
pub use source::decompress_if_gzip;
