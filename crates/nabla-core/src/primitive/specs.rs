//! Output shapes and dtypes of every primitive: the one shape rule tracers and batching use.

use super::Primitive;
use crate::{DType, Error, OutputSpec, Result, checked_numel};

/// The shape with `axis` set to `size`, or an error naming `op` when `axis` is out of range.
fn with_axis(op: &'static str, shape: &[usize], axis: usize, size: usize) -> Result<Vec<usize>> {
    let mut s = shape.to_vec();
    *s.get_mut(axis).ok_or_else(|| axis_error(op, shape, axis))? = size;
    Ok(s)
}

fn axis_error(op: &'static str, shape: &[usize], axis: usize) -> Error {
    Error::invalid(op, format!("axis {axis} out of range for shape {shape:?}"))
}

fn dim(op: &'static str, shape: &[usize], i: usize) -> Result<usize> {
    shape
        .get(i)
        .copied()
        .ok_or_else(|| axis_error(op, shape, i))
}

fn spec(dtype: DType, shape: Vec<usize>) -> Vec<OutputSpec> {
    vec![OutputSpec { dtype, shape }]
}

/// Values of `x`'s dtype and their `I64` positions, both of `shape`.
fn values_and_indices(dtype: DType, shape: Vec<usize>) -> Vec<OutputSpec> {
    vec![
        OutputSpec {
            dtype,
            shape: shape.clone(),
        },
        OutputSpec {
            dtype: DType::I64,
            shape,
        },
    ]
}

impl Primitive {
    /// Number of inputs the primitive takes, or `None` when any number is allowed (concatenation,
    /// extension ops and fused kernels).
    pub fn arity(&self) -> Option<usize> {
        match self {
            Primitive::Constant(_) | Primitive::Full { .. } | Primitive::Random { .. } => Some(0),
            Primitive::Copy
            | Primitive::Unary(_)
            | Primitive::Cast(_)
            | Primitive::Reduce { .. }
            | Primitive::ArgReduce { .. }
            | Primitive::Cumsum { .. }
            | Primitive::Pad { .. }
            | Primitive::OneHot { .. }
            | Primitive::Sort { .. }
            | Primitive::Topk { .. }
            | Primitive::MaxPool2d(_) => Some(1),
            Primitive::Binary(_)
            | Primitive::Compare(_)
            | Primitive::Matmul
            | Primitive::MatmulRounded(_)
            | Primitive::Gather { .. }
            | Primitive::IndexSelect { .. }
            | Primitive::Conv2d(_)
            | Primitive::Conv2dInputGrad { .. }
            | Primitive::Conv2dWeightGrad { .. } => Some(2),
            Primitive::Select | Primitive::ScatterAdd { .. } => Some(3),
            Primitive::Concat { .. } | Primitive::Extension(_) | Primitive::Fused { .. } => None,
        }
    }

    /// An error naming the primitive when it does not take `given` inputs.
    pub fn check_arity(&self, given: usize) -> Result<()> {
        match self.arity() {
            Some(n) if n != given => Err(Error::invalid(
                self.kind().name(),
                format!("{} takes {n} inputs, got {given}", self.name()),
            )),
            _ => Ok(()),
        }
    }

