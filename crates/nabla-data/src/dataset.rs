//! The `Dataset` trait, the collate step, and the basic data sets.

use nabla_core::{Backend, Error, Generator, Result};
use nabla_tensor::Tensor;
use std::sync::Arc;

/// An indexable collection of examples, like PyTorch's map-style `torch.utils.data.Dataset`.
///
/// `get` must be callable from several threads at once (the [`DataLoader`](crate::DataLoader)'s
/// workers); data sets that need mutable state keep it behind a lock or an atomic.
///
/// ```
/// use nabla_core::Result;
/// use nabla_data::Dataset;
/// struct Squares;
/// impl Dataset for Squares {
///     type Item = (u64, u64);
///     fn len(&self) -> usize { 10 }
///     fn get(&self, i: usize) -> Result<(u64, u64)> { Ok((i as u64, (i * i) as u64)) }
/// }
/// assert_eq!(Squares.get(3)?, (3, 9));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub trait Dataset {
    /// One example: a tensor, a tuple of tensors, a `Vec` of tensors, ...
    type Item;

    /// The number of examples.
    fn len(&self) -> usize;

    /// Whether there are no examples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Example `index` (`0 <= index < len()`); out-of-range indices return an error.
    fn get(&self, index: usize) -> Result<Self::Item>;

    /// Called by the [`DataLoader`](crate::DataLoader) at the start of every epoch (counting from 0).
    /// Data sets with random transforms use it to draw new randomness each epoch; wrappers forward it.
    fn set_epoch(&self, epoch: u64) {
        let _ = epoch;
    }

    /// This data set with `f` applied to every example (see [`MapDataset`]).
    fn map<F, T>(self, f: F) -> MapDataset<Self, F>
    where
        Self: Sized,
        F: Fn(Self::Item) -> Result<T>,
    {
        MapDataset { dataset: self, f }
    }
}

impl<D: Dataset + ?Sized> Dataset for Arc<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get(&self, index: usize) -> Result<D::Item> {
        (**self).get(index)
    }
    fn set_epoch(&self, epoch: u64) {
        (**self).set_epoch(epoch)
    }
}

/// The error for an index outside `0..len`.
pub(crate) fn check_index(op: &'static str, index: usize, len: usize) -> Result<()> {
    if index >= len {
        return Err(Error::IndexOutOfBounds {
            op,
            index: index as i64,
            size: len,
        });
    }
    Ok(())
}

/// Stacks a list of examples into one batch: PyTorch's `default_collate`.
///
/// Tensors are stacked along a new leading axis; tuples and `Vec`s are collated element by element
/// (all examples must have the same length).
///
/// ```
/// use nabla_cpu::CpuBackend;
/// use nabla_data::Collate;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu)?;
/// let b = Tensor::from_vec(vec![3.0f32, 4.0], [2], &cpu)?;
/// let y = Tensor::from_vec(vec![7i64], [], &cpu)?;
/// let (x, labels) = Collate::collate(vec![(a, y.clone()), (b, y)])?;
/// assert_eq!(x.shape(), &[2, 2]);
/// assert_eq!(labels.to_vec::<i64>()?, vec![7, 7]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub trait Collate: Sized {
    /// The batched form.
    type Batch;

    /// Stacks `items` into one batch.
    fn collate(items: Vec<Self>) -> Result<Self::Batch>;
}

impl<B: Backend> Collate for Tensor<B> {
    type Batch = Tensor<B>;
    fn collate(items: Vec<Self>) -> Result<Tensor<B>> {
        if items.is_empty() {
            return Err(Error::invalid("collate", "cannot stack an empty batch"));
        }
        let refs: Vec<&Tensor<B>> = items.iter().collect();
        Tensor::stack(&refs, 0)
    }
}

impl<T: Collate> Collate for Vec<T> {
    type Batch = Vec<T::Batch>;
    fn collate(items: Vec<Self>) -> Result<Vec<T::Batch>> {
        let width = items.first().map_or(0, Vec::len);
        let mut columns: Vec<Vec<T>> = (0..width)
            .map(|_| Vec::with_capacity(items.len()))
            .collect();
        for (i, item) in items.into_iter().enumerate() {
            if item.len() != width {
                return Err(Error::invalid(
                    "collate",
                    format!(
                        "example {i} has {} fields but example 0 has {width}",
                        item.len()
                    ),
                ));
            }
            for (col, field) in columns.iter_mut().zip(item) {
                col.push(field);
            }
        }
        columns.into_iter().map(T::collate).collect()
    }
}

