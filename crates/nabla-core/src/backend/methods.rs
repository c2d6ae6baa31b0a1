//! The one list of [`Backend`](crate::Backend)'s methods.
//!
//! [`backend_methods!`](crate::backend_methods) hands the list to a macro, which turns it into code:
//! the trait itself (in `backend/mod.rs`), the forwarding of [`Wrapped`](crate::Wrapped) and the
//! dispatch of `nabla_any::AnyBackend`. A method added here is declared, forwarded and dispatched
//! everywhere, or some forwarder fails to compile; none can silently fall back to a default while
//! the backend below has its own kernel.
//!
//! Each entry is a method of the trait, written as
//! `RECIPE fn NAME(&self, ARG: KIND, ...) -> RETURN BODY`, where
//! - `RECIPE` says how a forwarder passes the call on:
//!   - `query`: a fact of the backend (no kernel runs; no buffer argument), asked of the backend
//!     below;
//!   - `buffer`: a fact of the one buffer argument;
//!   - `kernel`: a kernel call: buffer arguments are unwrapped, buffer results wrapped, and a
//!     [`Wrapper`](crate::Wrapper) sees the call in [`Wrapper::around`](crate::Wrapper::around);
//!   - `fused`: a fused-kernel call `(kernel, inputs, shape, donate)` whose inputs come by value and
//!     may be donated ([`Wrapper::forward_fused`](crate::Wrapper::forward_fused));
//! - `KIND` is `buf` (one buffer, `&Self::Storage`), `bufs` (buffers with their views,
//!   `&[(&Self::Storage, &Layout)]`), `owned` (buffers handed over by value with their views,
//!   `Vec<(Self::Storage, &Layout)>`) or a parenthesised type passed on as it is;
//! - `RETURN` is `one` (a new buffer), `two` (two new buffers), `many` (a list of them) or a
//!   parenthesised type passed back as it is;
//! - `BODY` is `;` for a required method, or the default body.

