//! The kernel interface every device implements.

use crate::{
    ArgReduceOp, BinaryOp, CompareOp, Conv2dParams, DType, Distribution, ExtensionOp, HostData,
    HostView, Layout, Pool2dParams, ReduceOp, Result, RngKey, Scalar, UnaryOp,
};
use std::fmt::Debug;
use std::sync::Arc;

mod defaults;

/// Identifies the device a buffer lives on; tensors on different devices cannot be combined.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    /// Kind of device (`"cpu"`, `"wgpu"`, ...).
    pub kind: &'static str,
    /// Index among devices of that kind.
    pub ordinal: usize,
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind, self.ordinal)
    }
}

/// An F32 operand rounded to `to` (BF16 or F16, to nearest, ties to even) and back to F32, as a
/// row-major buffer: what a backend without arithmetic in `to` multiplies for a product at a
/// rounding [`Precision`](crate::Precision).
pub fn round_operand<B: Backend>(
    b: &B,
    s: &B::Storage,
    layout: &Layout,
    to: DType,
) -> Result<B::Storage> {
    let half = b.cast(s, layout, to)?;
    b.cast(&half, &Layout::row_major(layout.shape()), DType::F32)
}

/// A compute device: a small kernel interface over device-resident buffers.
///
/// Contract, shared by every method:
/// - A buffer is a [`Backend::Storage`], a cheap-to-clone handle that never changes once returned
///   (kernels write only into buffers they allocate). An input comes with a [`Layout`] describing the view
///   (strides may be zero or negative); each output is a new buffer holding a contiguous row-major result
///   whose shape the caller knows from the contract of the method.
/// - The backend knows nothing about autodiff. Shapes and dtypes have been checked by the caller
///   (`nabla-tensor`), but a backend must still return an [`crate::Error`] rather than panic when an
///   input is invalid (out-of-range indices are only discoverable here).
/// - Work may be queued: only [`Backend::read`] and [`Backend::synchronize`] must wait for results.
pub trait Backend: Clone + Debug + Send + Sync + 'static {
    /// A handle to a buffer on this device.
    type Storage: Clone + Debug + Send + Sync;

    /// Short name (`"cpu"`, `"wgpu"`).
    fn name(&self) -> &'static str;

    /// The device this backend drives.
    fn device(&self) -> Device;

    /// Dtype of a buffer.
    fn storage_dtype(&self, storage: &Self::Storage) -> DType;

    /// Number of elements a buffer holds.
    fn storage_len(&self, storage: &Self::Storage) -> usize;

    /// Copies host data into a new buffer.
    fn upload(&self, data: HostData) -> Result<Self::Storage>;

    /// Reads the elements of a view back to the host, in row-major order of the view. Waits for queued work.
    fn read(&self, storage: &Self::Storage, layout: &Layout) -> Result<HostData>;

    /// `true` for a backend whose buffers hold no values while ops are recorded (the tracing
    /// backend): [`Backend::read`] fails, so checks that read values (class indices in range, say)
    /// are left to the kernels of the backend that later runs the program.
    fn is_symbolic(&self) -> bool {
        false
    }

    /// The backend's fused fast-path kernels (softmax, layer norm, ReLU, an LSTM layer, attention,
    /// batch norm: see [`crate::fast_path`]), if it has them. `Some` also says that the backend
    /// computes on host memory on this process's threads, so independent kernels may run side by
    /// side on the thread pool. `None` (the default) gives the composites, which are correct on
    /// every backend.
    fn fast_path_kernels(&self) -> Option<crate::FastKernels> {
        None
    }

    /// Waits until all queued work has finished.
    fn synchronize(&self) -> Result<()>;

    /// A buffer of `len` copies of `value` converted to `dtype`. The default fills a host buffer and
    /// uploads it.
    fn full(&self, len: usize, value: Scalar, dtype: DType) -> Result<Self::Storage> {
        self.upload(HostData::filled(dtype, len, value))
    }

    /// `len` draws from `dist` as `dtype` (real floats; `Bernoulli` also gives bool, integers), where
    /// element `i` is a pure function of `key` and `i` (see [`RngKey`]).
    /// The default computes the draws on the host ([`crate::random_host`]) and uploads them.
    fn random(
        &self,
        dist: Distribution,
        len: usize,
        dtype: DType,
        key: RngKey,
    ) -> Result<Self::Storage> {
        self.upload(crate::random_host(dist, len, dtype, key, &crate::InOrder)?)
    }

    /// Materialises a view into a contiguous buffer. The default is a [`Backend::cast`] to the
    /// buffer's own dtype (which also writes a new contiguous buffer).
    fn copy(&self, x: &Self::Storage, layout: &Layout) -> Result<Self::Storage> {
        self.cast(x, layout, self.storage_dtype(x))
    }

    /// Elementwise `op`; result dtype per [`UnaryOp::output_dtype`].
    fn unary(&self, op: UnaryOp, x: &Self::Storage, layout: &Layout) -> Result<Self::Storage>;

    /// Elementwise `op` on two views of equal shape and dtype.
    fn binary(
        &self,
        op: BinaryOp,
        a: &Self::Storage,
        a_layout: &Layout,
        b: &Self::Storage,
        b_layout: &Layout,
    ) -> Result<Self::Storage>;

    /// Elementwise comparison of two views of equal shape and dtype; bool result.
    fn compare(
        &self,
        op: CompareOp,
        a: &Self::Storage,
        a_layout: &Layout,
        b: &Self::Storage,
        b_layout: &Layout,
    ) -> Result<Self::Storage>;

    /// `cond ? on_true : on_false` elementwise; `cond` is bool, the branches share a dtype, all three views
    /// have equal shape.
    #[allow(clippy::too_many_arguments)]
    fn select(
        &self,
        cond: &Self::Storage,
        cond_layout: &Layout,
        on_true: &Self::Storage,
        true_layout: &Layout,
        on_false: &Self::Storage,
        false_layout: &Layout,
    ) -> Result<Self::Storage>;

    /// Converts every element to `dtype` with NumPy `astype` semantics.
    fn cast(&self, x: &Self::Storage, layout: &Layout, dtype: DType) -> Result<Self::Storage>;

    /// Reduces over `axes` (sorted, distinct, in range). The result has the input's shape with every
    /// reduced axis set to 1 (keepdims).
    fn reduce(
        &self,
        op: ReduceOp,
        x: &Self::Storage,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<Self::Storage>;

    /// Index of the maximum or minimum along `axis`, as `I64`, with that axis set to 1 (keepdims).
    /// The first position wins ties; a NaN counts as the maximum (and as the minimum). The default
    /// compares the input with its [`Backend::reduce`] and takes the smallest matching position.
    fn arg_reduce(
        &self,
        op: ArgReduceOp,
        x: &Self::Storage,
        layout: &Layout,
        axis: usize,
    ) -> Result<Self::Storage> {
        defaults::arg_reduce(self, op, x, layout, axis)
    }

    /// Inclusive cumulative sum along `axis`; same shape as the input.
    fn cumsum(&self, x: &Self::Storage, layout: &Layout, axis: usize) -> Result<Self::Storage>;

    /// Batched matrix product of `a: [..., m, k]` and `b: [..., k, n]` whose batch dimensions are already
    /// equal (broadcast views have stride 0); result `[..., m, n]`.
    fn matmul(
        &self,
        a: &Self::Storage,
        a_layout: &Layout,
        b: &Self::Storage,
        b_layout: &Layout,
    ) -> Result<Self::Storage>;

    /// [`Backend::matmul`] at `precision`: with [`Precision::Bf16`](crate::Precision::Bf16) or
    /// [`Precision::F16`](crate::Precision::F16) the operands must be F32, each element rounds to
    /// that type (to nearest, ties to even) and the products sum in f32; the result is F32. These
    /// are the products autocast runs. The default rounds both operands through the type
    /// ([`round_operand`]) and multiplies them in f32, which gives the same values up to the order
    /// of summation; backends with arithmetic in the type override it.
    fn matmul_rounded(
        &self,
        a: &Self::Storage,
        a_layout: &Layout,
        b: &Self::Storage,
        b_layout: &Layout,
        precision: crate::Precision,
    ) -> Result<Self::Storage> {
        defaults::matmul_rounded(self, (a, a_layout), (b, b_layout), precision)
    }

    /// Pads each dimension `i` with `pads[i].0` elements before and `pads[i].1` after, all equal to `value`.
    /// The default concatenates filled blocks before and after, one padded axis at a time.
    fn pad(
        &self,
        x: &Self::Storage,
        layout: &Layout,
        pads: &[(usize, usize)],
        value: Scalar,
    ) -> Result<Self::Storage> {
        defaults::pad(self, x, layout, pads, value)
    }

    /// Joins views of one dtype along `axis`; their shapes agree except on that axis.
    fn concat(&self, parts: &[(&Self::Storage, &Layout)], axis: usize) -> Result<Self::Storage>;

    /// NumPy `take_along_axis`: `out[i.., j, k..] = x[i.., index[i.., j, k..], k..]`. `index` is `I64`,
    /// has the rank of `x`, and equals `x`'s shape except on `axis`; the result has `index`'s shape.
    /// Negative indices count from the end; anything outside `-n..n` is an error.
    fn gather(
        &self,
        x: &Self::Storage,
        x_layout: &Layout,
        axis: usize,
        index: &Self::Storage,
        index_layout: &Layout,
    ) -> Result<Self::Storage>;

    /// Selects entries of `axis` by a 1-D `I64` index; the result has that axis resized to the index length.
    /// The default is a [`Backend::gather`] with the index broadcast (stride 0) over the other axes.
    fn index_select(
        &self,
        x: &Self::Storage,
        x_layout: &Layout,
        axis: usize,
        index: &Self::Storage,
        index_layout: &Layout,
    ) -> Result<Self::Storage> {
        defaults::index_select(self, x, x_layout, axis, index, index_layout)
    }

    /// The transpose of [`Backend::gather`]: a copy of `dst` with each `src[i.., j, k..]` added at
    /// `[i.., index[i.., j, k..], k..]`. `index` and `src` have one shape, which equals `dst`'s except on
    /// `axis`. The result has `dst`'s shape.
    #[allow(clippy::too_many_arguments)]
    fn scatter_add(
        &self,
        dst: &Self::Storage,
        dst_layout: &Layout,
        axis: usize,
        index: &Self::Storage,
        index_layout: &Layout,
        src: &Self::Storage,
        src_layout: &Layout,
    ) -> Result<Self::Storage>;

    /// One-hot encodes an `I64` index tensor of shape `s` into shape `s + [classes]` of `dtype`; an index
    /// outside `0..classes` is an error. The default reads the indices, encodes on the host and uploads.
    fn one_hot(
        &self,
        index: &Self::Storage,
        layout: &Layout,
        classes: usize,
        dtype: DType,
    ) -> Result<Self::Storage> {
        defaults::one_hot(self, index, layout, classes, dtype)
    }

    /// Stable sort along `axis`; returns the sorted values and their original positions (`I64`). NaN sorts
    /// after every number (before, when `descending`).
    fn sort(
        &self,
        x: &Self::Storage,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(Self::Storage, Self::Storage)>;

    /// The `k` largest (or smallest) entries along `axis`, in sorted order, with their positions (`I64`):
    /// the first `k` of [`Backend::sort`] (descending when `largest`), which the default copies out.
    fn topk(
        &self,
        x: &Self::Storage,
        layout: &Layout,
        axis: usize,
        k: usize,
        largest: bool,
    ) -> Result<(Self::Storage, Self::Storage)> {
        defaults::topk(self, x, layout, axis, k, largest)
    }

    /// 2-D convolution (cross-correlation, as in PyTorch) of `x: [N, C_in, H, W]` with
    /// `w: [C_out, C_in / groups, KH, KW]`; result `[N, C_out, H_out, W_out]`.
    fn conv2d(
        &self,
        x: &Self::Storage,
        x_layout: &Layout,
        w: &Self::Storage,
        w_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Self::Storage>;

    /// Gradient of [`Backend::conv2d`] with respect to its input: from `dy: [N, C_out, H_out, W_out]` and the
    /// weights, a result of shape `[N, C_in, input_hw.0, input_hw.1]`. The default is a stride-1
    /// [`Backend::conv2d`] of `dy` spread by the stride and shifted by the padding, with the kernel
    /// flipped and its channels swapped within each group.
    fn conv2d_input_grad(
        &self,
        dy: &Self::Storage,
        dy_layout: &Layout,
        w: &Self::Storage,
        w_layout: &Layout,
        input_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<Self::Storage> {
        defaults::conv2d_input_grad(self, dy, dy_layout, w, w_layout, input_hw, params)
    }

    /// Gradient of [`Backend::conv2d`] with respect to its weights: from the input and
    /// `dy: [N, C_out, H_out, W_out]`, a result of shape `[C_out, C_in / groups, kernel_hw.0, kernel_hw.1]`.
    /// The default is a [`Backend::conv2d`] of the input (channels as the batch) with `dy` (batch as
    /// channels) as the kernel, stride and dilation swapped, cut to the kernel size.
    #[allow(clippy::too_many_arguments)]
    fn conv2d_weight_grad(
        &self,
        x: &Self::Storage,
        x_layout: &Layout,
        dy: &Self::Storage,
        dy_layout: &Layout,
        kernel_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<Self::Storage> {
        defaults::conv2d_weight_grad(self, x, x_layout, dy, dy_layout, kernel_hw, params)
    }

    /// Max pooling of every `H x W` plane of `x` (the last two dimensions; leading dimensions are
    /// independent planes) with `params`, whose [`Pool2dParams::output_size`] the caller has checked.
    /// Returns the pooled values, shape `[..., H_out, W_out]`, and for each the position of its maximum
    /// inside its input plane as an `I64` flat index `h * W + w` (as PyTorch's `return_indices`). Padding
    /// never wins; ties go to the first maximum in row-major window order; a NaN in a window is its
    /// maximum. The gradient is a [`Backend::scatter_add`] of the output gradient at these indices.
    ///
    /// The default gathers every window through a table of tap positions built on the host, then
    /// reduces it ([`Backend::reduce`], [`Backend::arg_reduce`]).
    fn max_pool2d(
        &self,
        x: &Self::Storage,
        layout: &Layout,
        params: &Pool2dParams,
    ) -> Result<(Self::Storage, Self::Storage)> {
        defaults::max_pool2d(self, x, layout, params)
    }

    /// Runs an extension op (an op family outside the core, see [`ExtensionOp`]) on inputs already
    /// validated by its [`ExtensionOp::output_spec`]; returns the output buffer (of the spec's dtype and
    /// element count).
    ///
    /// The default reads each input to the host, runs [`ExtensionOp::host_kernel`] and uploads the
    /// result, which is correct on every device; a backend with native kernels for an op overrides
    /// this and recognises the op by its type (`op.as_any()`).
    fn extension(
        &self,
        op: &Arc<dyn ExtensionOp>,
        inputs: &[(&Self::Storage, &Layout)],
    ) -> Result<Self::Storage> {
        let host = inputs
            .iter()
            .map(|(s, l)| self.read(s, l))
            .collect::<Result<Vec<_>>>()?;
        let views: Vec<HostView<'_>> = host
            .iter()
            .zip(inputs)
            .map(|(data, (_, l))| HostView {
                data,
                shape: l.shape(),
            })
            .collect();
        self.upload(op.host_kernel(&views, &crate::SystemAllocator)?)
    }

    /// Evaluates a fused elementwise kernel: `inputs` holds one buffer and view per kernel input, every
    /// view of shape `shape` (broadcast or strided views included); the result is a new contiguous buffer
    /// of `shape` and the kernel's output dtype.
    ///
    /// Inputs are handed over by value (clone a handle to keep it). `donate = Some(k)` says the caller
    /// has no further use for input `k`'s buffer: the backend may write the result into it instead of
    /// allocating, provided nothing else holds the buffer, the view reads it whole in row-major order and
    /// it has the output's dtype and length. The default ([`crate::FusedKernel::evaluate_by_ops`]) runs
    /// the backend's own primitive kernels step by step and ignores `donate`; it is correct on every
    /// backend.
    fn fused(
        &self,
        kernel: &crate::FusedKernel,
        inputs: Vec<(Self::Storage, &Layout)>,
        shape: &[usize],
        donate: Option<usize>,
    ) -> Result<Self::Storage> {
        let _ = donate;
        let refs: Vec<(&Self::Storage, &Layout)> = inputs.iter().map(|(s, l)| (s, *l)).collect();
        kernel.evaluate_by_ops(self, &refs, shape)
    }

    /// Evaluates a fused kernel with several results ([`crate::FusedKernel::with_outputs`]) in one pass:
    /// one new contiguous buffer of `shape` per result, in the kernel's output order. Inputs are as for
    /// [`Backend::fused`]; `donate[j] = Some(k)` says result `j` may be written into input `k`'s buffer
    /// (on the same conditions; `donate` is empty or has one entry per result, and no input is donated
    /// twice). The default evaluates the steps one by one
    /// ([`crate::FusedKernel::evaluate_outputs_by_ops`]) and ignores `donate`.
    fn fused_many(
        &self,
        kernel: &crate::FusedKernel,
        inputs: Vec<(Self::Storage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
    ) -> Result<Vec<Self::Storage>> {
        let _ = donate;
        let refs: Vec<(&Self::Storage, &Layout)> = inputs.iter().map(|(s, l)| (s, *l)).collect();
        kernel.evaluate_outputs_by_ops(self, &refs, shape)
    }

    /// `true` when [`Backend::fused`] (and [`Backend::fused_many`]) write `kernel`'s results into the
    /// donated inputs whenever the conditions listed there hold (rather than allocating).
    /// Memory-accounting wrappers rely on it; a backend returning `true` must keep that promise. The
    /// default is `false`.
    fn fused_reuses_donation(&self, kernel: &crate::FusedKernel) -> bool {
        let _ = kernel;
        false
    }
}
