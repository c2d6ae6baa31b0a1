//! Index-based ops: gather, index_select, scatter-add, one-hot, sorting, top-k and max pooling.

use crate::Tensor;
use crate::autograd::Op;
use nabla_core::{Backend, DType, Error, Pool2dParams, Primitive, Result, normalize_axis};

impl<B: Backend> Tensor<B> {
    fn check_index(&self, op: &'static str, index: &Tensor<B>) -> Result<Tensor<B>> {
        self.check_device(op, index)?;
        match index.dtype() {
            DType::I64 => Ok(index.clone()),
            other if other.is_int() => index.cast(DType::I64),
            other => Err(Error::UnsupportedDType {
                op,
                dtype: other,
                hint: Some("indices must be integers".into()),
            }),
        }
    }

    /// The sorted `values` of `self` at `indices` along `axis`; for a tracked `self` they are gathered
    /// again so that the gradient flows back to the positions they came from.
    fn values_at(&self, axis: usize, values: Tensor<B>, indices: &Tensor<B>) -> Result<Tensor<B>> {
        if crate::is_recorded(&[self]) {
            self.gather(axis as isize, indices)
        } else {
            Ok(values)
        }
    }

    /// NumPy `take_along_axis`: `out[i.., j, k..] = self[i.., index[i.., j, k..], k..]`. The index has the
    /// rank of `self`; its other dimensions broadcast against `self`'s. Negative indices count from the end.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// let x = Tensor::from_vec(vec![10.0f32, 20.0, 30.0, 40.0], [2, 2], &cpu)?;
    /// let i = Tensor::from_vec(vec![1i64, 0], [2, 1], &cpu)?;
    /// assert_eq!(x.gather(1, &i)?.to_vec::<f32>()?, vec![20.0, 30.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn gather(&self, axis: isize, index: &Tensor<B>) -> Result<Self> {
        const OP: &str = "gather";
        let index = self.check_index(OP, index)?;
        let a = normalize_axis(OP, axis, self.rank())?;
        if index.rank() != self.rank() {
            return Err(Error::shapes(OP, self.shape(), index.shape())
                .with_hint("the index must have the tensor's rank"));
        }
        // Broadcast the non-axis dimensions of both against each other.
        let mut shape_x = Vec::with_capacity(self.rank());
        let mut shape_i = Vec::with_capacity(self.rank());
        for d in 0..self.rank() {
            let (xd, id) = (self.shape()[d], index.shape()[d]);
            if d == a {
                shape_x.push(xd);
                shape_i.push(id);
                continue;
            }
            let b = if xd == id || id == 1 {
                xd
            } else if xd == 1 {
                id
            } else {
                return Err(Error::shapes(OP, self.shape(), index.shape())
                    .with_hint(format!("dimension {d} has sizes {xd} and {id}")));
            };
            shape_x.push(b);
            shape_i.push(b);
        }
        let (x, index) = (
            self.broadcast_to(shape_x)?,
            index.broadcast_to(shape_i.clone())?,
        );
        let gather = Primitive::Gather { axis: a };
        Tensor::run_primitive(self.backend(), gather, &[&x, &index], &shape_i)
    }

    /// Selects entries of `axis` by a 1-D index (as `torch.index_select`; an embedding lookup for axis 0).
    pub fn index_select(&self, axis: isize, index: &Tensor<B>) -> Result<Self> {
        const OP: &str = "index_select";
        let index = self.check_index(OP, index)?;
        let a = normalize_axis(OP, axis, self.rank())?;
        if index.rank() != 1 {
            return Err(Error::invalid(
                OP,
                format!("the index must be 1-D, got shape {:?}", index.shape()),
            ));
        }
        let mut out = self.shape().to_vec();
        out[a] = index.numel();
        nabla_core::check_allocation(OP, &out, self.dtype())?;
        let select = Primitive::IndexSelect { axis: a };
        Tensor::run_primitive(self.backend(), select, &[self, &index], &out)
    }

    /// A copy of `self` with `src[i.., j, k..]` added at `[i.., index[i.., j, k..], k..]` (the transpose of
    /// [`Tensor::gather`]). `index` and `src` share a shape that equals `self`'s except on `axis`.
    pub fn scatter_add(&self, axis: isize, index: &Tensor<B>, src: &Tensor<B>) -> Result<Self> {
        const OP: &str = "scatter_add";
        let index = self.check_index(OP, index)?;
        self.check_device(OP, src)?;
        self.check_same_dtype(OP, src)?;
        let a = normalize_axis(OP, axis, self.rank())?;
        if index.shape() != src.shape() {
            return Err(Error::shapes(OP, index.shape(), src.shape())
                .with_hint("index and source must have one shape"));
        }
        let fits = index.rank() == self.rank()
            && index
                .shape()
                .iter()
                .zip(self.shape())
                .enumerate()
                .all(|(d, (i, x))| d == a || i == x);
        if !fits {
            return Err(
                Error::shapes(OP, self.shape(), index.shape()).with_hint(format!(
                    "the index must match the destination except on axis {axis}"
                )),
            );
        }
        let scatter = Primitive::ScatterAdd { axis: a };
        Tensor::run_primitive(self.backend(), scatter, &[self, &index, src], self.shape())
    }

    /// Adds the slices of `src` along `axis` into `self` at the positions of a 1-D index (as
    /// `torch.index_add`): the transpose of [`Tensor::index_select`].
    pub fn index_add(&self, axis: isize, index: &Tensor<B>, src: &Tensor<B>) -> Result<Self> {
        const OP: &str = "index_add";
        let index = self.check_index(OP, index)?;
        let a = normalize_axis(OP, axis, self.rank())?;
        if index.rank() != 1 || src.rank() != self.rank() || src.shape()[a] != index.numel() {
            return Err(
                Error::shapes(OP, self.shape(), src.shape()).with_hint(format!(
                    "need a 1-D index with one entry per slice of src along axis {axis}"
                )),
            );
        }
        let mut view = vec![1usize; self.rank()];
        view[a] = index.numel();
        let index = index.reshape(view)?.broadcast_to(src.shape().to_vec())?;
        self.scatter_add(axis, &index, src)
    }

    /// One-hot encodes integer class indices into a new last axis of size `classes`.
    pub fn one_hot(&self, classes: usize, dtype: DType) -> Result<Self> {
        let index = self.check_index("one_hot", self)?;
        let mut out = self.shape().to_vec();
        out.push(classes);
        nabla_core::check_allocation("one_hot", &out, dtype)?;
        let one_hot = Primitive::OneHot { classes, dtype };
        Tensor::run_primitive(self.backend(), one_hot, &[&index], &out)
    }

    /// Stable sort along `axis`; returns the sorted values and their original indices (`I64`).
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![3.0f32, 1.0, 2.0], [3], &CpuBackend::new())?;
    /// let (v, i) = x.sort(0, false)?;
    /// assert_eq!(v.to_vec::<f32>()?, vec![1.0, 2.0, 3.0]);
    /// assert_eq!(i.to_vec::<i64>()?, vec![1, 2, 0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn sort(&self, axis: isize, descending: bool) -> Result<(Self, Self)> {
        if let Some(out) = self.half_pair_in_f32(|x| x.sort(axis, descending)) {
            return out;
        }
        let a = normalize_axis("sort", axis, self.rank())?;
        if self.dtype().is_complex() || self.dtype().is_half() {
            return Err(Error::dtype("sort", self.dtype()));
        }
        let sort = Primitive::Sort {
            axis: a,
            descending,
        };
        let (values, indices) =
            Tensor::run_primitive_pair(self.backend(), sort, self, self.shape())?;
        Ok((self.values_at(a, values, &indices)?, indices))
    }

    /// Indices that sort `axis` (stable).
    pub fn argsort(&self, axis: isize, descending: bool) -> Result<Self> {
        Ok(self.sort(axis, descending)?.1)
    }

    /// The `k` largest (or smallest) entries along `axis`, sorted, with their indices (`I64`).
    pub fn topk(&self, k: usize, axis: isize, largest: bool) -> Result<(Self, Self)> {
        if let Some(out) = self.half_pair_in_f32(|x| x.topk(k, axis, largest)) {
            return out;
        }
        let a = normalize_axis("topk", axis, self.rank())?;
        if self.dtype().is_complex() || self.dtype().is_half() {
            return Err(Error::dtype("topk", self.dtype()));
        }
        let n = self.shape()[a];
        if k > n {
            return Err(Error::invalid(
                "topk",
                format!("k = {k} exceeds the size {n} of axis {axis}"),
            ));
        }
        let mut shape = self.shape().to_vec();
        shape[a] = k;
        let topk = Primitive::Topk {
            axis: a,
            k,
            largest,
        };
        let (values, indices) = Tensor::run_primitive_pair(self.backend(), topk, self, &shape)?;
        Ok((self.values_at(a, values, &indices)?, indices))
    }

    /// 2-D max pooling over the last two dimensions (`[..., H, W]`, every plane on its own), with the
    /// flat position `h * W + w` of each maximum inside its plane (`I64`), as PyTorch's
    /// `max_pool2d(..., return_indices=True)`. Padding never wins, ties go to the first maximum, a NaN
    /// in a window is its maximum. The gradient flows to the positions of the maxima.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::Pool2dParams;
    /// let x = Tensor::from_vec((0..16).map(|v| v as f32).collect(), [1, 1, 4, 4], &CpuBackend::new())?;
    /// let (v, i) = x.max_pool2d(&Pool2dParams::square(2))?;
    /// assert_eq!(v.to_vec::<f32>()?, vec![5.0, 7.0, 13.0, 15.0]);
    /// assert_eq!(i.to_vec::<i64>()?, vec![5, 7, 13, 15]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn max_pool2d(&self, params: &Pool2dParams) -> Result<(Self, Self)> {
        if let Some(out) = self.half_pair_in_f32(|x| x.max_pool2d(params)) {
            return out;
        }
        const OP: &str = "max_pool2d";
        let rank = self.rank();
        if rank < 2 {
            return Err(Error::invalid(
                OP,
                format!(
                    "expected at least 2 dimensions [..., H, W], got shape {:?}",
                    self.shape()
                ),
            ));
        }
        let dtype = self.dtype();
        if dtype.is_complex() || dtype.is_half() || dtype == DType::Bool {
            return Err(Error::dtype(OP, dtype));
        }
        let (h, w) = (self.shape()[rank - 2], self.shape()[rank - 1]);
        let (oh, ow) = params.checked_output_size(OP, (h, w))?.ok_or_else(|| {
            Error::invalid(
                OP,
                format!(
                    "{params} gives no output for input shape {:?} (zero kernel, stride or \
                     dilation, padding over half the kernel, or a window larger than the input)",
                    self.shape()
                ),
            )
        })?;
        let mut shape = self.shape().to_vec();
        shape[rank - 2] = oh;
        shape[rank - 1] = ow;
        let pool = Primitive::MaxPool2d(*params);
        let (values, indices) = Tensor::run_primitive_pair(self.backend(), pool, self, &shape)?;
        if !crate::is_recorded(&[self]) {
            return Ok((values, indices));
        }
        // The maxima are exactly `gather(x planes, -1, indices)`: record them as that gather of the
        // flattened planes (without computing it again), so that the gradient reaches them.
        let mut flat = self.shape()[..rank - 2].to_vec();
        flat.push(h * w);
        let mut flat_index = shape[..rank - 2].to_vec();
        flat_index.push(oh * ow);
        let (planes, flat_indices) = (self.reshape(flat)?, indices.reshape(flat_index.clone())?);
        let values = values
            .reshape(flat_index)?
            .record_checked(
                || {
                    Op::Primitive(Primitive::Gather {
                        // The last axis of the flattened `[..., H * W]` planes.
                        axis: rank - 2,
                    })
                },
                &[&planes, &flat_indices],
            )?
            .reshape(shape)?;
        Ok((values, indices))
    }
}
