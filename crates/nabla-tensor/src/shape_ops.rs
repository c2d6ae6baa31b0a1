//! Shape and movement ops. Everything here except `pad`, `cat` and copying reshapes is a zero-copy view.

use crate::Tensor;
use crate::autograd::{Op, View};
use nabla_core::{Backend, Error, Primitive, Result, Scalar, Shape, normalize_axis};

/// A target shape for [`Tensor::reshape`]: dimensions where one entry may be `-1` (inferred).
pub trait ReshapeDims {
    /// The requested dimensions as signed numbers, each exactly (`i128` holds every `usize` and
    /// every `i64`, so a huge `usize` is never read as `-1`).
    fn signed_dims(&self) -> Vec<i128>;
}

macro_rules! reshape_dims {
    ($($t:ty),*) => {$(
        impl<const N: usize> ReshapeDims for [$t; N] {
            fn signed_dims(&self) -> Vec<i128> { self.iter().map(|&d| d as i128).collect() }
        }
        impl ReshapeDims for &[$t] {
            fn signed_dims(&self) -> Vec<i128> { self.iter().map(|&d| d as i128).collect() }
        }
        impl ReshapeDims for Vec<$t> {
            fn signed_dims(&self) -> Vec<i128> { self.iter().map(|&d| d as i128).collect() }
        }
    )*};
}
reshape_dims!(usize, isize, i32, i64);

impl ReshapeDims for Shape {
    fn signed_dims(&self) -> Vec<i128> {
        self.dims().iter().map(|&d| d as i128).collect()
    }
}

impl ReshapeDims for () {
    fn signed_dims(&self) -> Vec<i128> {
        Vec::new()
    }
}

/// The shape `req` asks for (one `-1` inferred) for a tensor of `shape`, or an error naming reshape
/// and both shapes.
fn reshape_target(shape: &[usize], req: &[i128]) -> Result<Vec<usize>> {
    let numel = nabla_core::checked_numel("reshape", shape)?;
    let bad = |why: &str| {
        Error::invalid(
            "reshape",
            format!("cannot reshape a tensor of shape {shape:?} into {req:?}: {why}"),
        )
    };
    let mut infer = None;
    let mut known = 1usize;
    let mut out = Vec::with_capacity(req.len());
    for (i, &d) in req.iter().enumerate() {
        if d == -1 && infer.is_none() {
            infer = Some(i);
            out.push(0);
            continue;
        }
        let d = usize::try_from(d)
            .ok()
            .filter(|&d| isize::try_from(d).is_ok())
            .ok_or_else(|| {
                bad("each dimension must be in 0..=isize::MAX, and at most one may be -1")
            })?;
        known = known
            .checked_mul(d)
            .ok_or_else(|| bad("the element count overflows usize"))?;
        out.push(d);
    }
    match infer {
        Some(_) if known == 0 => return Err(bad("a -1 next to a dimension of 0 is ambiguous")),
        Some(i) if numel.is_multiple_of(known) => out[i] = numel / known,
        Some(_) => {
            return Err(bad(&format!(
                "{numel} elements are not a multiple of {known}"
            )));
        }
        None if known != numel => {
            return Err(bad(&format!(
                "the tensor has {numel} elements, the shape {known}"
            )));
        }
        None => {}
    }
    Ok(out)
}

