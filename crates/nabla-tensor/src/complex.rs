//! Complex numbers from parts and back: [`Tensor::complex`], [`Tensor::polar`] and
//! [`Tensor::angle`] (with the primitives [`Tensor::real`], [`Tensor::imag`], [`Tensor::conj`] and
//! [`Tensor::abs`]). All three are composed from primitives (casts, products, `atan2`), so they are
//! differentiable in every mode under the convention of the crate docs, with no rules of their own.

use crate::Tensor;
use nabla_core::{Backend, DType, Error, Result};
use num_complex::Complex64;

/// The complex dtype made from the real float parts of `t`, or an error naming `op`.
fn complex_dtype_of<B: Backend>(op: &'static str, t: &Tensor<B>) -> Result<DType> {
    match t.dtype() {
        DType::F32 | DType::F64 => t
            .dtype()
            .complex()
            .ok_or_else(|| Error::dtype(op, t.dtype())),
        other => Err(Error::dtype(op, other).with_hint(
            "the parts must be float32 or float64 (one dtype for both); cast them first",
        )),
    }
}

impl<B: Backend> Tensor<B> {
    /// `re + i·im` elementwise, with broadcasting (NumPy's `re + 1j * im`): float32 parts give
    /// complex64, float64 parts complex128. Its reverse rule sends a cotangent `u` to
    /// `(Re u, -Im u)` (JAX's transpose of `lax.complex`). Finite parts are copied exactly; an
    /// infinite imaginary part gives a NaN real part, as in NumPy's expression.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use num_complex::Complex64;
    /// let cpu = CpuBackend::new();
    /// let re = Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?;
    /// let im = Tensor::from_vec(vec![-3.0f64], [1], &cpu)?;
    /// let z = Tensor::complex(&re, &im)?;
    /// assert_eq!(z.to_vec::<Complex64>()?, vec![Complex64::new(1.0, -3.0), Complex64::new(2.0, -3.0)]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn complex(re: &Tensor<B>, im: &Tensor<B>) -> Result<Tensor<B>> {
        const OP: &str = "complex";
        let dtype = complex_dtype_of(OP, re)?;
        re.check_device(OP, im)?;
        re.check_same_dtype(OP, im)?;
        re.cast(dtype)?
            .add(im.cast(dtype)?.mul(Complex64::new(0.0, 1.0))?)
    }

    /// `abs · e^{i·angle}` elementwise, with broadcasting: the complex number of modulus `abs` and
    /// argument `angle` (PyTorch's `torch.polar`), from float32 or float64 parts of one dtype.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use num_complex::Complex64;
    /// let cpu = CpuBackend::new();
    /// let r = Tensor::from_vec(vec![2.0f64], [1], &cpu)?;
    /// let theta = Tensor::from_vec(vec![std::f64::consts::FRAC_PI_2], [1], &cpu)?;
    /// let z = Tensor::polar(&r, &theta)?.item::<Complex64>()?;
    /// assert!((z - Complex64::new(0.0, 2.0)).norm() < 1e-15);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn polar(abs: &Tensor<B>, angle: &Tensor<B>) -> Result<Tensor<B>> {
        const OP: &str = "polar";
        complex_dtype_of(OP, abs)?;
        abs.check_device(OP, angle)?;
        abs.check_same_dtype(OP, angle)?;
        Tensor::complex(&abs.mul(angle.cos()?)?, &abs.mul(angle.sin()?)?)
    }

    /// The argument of each element, in `(-π, π]`: `atan2(imag, real)` for complex input (with the
    /// real dtype), and for real float input 0 for non-negative values and π for negative ones (and
    /// for `-0.0`), as NumPy's `angle`. The derivative at 0 is undefined (NaN), as in JAX.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use num_complex::Complex64;
    /// let cpu = CpuBackend::new();
    /// let z = Tensor::from_vec(vec![Complex64::new(0.0, 1.0), Complex64::new(-1.0, 0.0)], [2], &cpu)?;
    /// let pi = std::f64::consts::PI;
    /// assert_eq!(z.angle()?.to_vec::<f64>()?, vec![pi / 2.0, pi]);
    /// let x = Tensor::from_vec(vec![2.0f32, -2.0], [2], &cpu)?;
    /// assert_eq!(x.angle()?.to_vec::<f32>()?, vec![0.0, std::f32::consts::PI]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn angle(&self) -> Result<Tensor<B>> {
        let dtype = self.dtype();
        if dtype.is_complex() {
            self.imag()?.atan2(self.real()?)
        } else if dtype.is_float() && !dtype.is_half() {
            self.detach().zeros_like()?.atan2(self)
        } else {
            Err(Error::dtype("angle", dtype)
                .with_hint("angle needs a float32, float64 or complex tensor; cast first"))
        }
    }
}
