//! Owns the GPU backend on wgpu: [`WgpuBackend`], [`WgpuStorage`] and its generated WGSL kernels.
//! Must not depend on any nabla crate but `nabla-core` (`nabla-tensor` and others are dev-only).
//!
//! The GPU backend of nabla on [wgpu](https://wgpu.rs): Vulkan, Metal and DirectX 12 from one code
//! base. The layering of the crates, and the rules above, are described in the architecture
//! chapter of the book, `docs/src/architecture.md`.
//!
//! [`WgpuBackend`] implements every method of [`nabla_core::Backend`] with WGSL compute shaders
//! that are generated from a few templates (an elementwise/map template, a fold template with
//! workgroup tree reductions, a tiled matmul, a bitonic sort) by substituting each op's expression
//! and types. Shaders are compiled once and cached by their text; freed buffers go back to a pool
//! by size class; work is recorded into one command encoder and submitted in batches, and only
//! [`Backend::read`] and [`Backend::synchronize`] wait for the device.
//!
//! Dtypes: `float32`, `int32`, `uint8`, `bool`, `int64` (two 32-bit words, 64-bit arithmetic
//! emulated) and `float16` (held widened to `float32`, storage and casts only, as on every
//! backend). `float64`, `bfloat16` and the complex types give an [`nabla_core::Error`].
//!
//! Accuracy against the CPU backend: exact for integer, bool, movement, indexing, casting (every
//! rounding to `float16` included), sort, arg-max and Bernoulli draws; float reductions, matmul
//! and convolutions differ only by summation order; elementwise functions use careful WGSL
//! implementations (logarithms, inverse trigonometry, `erf`, `expm1`/`log1p`) or the adapter's
//! built-ins, within ~1e-5 relative; uniform and normal draws are computed in `f32` (see the
//! `random` kernel notes).
//!
//! ```no_run
//! use nabla_core::{Backend, HostData, Layout};
//! use nabla_wgpu::WgpuBackend;
//!
//! let gpu = WgpuBackend::new()?;
//! let x = gpu.upload(HostData::F32(vec![1.0, 2.0, 3.0]))?;
//! let y = gpu.unary(nabla_core::UnaryOp::Exp, &x, &Layout::contiguous([3]))?;
//! println!("{:?}", gpu.read(&y, &Layout::contiguous([3]))?);
//! # Ok::<(), nabla_core::Error>(())
//! ```

mod context;
mod conv;
mod elementwise;
mod fused;
mod kernel;
mod matmul;
mod movement;
mod random;
mod reduce;
mod sort;
mod storage;
mod wgsl;

pub use nabla_core::{KernelTime, format_profile};
pub use storage::WgpuStorage;

use context::Ctx;
use nabla_core::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Distribution, HostData,
    Layout, Pool2dParams, Precision, ReduceOp, Result, RngKey, Scalar, UnaryOp,
};
use std::fmt;
use std::sync::Arc;

/// A wgpu device (the default adapter) as a nabla [`Backend`]. Cloning shares the device.
#[derive(Clone)]
pub struct WgpuBackend {
    ctx: Arc<Ctx>,
}

impl fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WgpuBackend")
            .field("adapter", &self.ctx.info.name)
            .field("backend", &self.ctx.info.backend)
            .finish()
    }
}

impl WgpuBackend {
    /// Opens the default adapter (discrete or integrated GPU, or a software adapter such as Mesa's
    /// lavapipe); an error when there is none.
    ///
    /// Each call opens its own logical device, numbered in order (`wgpu:0`, `wgpu:1`, ...): buffers of
    /// one cannot be used by another, so tensors of two such backends do not combine (a
    /// `DeviceMismatch` error naming both). Clone a backend to share its device.
    pub fn new() -> Result<Self> {
        Ok(WgpuBackend {
            ctx: Arc::new(Ctx::new()?),
        })
    }

    /// The adapter's name and driver, e.g. `"llvmpipe (LLVM 19.1.7, 256 bits) (Vulkan)"`.
    pub fn adapter_name(&self) -> String {
        format!("{} ({:?})", self.ctx.info.name, self.ctx.info.backend)
    }

