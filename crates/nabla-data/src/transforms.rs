//! Image transforms after `torchvision.transforms`: [`Normalize`], [`RandomCrop`],
//! [`RandomHorizontalFlip`], chained with [`Compose`] and applied to a data set with [`Transformed`].
//!
//! Images are tensors `[..., C, H, W]`. Random transforms draw from the [`Generator`] they are given;
//! [`Transformed`] gives each example its own generator derived from a seed, the epoch and the example
//! index, so augmentations are reproducible, differ between epochs, and do not depend on how many
//! loader workers run.
//!
//! ```
//! use nabla_core::{DType, Generator};
//! use nabla_cpu::CpuBackend;
//! use nabla_data::transforms::{Compose, Normalize, RandomCrop, RandomHorizontalFlip, Transform};
//! use nabla_tensor::Tensor;
//! let cpu = CpuBackend::new();
//! let t = Compose::new(vec![
//!     Box::new(RandomCrop::new((8, 8), 2)),
//!     Box::new(RandomHorizontalFlip::new(0.5)?),
//!     Box::new(Normalize::new(vec![0.5], vec![0.25])?),
//! ]);
//! let img = Tensor::ones([1, 8, 8], DType::F32, &cpu)?;
//! let out = t.apply(&img, &mut Generator::new(0))?;
//! assert_eq!(out.shape(), &[1, 8, 8]);
//! # Ok::<(), nabla_core::Error>(())
//! ```

use crate::dataset::{Dataset, check_index};
use nabla_core::{Backend, Error, Generator, Result};
use nabla_tensor::Tensor;
use std::sync::atomic::{AtomicU64, Ordering};

/// A transform of one image (or any tensor it accepts).
pub trait Transform<B: Backend>: Send + Sync {
    /// Transforms `x`, drawing any randomness from `rng`.
    fn apply(&self, x: &Tensor<B>, rng: &mut Generator) -> Result<Tensor<B>>;
}

/// Checks that `x` has at least `rank` dimensions.
fn need_rank<B: Backend>(op: &'static str, x: &Tensor<B>, rank: usize, what: &str) -> Result<()> {
    if x.rank() < rank {
        return Err(Error::invalid(
            op,
            format!("expected a tensor {what}, got shape {:?}", x.shape()),
        ));
    }
    Ok(())
}

/// A uniform draw in `[0, 1)`.
fn uniform(rng: &mut Generator) -> f64 {
    rng.next_key(1).uniform_f64(0)
}

/// `(x - mean[c]) / std[c]` for each channel `c` of `[..., C, H, W]`, like
/// `torchvision.transforms.Normalize(mean, std)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalize {
    mean: Vec<f64>,
    std: Vec<f64>,
}

impl Normalize {
    /// Per-channel `mean` and `std` (same, non-zero length; every `std` non-zero).
    pub fn new(mean: Vec<f64>, std: Vec<f64>) -> Result<Self> {
        if mean.len() != std.len() || mean.is_empty() {
            return Err(Error::invalid(
                "Normalize",
                format!(
                    "mean and std need one entry per channel, got {} and {}",
                    mean.len(),
                    std.len()
                ),
            ));
        }
        if let Some(s) = std.iter().find(|&&s| s == 0.0 || !s.is_finite()) {
            return Err(Error::invalid(
                "Normalize",
                format!("std must be finite and non-zero, got {s}"),
            ));
        }
        Ok(Normalize { mean, std })
    }
}

impl<B: Backend> Transform<B> for Normalize {
    fn apply(&self, x: &Tensor<B>, _rng: &mut Generator) -> Result<Tensor<B>> {
        need_rank("Normalize", x, 3, "[..., C, H, W]")?;
        let c = x.shape()[x.rank() - 3];
        if c != self.mean.len() {
            return Err(Error::invalid(
                "Normalize",
                format!(
                    "the image {:?} has {c} channels but mean/std have {}",
                    x.shape(),
                    self.mean.len()
                ),
            ));
        }
        let column = |v: &[f64]| Tensor::from_slice(v, [c, 1, 1], x.backend())?.cast(x.dtype());
        x.sub(&column(&self.mean)?)?.div(&column(&self.std)?)
    }
}

/// Pads the last two axes by `padding` (with `fill`) and crops a random `size = (height, width)`
/// window, like `torchvision.transforms.RandomCrop(size, padding)`.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomCrop {
    size: (usize, usize),
    padding: usize,
    fill: f64,
}

impl RandomCrop {
    /// Crops `size = (height, width)` after padding each side by `padding` zeros.
    pub fn new(size: (usize, usize), padding: usize) -> Self {
        RandomCrop {
            size,
            padding,
            fill: 0.0,
        }
    }

    /// The value padded pixels take (default 0).
    pub fn fill(mut self, fill: f64) -> Self {
        self.fill = fill;
        self
    }
}

