//! The tensor type: a handle to a device buffer plus a strided view of it.

use crate::autograd::{Node, Op};
use nabla_core::{
    Backend, DType, Element, Error, HostData, Layout, Outputs, Primitive, Result, Scalar, Shape,
};
use std::any::Any;
use std::sync::Arc;

/// An n-dimensional array on backend `B`, with a runtime [`DType`].
///
/// Cloning is cheap: clones share the device buffer. Views (transpose, permute, broadcast, slice,
/// squeeze, unsqueeze, compatible reshape) share it too and copy nothing.
///
/// ```
/// use nabla_tensor::Tensor;
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &cpu)?;
/// let t = a.t()?; // a zero-copy view
/// assert_eq!(t.shape(), &[3, 2]);
/// assert_eq!(t.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// let b = (&a * 2.0)?.sum_all()?;
/// assert_eq!(b.item::<f32>()?, 42.0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor<B: Backend> {
    storage: B::Storage,
    layout: Layout,
    dtype: DType,
    backend: B,
    /// The graph node that produced this tensor, for tensors that require gradients.
    pub(crate) ad: Option<Arc<Node<B>>>,
}

impl<B: Backend> Tensor<B> {
    /// Wraps a backend buffer viewed through `layout`. Fails if the view reaches outside the buffer.
    pub fn from_storage(storage: B::Storage, layout: Layout, backend: &B) -> Result<Self> {
        let len = backend.storage_len(&storage);
        if layout.numel() > 0 && (layout.min_offset() < 0 || layout.max_offset() >= len as isize) {
            return Err(Error::invalid(
                "from_storage",
                format!("view {layout:?} reaches outside a buffer of {len} elements"),
            ));
        }
        let dtype = backend.storage_dtype(&storage);
        Ok(Tensor {
            storage,
            layout,
            dtype,
            backend: backend.clone(),
            ad: None,
        })
    }

    /// Wraps a freshly computed contiguous buffer of the given shape (kernel outputs).
    pub(crate) fn from_output(storage: B::Storage, shape: impl Into<Shape>, backend: &B) -> Self {
        Tensor::from_output_dims(storage, shape.into().dims(), backend)
    }

    /// Runs `primitive` on `inputs` (each read through its view) with `backend`'s kernel, through
    /// [`Primitive::dispatch`], the one path by which every layer runs backend work; wraps its output
    /// as a contiguous tensor of shape `dims` and records the primitive for the derivative when an input
    /// is tracked (checked for new NaNs in anomaly-detection mode).
    pub(crate) fn run_primitive(
        backend: &B,
        primitive: Primitive,
        inputs: &[&Tensor<B>],
        dims: &[usize],
    ) -> Result<Tensor<B>> {
        let storage =
            Tensor::dispatch_outputs(backend, &primitive, inputs)?.into_one(&primitive)?;
        Tensor::from_output_dims(storage, dims, backend)
            .record_checked(|| Op::Primitive(primitive), inputs)
    }

    /// [`Tensor::run_primitive`] for the primitives with two outputs of shape `dims` (sort, top-k and
    /// max pooling: values and `I64` positions), which are not recorded: their callers record the
    /// values as a gather of the positions.
    pub(crate) fn run_primitive_pair(
        backend: &B,
        primitive: Primitive,
        input: &Tensor<B>,
        dims: &[usize],
    ) -> Result<(Tensor<B>, Tensor<B>)> {
        let (values, positions) =
            Tensor::dispatch_outputs(backend, &primitive, &[input])?.into_two(&primitive)?;
        Ok((
            Tensor::from_output_dims(values, dims, backend),
            Tensor::from_output_dims(positions, dims, backend),
        ))
    }

    /// The buffer and the layout it is read through, as backend methods and
    /// [`Primitive::dispatch`] take an input.
    fn view(&self) -> (&B::Storage, &Layout) {
        (&self.storage, &self.layout)
    }

