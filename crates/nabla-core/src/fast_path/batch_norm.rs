//! Batch normalisation in training mode, optionally followed by a ReLU, as one op (what PyTorch's
//! `native_batch_norm` and `native_batch_norm_backward` are): from `x` (`[N, C, *]`), the scale `w`
//! and the shift `b` (`[C]`), each channel's batch mean and biased variance and `y = (x - mean) /
//! sqrt(var + eps) w + b`. Its output is flat: `y` (in `x`'s layout), then the `C` means, then the
//! `C` variances. The vector-Jacobian product is one op too.

use super::{FastPath, FastPathKernels, input_specs};
use crate::{DType, Error, HostAllocator, HostData, HostView, OutputSpec, Result};

/// The sizes of one batch norm: examples, channels, spatial positions per channel and example.
#[derive(Clone, Copy, Debug)]
pub struct BatchNormDims {
    /// Examples.
    pub n: usize,
    /// Channels.
    pub c: usize,
    /// Spatial positions per channel and example.
    pub s: usize,
}

impl BatchNormDims {
    /// Values per channel.
    pub fn count(self) -> usize {
        self.n * self.s
    }
}

/// What a fused batch norm computes: `eps` (as the bits of an `f64`, so that the op is
/// `Eq + Hash`), and whether a ReLU follows (`y = max(0, ...)`, in the same pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchNormSettings {
    /// `eps.to_bits()`.
    pub eps: u64,
    /// A ReLU follows.
    pub relu: bool,
}

impl BatchNormSettings {
    /// `eps` as a number.
    pub fn eps(self) -> f64 {
        f64::from_bits(self.eps)
    }
}

/// The fused batch norm and its vector-Jacobian product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BatchNormOp {
    /// `(x [N, C, *], w [C], b [C]) -> [N C S + 2 C]`: `y`, the means, the variances.
    Forward(BatchNormSettings),
    /// `(x, w, flat output, its cotangent) -> [N C S + 2 C]`: the cotangents of `x`, `w` and `b`.
    Vjp(BatchNormSettings),
}

impl BatchNormOp {
    /// The op's settings.
    pub fn settings(self) -> BatchNormSettings {
        match self {
            BatchNormOp::Forward(settings) | BatchNormOp::Vjp(settings) => settings,
        }
    }

    /// The dtype and sizes from the input shapes, or an error naming the op.
    pub fn dims(self, inputs: &[(DType, &[usize])]) -> Result<(DType, BatchNormDims)> {
        let bad = || {
            let shapes: Vec<_> = inputs.iter().map(|(d, s)| (*d, s.to_vec())).collect();
            Error::invalid(
                self.name(),
                format!(
                    "expected f32 or f64 inputs of one dtype: x [N, C, *] with values in every \
                     channel, w [C], then b [C] for the layer, or the output and its cotangent \
                     [N C S + 2 C] for its vjp; got {shapes:?}"
                ),
            )
        };
        let Some(&(dtype, x)) = inputs.first() else {
            return Err(bad());
        };
        if x.len() < 2 {
            return Err(bad());
        }
        let (n, c) = (x[0], x[1]);
        let s = x[2..].iter().product::<usize>();
        let numel = n * c * s;
        let flat = [numel + 2 * c];
        let tail: &[&[usize]] = match self {
            BatchNormOp::Forward(_) => &[&[c], &[c]],
            BatchNormOp::Vjp(_) => &[&[c], &flat, &flat],
        };
        let ok = matches!(dtype, DType::F32 | DType::F64)
            && n * s > 0
            && inputs.len() == 1 + tail.len()
            && inputs.iter().all(|(d, _)| *d == dtype)
            && inputs[1..].iter().zip(tail).all(|((_, s), t)| s == t);
        if ok {
            Ok((dtype, BatchNormDims { n, c, s }))
        } else {
            Err(bad())
        }
    }
}

impl FastPath for BatchNormOp {
    fn name(&self) -> &'static str {
        match self {
            BatchNormOp::Forward(_) => "fused.batch_norm",
            BatchNormOp::Vjp(_) => "fused.batch_norm_vjp",
        }
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, d) = self.dims(inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: vec![d.n * d.c * d.s + 2 * d.c],
        })
    }

    fn run(
        &self,
        kernels: &dyn FastPathKernels,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        let (_, dims) = self.dims(&input_specs(inputs))?;
        kernels.batch_norm(*self, dims, inputs, alloc)
    }
}
