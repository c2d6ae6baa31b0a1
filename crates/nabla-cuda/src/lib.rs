//! Owns the NVIDIA GPU backend on CUDA: [`CudaBackend`], [`CudaStorage`], its kernels and its
//! allocator. Must not depend on any nabla crate but `nabla-core` (`nabla-tensor` and others are
//! dev-only).
//!
//! The CUDA libraries are loaded when a backend is opened (through `cudarc`'s dynamic loading), not
//! linked: the crate builds on a machine without CUDA, and there [`CudaBackend::new`] returns an error
//! saying what is missing. At run time it needs the NVIDIA driver (`libcuda.so`), NVRTC
//! (`libnvrtc.so.13`) and cuBLAS (`libcublas.so.13`), from the CUDA 13 toolkit or the `nvidia-*-cu13`
//! Python wheels, on the library path.
//!
//! What runs where:
//! - matrix products ([`Backend::matmul`], the convolutions' products, and autocast's
//!   [`Backend::matmul_rounded`]) call cuBLAS: `float64` and `float32` in their own precision (TF32
//!   only after [`CudaBackend::set_allow_tf32`], as PyTorch's `allow_tf32`), `bfloat16` and
//!   `float16` on the tensor cores with `float32` accumulation;
//! - elementwise ops, casts and fused kernels are CUDA C rendered from the fused-kernel description
//!   ([`nabla_core::FusedKernel`]), compiled at run time with NVRTC for the device and cached;
//! - reductions, cumulative sums, gathers, scatter-adds, sorts, concatenation and the convolution's
//!   patch extraction are kernels of this crate; pooling, padding, one-hot, random draws and extension
//!   ops use the provided methods of [`Backend`] (built on these, or computed on the host);
//! - memory comes from a stream-ordered caching allocator ([`CudaBackend::memory_stats`]).
//!
//! Dtypes: every real dtype (`float16` and `bfloat16` as storage, casts and products, as on every
//! backend); complex dtypes give an error.
//!
//! ```no_run
//! use nabla_core::{Backend, HostData, Layout};
//! use nabla_cuda::CudaBackend;
//!
//! let gpu = CudaBackend::new(0)?;
//! let x = gpu.upload(HostData::F32(vec![1.0, 2.0, 3.0]))?;
//! let y = gpu.unary(nabla_core::UnaryOp::Exp, &x, &Layout::contiguous([3]))?;
//! println!("{} on {}: {:?}", gpu.device_name(), gpu.device(), gpu.read(&y, &Layout::contiguous([3]))?);
//! # Ok::<(), nabla_core::Error>(())
//! ```

#[cfg(test)]
mod compile_tests;
mod conv;
mod elementwise;
mod kernel;
mod matmul;
mod memory;
mod movement;
mod reduce;
mod sort;
mod source;
mod storage;

pub use memory::CudaMemoryStats;
pub use nabla_core::{KernelTime, format_profile};
pub use storage::CudaStorage;

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DriverError};
use memory::Allocator;
use nabla_core::{
    Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Error, HostData, Layout, Precision,
    Profile, ReduceOp, Result, UnaryOp,
};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// An NVIDIA GPU as a nabla [`Backend`]. Cloning shares the device, its stream and its caches.
#[derive(Clone)]
pub struct CudaBackend {
    inner: Arc<Inner>,
}

struct Inner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: Mutex<CudaBlas>,
    allocator: Arc<Allocator>,
    kernels: Mutex<HashMap<String, CudaFunction>>,
    /// NVRTC's architecture name for the device (`sm_90`).
    arch: &'static str,
    /// Streaming multiprocessors, which size the grids.
    sms: u32,
    name: String,
    ordinal: usize,
    allow_tf32: AtomicBool,
    launches: AtomicU64,
    compiles: AtomicU64,
    waits: AtomicU64,
    /// Whether profiling is on (checked on every launch without taking the table's lock).
    profiling: AtomicBool,
    /// Per-op kernel time while profiling is on (see [`CudaBackend::set_profiling`]).
    profile: Mutex<Profile>,
}

impl Inner {
    fn lock_kernels(&self) -> MutexGuard<'_, HashMap<String, CudaFunction>> {
        self.kernels.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.inner.name)
            .field("ordinal", &self.inner.ordinal)
            .field("arch", &self.inner.arch)
            .finish()
    }
}

