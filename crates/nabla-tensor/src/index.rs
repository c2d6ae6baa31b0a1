//! NumPy-style basic indexing with Rust ranges: `t.i((.., 1..3, 2))`.
//!
//! [`Tensor::i`] takes one indexer or a tuple of up to six. Each indexer is an integer (selects one entry
//! and removes the axis; negative counts from the end), a Rust range (`a..b`, `a..`, `..b`, `a..=b`, `..`;
//! bounds may be negative, counting from the end, and are clamped like Python slices), a stepped range
//! built with [`s`], or [`Indexer::NewAxis`]. Axes without an indexer are kept whole. The result is
//! always a zero-copy view.
//!
//! A range always names a set of positions from low to high, as Rust ranges do; a step takes every
//! `|step|`-th of them, starting from the back when it is negative, like
//! `(a..b).rev().step_by(k)`. So `s(..).step(-1)` is NumPy's `[::-1]` and `s(1..=4).step(-2)` picks
//! 4 and 2 (NumPy's `[4:0:-2]`).
//!
//! ```
//! use nabla_tensor::{Indexer, Tensor, s};
//! # use nabla_cpu::CpuBackend; use nabla_core::DType;
//! let x = Tensor::arange(0, 24, 1, DType::I64, &CpuBackend::new())?.reshape([2, 3, 4])?;
//! assert_eq!(x.i((.., 1..3, 2))?.to_vec2::<i64>()?, vec![vec![6, 10], vec![18, 22]]);
//! assert_eq!(x.i(1)?.shape(), &[3, 4]);
//! assert_eq!(x.i((-1, -1, -1))?.item::<i64>()?, 23);
//! assert_eq!(x.i((0, 0, s(..).step(-1)))?.to_vec::<i64>()?, vec![3, 2, 1, 0]);
//! assert_eq!(x.i((0, Indexer::NewAxis, 0..=1))?.shape(), &[1, 2, 4]);
//! assert!(x.i((0, 0, 0, 0)).is_err());
//! # Ok::<(), nabla_core::Error>(())
//! ```

use crate::Tensor;
use nabla_core::{Backend, Error, Result};
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// Name of the indexing op in error messages.
const OP: &str = "index";

/// One entry of an index expression.
///
/// Usually built implicitly from integers and ranges; write it out for [`Indexer::NewAxis`] or when the
/// index is assembled at run time (`Vec<Indexer>` is an index too).
///
/// ```
/// use nabla_tensor::{Indexer, s};
/// assert_eq!(Indexer::from(-1), Indexer::Select(-1));
/// assert_eq!(Indexer::from(..), Indexer::Full);
/// assert_eq!(Indexer::from(1..), Indexer::Range { start: Some(1), end: None, step: 1 });
/// assert_eq!(Indexer::from(s(..=2).step(-2)), Indexer::Range { start: None, end: Some(3), step: -2 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Indexer {
    /// Picks one entry and removes the axis; negative counts from the end.
    Select(isize),
    /// The positions `start..end` (`None` is the open end; negative bounds count from the end;
    /// out-of-range bounds are clamped), of which every `|step|`-th is taken, from the first for a
    /// positive step and from the last for a negative one (`step` must not be zero).
    ///
    /// For positive steps this is NumPy's `start:end:step`. For negative steps the bounds still name the
    /// low and the high end, unlike NumPy, as in `(start..end).rev().step_by(-step)`.
    Range {
        /// Lowest position (inclusive; `None`: the beginning).
        start: Option<isize>,
        /// Highest position (exclusive; `None`: the end).
        end: Option<isize>,
        /// Distance between picked entries; negative walks from the high end down.
        step: isize,
    },
    /// Keeps the whole axis (`..`).
    Full,
    /// Inserts a new axis of size 1 here (consumes no axis of the tensor).
    NewAxis,
}

/// A range under construction: made by [`s`] from a Rust range, given a step with [`Slice::step`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slice {
    start: Option<isize>,
    /// Exclusive.
    end: Option<isize>,
    step: isize,
}

impl Slice {
    /// Takes every `|step|`-th position of the range, from its high end when `step` is negative
    /// (`step` must not be zero; that is reported when indexing).
    ///
    /// ```
    /// # use nabla_tensor::{Tensor, s}; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let x = Tensor::arange(0, 6, 1, DType::I64, &CpuBackend::new())?;
    /// assert_eq!(x.i(s(1..).step(2))?.to_vec::<i64>()?, vec![1, 3, 5]);
    /// assert_eq!(x.i(s(..).step(-2))?.to_vec::<i64>()?, vec![5, 3, 1]);
    /// assert_eq!(x.i(s(1..=4).step(-1))?.to_vec::<i64>()?, vec![4, 3, 2, 1]);
    /// assert_eq!(x.i(s(..-1).step(-2))?.to_vec::<i64>()?, vec![4, 2, 0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn step(self, step: isize) -> Slice {
        Slice { step, ..self }
    }
}