/// Resolves NumPy-style slice bounds (`None` = open end, negatives count from the end, clamped) for an
/// axis of size `n`; returns `(first, len)`.
pub(crate) fn resolve_slice(
    n: usize,
    start: Option<isize>,
    end: Option<isize>,
    step: isize,
) -> (usize, usize) {
    let n = n as isize;
    let clamp = |v: isize, lo: isize, hi: isize| v.max(lo).min(hi);
    let norm = |v: isize| if v < 0 { v + n } else { v };
    // The positions from `from` by `step` that come before `to`, counted on distances as usize so
    // that a step of isize::MIN or isize::MAX does not overflow.
    let count = |from: isize, to: isize| from.abs_diff(to).div_ceil(step.unsigned_abs());
    if step > 0 {
        let s = clamp(start.map(norm).unwrap_or(0), 0, n);
        let e = clamp(end.map(norm).unwrap_or(n), 0, n);
        (s as usize, if e > s { count(s, e) } else { 0 })
    } else {
        let s = clamp(start.map(norm).unwrap_or(n - 1), -1, n - 1);
        let e = clamp(end.map(norm).unwrap_or(-1), -1, n - 1);
        (s.max(0) as usize, if s > e { count(s, e) } else { 0 })
    }
}

impl<B: Backend> Tensor<B> {
    /// A tensor with the same elements in a new shape; one dimension may be `-1`. A view when the layout
    /// allows it (always for contiguous tensors), otherwise a copy. Dimensions are at most
    /// `isize::MAX` (as PyTorch's are at most `i64::MAX`).
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let x = Tensor::arange(0, 6, 1, DType::I64, &CpuBackend::new())?;
    /// assert_eq!(x.reshape([2, -1])?.shape(), &[2, 3]);
    /// assert!(x.reshape([4, -1]).is_err());
    /// assert!(x.reshape([usize::MAX, 2]).is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn reshape(&self, dims: impl ReshapeDims) -> Result<Self> {
        let out = reshape_target(self.shape(), &dims.signed_dims())?;
        if out == self.shape() {
            return Ok(self.clone());
        }
        let reshaped = match self.layout().reshape(&out) {
            Some(l) => self.with_layout(l),
            None => self
                .detach()
                .contiguous()?
                .with_layout(nabla_core::Layout::contiguous(out)),
        };
        Ok(reshaped.record(|| Op::View(View::Reshape), &[self]))
    }

    /// A view with layout `l` holding the same elements in another shape, recorded as a reshape.
    fn reshaped_view(&self, l: nabla_core::Layout) -> Self {
        self.with_layout(l)
            .record(|| Op::View(View::Reshape), &[self])
    }

    /// The view of `len` elements of axis `a` from `first` by `step`, recorded as a slice.
    pub(crate) fn slice_view(
        &self,
        a: usize,
        first: usize,
        len: usize,
        step: isize,
    ) -> Result<Self> {
        let out = if len == 0 {
            let mut shape = self.shape().to_vec();
            shape[a] = 0;
            self.with_layout(nabla_core::Layout::contiguous(shape))
        } else {
            self.with_layout(self.layout().slice(a, first, len, step)?)
        };
        Ok(out.record(
            || {
                Op::View(View::Slice {
                    axis: a,
                    first,
                    len,
                    step,
                })
            },
            &[self],
        ))
    }

    /// Flattens to one dimension.
    pub fn flatten_all(&self) -> Result<Self> {
        self.reshape([self.numel()])
    }

    /// Merges dimensions `start..=end` into one.
    pub fn flatten(&self, start: isize, end: isize) -> Result<Self> {
        if self.rank() == 0 {
            return self.reshape([1]);
        }
        let s = normalize_axis("flatten", start, self.rank())?;
        let e = normalize_axis("flatten", end, self.rank())?;
        if s > e {
            return Err(Error::invalid(
                "flatten",
                format!("start axis {start} comes after end axis {end}"),
            ));
        }
        let mut dims: Vec<usize> = self.shape()[..s].to_vec();
        dims.push(self.shape()[s..=e].iter().product());
        dims.extend_from_slice(&self.shape()[e + 1..]);
        self.reshape(dims)
    }

    /// Reorders dimensions: output axis `i` is input axis `perm[i]` (negative axes allowed).
    pub fn permute(&self, perm: &[isize]) -> Result<Self> {
        if perm.len() != self.rank() {
            return Err(Error::invalid(
                "permute",
                format!(
                    "{perm:?} has {} axes but the tensor of shape {:?} has {}",
                    perm.len(),
                    self.shape(),
                    self.rank()
                ),
            ));
        }
        let p = perm
            .iter()
            .map(|&a| normalize_axis("permute", a, self.rank()))
            .collect::<Result<Vec<_>>>()?;
        Ok(self
            .with_layout(self.layout().permute(&p)?)
            .record(|| Op::View(View::Permute { perm: p.clone() }), &[self]))
    }

    /// Swaps two axes (a view).
    pub fn transpose(&self, a: isize, b: isize) -> Result<Self> {
        let a = normalize_axis("transpose", a, self.rank())?;
        let b = normalize_axis("transpose", b, self.rank())?;
        let out = self.with_layout(self.layout().transpose(a, b)?);
        Ok(out.record(
            || {
                let mut perm: Vec<usize> = (0..self.rank()).collect();
                perm.swap(a, b);
                Op::View(View::Permute { perm })
            },
            &[self],
        ))
    }

    /// Swaps the last two axes (matrix transpose; a view). Rank 0 and 1 are returned unchanged.
    pub fn t(&self) -> Result<Self> {
        if self.rank() < 2 {
            return Ok(self.clone());
        }
        self.transpose(-2, -1)
    }

    /// Broadcasts to `shape` (a view with stride-0 dimensions).
    pub fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Self> {
        let shape = shape.into();
        if shape.dims() == self.shape() {
            return Ok(self.clone());
        }
        Ok(self
            .with_layout(self.layout().broadcast_to(shape.dims())?)
            .record(|| Op::View(View::Broadcast), &[self]))
    }

    /// Broadcasts to the shape of `other`.
    pub fn broadcast_as(&self, other: &Tensor<B>) -> Result<Self> {
        self.broadcast_to(other.shape().to_vec())
    }

    /// Inserts a size-1 axis at `axis` (`-1` appends).
    pub fn unsqueeze(&self, axis: isize) -> Result<Self> {
        let r = self.rank() as isize;
        let a = normalize_axis("unsqueeze", axis, self.rank() + 1).map_err(|_| {
            Error::invalid(
                "unsqueeze",
                format!(
                    "axis {axis} is out of range for inserting into a tensor of rank {r} (expected {}..={r})",
                    -r - 1
                ),
            )
        })?;
        Ok(self.reshaped_view(self.layout().unsqueeze(a)?))
    }

    /// Removes the size-1 axis `axis`.
    pub fn squeeze(&self, axis: isize) -> Result<Self> {
        let a = normalize_axis("squeeze", axis, self.rank())?;
        Ok(self.reshaped_view(self.layout().squeeze(a)?))
    }

    /// Removes every size-1 axis.
    pub fn squeeze_all(&self) -> Result<Self> {
        let mut l = self.layout().clone();
        for a in (0..self.rank()).rev() {
            if self.shape()[a] == 1 {
                l = l.squeeze(a)?;
            }
        }
        Ok(self.reshaped_view(l))
    }

    /// NumPy-style slice of one axis: `start..end` by `step` (non-zero, may be negative), where `None`
    /// means the open end and negative bounds count from the end (a view).
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let x = Tensor::arange(0, 6, 1, DType::I64, &CpuBackend::new())?;
    /// assert_eq!(x.slice(0, Some(1), None, 2)?.to_vec::<i64>()?, vec![1, 3, 5]);
    /// assert_eq!(x.slice(0, None, None, -1)?.to_vec::<i64>()?, vec![5, 4, 3, 2, 1, 0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn slice(
        &self,
        axis: isize,
        start: Option<isize>,
        end: Option<isize>,
        step: isize,
    ) -> Result<Self> {
        let a = normalize_axis("slice", axis, self.rank())?;
        if step == 0 {
            return Err(Error::invalid("slice", "step must not be zero"));
        }
        let (first, len) = resolve_slice(self.shape()[a], start, end, step);
        self.slice_view(a, first, len, step)
    }

    /// `len` elements of `axis` starting at `start` (a view).
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Self> {
        let a = normalize_axis("narrow", axis, self.rank())?;
        let n = self.shape()[a];
        if start.checked_add(len).is_none_or(|e| e > n) {
            return Err(Error::invalid(
                "narrow",
                format!(
                    "start {start} + length {len} exceeds size {n} of axis {axis} in shape {:?}",
                    self.shape()
                ),
            ));
        }
        self.slice_view(a, start, len, 1)
    }

    /// Element `index` of `axis`, with that axis removed (a view; negative indices count from the end).
    pub fn select_index(&self, axis: isize, index: isize) -> Result<Self> {
        let a = normalize_axis("select_index", axis, self.rank())?;
        let n = self.shape()[a];
        let i = if index < 0 { index + n as isize } else { index };
        if i < 0 || i >= n as isize {
            return Err(Error::IndexOutOfBounds {
                op: "select_index",
                index: index as i64,
                size: n,
            });
        }
        self.narrow(axis, i as usize, 1)?.squeeze(a as isize)
    }

    /// Reverses the order of elements along each of `axes` (a view with negative strides).
    pub fn flip(&self, axes: &[isize]) -> Result<Self> {
        let axes = nabla_core::normalize_axes("flip", axes, self.rank())?;
        let mut l = self.layout().clone();
        for &a in &axes {
            l = l.flip(a)?;
        }
        Ok(self
            .with_layout(l)
            .record(|| Op::View(View::Flip { axes }), &[self]))
    }

    /// Pads each axis `i` with `pads[i].0` elements before and `pads[i].1` after, all equal to `value`.
    pub fn pad(&self, pads: &[(usize, usize)], value: impl Into<Scalar>) -> Result<Self> {
        if pads.len() != self.rank() {
            return Err(Error::invalid(
                "pad",
                format!(
                    "{} padding pairs given for a tensor of shape {:?}",
                    pads.len(),
                    self.shape()
                ),
            ));
        }
        let shape = self
            .shape()
            .iter()
            .zip(pads)
            .map(|(d, (a, b))| d.checked_add(*a)?.checked_add(*b))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| {
                Error::invalid(
                    "pad",
                    format!("padding {pads:?} overflows the dimension sizes"),
                )
            })?;
        nabla_core::check_allocation("pad", &shape, self.dtype())?;
        let value: Scalar = value.into();
        let pad = Primitive::Pad {
            pads: pads.to_vec(),
            value,
        };
        Tensor::run_primitive(self.backend(), pad, &[self], &shape)
    }

    /// Joins tensors along an existing axis.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let cpu = CpuBackend::new();
    /// let a = Tensor::zeros([2, 1], DType::F32, &cpu)?;
    /// let b = Tensor::ones([2, 2], DType::F32, &cpu)?;
    /// assert_eq!(Tensor::cat(&[&a, &b], 1)?.shape(), &[2, 3]);
    /// assert!(Tensor::cat(&[&a, &b], 0).is_err());
    /// // Mixed dtypes are promoted.
    /// let i = Tensor::zeros([2, 1], DType::I64, &cpu)?;
    /// assert_eq!(Tensor::cat(&[&a, &i], 1)?.dtype(), DType::F32);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn cat(tensors: &[&Tensor<B>], axis: isize) -> Result<Self> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid("cat", "needs at least one tensor"))?;
        // Mixed dtypes join in their promoted dtype, as torch.cat does.
        let dtype = tensors
            .iter()
            .fold(first.dtype(), |d, t| d.promote(t.dtype()));
        if tensors.iter().any(|t| t.dtype() != dtype) {
            let cast = tensors
                .iter()
                .map(|t| t.cast_to(dtype))
                .collect::<Result<Vec<_>>>()?;
            return Tensor::cat(&cast.iter().collect::<Vec<_>>(), axis);
        }
        let a = normalize_axis("cat", axis, first.rank())?;
        let mut shape = first.shape().to_vec();
        shape[a] = 0;
        for t in tensors {
            first.check_device("cat", t)?;
            let same = t.rank() == first.rank()
                && t.shape()
                    .iter()
                    .zip(first.shape())
                    .enumerate()
                    .all(|(i, (x, y))| i == a || x == y);
            if !same {
                return Err(Error::shapes("cat", first.shape(), t.shape())
                    .with_hint(format!("all dimensions except axis {axis} must match")));
            }
            shape[a] = shape[a]
                .checked_add(t.shape()[a])
                .ok_or_else(|| Error::invalid("cat", "the joined axis overflows usize"))?;
        }
        nabla_core::check_allocation("cat", &shape, first.dtype())?;
        Tensor::run_primitive(
            first.backend(),
            Primitive::Concat { axis: a },
            tensors,
            &shape,
        )
    }

    /// Joins tensors of one shape along a new axis.
    pub fn stack(tensors: &[&Tensor<B>], axis: isize) -> Result<Self> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid("stack", "needs at least one tensor"))?;
        let a = normalize_axis("stack", axis, first.rank() + 1)? as isize;
        for t in tensors {
            if t.shape() != first.shape() {
                return Err(Error::shapes("stack", first.shape(), t.shape())
                    .with_hint("stacked tensors need one shape"));
            }
        }
        let expanded = tensors
            .iter()
            .map(|t| t.unsqueeze(a))
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&expanded.iter().collect::<Vec<_>>(), a)
    }

    /// Splits `axis` into pieces of `size` elements (the last may be smaller); views.
    pub fn split(&self, size: usize, axis: isize) -> Result<Vec<Self>> {
        let a = normalize_axis("split", axis, self.rank())?;
        if size == 0 {
            return Err(Error::invalid("split", "piece size must be positive"));
        }
        let n = self.shape()[a];
        (0..n)
            .step_by(size)
            .map(|s| self.narrow(a as isize, s, size.min(n - s)))
            .collect()
    }

    /// Splits `axis` into `chunks` nearly equal pieces (as `torch.chunk`); views.
    pub fn chunk(&self, chunks: usize, axis: isize) -> Result<Vec<Self>> {
        let a = normalize_axis("chunk", axis, self.rank())?;
        if chunks == 0 {
            return Err(Error::invalid("chunk", "number of chunks must be positive"));
        }
        self.split(self.shape()[a].div_ceil(chunks).max(1), axis)
    }
}