/// Implements [`Collate`] for a tuple by collating each position.
macro_rules! collate_tuple {
    ($(($t:ident, $v:ident)),+) => {
        impl<$($t: Collate),+> Collate for ($($t,)+) {
            type Batch = ($($t::Batch,)+);
            fn collate(items: Vec<Self>) -> Result<Self::Batch> {
                $(let mut $v = Vec::with_capacity(items.len());)+
                for ($($t,)+) in items {
                    $($v.push($t);)+
                }
                Ok(($($t::collate($v)?,)+))
            }
        }
    };
}

#[allow(non_snake_case)]
mod tuples {
    use super::{Collate, Result};
    collate_tuple!((A, a));
    collate_tuple!((A, a), (B, b));
    collate_tuple!((A, a), (B, b), (C, c));
    collate_tuple!((A, a), (B, b), (C, c), (D, d));
}

/// A data set of tensors that share their first dimension: example `i` is row `i` of each tensor,
/// like PyTorch's `TensorDataset`. Items are `Vec<Tensor>` (one entry per tensor), which collate
/// into a `Vec` of batched tensors.
///
/// ```
/// use nabla_cpu::CpuBackend;
/// use nabla_data::{Dataset, TensorDataset};
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2], &cpu)?;
/// let y = Tensor::from_vec(vec![0i64, 1, 0], [3], &cpu)?;
/// let ds = TensorDataset::new(vec![x, y])?;
/// let row = ds.get(1)?;
/// assert_eq!(row[0].to_vec::<f32>()?, vec![3.0, 4.0]);
/// assert_eq!(row[1].item::<i64>()?, 1);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone)]
pub struct TensorDataset<B: Backend> {
    tensors: Vec<Tensor<B>>,
    len: usize,
}

impl<B: Backend> TensorDataset<B> {
    /// A data set over `tensors`, which must be non-empty, of rank at least 1, and share their first
    /// dimension.
    pub fn new(tensors: Vec<Tensor<B>>) -> Result<Self> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid("TensorDataset::new", "at least one tensor is needed"))?;
        if first.rank() == 0 {
            return Err(Error::invalid(
                "TensorDataset::new",
                "tensors need a leading (example) dimension; got a rank-0 tensor",
            ));
        }
        let len = first.shape()[0];
        for t in &tensors {
            if t.rank() == 0 || t.shape()[0] != len {
                return Err(
                    Error::shapes("TensorDataset::new", first.shape(), t.shape())
                        .with_hint("all tensors must have the same size in dimension 0"),
                );
            }
        }
        // Detached, contiguous copies: rows become cheap views and no autodiff graph is kept alive.
        let tensors = tensors
            .iter()
            .map(|t| t.contiguous().map(|c| c.detach()))
            .collect::<Result<Vec<_>>>()?;
        Ok(TensorDataset { tensors, len })
    }

    /// The tensors.
    pub fn tensors(&self) -> &[Tensor<B>] {
        &self.tensors
    }
}

impl<B: Backend> Dataset for TensorDataset<B> {
    type Item = Vec<Tensor<B>>;
    fn len(&self) -> usize {
        self.len
    }
    fn get(&self, index: usize) -> Result<Vec<Tensor<B>>> {
        check_index("TensorDataset::get", index, self.len)?;
        self.tensors
            .iter()
            .map(|t| t.select_index(0, index as isize))
            .collect()
    }
}

/// The examples of a data set at the given indices, in that order (PyTorch's `Subset`).
///
/// ```
/// use nabla_data::{Dataset, Subset};
/// # use nabla_core::Result;
/// # struct Range(usize);
/// # impl Dataset for Range { type Item = usize; fn len(&self) -> usize { self.0 }
/// #     fn get(&self, i: usize) -> Result<usize> { Ok(i) } }
/// let s = Subset::new(Range(10), vec![7, 2])?;
/// assert_eq!((s.len(), s.get(0)?, s.get(1)?), (2, 7, 2));
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Subset<D> {
    dataset: D,
    indices: Vec<usize>,
}

