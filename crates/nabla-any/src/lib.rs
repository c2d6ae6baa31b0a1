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

use nabla_core::{Backend, DType, Error, Layout, Result};
use nabla_cpu::{CpuBackend, CpuStorage};

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

    /// The buffer's dtype ([`Backend::storage_dtype`] of any device).
    fn storage_dtype(&self) -> DType {
        match self {
            AnyStorage::Cpu(s) => s.dtype(),
            #[cfg(feature = "wgpu")]
            AnyStorage::Wgpu(s) => s.dtype(),
            #[cfg(feature = "cuda")]
            AnyStorage::Cuda(s) => s.dtype(),
        }
    }

    /// The buffer's element count ([`Backend::storage_len`] of any device).
    fn storage_len(&self) -> usize {
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
    type Inner: 'static;
    fn get(s: &AnyStorage) -> Result<&Self::Inner>;
    fn take(s: AnyStorage) -> Result<Self::Inner>;
    fn wrap(s: Self::Inner) -> AnyStorage;

    /// [`Handles::get`] of every buffer, with its view.
    fn get_all<'a>(
        parts: &[(&'a AnyStorage, &'a Layout)],
    ) -> Result<Vec<(&'a Self::Inner, &'a Layout)>> {
        parts.iter().map(|(s, l)| Ok((Self::get(s)?, *l))).collect()
    }

    /// [`Handles::take`] of every buffer, with its view.
    fn take_all(parts: Vec<(AnyStorage, &Layout)>) -> Result<Vec<(Self::Inner, &Layout)>> {
        parts
            .into_iter()
            .map(|(s, l)| Ok((Self::take(s)?, l)))
            .collect()
    }
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

/// Implements [`Backend`] for [`AnyBackend`] from the method list of
/// [`nabla_core::backend_methods!`]: every method runs on the chosen device's backend.
macro_rules! dispatch_to_device {
    ($(
        $(#[$meta:meta])*
        $recipe:ident fn $name:ident(&$self:ident $(, $arg:ident: $kind:tt)* $(,)?) -> $ret:tt $body:tt
    )*) => {
        impl Backend for AnyBackend {
            type Storage = AnyStorage;
            $(
                dispatch_method! { $recipe $name ($self) [$($arg: $kind),*] $ret }
            )*
        }
    };
}

/// One method of [`AnyBackend`]'s [`Backend`], by its recipe (see `nabla_core::backend_methods!`).
macro_rules! dispatch_method {
    // A fact of the buffer, whichever device it is on.
    (buffer $name:ident ($self:ident) [$arg:ident: buf] $ret:tt) => {
        fn $name(&$self, $arg: &AnyStorage) -> nabla_core::backend_return_type!($ret) {
            $arg.$name()
        }
    };
    // A fact of the device, or a call passing through as it is.
    ($recipe:ident $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] ($($ret:tt)*)) => {
        fn $name(&$self $(, $arg: nabla_core::backend_arg_type!($kind))*) -> $($ret)* {
            on_device!($self, |b, H| b.$name($(device_arg!(H, $kind, $arg)),*))
        }
    };
    ($recipe:ident $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] one) => {
        fn $name(&$self $(, $arg: nabla_core::backend_arg_type!($kind))*) -> Result<AnyStorage> {
            on_device!($self, |b, H| Ok(H::wrap(b.$name($(device_arg!(H, $kind, $arg)),*)?)))
        }
    };
    ($recipe:ident $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] two) => {
        fn $name(&$self $(, $arg: nabla_core::backend_arg_type!($kind))*)
            -> Result<(AnyStorage, AnyStorage)>
        {
            on_device!($self, |b, H| {
                let (first, second) = b.$name($(device_arg!(H, $kind, $arg)),*)?;
                Ok((H::wrap(first), H::wrap(second)))
            })
        }
    };
    ($recipe:ident $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] many) => {
        fn $name(&$self $(, $arg: nabla_core::backend_arg_type!($kind))*) -> Result<Vec<AnyStorage>> {
            on_device!($self, |b, H| {
                let results = b.$name($(device_arg!(H, $kind, $arg)),*)?;
                Ok(results.into_iter().map(H::wrap).collect())
            })
        }
    };
}

/// An argument as the chosen device's backend takes it: buffers unwrapped (an error for another
/// device's buffer), anything else as it is.
macro_rules! device_arg {
    ($h:ident, buf, $arg:ident) => {
        $h::get($arg)?
    };
    ($h:ident, bufs, $arg:ident) => {
        &$h::get_all($arg)?
    };
    ($h:ident, owned, $arg:ident) => {
        $h::take_all($arg)?
    };
    ($h:ident, ($($ty:tt)*), $arg:ident) => {
        $arg
    };
}

nabla_core::backend_methods!(dispatch_to_device);