    /// `true` when the device flushes f32 subnormals (magnitudes below 2^-126, about 1.18e-38) to
    /// zeros of their sign in arithmetic, as NVIDIA's GPUs do under Vulkan: WGSL allows it, and
    /// Vulkan lets no shader ask otherwise there (`shaderDenormPreserveFloat32` is false). On such a
    /// device `1e-40 * 3e38` is 0 rather than 0.03, `1e-40 == 0` holds and `inf * 1e-40` is NaN
    /// (logarithms, powers and remainders read subnormals from their bits and stay exact). Measured
    /// once per device, by multiplying a subnormal by one on it.
    ///
    /// ```no_run
    /// let gpu = nabla_wgpu::WgpuBackend::new()?;
    /// println!("{} flushes subnormals: {}", gpu.adapter_name(), gpu.flushes_subnormals()?);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn flushes_subnormals(&self) -> Result<bool> {
        if let Some(&flushes) = self.ctx.flushes_subnormals.get() {
            return Ok(flushes);
        }
        let tiny = f32::from_bits(1 << 16);
        let l = Layout::contiguous([1]);
        let x = self.upload(HostData::F32(vec![tiny]))?;
        let one = self.upload(HostData::F32(vec![1.0]))?;
        let product = self.read(&self.binary(BinaryOp::Mul, &x, &l, &one, &l)?, &l)?;
        let flushes = product != HostData::F32(vec![tiny]);
        Ok(*self.ctx.flushes_subnormals.get_or_init(|| flushes))
    }

    /// `true` when the adapter is a software rasteriser running on the CPU.
    pub fn is_software(&self) -> bool {
        self.ctx.info.device_type == wgpu::DeviceType::Cpu
    }

    /// The largest buffer (in bytes) a kernel can bind; larger tensors are rejected with an error.
    pub fn max_binding_bytes(&self) -> u64 {
        self.ctx.max_binding
    }

    /// Turns per-kernel profiling on (starting an empty table) or off. While it is on, every
    /// dispatch waits for the device so that its time is charged to its op: a diagnostic that
    /// serialises the device. The environment variable `NABLA_WGPU_PROFILE=1` turns it on for every
    /// backend a program opens and prints the table to standard error when the device is dropped.
    ///
    /// ```no_run
    /// use nabla_core::{Backend, HostData, Layout, UnaryOp};
    /// use nabla_wgpu::{WgpuBackend, format_profile};
    ///
    /// let gpu = WgpuBackend::new()?;
    /// gpu.set_profiling(true);
    /// let x = gpu.upload(HostData::F32(vec![1.0; 1024]))?;
    /// let _y = gpu.unary(UnaryOp::Exp, &x, &Layout::contiguous([1024]))?;
    /// gpu.synchronize()?;
    /// print!("{}", format_profile(&gpu.profile()));
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn set_profiling(&self, on: bool) {
        self.ctx.set_profiling(on);
    }

    /// The time per kernel kind since profiling was turned on, slowest first (empty when it is off).
    pub fn profile(&self) -> Vec<KernelTime> {
        self.ctx.profile()
    }

    /// How many compute pipelines have been compiled (each generated shader is compiled once).
    pub fn pipeline_count(&self) -> usize {
        self.ctx.pipeline_count()
    }
}

impl Backend for WgpuBackend {
    type Storage = WgpuStorage;