impl<D: Dataset> Subset<D> {
    /// The subset of `dataset` at `indices`; every index must be in range.
    pub fn new(dataset: D, indices: Vec<usize>) -> Result<Self> {
        let n = dataset.len();
        for &i in &indices {
            check_index("Subset::new", i, n)?;
        }
        Ok(Subset { dataset, indices })
    }

    /// The indices into the underlying data set.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// The underlying data set.
    pub fn dataset(&self) -> &D {
        &self.dataset
    }
}

impl<D: Dataset> Dataset for Subset<D> {
    type Item = D::Item;
    fn len(&self) -> usize {
        self.indices.len()
    }
    fn get(&self, index: usize) -> Result<D::Item> {
        check_index("Subset::get", index, self.indices.len())?;
        self.dataset.get(self.indices[index])
    }
    fn set_epoch(&self, epoch: u64) {
        self.dataset.set_epoch(epoch)
    }
}

/// A data set whose examples are those of another passed through a function (see [`Dataset::map`]).
#[derive(Clone)]
pub struct MapDataset<D, F> {
    dataset: D,
    f: F,
}

impl<D, F, T> Dataset for MapDataset<D, F>
where
    D: Dataset,
    F: Fn(D::Item) -> Result<T>,
{
    type Item = T;
    fn len(&self) -> usize {
        self.dataset.len()
    }
    fn get(&self, index: usize) -> Result<T> {
        (self.f)(self.dataset.get(index)?)
    }
    fn set_epoch(&self, epoch: u64) {
        self.dataset.set_epoch(epoch)
    }
}

/// A uniformly random permutation of `0..n` drawn from `generator` (Fisher-Yates on Philox draws):
/// the same generator state always gives the same permutation.
///
/// ```
/// use nabla_core::Generator;
/// use nabla_data::random_permutation;
/// let p = random_permutation(5, &mut Generator::new(3));
/// let mut sorted = p.clone();
/// sorted.sort();
/// assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
/// assert_eq!(p, random_permutation(5, &mut Generator::new(3)));
/// ```
pub fn random_permutation(n: usize, generator: &mut Generator) -> Vec<usize> {
    let key = generator.next_key(n);
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let b = key.bits(i as u64);
        let r = (u64::from(b[0]) << 32) | u64::from(b[1]);
        // Multiply-shift maps 64 random bits onto 0..=i without a modulo's bias.
        let j = ((u128::from(r) * (i as u128 + 1)) >> 64) as usize;
        perm.swap(i, j);
    }
    perm
}

/// Splits `dataset` at random into subsets of the given `lengths`, which must sum to its length
/// (PyTorch's `random_split` with a seeded generator).
///
/// ```
/// use nabla_core::Generator;
/// use nabla_data::{Dataset, random_split};
/// # use nabla_core::Result;
/// # struct Range(usize);
/// # impl Dataset for Range { type Item = usize; fn len(&self) -> usize { self.0 }
/// #     fn get(&self, i: usize) -> Result<usize> { Ok(i) } }
/// let parts = random_split(Range(10), &[7, 3], &mut Generator::new(0))?;
/// assert_eq!((parts[0].len(), parts[1].len()), (7, 3));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn random_split<D: Dataset>(
    dataset: D,
    lengths: &[usize],
    generator: &mut Generator,
) -> Result<Vec<Subset<Arc<D>>>> {
    let total: usize = lengths.iter().sum();
    if total != dataset.len() {
        return Err(Error::invalid(
            "random_split",
            format!(
                "lengths {lengths:?} sum to {total} but the data set has {} examples",
                dataset.len()
            ),
        ));
    }
    let perm = random_permutation(total, generator);
    let shared = Arc::new(dataset);
    let mut start = 0;
    Ok(lengths
        .iter()
        .map(|&len| {
            let indices = perm[start..start + len].to_vec();
            start += len;
            Subset {
                dataset: Arc::clone(&shared),
                indices,
            }
        })
        .collect())
}