/// Turns a Rust range into a [`Slice`] so that it can take a step: `s(..).step(-1)` reverses an axis,
/// `s(1..).step(2)` takes every other entry from the second, `s(2..=5).step(-1)` walks 5, 4, 3, 2.
///
/// ```
/// # use nabla_tensor::{Tensor, s}; use nabla_cpu::CpuBackend; use nabla_core::DType;
/// let x = Tensor::arange(0, 12, 1, DType::I64, &CpuBackend::new())?.reshape([3, 4])?;
/// let y = x.i((s(..).step(-1), s(..).step(3)))?; // x[::-1, ::3]
/// assert_eq!(y.to_vec2::<i64>()?, vec![vec![8, 11], vec![4, 7], vec![0, 3]]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn s(range: impl Into<Slice>) -> Slice {
    range.into()
}

impl From<RangeFull> for Slice {
    fn from(_: RangeFull) -> Slice {
        Slice {
            start: None,
            end: None,
            step: 1,
        }
    }
}

/// The exclusive end of an inclusive range ending at `e` (`-1`, the last position, leaves it open).
fn inclusive_end(e: isize) -> Option<isize> {
    (e != -1).then(|| e.saturating_add(1))
}

/// Converts an index bound to `isize`, saturating (such bounds are clamped to the axis anyway).
trait Bound: Copy {
    fn to_isize(self) -> isize;
}

macro_rules! bound_types {
    ($($t:ty),*) => {$(
        impl Bound for $t {
            fn to_isize(self) -> isize {
                isize::try_from(self).unwrap_or(if self > 0 as $t { isize::MAX } else { isize::MIN })
            }
        }
        impl From<Range<$t>> for Slice {
            fn from(r: Range<$t>) -> Slice {
                Slice { start: Some(r.start.to_isize()), end: Some(r.end.to_isize()), step: 1 }
            }
        }
        impl From<RangeFrom<$t>> for Slice {
            fn from(r: RangeFrom<$t>) -> Slice {
                Slice { start: Some(r.start.to_isize()), end: None, step: 1 }
            }
        }
        impl From<RangeTo<$t>> for Slice {
            fn from(r: RangeTo<$t>) -> Slice {
                Slice { start: None, end: Some(r.end.to_isize()), step: 1 }
            }
        }
        impl From<RangeInclusive<$t>> for Slice {
            fn from(r: RangeInclusive<$t>) -> Slice {
                Slice { start: Some(r.start().to_isize()), end: inclusive_end(r.end().to_isize()), step: 1 }
            }
        }
        impl From<RangeToInclusive<$t>> for Slice {
            fn from(r: RangeToInclusive<$t>) -> Slice {
                Slice { start: None, end: inclusive_end(r.end.to_isize()), step: 1 }
            }
        }
        impl From<$t> for Indexer {
            fn from(i: $t) -> Indexer {
                Indexer::Select(i.to_isize())
            }
        }
        impl From<Range<$t>> for Indexer {
            fn from(r: Range<$t>) -> Indexer { Slice::from(r).into() }
        }
        impl From<RangeFrom<$t>> for Indexer {
            fn from(r: RangeFrom<$t>) -> Indexer { Slice::from(r).into() }
        }
        impl From<RangeTo<$t>> for Indexer {
            fn from(r: RangeTo<$t>) -> Indexer { Slice::from(r).into() }
        }
        impl From<RangeInclusive<$t>> for Indexer {
            fn from(r: RangeInclusive<$t>) -> Indexer { Slice::from(r).into() }
        }
        impl From<RangeToInclusive<$t>> for Indexer {
            fn from(r: RangeToInclusive<$t>) -> Indexer { Slice::from(r).into() }
        }
    )*};
}
bound_types!(isize, usize, i32, i64);

impl From<RangeFull> for Indexer {
    fn from(_: RangeFull) -> Indexer {
        Indexer::Full
    }
}

impl From<Slice> for Indexer {
    fn from(s: Slice) -> Indexer {
        Indexer::Range {
            start: s.start,
            end: s.end,
            step: s.step,
        }
    }
}

/// Anything [`Tensor::i`] accepts: one indexer (an integer, a range, a [`Slice`], an [`Indexer`]), a tuple
/// of up to six of them, or a `Vec<Indexer>` built at run time.
pub trait IndexOp {
    /// The indexers, in axis order.
    fn into_indexers(self) -> Vec<Indexer>;
}

impl<T: Into<Indexer>> IndexOp for T {
    fn into_indexers(self) -> Vec<Indexer> {
        vec![self.into()]
    }
}

impl IndexOp for Vec<Indexer> {
    fn into_indexers(self) -> Vec<Indexer> {
        self
    }
}