    /// The dtype and shape of each output for inputs of these dtypes and (view) shapes: one output,
    /// or two (values and `I64` positions) for sort, top-k and max pooling. An error names the
    /// primitive when the number of inputs is wrong or an axis or size does not fit; the backend
    /// kernels check the remaining conditions (matching shapes, dtypes) when they run.
    pub fn output_specs(&self, inputs: &[(DType, &[usize])]) -> Result<Vec<OutputSpec>> {
        self.check_arity(inputs.len())?;
        let name = self.kind().name();
        let input = |i: usize| inputs.get(i).copied().ok_or_else(|| no_input(name, i));
        let same = |i: usize| -> Result<Vec<OutputSpec>> {
            let (dtype, shape) = input(i)?;
            Ok(spec(dtype, shape.to_vec()))
        };
        Ok(match self {
            Primitive::Constant(data) => spec(data.dtype(), vec![data.len()]),
            Primitive::Full { len, dtype, .. } | Primitive::Random { len, dtype, .. } => {
                spec(*dtype, vec![*len])
            }
            Primitive::Copy
            | Primitive::Binary(_)
            | Primitive::Cumsum { .. }
            | Primitive::ScatterAdd { .. } => same(0)?,
            Primitive::Unary(op) => {
                let (dtype, shape) = input(0)?;
                let out = op
                    .output_dtype(dtype)
                    .ok_or_else(|| Error::dtype(op.name(), dtype))?;
                spec(out, shape.to_vec())
            }
            Primitive::Compare(_) => spec(DType::Bool, input(0)?.1.to_vec()),
            Primitive::Select => spec(input(1)?.0, input(0)?.1.to_vec()),
            Primitive::Cast(dtype) => spec(*dtype, input(0)?.1.to_vec()),
            Primitive::Reduce { axes, .. } => {
                let (dtype, shape) = input(0)?;
                let mut out = shape.to_vec();
                for &a in axes {
                    out = with_axis(name, &out, a, 1)?;
                }
                spec(dtype, out)
            }
            Primitive::ArgReduce { axis, .. } => {
                spec(DType::I64, with_axis(name, input(0)?.1, *axis, 1)?)
            }
            Primitive::Matmul | Primitive::MatmulRounded(_) => {
                let ((dtype, a), (_, b)) = (input(0)?, input(1)?);
                if a.len() < 2 || b.len() < 2 {
                    return Err(Error::shapes("matmul", a, b));
                }
                let mut out = a.to_vec();
                out[a.len() - 1] = b[b.len() - 1];
                spec(dtype, out)
            }
            Primitive::Pad { pads, .. } => {
                let (dtype, shape) = input(0)?;
                if pads.len() != shape.len() {
                    return Err(Error::invalid(
                        "pad",
                        format!("{} pads for a rank-{} input", pads.len(), shape.len()),
                    ));
                }
                let out = shape
                    .iter()
                    .zip(pads)
                    .map(|(&d, &(lo, hi))| d.checked_add(lo)?.checked_add(hi))
                    .collect::<Option<Vec<usize>>>()
                    .ok_or_else(|| {
                        Error::invalid(
                            "pad",
                            format!("padding {pads:?} of shape {shape:?} overflows usize"),
                        )
                    })?;
                spec(dtype, out)
            }
            Primitive::Concat { axis } => {
                let (dtype, shape) = input(0)?;
                let total = inputs.iter().try_fold(0usize, |total, (_, s)| {
                    total
                        .checked_add(dim(name, s, *axis)?)
                        .ok_or_else(|| Error::invalid(name, "the joined axis overflows usize"))
                })?;
                spec(dtype, with_axis(name, shape, *axis, total)?)
            }
            Primitive::Gather { .. } => spec(input(0)?.0, input(1)?.1.to_vec()),
            Primitive::IndexSelect { axis } => {
                let ((dtype, x), (_, index)) = (input(0)?, input(1)?);
                spec(
                    dtype,
                    with_axis(name, x, *axis, checked_numel(name, index)?)?,
                )
            }
            Primitive::OneHot { classes, dtype } => {
                let mut out = input(0)?.1.to_vec();
                out.push(*classes);
                spec(*dtype, out)
            }
            Primitive::Sort { axis, .. } => {
                let (dtype, shape) = input(0)?;
                dim(name, shape, *axis)?;
                values_and_indices(dtype, shape.to_vec())
            }
            Primitive::Topk { axis, k, .. } => {
                let (dtype, shape) = input(0)?;
                let n = dim(name, shape, *axis)?;
                if *k > n {
                    return Err(Error::invalid(
                        "topk",
                        format!(
                            "k = {k} is larger than the size {n} of axis {axis} of shape {shape:?}"
                        ),
                    ));
                }
                values_and_indices(dtype, with_axis(name, shape, *axis, *k)?)
            }
            Primitive::MaxPool2d(params) => {
                let (dtype, shape) = input(0)?;
                let rank = shape.len();
                let (h, w) = (
                    dim(name, shape, rank.wrapping_sub(2))?,
                    dim(name, shape, rank.wrapping_sub(1))?,
                );
                let (ho, wo) = params.checked_output_size(name, (h, w))?.ok_or_else(|| {
                    Error::invalid(
                        "max_pool2d",
                        format!("parameters {params:?} give no output for {h}x{w}"),
                    )
                })?;
                let mut out = shape.to_vec();
                out[rank - 2] = ho;
                out[rank - 1] = wo;
                values_and_indices(dtype, out)
            }
            Primitive::Conv2d(params) => {
                let ((dtype, x), (_, w)) = (input(0)?, input(1)?);
                let (n, h, wd) = (dim(name, x, 0)?, dim(name, x, 2)?, dim(name, x, 3)?);
                let (c_out, kh, kw) = (dim(name, w, 0)?, dim(name, w, 2)?, dim(name, w, 3)?);
                let (ho, wo) = params
                    .checked_output_size(name, (h, wd), (kh, kw))?
                    .ok_or_else(|| Error::shapes("conv2d", x, w))?;
                spec(dtype, vec![n, c_out, ho, wo])
            }
            Primitive::Conv2dInputGrad { input_hw, params } => {
                let ((dtype, dy), (_, w)) = (input(0)?, input(1)?);
                let n = dim(name, dy, 0)?;
                let c_in = params.input_channels(name, dim(name, w, 1)?)?;
                spec(dtype, vec![n, c_in, input_hw.0, input_hw.1])
            }
            Primitive::Conv2dWeightGrad { kernel_hw, params } => {
                let ((dtype, x), (_, dy)) = (input(0)?, input(1)?);
                let c_out = dim(name, dy, 1)?;
                let c_in = dim(name, x, 1)? / params.groups.max(1);
                spec(dtype, vec![c_out, c_in, kernel_hw.0, kernel_hw.1])
            }
            Primitive::Extension(call) => vec![call.0.output_spec(inputs)?],
            Primitive::Fused { kernel, shape } => {
                let views_fit = inputs.iter().all(|(_, s)| *s == shape.as_slice());
                if inputs.len() != kernel.num_inputs() || !views_fit {
                    return Err(Error::invalid(
                        "fused",
                        format!(
                            "kernel {kernel} takes {} inputs of shape {shape:?}, got {:?}",
                            kernel.num_inputs(),
                            inputs.iter().map(|(_, s)| s).collect::<Vec<_>>()
                        ),
                    ));
                }
                spec(kernel.output_dtype(), shape.clone())
            }
        })
    }
}

fn no_input(op: &'static str, i: usize) -> Error {
    Error::invalid(op, format!("no input {i}"))
}
