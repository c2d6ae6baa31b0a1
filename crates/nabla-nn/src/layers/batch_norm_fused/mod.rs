//! Batch normalisation in training mode, optionally followed by a ReLU, as one fused op (what PyTorch's `native_batch_norm` and
//! `native_batch_norm_backward` are): from `x` (`[N, C, *]`), the scale `w` and the shift `b`
//! (`[C]`), one op computes each channel's batch mean and biased variance and `y = (x - mean) /
//! sqrt(var + eps) w + b`, reading `x` three times and writing `y` once, where the composite
//! formula makes about six passes forward and more backward. Its output is flat: `y` (in `x`'s
//! layout), then the `C` means, then the `C` variances (which the layer folds into its running
//! statistics). The vector-Jacobian product is one op too: one pass for each channel's two sums and
//! one pass writing the input's cotangent.
//!
//! Derivatives of any order: the reverse rule runs the fused vjp op when nothing it returns is
//! tracked (plain `backward`, the training case); when the pass builds a graph (higher order) and
//! for forward mode, it differentiates the composite formula of the same flat output. The fused op
//! runs on the CPU backend for `f32` and `f64`; elsewhere the layer is the composite.

mod kernel;
#[cfg(test)]
mod tests;

use crate::layers::fused::{composite_jvp, composite_vjp_if_tracked, recorded_op, split_flat};
use kernel::{NormFloat, OutputCotangents};
use nabla_core::{
    Backend, DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
};
use nabla_tensor::{ExtensionFamily, ExtensionRules, RuleArgs, Tensor};
use std::sync::Arc;

/// The normalised input and the batch statistics, `[1, C, 1, ...]` each.
pub(crate) struct Normalized<B: Backend> {
    pub y: Tensor<B>,
    pub mean: Tensor<B>,
    pub var: Tensor<B>,
}

/// `true` when the fused op runs `x` with the layer's parameters `params`: on the CPU, in `f32` or
/// `f64`, one dtype.
pub(crate) fn applies<'a, B: Backend>(
    x: &Tensor<B>,
    params: impl IntoIterator<Item = &'a Tensor<B>>,
) -> bool {
    x.backend().device().kind == "cpu"
        && matches!(x.dtype(), DType::F32 | DType::F64)
        && params.into_iter().all(|p| p.dtype() == x.dtype())
}

/// Batch normalisation of `x` (`[N, C, *]`, at least one value per channel) with the batch
/// statistics, scale `w` and shift `b` (`[C]`), as one fused op.
pub(crate) fn batch_norm<B: Backend>(
    x: &Tensor<B>,
    w: &Tensor<B>,
    b: &Tensor<B>,
    eps: f64,
    relu: bool,
) -> Result<Normalized<B>> {
    let op = BatchNormOp::Forward(Settings {
        eps: eps.to_bits(),
        relu,
    });
    let flat = Tensor::apply_family_op::<FusedBatchNorm>(Arc::new(op), &[x, w, b])?;
    unpack(&flat, x)
}

/// The parts of the forward op's flat output for the input `x`.
fn unpack<B: Backend>(flat: &Tensor<B>, x: &Tensor<B>) -> Result<Normalized<B>> {
    let (numel, c) = (x.numel(), x.shape()[1]);
    let mut stat_shape = vec![1; x.rank()];
    stat_shape[1] = c;
    Ok(Normalized {
        y: flat.narrow(0, 0, numel)?.reshape(x.shape().to_vec())?,
        mean: flat.narrow(0, numel, c)?.reshape(stat_shape.clone())?,
        var: flat.narrow(0, numel + c, c)?.reshape(stat_shape)?,
    })
}

/// The forward op's flat output by the composite formula, for `v = [x, w, b]`: what the rules
/// differentiate for higher orders and forward mode.
fn composite_flat<B: Backend>(v: &[Tensor<B>], settings: Settings) -> Result<Tensor<B>> {
    let eps = settings.eps();
    let [x, w, b] = v else {
        return Err(Error::invalid("fused.batch_norm", "expected three inputs"));
    };
    let axes: Vec<isize> = (0..x.rank() as isize).filter(|&a| a != 1).collect();
    let mut stat_shape = vec![1; x.rank()];
    stat_shape[1] = x.shape()[1];
    let mean = x.mean(&axes, true)?;
    let centered = x.sub(&mean)?;
    let var = centered.square()?.mean(&axes, true)?;
    let mut y = centered
        .mul(var.add(eps)?.rsqrt()?)?
        .mul(w.reshape(stat_shape.clone())?)?
        .add(b.reshape(stat_shape)?)?;
    if settings.relu {
        y = y.relu()?;
    }
    Tensor::cat(
        &[&y.flatten_all()?, &mean.flatten_all()?, &var.flatten_all()?],
        0,
    )
}

/// The sizes of one batch norm: examples, channels, spatial positions per channel and example.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dims {
    n: usize,
    c: usize,
    s: usize,
}

impl Dims {
    /// Values per channel.
    fn count(self) -> usize {
        self.n * self.s
    }
}

/// What a fused batch norm computes: `eps` (as the bits of an `f64`, so that the op is
/// `Eq + Hash`), and whether a ReLU follows (`y = max(0, ...)`, in the same pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Settings {
    eps: u64,
    relu: bool,
}