    /// The output buffers of `primitive` run on `inputs`.
    fn dispatch_outputs(
        backend: &B,
        primitive: &Primitive,
        inputs: &[&Tensor<B>],
    ) -> Result<Outputs<B::Storage>> {
        // The common arities on the stack: this is every eager op's path.
        match inputs {
            [] => primitive.dispatch_outputs(backend, &[]),
            [a] => primitive.dispatch_outputs(backend, &[a.view()]),
            [a, b] => primitive.dispatch_outputs(backend, &[a.view(), b.view()]),
            [a, b, c] => primitive.dispatch_outputs(backend, &[a.view(), b.view(), c.view()]),
            many => {
                let views: Vec<(&B::Storage, &Layout)> = many.iter().map(|t| t.view()).collect();
                primitive.dispatch_outputs(backend, &views)
            }
        }
    }

    /// Wraps a freshly computed contiguous buffer with the dimensions `dims` (kernel outputs shaped like
    /// an input; no allocation for the layout).
    pub(crate) fn from_output_dims(storage: B::Storage, dims: &[usize], backend: &B) -> Self {
        let dtype = backend.storage_dtype(&storage);
        Tensor {
            storage,
            layout: Layout::row_major(dims),
            dtype,
            backend: backend.clone(),
            ad: None,
        }
    }

    /// The same buffer seen through another layout (views), untracked: callers record the view op.
    pub(crate) fn with_layout(&self, layout: Layout) -> Self {
        Tensor {
            storage: self.storage.clone(),
            layout,
            dtype: self.dtype,
            backend: self.backend.clone(),
            ad: None,
        }
    }

    /// Uploads host data with the given shape (dimensions at most `isize::MAX`, also when one is 0).
    pub fn from_host(data: HostData, shape: impl Into<Shape>, backend: &B) -> Result<Self> {
        let shape = shape.into();
        nabla_core::checked_numel("from_host", shape.dims())?;
        if data.len() != shape.numel() {
            return Err(Error::DataLength {
                op: "from_host",
                expected: shape.numel(),
                got: data.len(),
                shape: shape.into_dims(),
            });
        }
        let storage = backend.upload(data)?;
        Ok(Tensor::from_output(storage, shape, backend))
    }

