//! The op values of the family: parameters, names, and shape and dtype rules.
//!
//! Transformed axes are stored counted from the end (`-1` is the last axis), so an op maps over any
//! leading dimensions: `vmap` batches it by adding one, with no change to its parameters.

use crate::kernels;
use nabla_core::{
    DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
};
use std::str::FromStr;

pub(crate) const FFT: &str = "fft.fft";
pub(crate) const RFFT: &str = "fft.rfft";
pub(crate) const IRFFT: &str = "fft.irfft";

/// Which direction carries the `1/n` scale (NumPy's and PyTorch's `norm`); `n` is the product of the
/// transformed lengths (the logical, full lengths for the real transforms).
///
/// | norm | forward (`fft`, `rfft`) | inverse (`ifft`, `irfft`) |
/// |---|---|---|
/// | `Backward` (default) | 1 | `1/n` |
/// | `Ortho` | `1/√n` | `1/√n` |
/// | `Forward` | `1/n` | 1 |
///
/// ```
/// let norm: nabla_fft::Norm = "ortho".parse()?;
/// assert_eq!(norm, nabla_fft::Norm::Ortho);
/// assert_eq!(nabla_fft::Norm::default(), nabla_fft::Norm::Backward);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Norm {
    /// No scale forward, `1/n` on the inverse (`"backward"`, the default).
    #[default]
    Backward,
    /// `1/√n` both ways: the transform is unitary (`"ortho"`).
    Ortho,
    /// `1/n` forward, no scale on the inverse (`"forward"`).
    Forward,
}

impl Norm {
    /// The scale of a transform of `n` points in the given direction.
    pub(crate) fn scale(self, n: usize, inverse: bool) -> f64 {
        match (self, inverse) {
            (Norm::Backward, false) | (Norm::Forward, true) => 1.0,
            (Norm::Ortho, _) => 1.0 / (n as f64).sqrt(),
            (Norm::Backward, true) | (Norm::Forward, false) => 1.0 / n as f64,
        }
    }

    /// The norm whose forward scale is this norm's inverse scale (and the other way round).
    pub(crate) fn dual(self) -> Norm {
        match self {
            Norm::Backward => Norm::Forward,
            Norm::Ortho => Norm::Ortho,
            Norm::Forward => Norm::Backward,
        }
    }
}

impl FromStr for Norm {
    type Err = Error;

    /// Parses NumPy's spellings: `backward`, `ortho`, `forward`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "backward" => Ok(Norm::Backward),
            "ortho" => Ok(Norm::Ortho),
            "forward" => Ok(Norm::Forward),
            other => Err(Error::invalid(
                "fft",
                format!("unknown norm {other:?}; expected backward, ortho or forward"),
            )),
        }
    }
}

/// The complex-to-complex discrete Fourier transform over `axes` (counted from the end, distinct) of a
/// `complex64` or `complex128` tensor: `X[k] = s Σⱼ x[j] e^{∓2πi jk/n}` per axis, `-` forward, `+`
/// inverse, with the scale `s` of `norm`. Output: the input's shape and dtype.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fft {
    /// Transformed axes, negative (`-1` is the last).
    pub axes: Vec<isize>,
    /// The inverse transform (`e^{+2πi jk/n}`).
    pub inverse: bool,
    /// The scaling convention.
    pub norm: Norm,
}

/// The real-to-complex transform over `axes` (counted from the end, distinct) of an `f32` or `f64`
/// tensor: the forward transform of the last axis of `axes` keeps its `n/2 + 1` non-negative
/// frequencies; the other axes get the full complex transform. Output: `complex64` or `complex128`,
/// with that axis `n/2 + 1` long.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rfft {
    /// Transformed axes, negative; the real transform is along the last of them.
    pub axes: Vec<isize>,
    /// The scaling convention.
    pub norm: Norm,
}

