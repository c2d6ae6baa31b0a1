//! Owns [`AnyBackend`] and [`AnyStorage`]: one backend type whose device is chosen at run time.
//! Must not depend on `nabla-tensor` or above: only `nabla-core`, `nabla-cpu`, `nabla-wgpu` and
//! `nabla-cuda`.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! A backend chosen at run time: [`AnyBackend`] is one [`Backend`] type whose value is the CPU, a
//! wgpu device (with the default feature `wgpu`) or an NVIDIA GPU through CUDA (with the feature
//! `cuda`), so an application (or the `nabla`
//! command line) picks the device from a flag or a config file and runs one monomorphised copy of
//! its code.
//!
//! Every kernel runs on the chosen device's own backend (its fast paths, native extension kernels
//! and fused kernels included); buffers are [`AnyStorage`] handles tagged with their device.
//! Mixing devices in one op is an error naming both, never a silent copy. Tensors move between
//! devices with `Tensor::to_backend`, which is a differentiable op when source and target are both
//! `AnyBackend`s: gradients flow back across the move.
//!
//! ```
//! use nabla_any::AnyBackend;
//! use nabla_tensor::Tensor;
//! let cpu = AnyBackend::cpu();
//! let x = Tensor::var("x", Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu)?)?;
//! // Move (here to another CPU handle; `AnyBackend::wgpu()?` opens a GPU), compute, and differentiate
//! // back through the move.
//! let y = x.to_backend(&AnyBackend::cpu())?.square()?.sum_all()?;
//! let g = y.backward()?;
//! assert_eq!(g.get(&x).unwrap().to_vec::<f32>()?, vec![2.0, 4.0]);
//! # Ok::<(), nabla_core::Error>(())
//! ```
#![warn(missing_docs)]

use nabla_core::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Distribution, Error,
    ExtensionOp, FusedKernel, HostData, Layout, Pool2dParams, ReduceOp, Result, RngKey, Scalar,
    UnaryOp,
};
use nabla_cpu::{CpuBackend, CpuStorage};
use std::sync::Arc;

#[cfg(feature = "cuda")]
use nabla_cuda::{CudaBackend, CudaStorage};
#[cfg(feature = "wgpu")]
use nabla_wgpu::{WgpuBackend, WgpuStorage};

/// A device chosen at run time. Cloning is cheap (each backend is a handle).
#[derive(Clone, Debug)]
pub enum AnyBackend {
    /// The CPU backend.
    Cpu(CpuBackend),
    /// A GPU (or software adapter) through wgpu.
    #[cfg(feature = "wgpu")]
    Wgpu(WgpuBackend),
    /// An NVIDIA GPU through CUDA.
    #[cfg(feature = "cuda")]
    Cuda(CudaBackend),
}

/// A buffer of an [`AnyBackend`]: the handle of the device it lives on.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyStorage {
    /// A CPU buffer.
    Cpu(CpuStorage),
    /// A wgpu buffer.
    #[cfg(feature = "wgpu")]
    Wgpu(WgpuStorage),
    /// A CUDA buffer.
    #[cfg(feature = "cuda")]
    Cuda(CudaStorage),
}

impl AnyBackend {
    /// The CPU.
    pub fn cpu() -> Self {
        AnyBackend::Cpu(CpuBackend::new())
    }

    /// The default wgpu adapter (a GPU, or a software one such as Mesa's lavapipe); an error when none
    /// is usable.
    #[cfg(feature = "wgpu")]
    pub fn wgpu() -> Result<Self> {
        Ok(AnyBackend::Wgpu(WgpuBackend::new()?))
    }

    /// CUDA device `ordinal` (an NVIDIA GPU); an error saying what is missing when the driver,
    /// NVRTC or cuBLAS cannot be loaded or there is no such device.
    #[cfg(feature = "cuda")]
    pub fn cuda(ordinal: usize) -> Result<Self> {
        Ok(AnyBackend::Cuda(CudaBackend::new(ordinal)?))
    }