impl IndexOp for &[Indexer] {
    fn into_indexers(self) -> Vec<Indexer> {
        self.to_vec()
    }
}

macro_rules! tuple_index {
    ($($name:ident),+) => {
        impl<$($name: Into<Indexer>),+> IndexOp for ($($name,)+) {
            #[allow(non_snake_case)]
            fn into_indexers(self) -> Vec<Indexer> {
                let ($($name,)+) = self;
                vec![$($name.into()),+]
            }
        }
    };
}
tuple_index!(A);
tuple_index!(A, B);
tuple_index!(A, B, C);
tuple_index!(A, B, C, D);
tuple_index!(A, B, C, D, E);
tuple_index!(A, B, C, D, E, F);

impl<B: Backend> Tensor<B> {
    /// Indexes with integers, ranges, stepped ranges ([`s`]) and new axes ([`Indexer::NewAxis`]), NumPy
    /// style: see [`Indexer`] for what each entry does. The result is a zero-copy view; axes past the
    /// last indexer are kept whole. A negative step walks its range from the high end: `s(1..4).step(-1)`
    /// picks 3, 2, 1.
    ///
    /// Errors: an integer outside `-n..n` ([`Error::IndexOutOfBounds`]), a zero step, or more indexers
    /// than the tensor has axes.
    ///
    /// ```
    /// # use nabla_tensor::{Tensor, s}; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let x = Tensor::arange(0, 6, 1, DType::F32, &CpuBackend::new())?.reshape([2, 3])?;
    /// let col = x.i((.., 1))?;          // x[:, 1]
    /// assert_eq!(col.to_vec::<f32>()?, vec![1.0, 4.0]);
    /// let tail = x.i((1, -2..))?;       // x[1, -2:]
    /// assert_eq!(tail.to_vec::<f32>()?, vec![4.0, 5.0]);
    /// assert_eq!(
    ///     x.i(2).unwrap_err().to_string(),
    ///     "index: index 2 is out of bounds for a dimension of size 2"
    /// );
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn i(&self, index: impl IndexOp) -> Result<Self> {
        let indexers = index.into_indexers();
        let consumed = indexers
            .iter()
            .filter(|i| !matches!(i, Indexer::NewAxis))
            .count();
        if consumed > self.rank() {
            return Err(Error::invalid(
                OP,
                format!(
                    "{consumed} indices given for a tensor of shape {:?} with {} dimensions",
                    self.shape(),
                    self.rank()
                ),
            ));
        }
        let mut t = self.clone();
        // `ax` walks the axes of the result, `src` those of `self`.
        let (mut ax, mut src) = (0usize, 0usize);
        for ix in indexers {
            match ix {
                Indexer::Select(i) => {
                    let n = t.shape()[ax];
                    let j = if i < 0 { i + n as isize } else { i };
                    if j < 0 || j >= n as isize {
                        return Err(Error::IndexOutOfBounds {
                            op: OP,
                            index: i as i64,
                            size: n,
                        });
                    }
                    t = t.narrow(ax as isize, j as usize, 1)?.squeeze(ax as isize)?;
                    src += 1;
                }
                Indexer::Range { start, end, step } => {
                    if step == 0 {
                        return Err(Error::invalid(
                            OP,
                            format!(
                                "slice step must not be zero (axis {src} of shape {:?})",
                                self.shape()
                            ),
                        ));
                    }
                    let n = t.shape()[ax] as isize;
                    let bound = |b: isize| (if b < 0 { b + n } else { b }).clamp(0, n);
                    let lo = start.map_or(0, bound);
                    let hi = end.map_or(n, bound).max(lo);
                    t = if step > 0 || lo == hi {
                        t.slice(ax as isize, Some(lo), Some(hi), step)?
                    } else {
                        // From the high end down to `lo` inclusive; all bounds are resolved by now.
                        t.slice(ax as isize, Some(hi - 1), (lo > 0).then_some(lo - 1), step)?
                    };
                    ax += 1;
                    src += 1;
                }
                Indexer::Full => {
                    ax += 1;
                    src += 1;
                }
                Indexer::NewAxis => {
                    t = t.unsqueeze(ax as isize)?;
                    ax += 1;
                }
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_core::DType;
    use nabla_cpu::CpuBackend;

    fn grid() -> Tensor<CpuBackend> {
        Tensor::arange(0, 24, 1, DType::I64, &CpuBackend::new())
            .and_then(|t| t.reshape([2, 3, 4]))
            .expect("arange")
    }

    /// Reads a view back through its layout (no kernel needed), so these tests run on the buffer alone.
    fn values(t: &Tensor<CpuBackend>) -> Vec<i64> {
        let base = grid().to_vec::<i64>().expect("contiguous read");
        t.layout().offsets().map(|o| base[o]).collect()
    }

    #[test]
    fn conversions_build_the_expected_indexers() {
        assert_eq!(Indexer::from(3usize), Indexer::Select(3));
        assert_eq!(Indexer::from(-2i64), Indexer::Select(-2));
        assert_eq!(
            Indexer::from(1..3),
            Indexer::Range {
                start: Some(1),
                end: Some(3),
                step: 1
            }
        );
        assert_eq!(
            Indexer::from(..=-1),
            Indexer::Range {
                start: None,
                end: None,
                step: 1
            }
        );
        assert_eq!(
            Indexer::from(-3..=-2),
            Indexer::Range {
                start: Some(-3),
                end: Some(-1),
                step: 1
            }
        );
        assert_eq!(
            Indexer::from(s(0..=5).step(-2)),
            Indexer::Range {
                start: Some(0),
                end: Some(6),
                step: -2
            }
        );
        assert_eq!(
            Indexer::from(s(2..=5).step(-1)),
            Indexer::Range {
                start: Some(2),
                end: Some(6),
                step: -1
            }
        );
        assert_eq!(
            Indexer::from(usize::MAX..),
            Indexer::Range {
                start: Some(isize::MAX),
                end: None,
                step: 1
            }
        );
    }

    #[test]
    fn views_follow_numpy_basic_indexing() {
        let x = grid();
        // x[:, 1:3, 2]
        let v = x.i((.., 1..3, 2)).unwrap();
        assert_eq!(v.shape(), &[2, 2]);
        assert_eq!(values(&v), vec![6, 10, 18, 22]);
        assert!(v.shares_storage_with(&x));
        // x[-1] and x[1, ..., ] with trailing axes full
        assert_eq!(values(&x.i(-1).unwrap()), (12..24).collect::<Vec<_>>());
        // x[0, ::-1, 1::2]
        let v = x.i((0, s(..).step(-1), s(1..).step(2))).unwrap();
        assert_eq!(v.shape(), &[3, 2]);
        assert_eq!(values(&v), vec![9, 11, 5, 7, 1, 3]);
        // x[None, 1, None, :2]
        let v = x.i((Indexer::NewAxis, 1, Indexer::NewAxis, ..2)).unwrap();
        assert_eq!(v.shape(), &[1, 1, 2, 4]);
        assert_eq!(values(&v), vec![12, 13, 14, 15, 16, 17, 18, 19]);
        // empty and clamped ranges
        assert_eq!(x.i((.., 2..2)).unwrap().shape(), &[2, 0, 4]);
        let reversed_bounds = Indexer::Range {
            start: Some(2),
            end: Some(1),
            step: -1,
        };
        assert_eq!(x.i((.., reversed_bounds)).unwrap().shape(), &[2, 0, 4]);
        // Negative steps walk the range from its high end.
        assert_eq!(values(&x.i((0, 0, s(..-1).step(-2))).unwrap()), vec![2, 0]);
        assert_eq!(values(&x.i((0, 0, s(1..=3).step(-2))).unwrap()), vec![3, 1]);
        assert_eq!(
            values(&x.i((0, 0, s(-3..).step(-1))).unwrap()),
            vec![3, 2, 1]
        );
        assert_eq!(values(&x.i((0, 0, s(1..).step(-5))).unwrap()), vec![3]);
        assert_eq!(
            values(&x.i((0, 0, s(-10..10).step(-3))).unwrap()),
            vec![3, 0]
        );
        assert_eq!(x.i((.., -10..10)).unwrap().shape(), &[2, 3, 4]);
        // runtime-built index
        let v = x.i(vec![Indexer::Select(1), Indexer::Full, Indexer::Select(-1)]);
        assert_eq!(values(&v.unwrap()), vec![15, 19, 23]);
        // rank-0 result
        let v = x.i((1, 2, 3)).unwrap();
        assert_eq!(v.shape(), &[] as &[usize]);
        assert_eq!(values(&v), vec![23]);
    }

    #[test]
    fn bad_indices_are_errors() {
        let x = grid();
        assert_eq!(
            x.i((0, 3)).unwrap_err().to_string(),
            "index: index 3 is out of bounds for a dimension of size 3"
        );
        assert_eq!(
            x.i(-3).unwrap_err().to_string(),
            "index: index -3 is out of bounds for a dimension of size 2"
        );
        assert_eq!(
            x.i((0, 0, 0, 0)).unwrap_err().to_string(),
            "index: 4 indices given for a tensor of shape [2, 3, 4] with 3 dimensions"
        );
        assert_eq!(
            x.i((.., s(..).step(0))).unwrap_err().to_string(),
            "index: slice step must not be zero (axis 1 of shape [2, 3, 4])"
        );
        // New axes do not count against the rank.
        assert!(x.i((Indexer::NewAxis, 0, 0, 0)).is_ok());
    }
}