    /// A tensor of `dtype` from values computed in `f64` on the host, converted there (with NumPy's
    /// `astype` rules) before the upload, so it works on backends that hold no `f64` (wgpu):
    /// what layers use for tables and initial values.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::DType;
    /// let x = Tensor::from_f64s(vec![0.5, 1.0 / 3.0], [2], DType::F32, &CpuBackend::new())?;
    /// assert_eq!(x.dtype(), DType::F32);
    /// assert_eq!(x.to_vec::<f32>()?, vec![0.5, 1.0 / 3.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn from_f64s(
        values: Vec<f64>,
        shape: impl Into<Shape>,
        dtype: DType,
        backend: &B,
    ) -> Result<Self> {
        Tensor::from_host(HostData::F64(values).cast(dtype), shape, backend)
    }

    /// A tensor from a vector of elements in row-major order.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1i64, 2, 3], [3], &CpuBackend::new())?;
    /// assert_eq!(x.dtype(), nabla_core::DType::I64);
    /// assert!(Tensor::from_vec(vec![1i64, 2, 3], [2, 2], &CpuBackend::new()).is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn from_vec<T: Element>(
        data: Vec<T>,
        shape: impl Into<Shape>,
        backend: &B,
    ) -> Result<Self> {
        let shape = shape.into();
        if data.len() != shape.numel() {
            return Err(Error::DataLength {
                op: "from_vec",
                expected: shape.numel(),
                got: data.len(),
                shape: shape.into_dims(),
            });
        }
        Tensor::from_host(T::into_host(data), shape, backend)
    }

    /// A tensor from a slice of elements in row-major order.
    pub fn from_slice<T: Element>(
        data: &[T],
        shape: impl Into<Shape>,
        backend: &B,
    ) -> Result<Self> {
        let shape = shape.into();
        if data.len() != shape.numel() {
            return Err(Error::DataLength {
                op: "from_slice",
                expected: shape.numel(),
                got: data.len(),
                shape: shape.into_dims(),
            });
        }
        Tensor::from_host(T::into_host(data.to_vec()), shape, backend)
    }

    /// A rank-0 tensor holding `value` converted to `dtype`.
    pub fn scalar(value: impl Into<Scalar>, dtype: DType, backend: &B) -> Result<Self> {
        let full = Primitive::Full {
            value: value.into(),
            len: 1,
            dtype,
        };
        Tensor::run_primitive(backend, full, &[], &[])
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// The shape as a [`Shape`] value.
    pub fn dims(&self) -> Shape {
        Shape::from(self.layout.shape())
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.layout.rank()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The strided view into the buffer.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The backend buffer.
    pub fn storage(&self) -> &B::Storage {
        &self.storage
    }

    /// The buffer, giving up this handle (so a kernel may reuse it when no other handle shares it).
    pub(crate) fn into_storage(self) -> B::Storage {
        self.storage
    }

    /// The backend this tensor lives on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// `true` if the view is dense and row-major.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// `true` if `self` and `other` are views of the same buffer (for checking that views copy nothing).
    pub fn shares_storage_with(&self, other: &Tensor<B>) -> bool
    where
        B::Storage: PartialEq,
    {
        self.storage == other.storage
    }

    /// Size of dimension `axis` (negative counts from the end).
    pub fn dim(&self, axis: isize) -> Result<usize> {
        let a = nabla_core::normalize_axis("dim", axis, self.rank())?;
        Ok(self.shape()[a])
    }

    /// Reads the elements back to the host in row-major order. This is the explicit device-to-host copy.
    pub fn to_host(&self) -> Result<HostData> {
        self.backend.read(&self.storage, &self.layout)
    }

    /// Reads the elements back as `f64` (converted on the host, so any backend and any real dtype
    /// will do; complex values give their real parts).
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1.5f32, -2.0], [2], &CpuBackend::new())?;
    /// assert_eq!(x.to_f64_vec()?, vec![1.5, -2.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        Ok(self.to_host()?.to_f64_vec())
    }

    /// Reads the elements back as a vector of `T`, which must match the dtype.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1.0f64, 2.0], [2], &CpuBackend::new())?;
    /// assert_eq!(x.to_vec::<f64>()?, vec![1.0, 2.0]);
    /// assert!(x.to_vec::<f32>().is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype {
            return Err(Error::DTypeMismatch {
                op: "to_vec",
                lhs: self.dtype,
                rhs: T::DTYPE,
            });
        }
        let host = self.to_host()?;
        Ok(T::vec_of(host).expect("backend returned the dtype it reported"))
    }

    /// Reads a rank-2 tensor back as nested rows.
    pub fn to_vec2<T: Element>(&self) -> Result<Vec<Vec<T>>> {
        if self.rank() != 2 {
            return Err(Error::invalid(
                "to_vec2",
                format!("expected rank 2, got shape {:?}", self.shape()),
            ));
        }
        let flat = self.to_vec::<T>()?;
        let cols = self.shape()[1];
        if cols == 0 {
            return Ok(vec![Vec::new(); self.shape()[0]]);
        }
        Ok(flat.chunks(cols).map(|c| c.to_vec()).collect())
    }

    /// The single element of a one-element tensor, as `T` (which must match the dtype).
    pub fn item<T: Element>(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(Error::invalid(
                "item",
                format!(
                    "a tensor of shape {:?} has {} elements, not 1",
                    self.shape(),
                    self.numel()
                ),
            ));
        }
        if T::DTYPE != self.dtype {
            return Err(Error::DTypeMismatch {
                op: "item",
                lhs: self.dtype,
                rhs: T::DTYPE,
            });
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// The single element of a one-element tensor as a [`Scalar`], whatever the dtype.
    pub fn to_scalar(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::invalid(
                "to_scalar",
                format!(
                    "a tensor of shape {:?} has {} elements, not 1",
                    self.shape(),
                    self.numel()
                ),
            ));
        }
        Ok(self.to_host()?.get(0).expect("one element"))
    }

    /// Copies this tensor to another backend (through host memory). The copy is untracked.
    ///
    /// Tensors of two backend types never meet: combining them is a compile error, and `to_backend`
    /// is how one moves to the other's device. (Two devices of one backend type, such as two
    /// `WgpuBackend`s, give a `DeviceMismatch` error at run time instead.)
    ///
    /// ```compile_fail
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::MemoryTracked;
    /// let cpu = CpuBackend::new();
    /// let tracked = MemoryTracked::new(CpuBackend::new());
    /// let a = Tensor::from_vec(vec![1.0f32], [1], &cpu).unwrap();
    /// let b = Tensor::from_vec(vec![2.0f32], [1], &tracked).unwrap();
    /// let _ = a.add(&b); // Tensor<CpuBackend> + Tensor<MemoryTracked<CpuBackend>>: does not compile
    /// ```
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_core::MemoryTracked;
    /// let cpu = CpuBackend::new();
    /// let tracked = MemoryTracked::new(CpuBackend::new());
    /// let a = Tensor::from_vec(vec![1.0f32], [1], &cpu)?;
    /// let b = Tensor::from_vec(vec![2.0f32], [1], &tracked)?.to_backend(&cpu)?;
    /// assert_eq!(a.add(&b)?.to_vec::<f32>()?, vec![3.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    ///
    /// When `B2` is `B` (two devices of a run-time backend such as `nabla_any::AnyBackend`, or two
    /// handles of one backend type) the move is recorded: gradients and tangents flow back across it,
    /// to any order. Between different backend types the result is a new constant (gradients cannot
    /// cross Rust types); use a run-time backend to differentiate across devices.
    pub fn to_backend<B2: Backend>(&self, backend: &B2) -> Result<Tensor<B2>> {
        let Some(target) = (backend as &dyn Any).downcast_ref::<B>() else {
            return Tensor::from_host(self.to_host()?, self.shape().to_vec(), backend);
        };
        let moved: Box<dyn Any> = Box::new(self.move_to(target)?);
        moved.downcast::<Tensor<B2>>().map(|t| *t).map_err(|_| {
            Error::invalid(
                "to_backend",
                "internal error: the target backend's type changed while moving",
            )
        })
    }

    /// A copy of `self` on `target` (of this backend type), recorded as a differentiable move.
    pub(crate) fn move_to(&self, target: &B) -> Result<Tensor<B>> {
        let out = Tensor::from_host(self.to_host()?, self.shape().to_vec(), target)?;
        out.record_checked(
            || Op::Transfer {
                from: self.backend.clone(),
                to: target.clone(),
            },
            &[self],
        )
    }

    /// A contiguous tensor with the same values: `self` when already contiguous, else a copy.
    pub fn contiguous(&self) -> Result<Self> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        Tensor::run_primitive(&self.backend, Primitive::Copy, &[self], self.shape())
    }

    /// Converts to another dtype (NumPy `astype` semantics). Same dtype returns `self`.
    pub fn cast(&self, dtype: DType) -> Result<Self> {
        if dtype == self.dtype {
            return Ok(self.clone());
        }
        Tensor::run_primitive(&self.backend, Primitive::Cast(dtype), &[self], self.shape())
    }

    /// Fails with a device-mismatch error if `other` lives on another device.
    pub(crate) fn check_device(&self, op: &'static str, other: &Tensor<B>) -> Result<()> {
        let (a, b) = (self.backend.device(), other.backend.device());
        if a != b {
            return Err(Error::DeviceMismatch {
                op,
                lhs: a.to_string(),
                rhs: b.to_string(),
            });
        }
        Ok(())
    }

    /// Fails with a dtype-mismatch error if `other` has another dtype.
    pub(crate) fn check_same_dtype(&self, op: &'static str, other: &Tensor<B>) -> Result<()> {
        if self.dtype != other.dtype {
            return Err(Error::DTypeMismatch {
                op,
                lhs: self.dtype,
                rhs: other.dtype,
            });
        }
        Ok(())
    }
}

impl<B: Backend> std::fmt::Debug for Tensor<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, dtype={}, device={}, strides={:?}, offset={})",
            self.shape(),
            self.dtype,
            self.backend.device(),
            self.layout.strides(),
            self.layout.offset()
        )
    }
}