    /// The device named `name`: `"cpu"`, `"wgpu"`, or `"cuda"` (`"cuda:N"` for device `N`); an
    /// error naming the choices otherwise, or when the device cannot be opened (or this build lacks
    /// its feature).
    ///
    /// ```
    /// let cpu = nabla_any::AnyBackend::from_name("cpu")?;
    /// assert_eq!(nabla_core::Backend::name(&cpu), "cpu");
    /// assert!(nabla_any::AnyBackend::from_name("tpu").is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "cpu" => Ok(Self::cpu()),
            #[cfg(feature = "wgpu")]
            "wgpu" => Self::wgpu(),
            #[cfg(not(feature = "wgpu"))]
            "wgpu" => Err(Error::invalid(
                "AnyBackend::from_name",
                "backend `wgpu` is not available: this build lacks the `wgpu` feature",
            )),
            cuda if cuda == "cuda" || cuda.starts_with("cuda:") => Self::cuda_named(cuda),
            other => Err(Error::invalid(
                "AnyBackend::from_name",
                format!("unknown backend `{other}`; expected `cpu`, `wgpu`, `cuda` or `cuda:N`"),
            )),
        }
    }

    /// `"cuda"` or `"cuda:N"` opened (or the error of a build without the `cuda` feature).
    fn cuda_named(name: &str) -> Result<Self> {
        let ordinal = match name.strip_prefix("cuda:") {
            None => 0,
            Some(n) => n.parse::<usize>().map_err(|_| {
                Error::invalid(
                    "AnyBackend::from_name",
                    format!(
                        "`{name}`: the device number after `cuda:` must be a non-negative integer"
                    ),
                )
            })?,
        };
        #[cfg(feature = "cuda")]
        return Self::cuda(ordinal);
        #[cfg(not(feature = "cuda"))]
        Err(Error::invalid(
            "AnyBackend::from_name",
            format!(
                "backend `cuda` (device {ordinal}) is not available: this build lacks the `cuda` feature"
            ),
        ))
    }
}

impl AnyStorage {
    /// The device kind the buffer lives on.
    pub fn kind(&self) -> &'static str {
        match self {
            AnyStorage::Cpu(_) => "cpu",
            #[cfg(feature = "wgpu")]
            AnyStorage::Wgpu(_) => "wgpu",
            #[cfg(feature = "cuda")]
            AnyStorage::Cuda(_) => "cuda",
        }
    }

    fn dtype(&self) -> DType {
        match self {
            AnyStorage::Cpu(s) => s.dtype(),
            #[cfg(feature = "wgpu")]
            AnyStorage::Wgpu(s) => s.dtype(),
            #[cfg(feature = "cuda")]
            AnyStorage::Cuda(s) => s.dtype(),
        }
    }

    fn len(&self) -> usize {
        match self {
            AnyStorage::Cpu(s) => s.len(),
            #[cfg(feature = "wgpu")]
            AnyStorage::Wgpu(s) => s.len(),
            #[cfg(feature = "cuda")]
            AnyStorage::Cuda(s) => s.len(),
        }
    }
}

/// The error for a buffer of device `found` handed to a kernel of device `want`.
fn wrong_device(want: &'static str, found: &AnyStorage) -> Error {
    Error::Backend {
        backend: want.to_string(),
        message: format!(
            "a buffer on the {} device was passed to a {want} kernel; move tensors to one device \
             first (Tensor::to_backend)",
            found.kind()
        ),
    }
}

/// Borrowing and taking one device's handles out of [`AnyStorage`]: an error for another device's.
trait Handles {
    type Inner;
    fn get(s: &AnyStorage) -> Result<&Self::Inner>;
    fn take(s: AnyStorage) -> Result<Self::Inner>;
    fn wrap(s: Self::Inner) -> AnyStorage;
}

struct OnCpu;