/// A backend error of the CUDA backend.
pub(crate) fn cuda_error(message: impl Into<String>) -> Error {
    Error::Backend {
        backend: "cuda".into(),
        message: message.into(),
    }
}

/// A backend error for a failed driver call while doing `what`.
pub(crate) fn driver_error(what: &str, e: DriverError) -> Error {
    cuda_error(format!("{what}: {e:?}"))
}

fn missing(library: &str) -> Error {
    cuda_error(format!(
        "{library} could not be loaded: the CUDA backend needs the NVIDIA driver, and NVRTC and \
             cuBLAS of CUDA 13 (the toolkit, or the Python wheels nvidia-cuda-nvrtc and \
             nvidia-cublas) on the library path (LD_LIBRARY_PATH)"
    ))
}

/// The architectures NVRTC 13 compiles for, by compute capability (oldest first).
const ARCHES: [((i32, i32), &str); 11] = [
    ((7, 5), "sm_75"),
    ((8, 0), "sm_80"),
    ((8, 6), "sm_86"),
    ((8, 7), "sm_87"),
    ((8, 9), "sm_89"),
    ((9, 0), "sm_90"),
    ((10, 0), "sm_100"),
    ((10, 3), "sm_103"),
    ((11, 0), "sm_110"),
    ((12, 0), "sm_120"),
    ((12, 1), "sm_121"),
];

/// NVRTC's name for a device of compute capability `major.minor`: its own architecture, or for a
/// newer device the newest one listed (whose PTX the driver compiles for the device).
fn arch_name(major: i32, minor: i32) -> Result<&'static str> {
    ARCHES
        .iter()
        .rev()
        .find(|(cc, _)| *cc <= (major, minor))
        .map(|(_, name)| *name)
        .ok_or_else(|| {
            cuda_error(format!(
                "compute capability {major}.{minor} is not supported (CUDA 13 needs 7.5 or newer)"
            ))
        })
}

impl CudaBackend {
    /// `true` when the NVIDIA driver loads and reports at least one device (NVRTC and cuBLAS are
    /// checked by [`CudaBackend::new`]).
    pub fn is_available() -> bool {
        CudaBackend::device_count() > 0
    }

