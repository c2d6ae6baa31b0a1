//! Owns the `fft` extension family: NumPy's and PyTorch's transforms, their kernels and rules.
//! Must not depend on a concrete backend: only `nabla-core` and `nabla-tensor` (and rustfft).
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! Fast Fourier transforms for nabla, as an **extension op family** (like `nabla-linalg`): NumPy's
//! and PyTorch's `fft` module over tensors of any backend, differentiable to any order in forward
//! and reverse mode, eager, traced and under `vmap`.
//!
//! | function | transform | input → output |
//! |---|---|---|
//! | [`fft`], [`ifft`] | complex, one axis | any → complex |
//! | [`fft2`], [`ifft2`], [`fftn`], [`ifftn`] | complex, several axes | any → complex |
//! | [`rfft`], [`rfft2`], [`rfftn`] | the `n/2 + 1` non-negative frequencies | real → complex |
//! | [`irfft`], [`irfft2`], [`irfftn`] | inverse of the real transform | complex → real |
//! | [`fftfreq`], [`rfftfreq`], [`fftshift`], [`ifftshift`] | frequencies and reordering | |
//!
//! Arguments follow NumPy: an optional length `n` (or lengths `s`) crops or zero-pads each axis
//! first, `axis`/`axes` choose the transformed axes (negative counts from the end) and [`Norm`]
//! puts the `1/n` scale on the inverse (default), both ways (`Ortho`) or the forward transform.
//! Real input to the complex transforms becomes `complex128` for `f64` and `complex64` otherwise
//! (integers and half floats included, as PyTorch); the real transforms take `f32` and `f64`
//! (others convert to `f32`) and refuse complex input. A transformed axis of length 0 is an error,
//! as in NumPy; empty batch dimensions give empty results.
//!
//! **Kernels.** Three ops ([`Fft`], [`Rfft`], [`Irfft`]) run on `rustfft` (mixed-radix, Bluestein
//! for large primes, AVX where the CPU has it) and `realfft` (a real transform of length `n` as a
//! complex one of length `n/2`), batched over lines and split across the thread pool. On the CPU
//! backend they run on the tensors' memory; other backends (wgpu) run them through a host round
//! trip, the documented fallback of every extension family.
//!
//! **Derivatives.** Every transform is linear: its forward rule is the op on the tangent, its
//! reverse rule the transpose under the pairing `Re Σ uᵢvᵢ` (JAX's convention), written with the
//! family's own ops (table in the `rules` module), so every order exists.
//!
//! ```
//! use nabla_tensor::{Tensor, grad};
//! use nabla_cpu::CpuBackend;
//! use nabla_fft::{Norm, rfft};
//! let cpu = CpuBackend::new();
//! // The power spectrum's total is Parseval's: Σ|X|² over the full spectrum = n Σ x².
//! let energy = |x: &Tensor<CpuBackend>| {
//!     nabla_fft::fft(x, None, -1, Norm::Backward)?.abs()?.square()?.sum_all()
//! };
//! let x = Tensor::from_vec(vec![1.0f64, -2.0, 0.5, 3.0], [4], &cpu)?;
//! assert!((energy(&x)?.item::<f64>()? - 4.0 * 14.25).abs() < 1e-9);
//! // Its gradient is 2 n x.
//! let g = grad(energy)(&x)?.to_vec::<f64>()?;
//! assert!(g.iter().zip([8.0, -16.0, 4.0, 24.0]).all(|(a, b)| (a - b).abs() < 1e-9));
//! assert_eq!(rfft(&x, None, -1, Norm::Backward)?.shape(), &[3]);
//! # Ok::<(), nabla_core::Error>(())
//! ```
#![warn(missing_docs)]

mod api;
mod kernels;
mod ops;
mod rules;

pub use api::{
    fft, fft2, fftfreq, fftn, fftshift, ifft, ifft2, ifftn, ifftshift, irfft, irfft2, irfftn, rfft,
    rfft2, rfftfreq, rfftn,
};
pub use ops::{Fft, Irfft, Norm, Rfft};
pub use rules::{Fourier, rules};