impl Handles for OnCpu {
    type Inner = CpuStorage;
    #[allow(unreachable_patterns)]
    fn get(s: &AnyStorage) -> Result<&CpuStorage> {
        match s {
            AnyStorage::Cpu(s) => Ok(s),
            other => Err(wrong_device("cpu", other)),
        }
    }
    #[allow(unreachable_patterns)]
    fn take(s: AnyStorage) -> Result<CpuStorage> {
        match s {
            AnyStorage::Cpu(s) => Ok(s),
            other => Err(wrong_device("cpu", &other)),
        }
    }
    fn wrap(s: CpuStorage) -> AnyStorage {
        AnyStorage::Cpu(s)
    }
}

/// The [`Handles`] of one GPU variant of [`AnyStorage`].
macro_rules! gpu_handles {
    ($feature:literal, $marker:ident, $variant:ident, $storage:ty, $kind:literal) => {
        #[cfg(feature = $feature)]
        struct $marker;

        #[cfg(feature = $feature)]
        impl Handles for $marker {
            type Inner = $storage;
            #[allow(unreachable_patterns)]
            fn get(s: &AnyStorage) -> Result<&$storage> {
                match s {
                    AnyStorage::$variant(s) => Ok(s),
                    other => Err(wrong_device($kind, other)),
                }
            }
            #[allow(unreachable_patterns)]
            fn take(s: AnyStorage) -> Result<$storage> {
                match s {
                    AnyStorage::$variant(s) => Ok(s),
                    other => Err(wrong_device($kind, &other)),
                }
            }
            fn wrap(s: $storage) -> AnyStorage {
                AnyStorage::$variant(s)
            }
        }
    };
}

gpu_handles!("wgpu", OnWgpu, Wgpu, WgpuStorage, "wgpu");
gpu_handles!("cuda", OnCuda, Cuda, CudaStorage, "cuda");

/// Runs `$body` with `$b` bound to the chosen device's backend and `$h` to its [`Handles`].
macro_rules! on_device {
    ($self:expr, |$b:ident, $h:ident| $body:expr) => {
        match $self {
            AnyBackend::Cpu($b) => {
                #[allow(dead_code)]
                type $h = OnCpu;
                $body
            }
            #[cfg(feature = "wgpu")]
            AnyBackend::Wgpu($b) => {
                #[allow(dead_code)]
                type $h = OnWgpu;
                $body
            }
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda($b) => {
                #[allow(dead_code)]
                type $h = OnCuda;
                $body
            }
        }
    };
}

impl Backend for AnyBackend {
    type Storage = AnyStorage;