impl<B: Backend> Transform<B> for RandomCrop {
    fn apply(&self, x: &Tensor<B>, rng: &mut Generator) -> Result<Tensor<B>> {
        need_rank("RandomCrop", x, 2, "[..., H, W]")?;
        let p = self.padding;
        let padded = if p == 0 {
            x.clone()
        } else {
            let mut pads = vec![(0, 0); x.rank()];
            let r = x.rank();
            pads[r - 2] = (p, p);
            pads[r - 1] = (p, p);
            x.pad(&pads, self.fill)?
        };
        let (h, w) = (padded.shape()[x.rank() - 2], padded.shape()[x.rank() - 1]);
        let (th, tw) = self.size;
        if th > h || tw > w || th == 0 || tw == 0 {
            return Err(Error::invalid(
                "RandomCrop",
                format!(
                    "crop size ({th}, {tw}) must be non-zero and fit the padded image of {h}x{w} \
                     (input {:?}, padding {p})",
                    x.shape()
                ),
            ));
        }
        let key = rng.next_key(2);
        let top = ((key.uniform_f64(0) * (h - th + 1) as f64) as usize).min(h - th);
        let left = ((key.uniform_f64(1) * (w - tw + 1) as f64) as usize).min(w - tw);
        padded.narrow(-2, top, th)?.narrow(-1, left, tw)
    }
}

/// Mirrors the last axis with probability `p`, like `torchvision.transforms.RandomHorizontalFlip(p)`.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomHorizontalFlip {
    p: f64,
}

impl RandomHorizontalFlip {
    /// Flips with probability `p` in `[0, 1]` (PyTorch's default is 0.5).
    pub fn new(p: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                "RandomHorizontalFlip",
                format!("p must lie in [0, 1], got {p}"),
            ));
        }
        Ok(RandomHorizontalFlip { p })
    }
}

impl<B: Backend> Transform<B> for RandomHorizontalFlip {
    fn apply(&self, x: &Tensor<B>, rng: &mut Generator) -> Result<Tensor<B>> {
        need_rank("RandomHorizontalFlip", x, 1, "of rank at least 1")?;
        if uniform(rng) < self.p {
            x.flip(&[-1])
        } else {
            Ok(x.clone())
        }
    }
}

/// Applies transforms in order, like `torchvision.transforms.Compose`.
pub struct Compose<B: Backend> {
    steps: Vec<Box<dyn Transform<B>>>,
}

impl<B: Backend> Compose<B> {
    /// The chain of `steps`, applied first to last.
    pub fn new(steps: Vec<Box<dyn Transform<B>>>) -> Self {
        Compose { steps }
    }
}

impl<B: Backend> Transform<B> for Compose<B> {
    fn apply(&self, x: &Tensor<B>, rng: &mut Generator) -> Result<Tensor<B>> {
        self.steps
            .iter()
            .try_fold(x.clone(), |acc, step| step.apply(&acc, rng))
    }
}

/// SplitMix64 finaliser: decorrelates nearby seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A data set of `Vec<Tensor>` rows (e.g. a [`TensorDataset`](crate::TensorDataset)) with `transform`
/// applied to field `field` (default 0, the image) of every example.
///
/// Example `i` in epoch `e` draws from `Generator::new(f(seed, e, i))`; the
/// [`DataLoader`](crate::DataLoader) sets the epoch at the start of each epoch.
pub struct Transformed<D, T> {
    dataset: D,
    transform: T,
    field: usize,
    seed: u64,
    epoch: AtomicU64,
}

impl<D, T> Transformed<D, T> {
    /// `dataset` with `transform` applied to field 0 of each example, randomness seeded by `seed`.
    pub fn new(dataset: D, transform: T, seed: u64) -> Self {
        Transformed {
            dataset,
            transform,
            field: 0,
            seed,
            epoch: AtomicU64::new(0),
        }
    }

    /// Transforms field `field` of each example instead of field 0.
    pub fn field(mut self, field: usize) -> Self {
        self.field = field;
        self
    }

    /// The generator example `index` uses in the current epoch.
    pub fn generator_for(&self, index: usize) -> Generator {
        let epoch = self.epoch.load(Ordering::Relaxed);
        Generator::new(mix(mix(mix(self.seed) ^ epoch) ^ index as u64))
    }
}

impl<B, D, T> Dataset for Transformed<D, T>
where
    B: Backend,
    D: Dataset<Item = Vec<Tensor<B>>>,
    T: Transform<B>,
{
    type Item = Vec<Tensor<B>>;
    fn len(&self) -> usize {
        self.dataset.len()
    }
    fn get(&self, index: usize) -> Result<Vec<Tensor<B>>> {
        let mut item = self.dataset.get(index)?;
        check_index("Transformed::get (field)", self.field, item.len())?;
        item[self.field] = self
            .transform
            .apply(&item[self.field], &mut self.generator_for(index))?;
        Ok(item)
    }
    fn set_epoch(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::Relaxed);
        self.dataset.set_epoch(epoch);
    }
}