#[cfg(test)]
mod tests {
    use super::resolve_slice;

    /// `(n, start, end, step, expected positions)`.
    type Case = (usize, Option<isize>, Option<isize>, isize, Vec<usize>);

    #[test]
    fn slice_bounds_follow_python() {
        // Checked against Python: list(range(n))[start:end:step].
        let cases: &[Case] = &[
            (5, None, None, 1, vec![0, 1, 2, 3, 4]),
            (5, Some(-2), None, 1, vec![3, 4]),
            (5, None, None, -2, vec![4, 2, 0]),
            (5, Some(3), Some(0), -1, vec![3, 2, 1]),
            (5, Some(10), None, -1, vec![4, 3, 2, 1, 0]),
            (5, Some(-10), Some(2), 1, vec![0, 1]),
            (5, Some(2), Some(2), 1, vec![]),
            (0, None, None, -1, vec![]),
            // Steps at the ends of isize: one element, no overflow.
            (5, Some(1), None, isize::MAX, vec![1]),
            (5, None, None, isize::MIN, vec![4]),
            (5, Some(-1), Some(isize::MIN), isize::MIN, vec![4]),
        ];
        for (n, s, e, st, want) in cases {
            let (first, len) = resolve_slice(*n, *s, *e, *st);
            let got: Vec<usize> = (0..len)
                .map(|i| (first as isize + i as isize * st) as usize)
                .collect();
            assert_eq!(&got, want, "n={n} start={s:?} end={e:?} step={st}");
        }
    }
}