    /// The number of CUDA devices (0 without a driver).
    pub fn device_count() -> usize {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return 0;
        }
        CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
    }

    /// Opens device `ordinal` (its primary context, one stream); an error naming what is missing when
    /// the driver, NVRTC or cuBLAS cannot be loaded, or when there is no such device. Every backend
    /// of one device shares its stream, allocator and kernel cache (a second `new(0)` returns a
    /// handle to the first while it lives), so that their tensors, which compare as one device, are
    /// ordered by one stream.
    pub fn new(ordinal: usize) -> Result<Self> {
        static OPEN: Mutex<Vec<(usize, Weak<Inner>)>> = Mutex::new(Vec::new());
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|(_, inner)| inner.strong_count() > 0);
        if let Some(inner) = open
            .iter()
            .find(|(o, _)| *o == ordinal)
            .and_then(|(_, inner)| inner.upgrade())
        {
            return Ok(CudaBackend { inner });
        }
        let backend = CudaBackend::open(ordinal)?;
        open.push((ordinal, Arc::downgrade(&backend.inner)));
        Ok(backend)
    }

    /// Opens device `ordinal` afresh (see [`CudaBackend::new`]).
    fn open(ordinal: usize) -> Result<Self> {
        // SAFETY: these only probe whether each library can be opened.
        unsafe {
            if !cudarc::driver::sys::is_culib_present() {
                return Err(missing("the NVIDIA driver (libcuda.so)"));
            }
            if !cudarc::nvrtc::sys::is_culib_present() {
                return Err(missing("NVRTC (libnvrtc.so)"));
            }
            if !cudarc::cublas::sys::is_culib_present() {
                return Err(missing("cuBLAS (libcublas.so)"));
            }
        }
        let count = CudaBackend::device_count();
        if ordinal >= count {
            return Err(cuda_error(format!(
                "no CUDA device {ordinal}: {count} found"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| driver_error("opening the device", e))?;
        // One stream orders every kernel, copy and allocation, so the crate tracks no events.
        // SAFETY: no buffer of cudarc's own exists yet on this context.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| driver_error("creating a stream", e))?;
        let blas = CudaBlas::new(stream.clone())
            .map_err(|e| cuda_error(format!("creating the cuBLAS handle: {e:?}")))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| driver_error("reading the compute capability", e))?;
        let sms = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(|e| driver_error("reading the multiprocessor count", e))?;
        let name = ctx
            .name()
            .map_err(|e| driver_error("reading the device name", e))?;
        Ok(CudaBackend {
            inner: Arc::new(Inner {
                allocator: Allocator::new(stream.clone()),
                ctx,
                stream,
                blas: Mutex::new(blas),
                kernels: Mutex::new(HashMap::new()),
                arch: arch_name(major, minor)?,
                sms: sms.max(1) as u32,
                name,
                ordinal,
                allow_tf32: AtomicBool::new(false),
                launches: AtomicU64::new(0),
                compiles: AtomicU64::new(0),
                waits: AtomicU64::new(0),
                profiling: AtomicBool::new(false),
                profile: Mutex::new(Profile::default()),
            }),
        })
    }

    /// The device's name (`"NVIDIA H200"`).
    pub fn device_name(&self) -> &str {
        &self.inner.name
    }

    /// Lets `float32` matrix products and convolutions run on the tensor cores in TF32 (10-bit
    /// mantissas, `float32` accumulation), as PyTorch's `torch.backends.cuda.matmul.allow_tf32`; off
    /// by default, so that `float32` products are `float32`'s.
    pub fn set_allow_tf32(&self, allow: bool) {
        self.inner.allow_tf32.store(allow, Ordering::Relaxed);
    }

    /// Whether `float32` products may use TF32 (see [`CudaBackend::set_allow_tf32`]).
    pub fn allow_tf32(&self) -> bool {
        self.inner.allow_tf32.load(Ordering::Relaxed)
    }

    /// Kernel launches (cuBLAS products included) since the backend was opened.
    pub fn kernel_launches(&self) -> u64 {
        self.inner.launches.load(Ordering::Relaxed)
    }

    /// Kernels compiled with NVRTC since the backend was opened (each distinct kernel once).
    pub fn kernels_compiled(&self) -> u64 {
        self.inner.compiles.load(Ordering::Relaxed)
    }

    /// Times the host waited for the device (reads, index checks, explicit synchronisations) since
    /// the backend was opened.
    pub fn device_waits(&self) -> u64 {
        self.inner.waits.load(Ordering::Relaxed)
    }

    /// Turns per-op profiling on (with an empty table) or off. While it is on, every launch waits for
    /// the device before and after, so that its time (and any compilation) is charged to its op: a
    /// diagnostic that serialises the device. [`nabla_core::format_profile`] prints the rows.
    pub fn set_profiling(&self, on: bool) {
        *self.lock_profile() = Profile::default();
        self.inner.profiling.store(on, Ordering::Relaxed);
    }

    /// The profile gathered since [`CudaBackend::set_profiling`] turned it on: each op's launches
    /// (cuBLAS products count one each) and time, the most expensive first.
    pub fn profile(&self) -> Vec<KernelTime> {
        self.lock_profile().rows()
    }

    fn lock_profile(&self) -> MutexGuard<'_, Profile> {
        self.inner.profile.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` (which queues the kernels of `op`), counting a launch and, while profiling, charging
    /// the time from launch to completion, and the `compile` time before it, to `op`.
    pub(crate) fn timed<R>(
        &self,
        op: &'static str,
        compile: std::time::Duration,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        self.inner.launches.fetch_add(1, Ordering::Relaxed);
        if !self.inner.profiling.load(Ordering::Relaxed) {
            return f();
        }
        self.sync()?;
        let t0 = std::time::Instant::now();
        let out = f()?;
        self.sync()?;
        self.lock_profile().add(op, t0.elapsed() + compile, compile);
        Ok(out)
    }

    /// What the caching allocator holds and has done: live bytes, high-water mark, cached bytes and
    /// hit rate.
    pub fn memory_stats(&self) -> CudaMemoryStats {
        self.inner.allocator.stats()
    }

    /// Starts a new high-water mark from the bytes live now.
    pub fn reset_peak_memory(&self) {
        self.inner.allocator.reset_peak();
    }

    /// Frees every cached block to the driver (live buffers are untouched).
    pub fn release_cached_memory(&self) -> Result<()> {
        self.inner.allocator.release_cached()
    }

    /// Binds the device's context to the calling thread (every entry point does it first).
    fn bind(&self) -> Result<()> {
        self.inner
            .ctx
            .bind_to_thread()
            .map_err(|e| driver_error("binding the context", e))
    }

    /// A new buffer of `len` elements of `dtype` (uninitialised).
    pub(crate) fn alloc(&self, op: &'static str, dtype: DType, len: usize) -> Result<CudaStorage> {
        storage::check_dtype(op, dtype)?;
        let len = nabla_core::check_allocation(op, &[len], dtype)?;
        let bytes = len * dtype.size_in_bytes();
        Ok(CudaStorage {
            block: Arc::new(self.inner.allocator.alloc(op, bytes)?),
            dtype,
            len,
        })
    }

    fn upload_impl(&self, data: HostData) -> Result<CudaStorage> {
        self.bind()?;
        let bytes = storage::host_bytes(&data)?;
        let out = self.alloc("upload", data.dtype(), data.len())?;
        if !bytes.is_empty() {
            // SAFETY: the block holds at least `bytes.len()` bytes; the copy is ordered on the stream
            // and the host bytes outlive it because the stream is synchronised before returning.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    out.block.ptr,
                    bytes,
                    self.inner.stream.cu_stream(),
                )
            }
            .map_err(|e| driver_error("upload", e))?;
            self.sync()?;
        }
        Ok(out)
    }

    fn read_impl(&self, x: &CudaStorage, layout: &Layout) -> Result<HostData> {
        self.bind()?;
        elementwise::check_in_bounds("read", x, layout)?;
        let dense = self.contiguous(x, layout)?;
        let n = layout.numel();
        let mut bytes = vec![0u8; n * x.dtype.size_in_bytes()];
        if !bytes.is_empty() {
            // SAFETY: `dense` holds `n` elements; the stream is synchronised before the bytes are read.
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(
                    &mut bytes,
                    dense.block.ptr,
                    self.inner.stream.cu_stream(),
                )
            }
            .map_err(|e| driver_error("read", e))?;
        }
        self.sync()?;
        storage::from_bytes(x.dtype, &bytes)
    }

    fn sync(&self) -> Result<()> {
        self.inner.waits.fetch_add(1, Ordering::Relaxed);
        self.inner
            .stream
            .synchronize()
            .map_err(|e| driver_error("synchronising the stream", e))
    }
}

impl Backend for CudaBackend {
    type Storage = CudaStorage;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn device(&self) -> Device {
        Device {
            kind: "cuda",
            ordinal: self.inner.ordinal,
        }
    }

    fn storage_dtype(&self, storage: &CudaStorage) -> DType {
        storage.dtype
    }

    fn storage_len(&self, storage: &CudaStorage) -> usize {
        storage.len
    }

    fn upload(&self, data: HostData) -> Result<CudaStorage> {
        self.upload_impl(data)
    }

    fn read(&self, storage: &CudaStorage, layout: &Layout) -> Result<HostData> {
        self.read_impl(storage, layout)
    }

    fn synchronize(&self) -> Result<()> {
        self.bind()?;
        self.sync()
    }

    fn full(&self, len: usize, value: nabla_core::Scalar, dtype: DType) -> Result<CudaStorage> {
        self.bind()?;
        self.full_impl(len, value, dtype)
    }

    fn copy(&self, x: &CudaStorage, layout: &Layout) -> Result<CudaStorage> {
        self.bind()?;
        self.cast_impl(x, layout, x.dtype)
    }

    fn unary(&self, op: UnaryOp, x: &CudaStorage, layout: &Layout) -> Result<CudaStorage> {
        self.bind()?;
        self.unary_impl(op, x, layout)
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &CudaStorage,
        a_layout: &Layout,
        b: &CudaStorage,
        b_layout: &Layout,
    ) -> Result<CudaStorage> {
        self.bind()?;
        self.binary_impl(op, (a, a_layout), (b, b_layout))
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &CudaStorage,
        a_layout: &Layout,
        b: &CudaStorage,
        b_layout: &Layout,
    ) -> Result<CudaStorage> {
        self.bind()?;
        self.compare_impl(op, (a, a_layout), (b, b_layout))
    }

    fn select(
        &self,
        cond: &CudaStorage,
        cond_layout: &Layout,
        on_true: &CudaStorage,
        true_layout: &Layout,
        on_false: &CudaStorage,
        false_layout: &Layout,
    ) -> Result<CudaStorage> {
        self.bind()?;
        self.select_impl(
            (cond, cond_layout),
            (on_true, true_layout),
            (on_false, false_layout),
        )
    }

    fn cast(&self, x: &CudaStorage, layout: &Layout, dtype: DType) -> Result<CudaStorage> {
        self.bind()?;
        self.cast_impl(x, layout, dtype)
    }

    fn reduce(
        &self,
        op: ReduceOp,
        x: &CudaStorage,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<CudaStorage> {
        self.bind()?;
        self.reduce_impl(op, x, layout, axes)
    }

    fn cumsum(&self, x: &CudaStorage, layout: &Layout, axis: usize) -> Result<CudaStorage> {
        self.bind()?;
        self.cumsum_impl(x, layout, axis)
    }

    fn matmul(
        &self,
        a: &CudaStorage,
        a_layout: &Layout,
        b: &CudaStorage,
        b_layout: &Layout,
    ) -> Result<CudaStorage> {
        self.bind()?;
        self.matmul_impl((a, a_layout), (b, b_layout), Precision::Full)
    }

    fn matmul_rounded(
        &self,
        a: &CudaStorage,
        a_layout: &Layout,
        b: &CudaStorage,
        b_layout: &Layout,
        precision: Precision,
    ) -> Result<CudaStorage> {
        self.bind()?;
        self.matmul_impl((a, a_layout), (b, b_layout), precision)
    }

    fn concat(&self, parts: &[(&CudaStorage, &Layout)], axis: usize) -> Result<CudaStorage> {
        self.bind()?;
        self.concat_impl(parts, axis)
    }

    fn gather(
        &self,
        x: &CudaStorage,
        x_layout: &Layout,
        axis: usize,
        index: &CudaStorage,
        index_layout: &Layout,
    ) -> Result<CudaStorage> {
        self.bind()?;
        self.gather_impl((x, x_layout), axis, (index, index_layout))
    }

    fn scatter_add(
        &self,
        dst: &CudaStorage,
        dst_layout: &Layout,
        axis: usize,
        index: &CudaStorage,
        index_layout: &Layout,
        src: &CudaStorage,
        src_layout: &Layout,
    ) -> Result<CudaStorage> {
        self.bind()?;
        self.scatter_add_impl(
            (dst, dst_layout),
            axis,
            (index, index_layout),
            (src, src_layout),
        )
    }

    fn sort(
        &self,
        x: &CudaStorage,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(CudaStorage, CudaStorage)> {
        self.bind()?;
        self.sort_impl(x, layout, axis, descending)
    }

    fn conv2d(
        &self,
        x: &CudaStorage,
        x_layout: &Layout,
        w: &CudaStorage,
        w_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<CudaStorage> {
        self.bind()?;
        self.conv2d_impl((x, x_layout), (w, w_layout), params)
    }

    fn fused(
        &self,
        kernel: &nabla_core::FusedKernel,
        inputs: Vec<(CudaStorage, &Layout)>,
        shape: &[usize],
        donate: Option<usize>,
    ) -> Result<CudaStorage> {
        let _ = donate;
        self.bind()?;
        kernel.check_single_output()?;
        let refs: Vec<(&CudaStorage, &Layout)> = inputs.iter().map(|(s, l)| (s, *l)).collect();
        Ok(self.map_new("fused", kernel, &refs, shape)?.remove(0))
    }

    fn fused_many(
        &self,
        kernel: &nabla_core::FusedKernel,
        inputs: Vec<(CudaStorage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
    ) -> Result<Vec<CudaStorage>> {
        let _ = donate;
        self.bind()?;
        let refs: Vec<(&CudaStorage, &Layout)> = inputs.iter().map(|(s, l)| (s, *l)).collect();
        self.map_new("fused", kernel, &refs, shape)
    }
}