/// Invokes `$callback! { ... }` with the list of [`Backend`](crate::Backend)'s methods (see the
/// module `backend::methods` for the entry format). Used by the crates that generate the trait,
/// its forwarding and its dispatch; not meant for user code.
#[doc(hidden)]
#[macro_export]
macro_rules! backend_methods {
    ($callback:ident) => {
        $callback! {
            /// Short name (`"cpu"`, `"wgpu"`).
            query fn name(&self) -> (&'static str);

            /// The device this backend drives.
            query fn device(&self) -> ($crate::Device);

            /// Dtype of a buffer.
            buffer fn storage_dtype(&self, storage: buf) -> ($crate::DType);

            /// Number of elements a buffer holds.
            buffer fn storage_len(&self, storage: buf) -> (usize);

            /// Copies host data into a new buffer.
            kernel fn upload(&self, data: ($crate::HostData)) -> one;

            /// Reads the elements of a view back to the host, in row-major order of the view. Waits for
            /// queued work.
            kernel fn read(&self, storage: buf, layout: (&$crate::Layout))
                -> ($crate::Result<$crate::HostData>);

            /// `true` for a backend whose buffers hold no values while ops are recorded (the tracing
            /// backend): [`Backend::read`] fails, so checks that read values (class indices in range,
            /// say) are left to the kernels of the backend that later runs the program.
            query fn is_symbolic(&self) -> (bool) {
                false
            }

            /// The backend's fused fast-path kernels (softmax, layer norm, ReLU, an LSTM layer,
            /// attention, batch norm: see [`crate::fast_path`]), if it has them. `Some` also says that
            /// the backend computes on host memory on this process's threads, so independent kernels
            /// may run side by side on the thread pool. `None` (the default) gives the composites,
            /// which are correct on every backend.
            query fn fast_path_kernels(&self) -> (Option<$crate::FastKernels>) {
                None
            }

            /// Waits until all queued work has finished.
            kernel fn synchronize(&self) -> ($crate::Result<()>);

            /// A buffer of `len` copies of `value` converted to `dtype`. The default fills a host
            /// buffer and uploads it.
            kernel fn full(&self, len: (usize), value: ($crate::Scalar), dtype: ($crate::DType))
                -> one
            {
                self.upload($crate::HostData::filled(dtype, len, value))
            }

            /// `len` draws from `dist` as `dtype` (real floats; `Bernoulli` also gives bool,
            /// integers), where element `i` is a pure function of `key` and `i` (see
            /// [`RngKey`](crate::RngKey)). The default computes the draws on the host
            /// ([`crate::random_host`]) and uploads them.
            kernel fn random(
                &self,
                dist: ($crate::Distribution),
                len: (usize),
                dtype: ($crate::DType),
                key: ($crate::RngKey),
            ) -> one {
                self.upload($crate::random_host(dist, len, dtype, key, &$crate::InOrder)?)
            }

            /// Materialises a view into a contiguous buffer. The default is a [`Backend::cast`] to
            /// the buffer's own dtype (which also writes a new contiguous buffer).
            kernel fn copy(&self, x: buf, layout: (&$crate::Layout)) -> one {
                self.cast(x, layout, self.storage_dtype(x))
            }

            /// Elementwise `op`; result dtype per [`UnaryOp::output_dtype`](crate::UnaryOp::output_dtype).
            kernel fn unary(&self, op: ($crate::UnaryOp), x: buf, layout: (&$crate::Layout)) -> one;

            /// Elementwise `op` on two views of equal shape and dtype.
            kernel fn binary(
                &self,
                op: ($crate::BinaryOp),
                a: buf,
                a_layout: (&$crate::Layout),
                b: buf,
                b_layout: (&$crate::Layout),
            ) -> one;

            /// Elementwise comparison of two views of equal shape and dtype; bool result.
            kernel fn compare(
                &self,
                op: ($crate::CompareOp),
                a: buf,
                a_layout: (&$crate::Layout),
                b: buf,
                b_layout: (&$crate::Layout),
            ) -> one;

            /// `cond ? on_true : on_false` elementwise; `cond` is bool, the branches share a dtype,
            /// all three views have equal shape.
            #[allow(clippy::too_many_arguments)]
            kernel fn select(
                &self,
                cond: buf,
                cond_layout: (&$crate::Layout),
                on_true: buf,
                true_layout: (&$crate::Layout),
                on_false: buf,
                false_layout: (&$crate::Layout),
            ) -> one;

            /// Converts every element to `dtype` with NumPy `astype` semantics.
            kernel fn cast(&self, x: buf, layout: (&$crate::Layout), dtype: ($crate::DType)) -> one;

            /// Reduces over `axes` (sorted, distinct, in range). The result has the input's shape
            /// with every reduced axis set to 1 (keepdims).
            kernel fn reduce(
                &self,
                op: ($crate::ReduceOp),
                x: buf,
                layout: (&$crate::Layout),
                axes: (&[usize]),
            ) -> one;

            /// Index of the maximum or minimum along `axis`, as `I64`, with that axis set to 1
            /// (keepdims). The first position wins ties; a NaN counts as the maximum (and as the
            /// minimum). The default compares the input with its [`Backend::reduce`] and takes the
            /// smallest matching position.
            kernel fn arg_reduce(
                &self,
                op: ($crate::ArgReduceOp),
                x: buf,
                layout: (&$crate::Layout),
                axis: (usize),
            ) -> one {
                defaults::arg_reduce(self, op, x, layout, axis)
            }

            /// Inclusive cumulative sum along `axis`; same shape as the input.
            kernel fn cumsum(&self, x: buf, layout: (&$crate::Layout), axis: (usize)) -> one;

            /// Batched matrix product of `a: [..., m, k]` and `b: [..., k, n]` whose batch
            /// dimensions are already equal (broadcast views have stride 0); result `[..., m, n]`.
            kernel fn matmul(
                &self,
                a: buf,
                a_layout: (&$crate::Layout),
                b: buf,
                b_layout: (&$crate::Layout),
            ) -> one;

            /// [`Backend::matmul`] at `precision`: with [`Precision::Bf16`](crate::Precision::Bf16)
            /// or [`Precision::F16`](crate::Precision::F16) the operands must be F32, each element
            /// rounds to that type (to nearest, ties to even) and the products sum in f32; the result
            /// is F32. These are the products autocast runs. The default rounds both operands through
            /// the type ([`round_operand`](crate::round_operand)) and multiplies them in f32, which
            /// gives the same values up to the order of summation; backends with arithmetic in the
            /// type override it.
            kernel fn matmul_rounded(
                &self,
                a: buf,
                a_layout: (&$crate::Layout),
                b: buf,
                b_layout: (&$crate::Layout),
                precision: ($crate::Precision),
            ) -> one {
                defaults::matmul_rounded(self, (a, a_layout), (b, b_layout), precision)
            }

            /// Pads each dimension `i` with `pads[i].0` elements before and `pads[i].1` after, all
            /// equal to `value`. The default concatenates filled blocks before and after, one padded
            /// axis at a time.
            kernel fn pad(
                &self,
                x: buf,
                layout: (&$crate::Layout),
                pads: (&[(usize, usize)]),
                value: ($crate::Scalar),
            ) -> one {
                defaults::pad(self, x, layout, pads, value)
            }

            /// Joins views of one dtype along `axis`; their shapes agree except on that axis.
            kernel fn concat(&self, parts: bufs, axis: (usize)) -> one;

            /// NumPy `take_along_axis`: `out[i.., j, k..] = x[i.., index[i.., j, k..], k..]`.
            /// `index` is `I64`, has the rank of `x`, and equals `x`'s shape except on `axis`; the
            /// result has `index`'s shape. Negative indices count from the end; anything outside
            /// `-n..n` is an error.
            kernel fn gather(
                &self,
                x: buf,
                x_layout: (&$crate::Layout),
                axis: (usize),
                index: buf,
                index_layout: (&$crate::Layout),
            ) -> one;

            /// Selects entries of `axis` by a 1-D `I64` index; the result has that axis resized to
            /// the index length. The default is a [`Backend::gather`] with the index broadcast
            /// (stride 0) over the other axes.
            kernel fn index_select(
                &self,
                x: buf,
                x_layout: (&$crate::Layout),
                axis: (usize),
                index: buf,
                index_layout: (&$crate::Layout),
            ) -> one {
                defaults::index_select(self, x, x_layout, axis, index, index_layout)
            }

            /// The transpose of [`Backend::gather`]: a copy of `dst` with each `src[i.., j, k..]`
            /// added at `[i.., index[i.., j, k..], k..]`. `index` and `src` have one shape, which
            /// equals `dst`'s except on `axis`. The result has `dst`'s shape.
            #[allow(clippy::too_many_arguments)]
            kernel fn scatter_add(
                &self,
                dst: buf,
                dst_layout: (&$crate::Layout),
                axis: (usize),
                index: buf,
                index_layout: (&$crate::Layout),
                src: buf,
                src_layout: (&$crate::Layout),
            ) -> one;

            /// One-hot encodes an `I64` index tensor of shape `s` into shape `s + [classes]` of
            /// `dtype`; an index outside `0..classes` is an error. The default reads the indices,
            /// encodes on the host and uploads.
            kernel fn one_hot(
                &self,
                index: buf,
                layout: (&$crate::Layout),
                classes: (usize),
                dtype: ($crate::DType),
            ) -> one {
                defaults::one_hot(self, index, layout, classes, dtype)
            }

            /// Stable sort along `axis`; returns the sorted values and their original positions
            /// (`I64`). NaN sorts after every number (before, when `descending`).
            kernel fn sort(
                &self,
                x: buf,
                layout: (&$crate::Layout),
                axis: (usize),
                descending: (bool),
            ) -> two;

            /// The `k` largest (or smallest) entries along `axis`, in sorted order, with their
            /// positions (`I64`): the first `k` of [`Backend::sort`] (descending when `largest`),
            /// which the default copies out.
            kernel fn topk(
                &self,
                x: buf,
                layout: (&$crate::Layout),
                axis: (usize),
                k: (usize),
                largest: (bool),
            ) -> two {
                defaults::topk(self, x, layout, axis, k, largest)
            }

            /// 2-D convolution (cross-correlation, as in PyTorch) of `x: [N, C_in, H, W]` with
            /// `w: [C_out, C_in / groups, KH, KW]`; result `[N, C_out, H_out, W_out]`.
            kernel fn conv2d(
                &self,
                x: buf,
                x_layout: (&$crate::Layout),
                w: buf,
                w_layout: (&$crate::Layout),
                params: (&$crate::Conv2dParams),
            ) -> one;

            /// Gradient of [`Backend::conv2d`] with respect to its input: from
            /// `dy: [N, C_out, H_out, W_out]` and the weights, a result of shape
            /// `[N, C_in, input_hw.0, input_hw.1]`. The default is a stride-1 [`Backend::conv2d`] of
            /// `dy` spread by the stride and shifted by the padding, with the kernel flipped and its
            /// channels swapped within each group.
            kernel fn conv2d_input_grad(
                &self,
                dy: buf,
                dy_layout: (&$crate::Layout),
                w: buf,
                w_layout: (&$crate::Layout),
                input_hw: ((usize, usize)),
                params: (&$crate::Conv2dParams),
            ) -> one {
                defaults::conv2d_input_grad(self, dy, dy_layout, w, w_layout, input_hw, params)
            }

            /// Gradient of [`Backend::conv2d`] with respect to its weights: from the input and
            /// `dy: [N, C_out, H_out, W_out]`, a result of shape
            /// `[C_out, C_in / groups, kernel_hw.0, kernel_hw.1]`. The default is a
            /// [`Backend::conv2d`] of the input (channels as the batch) with `dy` (batch as channels)
            /// as the kernel, stride and dilation swapped, cut to the kernel size.
            #[allow(clippy::too_many_arguments)]
            kernel fn conv2d_weight_grad(
                &self,
                x: buf,
                x_layout: (&$crate::Layout),
                dy: buf,
                dy_layout: (&$crate::Layout),
                kernel_hw: ((usize, usize)),
                params: (&$crate::Conv2dParams),
            ) -> one {
                defaults::conv2d_weight_grad(self, x, x_layout, dy, dy_layout, kernel_hw, params)
            }

            /// Max pooling of every `H x W` plane of `x` (the last two dimensions; leading dimensions
            /// are independent planes) with `params`, whose
            /// [`Pool2dParams::output_size`](crate::Pool2dParams::output_size) the caller has
            /// checked. Returns the pooled values, shape `[..., H_out, W_out]`, and for each the
            /// position of its maximum inside its input plane as an `I64` flat index `h * W + w` (as
            /// PyTorch's `return_indices`). Padding never wins; ties go to the first maximum in
            /// row-major window order; a NaN in a window is its maximum. The gradient is a
            /// [`Backend::scatter_add`] of the output gradient at these indices.
            ///
            /// The default gathers every window through a table of tap positions built on the host,
            /// then reduces it ([`Backend::reduce`], [`Backend::arg_reduce`]).
            kernel fn max_pool2d(
                &self,
                x: buf,
                layout: (&$crate::Layout),
                params: (&$crate::Pool2dParams),
            ) -> two {
                defaults::max_pool2d(self, x, layout, params)
            }

            /// Runs an extension op (an op family outside the core, see
            /// [`ExtensionOp`](crate::ExtensionOp)) on inputs already validated by its
            /// [`ExtensionOp::output_spec`](crate::ExtensionOp::output_spec); returns the output
            /// buffer (of the spec's dtype and element count).
            ///
            /// The default reads each input to the host, runs
            /// [`ExtensionOp::host_kernel`](crate::ExtensionOp::host_kernel) and uploads the result,
            /// which is correct on every device; a backend with native kernels for an op overrides
            /// this and recognises the op by its type (`op.as_any()`).
            kernel fn extension(
                &self,
                op: (&::std::sync::Arc<dyn $crate::ExtensionOp>),
                inputs: bufs,
            ) -> one {
                defaults::extension(self, op, inputs)
            }

            /// Evaluates a fused elementwise kernel: `inputs` holds one buffer and view per kernel
            /// input, every view of shape `shape` (broadcast or strided views included); the result
            /// is a new contiguous buffer of `shape` and the kernel's output dtype.
            ///
            /// Inputs are handed over by value (clone a handle to keep it). `donate = Some(k)` says
            /// the caller has no further use for input `k`'s buffer: the backend may write the result
            /// into it instead of allocating, provided nothing else holds the buffer, the view reads
            /// it whole in row-major order and it has the output's dtype and length. The default
            /// ([`FusedKernel::evaluate_by_ops`](crate::FusedKernel::evaluate_by_ops)) runs the
            /// backend's own primitive kernels step by step and ignores `donate`; it is correct on
            /// every backend.
            fused fn fused(
                &self,
                kernel: (&$crate::FusedKernel),
                inputs: owned,
                shape: (&[usize]),
                donate: (Option<usize>),
            ) -> one {
                let _ = donate;
                let refs: Vec<(&Self::Storage, &$crate::Layout)> =
                    inputs.iter().map(|(s, l)| (s, *l)).collect();
                kernel.evaluate_by_ops(self, &refs, shape)
            }

            /// Evaluates a fused kernel with several results
            /// ([`FusedKernel::with_outputs`](crate::FusedKernel::with_outputs)) in one pass: one new
            /// contiguous buffer of `shape` per result, in the kernel's output order. Inputs are as
            /// for [`Backend::fused`]; `donate[j] = Some(k)` says result `j` may be written into
            /// input `k`'s buffer (on the same conditions; `donate` is empty or has one entry per
            /// result, and no input is donated twice). The default evaluates the steps one by one
            /// ([`FusedKernel::evaluate_outputs_by_ops`](crate::FusedKernel::evaluate_outputs_by_ops))
            /// and ignores `donate`.
            fused fn fused_many(
                &self,
                kernel: (&$crate::FusedKernel),
                inputs: owned,
                shape: (&[usize]),
                donate: (&[Option<usize>]),
            ) -> many {
                let _ = donate;
                let refs: Vec<(&Self::Storage, &$crate::Layout)> =
                    inputs.iter().map(|(s, l)| (s, *l)).collect();
                kernel.evaluate_outputs_by_ops(self, &refs, shape)
            }

            /// `true` when [`Backend::fused`] (and [`Backend::fused_many`]) write `kernel`'s results
            /// into the donated inputs whenever the conditions listed there hold (rather than
            /// allocating). Memory-accounting wrappers rely on it; a backend returning `true` must
            /// keep that promise. The default is `false`.
            query fn fused_reuses_donation(&self, kernel: (&$crate::FusedKernel)) -> (bool) {
                let _ = kernel;
                false
            }
        }
    };
}

/// The parameter type of a [`backend_methods!`](crate::backend_methods) argument kind, for an
/// implementation of [`Backend`](crate::Backend) (where `Self::Storage` is its buffer).
#[doc(hidden)]
#[macro_export]
macro_rules! backend_arg_type {
    (buf) => { &Self::Storage };
    (bufs) => { &[(&Self::Storage, &$crate::Layout)] };
    (owned) => { Vec<(Self::Storage, &$crate::Layout)> };
    (($($ty:tt)*)) => { $($ty)* };
}

/// The return type of a [`backend_methods!`](crate::backend_methods) return kind, for an
/// implementation of [`Backend`](crate::Backend).
#[doc(hidden)]
#[macro_export]
macro_rules! backend_return_type {
    (one) => { $crate::Result<Self::Storage> };
    (two) => { $crate::Result<(Self::Storage, Self::Storage)> };
    (many) => { $crate::Result<Vec<Self::Storage>> };
    (($($ty:tt)*)) => { $($ty)* };
}
