//! Shapes, broadcasting and axis normalisation.

use crate::{Error, Result};
use std::fmt;

/// The extent of each dimension of a tensor, outermost first.
///
/// ```
/// use nabla_core::Shape;
/// let s = Shape::from([2, 3, 4]);
/// assert_eq!(s.numel(), 24);
/// assert_eq!(s.rank(), 3);
/// assert_eq!(Shape::broadcast("add", &[2, 1, 4], &[3, 1]).unwrap().dims(), &[2, 3, 4]);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(Vec<usize>);

impl Shape {
    /// A shape from its dimensions.
    pub fn new(dims: Vec<usize>) -> Self {
        Shape(dims)
    }

    /// The shape of a scalar (rank 0).
    pub fn scalar() -> Self {
        Shape(Vec::new())
    }

    /// The dimensions.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Number of elements (1 for a scalar, 0 if any dimension is 0); `usize::MAX` when the count
    /// overflows (so that allocating it fails cleanly, see [`crate::check_allocation`]).
    pub fn numel(&self) -> usize {
        saturating_numel(&self.0)
    }

    /// Row-major (C order) strides in elements.
    pub fn contiguous_strides(&self) -> Vec<isize> {
        contiguous_strides(&self.0)
    }

    /// The NumPy broadcast of two shapes, or a shape-mismatch error naming `op`.
    pub fn broadcast(op: &'static str, a: &[usize], b: &[usize]) -> Result<Shape> {
        let rank = a.len().max(b.len());
        let mut out = vec![0; rank];
        for i in 0..rank {
            let da = if i + a.len() >= rank {
                a[i + a.len() - rank]
            } else {
                1
            };
            let db = if i + b.len() >= rank {
                b[i + b.len() - rank]
            } else {
                1
            };
            out[i] = if da == db || db == 1 {
                da
            } else if da == 1 {
                db
            } else {
                return Err(Error::shapes(op, a, b).with_hint(format!(
                    "dimension {i} of the broadcast has sizes {da} and {db}; each must be equal or 1"
                )));
            };
        }
        Ok(Shape(out))
    }

    /// Consumes the shape and returns its dimensions.
    pub fn into_dims(self) -> Vec<usize> {
        self.0
    }
}

/// The element count of `shape`, or an error naming `op` when it overflows `usize` or a dimension
/// is larger than `isize::MAX` (strides are `isize`; PyTorch's sizes are `i64`), also in a shape
/// with no elements.
///
/// ```
/// assert_eq!(nabla_core::checked_numel("demo", &[2, 3, 4])?, 24);
/// assert!(nabla_core::checked_numel("demo", &[usize::MAX, 2]).is_err());
/// assert!(nabla_core::checked_numel("demo", &[0, usize::MAX]).is_err());
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    if let Some(d) = shape.iter().find(|&&d| isize::try_from(d).is_err()) {
        return Err(Error::invalid(
            op,
            format!("dimension {d} of shape {shape:?} is larger than isize::MAX"),
        ));
    }
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::invalid(op, format!("the result shape {shape:?} is too large")))
}

/// The product of `dims`, `usize::MAX` when it overflows (0 when a dimension is 0).
pub(crate) fn saturating_numel(dims: &[usize]) -> usize {
    if dims.contains(&0) {
        return 0;
    }
    dims.iter().fold(1usize, |n, &d| n.saturating_mul(d))
}

/// Row-major strides for `dims` (size-0 dimensions counted as size 1). A stride past `isize::MAX`,
/// possible only for a shape with no elements, saturates there.
///
/// ```
/// assert_eq!(nabla_core::contiguous_strides(&[2, 0, 3]), vec![3, 3, 1]);
/// assert_eq!(nabla_core::contiguous_strides(&[0, 1 << 62, 4])[0], isize::MAX);
/// ```
pub fn contiguous_strides(dims: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; dims.len()];
    fill_contiguous_strides(dims, &mut strides);
    strides
}

/// Writes the row-major strides of `dims` into `strides` (of the same length), as
/// [`contiguous_strides`] describes.
pub(crate) fn fill_contiguous_strides(dims: &[usize], strides: &mut [isize]) {
    let mut acc = 1isize;
    for (stride, &d) in strides.iter_mut().zip(dims).rev() {
        *stride = acc;
        acc = acc.saturating_mul(isize::try_from(d.max(1)).unwrap_or(isize::MAX));
    }
}

/// Resolves a possibly negative axis against `rank`, or reports [`Error::InvalidAxis`] for `op`.
///
/// ```
/// use nabla_core::normalize_axis;
/// assert_eq!(normalize_axis("sum", -1, 3).unwrap(), 2);
/// assert!(normalize_axis("sum", 3, 3).is_err());
/// ```
pub fn normalize_axis(op: &'static str, axis: isize, rank: usize) -> Result<usize> {
    let r = rank as isize;
    if axis >= r || axis < -r {
        return Err(Error::InvalidAxis { op, axis, rank });
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// Resolves a list of axes, rejecting out-of-range and repeated ones; the result is sorted.
pub fn normalize_axes(op: &'static str, axes: &[isize], rank: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = normalize_axis(op, a, rank)?;
        if out.contains(&n) {
            return Err(Error::invalid(
                op,
                format!("axis {a} is repeated in {axes:?}"),
            ));
        }
        out.push(n);
    }
    out.sort_unstable();
    Ok(out)
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Self {
        Shape(v)
    }
}
impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Self {
        Shape(v.to_vec())
    }
}
impl<const N: usize> From<[usize; N]> for Shape {
    fn from(v: [usize; N]) -> Self {
        Shape(v.to_vec())
    }
}
impl<const N: usize> From<&[usize; N]> for Shape {
    fn from(v: &[usize; N]) -> Self {
        Shape(v.to_vec())
    }
}
impl From<&Vec<usize>> for Shape {
    fn from(v: &Vec<usize>) -> Self {
        Shape(v.clone())
    }
}
impl From<()> for Shape {
    fn from(_: ()) -> Self {
        Shape(Vec::new())
    }
}
impl From<usize> for Shape {
    fn from(n: usize) -> Self {
        Shape(vec![n])
    }
}
impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Self {
        s.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_rules() {
        assert_eq!(Shape::broadcast("add", &[], &[3]).unwrap().dims(), &[3]);
        assert_eq!(
            Shape::broadcast("add", &[0, 1], &[1, 5]).unwrap().dims(),
            &[0, 5]
        );
        let e = Shape::broadcast("add", &[2, 3], &[4]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "add: shape mismatch between [2, 3] and [4] (dimension 1 of the broadcast has sizes 3 and 4; each must be equal or 1)"
        );
    }

    #[test]
    fn axes() {
        assert_eq!(normalize_axes("sum", &[-1, 0], 3).unwrap(), vec![0, 2]);
        assert_eq!(
            normalize_axes("sum", &[1, -2], 3).unwrap_err().to_string(),
            "sum: axis -2 is repeated in [1, -2]"
        );
    }
}