impl Settings {
    fn eps(self) -> f64 {
        f64::from_bits(self.eps)
    }
}

/// The fused batch norm and its vector-Jacobian product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum BatchNormOp {
    /// `(x [N, C, *], w [C], b [C]) -> [N C S + 2 C]`: `y`, the means, the variances.
    Forward(Settings),
    /// `(x, w, flat output, its cotangent) -> [N C S + 2 C]`: the cotangents of `x`, `w` and `b`.
    Vjp(Settings),
}

impl BatchNormOp {
    fn op_name(self) -> &'static str {
        match self {
            BatchNormOp::Forward(_) => "fused.batch_norm",
            BatchNormOp::Vjp(_) => "fused.batch_norm_vjp",
        }
    }

    fn settings(self) -> Settings {
        match self {
            BatchNormOp::Forward(settings) | BatchNormOp::Vjp(settings) => settings,
        }
    }

    /// The dtype and sizes from the input shapes, or an error naming the op.
    fn dims(self, inputs: &[(DType, &[usize])]) -> Result<(DType, Dims)> {
        let bad = || {
            let shapes: Vec<_> = inputs.iter().map(|(d, s)| (*d, s.to_vec())).collect();
            Error::invalid(
                self.op_name(),
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
            Ok((dtype, Dims { n, c, s }))
        } else {
            Err(bad())
        }
    }

    /// Runs the kernel in `T`.
    fn run<T: NormFloat>(
        self,
        d: Dims,
        views: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<Vec<T>> {
        let data: Vec<&[T]> = views
            .iter()
            .map(|v| {
                T::slice_of(v.data).ok_or_else(|| Error::dtype(self.op_name(), v.data.dtype()))
            })
            .collect::<Result<_>>()?;
        let numel = d.n * d.c * d.s;
        let mut out: Vec<T> = alloc.vec(numel + 2 * d.c);
        out.resize(numel + 2 * d.c, T::ZERO);
        let settings = self.settings();
        let eps = T::from_f64(settings.eps());
        let (main, tail) = out.split_at_mut(numel);
        let (first, second) = tail.split_at_mut(d.c);
        match (self, data.as_slice()) {
            (BatchNormOp::Forward(_), &[x, w, b]) => {
                let stats = kernel::statistics(x, d);
                kernel::normalize(x, d, &stats, (w, b), eps, settings.relu, main);
                for (c, &(mean, var)) in stats.iter().enumerate() {
                    first[c] = mean;
                    second[c] = var;
                }
            }
            (BatchNormOp::Vjp(_), &[x, w, packed, cot]) => {
                let stats: Vec<(T, T)> = (0..d.c)
                    .map(|c| (packed[numel + c], packed[numel + d.c + c]))
                    .collect();
                let g = OutputCotangents {
                    y: &cot[..numel],
                    relu_output: settings.relu.then(|| &packed[..numel]),
                    mean: &cot[numel..numel + d.c],
                    var: &cot[numel + d.c..],
                };
                kernel::backward(x, d, &stats, w, eps, &g, main, first, second);
            }
            _ => return Err(Error::invalid(self.op_name(), "wrong number of inputs")),
        }
        Ok(out)
    }
}

impl ExtensionOp for BatchNormOp {
    fn name(&self) -> &str {
        self.op_name()
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, d) = self.dims(inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: vec![d.n * d.c * d.s + 2 * d.c],
        })
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        let specs: Vec<_> = views.iter().map(|v| (v.data.dtype(), v.shape)).collect();
        let (dtype, d) = self.dims(&specs)?;
        match dtype {
            DType::F32 => Ok(HostData::F32(self.run::<f32>(d, views, alloc)?)),
            DType::F64 => Ok(HostData::F64(self.run::<f64>(d, views, alloc)?)),
            other => Err(Error::dtype(self.op_name(), other)),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The family binding the fused batch norm's rules.
struct FusedBatchNorm;

impl ExtensionFamily for FusedBatchNorm {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse("fused.batch_norm", batch_norm_reverse)
            .forward("fused.batch_norm", |args, t| {
                let settings = forward_of(args)?.settings();
                composite_jvp(args, t, |v| composite_flat(v, settings))
            })
    }
}

/// The recorded forward op.
fn forward_of<B: Backend>(args: &RuleArgs<'_, B>) -> Result<BatchNormOp> {
    recorded_op(args, "fused.batch_norm", |op| {
        matches!(op, BatchNormOp::Forward(_))
    })
}

/// The forward op's reverse rule: the fused vjp where no graph is built, the composite's otherwise.
fn batch_norm_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let settings = forward_of(args)?.settings();
    if let Some(grads) = composite_vjp_if_tracked(args, g, |v| composite_flat(v, settings))? {
        return Ok(grads);
    }
    let [x, w, b] = args.inputs else {
        return Err(Error::invalid("fused.batch_norm", "expected three inputs"));
    };
    let op = Arc::new(BatchNormOp::Vjp(settings));
    let flat = Tensor::apply_family_op::<FusedBatchNorm>(op, &[x, w, args.output, g])?;
    split_flat(&flat, &[Some(x), Some(w), Some(b)])
}