    fn name(&self) -> &'static str {
        on_device!(self, |b, H| b.name())
    }

    fn device(&self) -> Device {
        on_device!(self, |b, H| b.device())
    }

    fn fast_path_kernels(&self) -> Option<nabla_core::FastKernels> {
        on_device!(self, |b, H| b.fast_path_kernels())
    }

    fn storage_dtype(&self, storage: &AnyStorage) -> DType {
        storage.dtype()
    }

    fn storage_len(&self, storage: &AnyStorage) -> usize {
        storage.len()
    }

    fn upload(&self, data: HostData) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.upload(data)?)))
    }

    fn read(&self, storage: &AnyStorage, layout: &Layout) -> Result<HostData> {
        on_device!(self, |b, H| b.read(H::get(storage)?, layout))
    }

    fn synchronize(&self) -> Result<()> {
        on_device!(self, |b, H| b.synchronize())
    }

    fn full(&self, len: usize, value: Scalar, dtype: DType) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.full(len, value, dtype)?)))
    }

    fn random(
        &self,
        dist: Distribution,
        len: usize,
        dtype: DType,
        key: RngKey,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.random(dist, len, dtype, key)?)))
    }

    fn copy(&self, x: &AnyStorage, layout: &Layout) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.copy(H::get(x)?, layout)?)))
    }

    fn unary(&self, op: UnaryOp, x: &AnyStorage, layout: &Layout) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.unary(op, H::get(x)?, layout)?)))
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &AnyStorage,
        a_layout: &Layout,
        c: &AnyStorage,
        c_layout: &Layout,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.binary(
            op,
            H::get(a)?,
            a_layout,
            H::get(c)?,
            c_layout
        )?)))
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &AnyStorage,
        a_layout: &Layout,
        c: &AnyStorage,
        c_layout: &Layout,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.compare(
            op,
            H::get(a)?,
            a_layout,
            H::get(c)?,
            c_layout
        )?)))
    }

    fn select(
        &self,
        cond: &AnyStorage,
        cond_layout: &Layout,
        on_true: &AnyStorage,
        true_layout: &Layout,
        on_false: &AnyStorage,
        false_layout: &Layout,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.select(
            H::get(cond)?,
            cond_layout,
            H::get(on_true)?,
            true_layout,
            H::get(on_false)?,
            false_layout
        )?)))
    }

    fn cast(&self, x: &AnyStorage, layout: &Layout, dtype: DType) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.cast(
            H::get(x)?,
            layout,
            dtype
        )?)))
    }

    fn reduce(
        &self,
        op: ReduceOp,
        x: &AnyStorage,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.reduce(
            op,
            H::get(x)?,
            layout,
            axes
        )?)))
    }

    fn arg_reduce(
        &self,
        op: ArgReduceOp,
        x: &AnyStorage,
        layout: &Layout,
        axis: usize,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.arg_reduce(
            op,
            H::get(x)?,
            layout,
            axis
        )?)))
    }

    fn cumsum(&self, x: &AnyStorage, layout: &Layout, axis: usize) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.cumsum(
            H::get(x)?,
            layout,
            axis
        )?)))
    }

    fn matmul(
        &self,
        a: &AnyStorage,
        a_layout: &Layout,
        c: &AnyStorage,
        c_layout: &Layout,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.matmul(
            H::get(a)?,
            a_layout,
            H::get(c)?,
            c_layout
        )?)))
    }

    fn matmul_rounded(
        &self,
        a: &AnyStorage,
        a_layout: &Layout,
        c: &AnyStorage,
        c_layout: &Layout,
        precision: nabla_core::Precision,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.matmul_rounded(
            H::get(a)?,
            a_layout,
            H::get(c)?,
            c_layout,
            precision
        )?)))
    }

    fn pad(
        &self,
        x: &AnyStorage,
        layout: &Layout,
        pads: &[(usize, usize)],
        value: Scalar,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.pad(
            H::get(x)?,
            layout,
            pads,
            value
        )?)))
    }

    fn concat(&self, parts: &[(&AnyStorage, &Layout)], axis: usize) -> Result<AnyStorage> {
        on_device!(self, |b, H| {
            let inner = parts
                .iter()
                .map(|(s, l)| Ok((H::get(s)?, *l)))
                .collect::<Result<Vec<_>>>()?;
            Ok(H::wrap(b.concat(&inner, axis)?))
        })
    }

    fn gather(
        &self,
        x: &AnyStorage,
        x_layout: &Layout,
        axis: usize,
        index: &AnyStorage,
        index_layout: &Layout,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.gather(
            H::get(x)?,
            x_layout,
            axis,
            H::get(index)?,
            index_layout
        )?)))
    }

    fn index_select(
        &self,
        x: &AnyStorage,
        x_layout: &Layout,
        axis: usize,
        index: &AnyStorage,
        index_layout: &Layout,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.index_select(
            H::get(x)?,
            x_layout,
            axis,
            H::get(index)?,
            index_layout
        )?)))
    }

    fn scatter_add(
        &self,
        dst: &AnyStorage,
        dst_layout: &Layout,
        axis: usize,
        index: &AnyStorage,
        index_layout: &Layout,
        src: &AnyStorage,
        src_layout: &Layout,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.scatter_add(
            H::get(dst)?,
            dst_layout,
            axis,
            H::get(index)?,
            index_layout,
            H::get(src)?,
            src_layout
        )?)))
    }

    fn one_hot(
        &self,
        index: &AnyStorage,
        layout: &Layout,
        classes: usize,
        dtype: DType,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.one_hot(
            H::get(index)?,
            layout,
            classes,
            dtype
        )?)))
    }

    fn sort(
        &self,
        x: &AnyStorage,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(AnyStorage, AnyStorage)> {
        on_device!(self, |b, H| {
            let (values, positions) = b.sort(H::get(x)?, layout, axis, descending)?;
            Ok((H::wrap(values), H::wrap(positions)))
        })
    }

    fn topk(
        &self,
        x: &AnyStorage,
        layout: &Layout,
        axis: usize,
        k: usize,
        largest: bool,
    ) -> Result<(AnyStorage, AnyStorage)> {
        on_device!(self, |b, H| {
            let (values, positions) = b.topk(H::get(x)?, layout, axis, k, largest)?;
            Ok((H::wrap(values), H::wrap(positions)))
        })
    }

    fn conv2d(
        &self,
        x: &AnyStorage,
        x_layout: &Layout,
        w: &AnyStorage,
        w_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.conv2d(
            H::get(x)?,
            x_layout,
            H::get(w)?,
            w_layout,
            params
        )?)))
    }

    fn conv2d_input_grad(
        &self,
        dy: &AnyStorage,
        dy_layout: &Layout,
        w: &AnyStorage,
        w_layout: &Layout,
        input_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.conv2d_input_grad(
            H::get(dy)?,
            dy_layout,
            H::get(w)?,
            w_layout,
            input_hw,
            params
        )?)))
    }

    fn conv2d_weight_grad(
        &self,
        x: &AnyStorage,
        x_layout: &Layout,
        dy: &AnyStorage,
        dy_layout: &Layout,
        kernel_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| Ok(H::wrap(b.conv2d_weight_grad(
            H::get(x)?,
            x_layout,
            H::get(dy)?,
            dy_layout,
            kernel_hw,
            params
        )?)))
    }

    fn max_pool2d(
        &self,
        x: &AnyStorage,
        layout: &Layout,
        params: &Pool2dParams,
    ) -> Result<(AnyStorage, AnyStorage)> {
        on_device!(self, |b, H| {
            let (values, positions) = b.max_pool2d(H::get(x)?, layout, params)?;
            Ok((H::wrap(values), H::wrap(positions)))
        })
    }

    fn extension(
        &self,
        op: &Arc<dyn ExtensionOp>,
        inputs: &[(&AnyStorage, &Layout)],
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| {
            let inner = inputs
                .iter()
                .map(|(s, l)| Ok((H::get(s)?, *l)))
                .collect::<Result<Vec<_>>>()?;
            Ok(H::wrap(b.extension(op, &inner)?))
        })
    }

    fn fused(
        &self,
        kernel: &FusedKernel,
        inputs: Vec<(AnyStorage, &Layout)>,
        shape: &[usize],
        donate: Option<usize>,
    ) -> Result<AnyStorage> {
        on_device!(self, |b, H| {
            let inner = inputs
                .into_iter()
                .map(|(s, l)| Ok((H::take(s)?, l)))
                .collect::<Result<Vec<_>>>()?;
            Ok(H::wrap(b.fused(kernel, inner, shape, donate)?))
        })
    }

    fn fused_many(
        &self,
        kernel: &FusedKernel,
        inputs: Vec<(AnyStorage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
    ) -> Result<Vec<AnyStorage>> {
        on_device!(self, |b, H| {
            let inner = inputs
                .into_iter()
                .map(|(s, l)| Ok((H::take(s)?, l)))
                .collect::<Result<Vec<_>>>()?;
            let outputs = b.fused_many(kernel, inner, shape, donate)?;
            Ok(outputs.into_iter().map(H::wrap).collect())
        })
    }

    fn fused_reuses_donation(&self, kernel: &FusedKernel) -> bool {
        on_device!(self, |b, H| b.fused_reuses_donation(kernel))
    }
}