/// The inverse of [`Rfft`]: complex input whose last transformed axis holds the `len/2 + 1`
/// non-negative frequencies of a Hermitian-symmetric spectrum, real output with that axis `len` long.
/// The imaginary parts of the zero frequency (and of the Nyquist frequency for even `len`) are ignored,
/// as in NumPy.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Irfft {
    /// Transformed axes, negative; the real transform is along the last of them.
    pub axes: Vec<isize>,
    /// The output length along the last transformed axis.
    pub len: usize,
    /// The scaling convention.
    pub norm: Norm,
}

/// The absolute positions of negative `axes` in a tensor of `rank` dimensions, checked.
pub(crate) fn absolute_axes(
    op: &'static str,
    axes: &[isize],
    shape: &[usize],
) -> Result<Vec<usize>> {
    let rank = shape.len() as isize;
    let mut seen = Vec::with_capacity(axes.len());
    for &a in axes {
        if a >= 0 || a < -rank {
            return Err(Error::invalid(
                op,
                format!("axis {a} is out of range for a tensor of shape {shape:?}"),
            ));
        }
        let abs = (rank + a) as usize;
        if seen.contains(&abs) {
            return Err(Error::invalid(
                op,
                format!("axis {a} is repeated in {axes:?}"),
            ));
        }
        if shape[abs] == 0 {
            return Err(Error::invalid(
                op,
                format!("invalid number of data points (0) along axis {a} of shape {shape:?}"),
            ));
        }
        seen.push(abs);
    }
    if seen.is_empty() {
        return Err(Error::invalid(op, "needs at least one axis to transform"));
    }
    Ok(seen)
}

/// The single input of an op, checked to have one of `dtypes`.
fn single<'a>(
    op: &'static str,
    inputs: &'a [(DType, &'a [usize])],
    dtypes: [DType; 2],
    what: &str,
) -> Result<(DType, &'a [usize])> {
    let [(dtype, shape)] = inputs else {
        return Err(Error::invalid(
            op,
            format!("takes one input, got {}", inputs.len()),
        ));
    };
    if !dtypes.contains(dtype) {
        return Err(Error::UnsupportedDType {
            op,
            dtype: *dtype,
            hint: Some(format!("{op} takes {what} input")),
        });
    }
    Ok((*dtype, shape))
}

impl ExtensionOp for Fft {
    fn name(&self) -> &str {
        FFT
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, shape) = single(
            FFT,
            inputs,
            [DType::C64, DType::C128],
            "complex64 or complex128",
        )?;
        absolute_axes(FFT, &self.axes, shape)?;
        Ok(OutputSpec {
            dtype,
            shape: shape.to_vec(),
        })
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        kernels::fft(self, &views[0], alloc)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}

impl ExtensionOp for Rfft {
    fn name(&self) -> &str {
        RFFT
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, shape) = single(RFFT, inputs, [DType::F32, DType::F64], "f32 or f64")?;
        let axes = absolute_axes(RFFT, &self.axes, shape)?;
        let mut out = shape.to_vec();
        let last = axes[axes.len() - 1];
        out[last] = out[last] / 2 + 1;
        let dtype = dtype.complex().ok_or_else(|| Error::dtype(RFFT, dtype))?;
        Ok(OutputSpec { dtype, shape: out })
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        kernels::rfft(self, &views[0], alloc)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}

impl ExtensionOp for Irfft {
    fn name(&self) -> &str {
        IRFFT
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, shape) = single(
            IRFFT,
            inputs,
            [DType::C64, DType::C128],
            "complex64 or complex128",
        )?;
        let axes = absolute_axes(IRFFT, &self.axes, shape)?;
        let last = axes[axes.len() - 1];
        if self.len == 0 || shape[last] != self.len / 2 + 1 {
            return Err(Error::invalid(
                IRFFT,
                format!(
                    "an output of length {} along axis {} needs {} input frequencies, got shape {shape:?}",
                    self.len,
                    self.axes[self.axes.len() - 1],
                    self.len / 2 + 1
                ),
            ));
        }
        let mut out = shape.to_vec();
        out[last] = self.len;
        Ok(OutputSpec {
            dtype: dtype.real(),
            shape: out,
        })
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        kernels::irfft(self, &views[0], alloc)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}