    fn name(&self) -> &'static str {
        "wgpu"
    }

    fn device(&self) -> Device {
        Device {
            kind: "wgpu",
            ordinal: self.ctx.ordinal,
        }
    }

    fn storage_dtype(&self, storage: &WgpuStorage) -> DType {
        storage.dtype()
    }

    fn storage_len(&self, storage: &WgpuStorage) -> usize {
        storage.len()
    }

    fn upload(&self, data: HostData) -> Result<WgpuStorage> {
        let (words, bounds) = storage::host_to_words(&data)?;
        kernel::check_len("upload", data.len())?;
        let buffer = self.ctx.upload("upload", words)?;
        let s = WgpuStorage::new(&self.ctx, buffer, data.dtype(), data.len());
        Ok(match bounds {
            Some((lo, hi)) => s.with_bounds(lo, hi),
            None => s,
        })
    }

    fn read(&self, storage: &WgpuStorage, layout: &Layout) -> Result<HostData> {
        let dtype = storage.dtype();
        storage::check_dtype("read", dtype)?;
        let w = storage::words_per(dtype);
        let n = layout.numel();
        let words = match layout.contiguous_range() {
            Some(r) if n == 0 || r.end <= storage.len() => {
                self.ctx.read_words(storage.buffer(), r.start * w, n * w)?
            }
            _ => {
                let c = self.copy_impl(storage, layout)?;
                self.ctx.read_words(c.buffer(), 0, n * w)?
            }
        };
        storage::words_to_host(dtype, &words)
    }

    fn synchronize(&self) -> Result<()> {
        self.ctx.synchronize()
    }

    fn full(&self, len: usize, value: Scalar, dtype: DType) -> Result<WgpuStorage> {
        self.full_impl(len, value, dtype)
    }

    fn random(
        &self,
        dist: Distribution,
        len: usize,
        dtype: DType,
        key: RngKey,
    ) -> Result<WgpuStorage> {
        self.random_impl(dist, len, dtype, key)
    }

    fn copy(&self, x: &WgpuStorage, layout: &Layout) -> Result<WgpuStorage> {
        self.copy_impl(x, layout)
    }

    fn unary(&self, op: UnaryOp, x: &WgpuStorage, layout: &Layout) -> Result<WgpuStorage> {
        self.unary_impl(op, x, layout)
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &WgpuStorage,
        a_layout: &Layout,
        b: &WgpuStorage,
        b_layout: &Layout,
    ) -> Result<WgpuStorage> {
        self.binary_impl(op, (a, a_layout), (b, b_layout))
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &WgpuStorage,
        a_layout: &Layout,
        b: &WgpuStorage,
        b_layout: &Layout,
    ) -> Result<WgpuStorage> {
        self.compare_impl(op, (a, a_layout), (b, b_layout))
    }

    fn select(
        &self,
        cond: &WgpuStorage,
        cond_layout: &Layout,
        on_true: &WgpuStorage,
        true_layout: &Layout,
        on_false: &WgpuStorage,
        false_layout: &Layout,
    ) -> Result<WgpuStorage> {
        self.select_impl(
            (cond, cond_layout),
            (on_true, true_layout),
            (on_false, false_layout),
        )
    }

    fn cast(&self, x: &WgpuStorage, layout: &Layout, dtype: DType) -> Result<WgpuStorage> {
        self.cast_impl(x, layout, dtype)
    }

    fn reduce(
        &self,
        op: ReduceOp,
        x: &WgpuStorage,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<WgpuStorage> {
        self.reduce_impl(op, x, layout, axes)
    }

    fn arg_reduce(
        &self,
        op: ArgReduceOp,
        x: &WgpuStorage,
        layout: &Layout,
        axis: usize,
    ) -> Result<WgpuStorage> {
        self.arg_reduce_impl(op, x, layout, axis)
    }

    fn cumsum(&self, x: &WgpuStorage, layout: &Layout, axis: usize) -> Result<WgpuStorage> {
        self.cumsum_impl(x, layout, axis)
    }

    fn matmul(
        &self,
        a: &WgpuStorage,
        a_layout: &Layout,
        b: &WgpuStorage,
        b_layout: &Layout,
    ) -> Result<WgpuStorage> {
        self.matmul_impl((a, a_layout), (b, b_layout), Precision::Full)
    }

    fn matmul_rounded(
        &self,
        a: &WgpuStorage,
        a_layout: &Layout,
        b: &WgpuStorage,
        b_layout: &Layout,
        precision: Precision,
    ) -> Result<WgpuStorage> {
        self.matmul_impl((a, a_layout), (b, b_layout), precision)
    }

    fn pad(
        &self,
        x: &WgpuStorage,
        layout: &Layout,
        pads: &[(usize, usize)],
        value: Scalar,
    ) -> Result<WgpuStorage> {
        self.pad_impl(x, layout, pads, value)
    }

    fn concat(&self, parts: &[(&WgpuStorage, &Layout)], axis: usize) -> Result<WgpuStorage> {
        self.concat_impl(parts, axis)
    }

    fn gather(
        &self,
        x: &WgpuStorage,
        x_layout: &Layout,
        axis: usize,
        index: &WgpuStorage,
        index_layout: &Layout,
    ) -> Result<WgpuStorage> {
        self.gather_impl((x, x_layout), axis, (index, index_layout))
    }

    fn index_select(
        &self,
        x: &WgpuStorage,
        x_layout: &Layout,
        axis: usize,
        index: &WgpuStorage,
        index_layout: &Layout,
    ) -> Result<WgpuStorage> {
        self.index_select_impl((x, x_layout), axis, (index, index_layout))
    }

    fn scatter_add(
        &self,
        dst: &WgpuStorage,
        dst_layout: &Layout,
        axis: usize,
        index: &WgpuStorage,
        index_layout: &Layout,
        src: &WgpuStorage,
        src_layout: &Layout,
    ) -> Result<WgpuStorage> {
        self.scatter_add_impl(
            (dst, dst_layout),
            axis,
            (index, index_layout),
            (src, src_layout),
        )
    }

    fn one_hot(
        &self,
        index: &WgpuStorage,
        layout: &Layout,
        classes: usize,
        dtype: DType,
    ) -> Result<WgpuStorage> {
        self.one_hot_impl(index, layout, classes, dtype)
    }

    fn sort(
        &self,
        x: &WgpuStorage,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(WgpuStorage, WgpuStorage)> {
        let n = layout.shape().get(axis).copied().unwrap_or(0);
        self.sort_impl("sort", x, layout, axis, n, descending)
    }

    fn topk(
        &self,
        x: &WgpuStorage,
        layout: &Layout,
        axis: usize,
        k: usize,
        largest: bool,
    ) -> Result<(WgpuStorage, WgpuStorage)> {
        self.sort_impl("topk", x, layout, axis, k, largest)
    }

    fn conv2d(
        &self,
        x: &WgpuStorage,
        x_layout: &Layout,
        w: &WgpuStorage,
        w_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<WgpuStorage> {
        self.conv2d_impl((x, x_layout), (w, w_layout), params)
    }

    fn conv2d_input_grad(
        &self,
        dy: &WgpuStorage,
        dy_layout: &Layout,
        w: &WgpuStorage,
        w_layout: &Layout,
        input_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<WgpuStorage> {
        self.conv2d_input_grad_impl((dy, dy_layout), (w, w_layout), input_hw, params)
    }

    fn conv2d_weight_grad(
        &self,
        x: &WgpuStorage,
        x_layout: &Layout,
        dy: &WgpuStorage,
        dy_layout: &Layout,
        kernel_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<WgpuStorage> {
        self.conv2d_weight_grad_impl((x, x_layout), (dy, dy_layout), kernel_hw, params)
    }

    fn max_pool2d(
        &self,
        x: &WgpuStorage,
        layout: &Layout,
        params: &Pool2dParams,
    ) -> Result<(WgpuStorage, WgpuStorage)> {
        self.max_pool2d_impl(x, layout, params)
    }

    /// One shader for the whole kernel (see `fused.rs`); donations are not reused.
    fn fused(
        &self,
        kernel: &nabla_core::FusedKernel,
        inputs: Vec<(WgpuStorage, &Layout)>,
        shape: &[usize],
        donate: Option<usize>,
    ) -> Result<WgpuStorage> {
        let _ = donate;
        kernel.check_single_output()?;
        self.fused_impl(kernel, &inputs, shape)?
            .pop()
            .ok_or_else(|| nabla_core::Error::invalid("fused", "the kernel returned no result"))
    }

    /// One shader computing every result of the kernel; donations are not reused.
    fn fused_many(
        &self,
        kernel: &nabla_core::FusedKernel,
        inputs: Vec<(WgpuStorage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
    ) -> Result<Vec<WgpuStorage>> {
        let _ = donate;
        self.fused_impl(kernel, &inputs, shape)
    }
}
