//! One batching rule per primitive: how a node of a per-example program runs on operands that carry
//! a leading batch dimension (or not). The match is exhaustive, so a new primitive does not compile
//! until it has a rule. Every rule is written in differentiable tensor ops, so a batched replay is
//! itself differentiable (`grad` of `vmap`) and traceable (`vmap` inside a traced program, nested
//! `vmap`).

use super::BatchValue;
use crate::trace::ValueInfo;
use crate::{Precision, Tensor};
use nabla_core::{ArgReduceOp, Backend, Conv2dParams, ExtensionCall, Primitive, Result};

/// The outputs of `primitive` applied to `operands`, where a batched operand has the batch dimension
/// (of size `batch`) in front; `outputs` are the per-example output specs.
pub(super) fn apply<B: Backend>(
    primitive: &Primitive,
    operands: &[BatchValue<B>],
    outputs: &[ValueInfo],
    batch: usize,
    backend: &B,
) -> Result<Vec<BatchValue<B>>> {
    let lead = operands.iter().any(|v| v.batched);
    let shift = |axis: usize| (axis + usize::from(lead)) as isize;
    let x = |i: usize| &operands[i].tensor;
    let one = |t: Tensor<B>| Ok(vec![BatchValue::new(t, lead)]);
    match primitive {
        Primitive::Constant(_) | Primitive::Full { .. } | Primitive::Random { .. } => {
            // No operand: the same value for every example (for random draws, JAX's semantics for a
            // key that is not batched).
            let storages = primitive.dispatch(backend, &[])?;
            storages
                .into_iter()
                .zip(outputs)
                .map(|(s, info)| {
                    let layout = nabla_core::Layout::contiguous(info.shape.clone());
                    Ok(BatchValue::new(
                        Tensor::from_storage(s, layout, backend)?,
                        false,
                    ))
                })
                .collect()
        }
        Primitive::Copy => one(x(0).contiguous()?),
        Primitive::Unary(op) => one(x(0).unary(*op)?),
        Primitive::Binary(op) => one(x(0).binary(*op, x(1))?),
        Primitive::Compare(op) => one(x(0).compare(*op, x(1))?),
        Primitive::Select => one(x(0).where_(x(1), x(2))?),
        Primitive::Cast(dtype) => one(x(0).cast(*dtype)?),
        Primitive::Reduce { op, axes } => {
            if axes.is_empty() {
                return one(x(0).clone());
            }
            let axes: Vec<isize> = axes.iter().map(|&a| shift(a)).collect();
            one(x(0).reduce(*op, &axes, true)?)
        }
        Primitive::ArgReduce { op, axis } => one(match op {
            ArgReduceOp::ArgMax => x(0).argmax(shift(*axis), true)?,
            ArgReduceOp::ArgMin => x(0).argmin(shift(*axis), true)?,
        }),
        Primitive::Cumsum { axis } => one(x(0).cumsum(shift(*axis))?),
        Primitive::Matmul => one(matmul(&operands[0], &operands[1], batch, Precision::Full)?),
        Primitive::MatmulRounded(precision) => {
            one(matmul(&operands[0], &operands[1], batch, *precision)?)
        }
        Primitive::Pad { pads, value } => {
            let mut all = if lead { vec![(0, 0)] } else { Vec::new() };
            all.extend(pads);
            one(x(0).pad(&all, *value)?)
        }
        Primitive::Concat { axis } => {
            let parts = expand_all(operands, lead, batch)?;
            one(Tensor::cat(
                &parts.iter().collect::<Vec<_>>(),
                shift(*axis),
            )?)
        }
        Primitive::Gather { axis } => {
            let [src, index] = expand_n(operands, lead, batch)?;
            one(src.gather(shift(*axis), &index)?)
        }
        Primitive::IndexSelect { axis } => one(index_select(operands, *axis, batch)?),
        Primitive::ScatterAdd { axis } => {
            let [dst, index, src] = expand_n(operands, lead, batch)?;
            one(dst.scatter_add(shift(*axis), &index, &src)?)
        }
        Primitive::OneHot { classes, dtype } => one(x(0).one_hot(*classes, *dtype)?),
        Primitive::Sort { axis, descending } => {
            let (values, positions) = x(0).sort(shift(*axis), *descending)?;
            two(values, positions, lead)
        }
        Primitive::Topk { axis, k, largest } => {
            let (values, positions) = x(0).topk(*k, shift(*axis), *largest)?;
            two(values, positions, lead)
        }
        // Pooling maps over every leading dimension, the batch included.
        Primitive::MaxPool2d(params) => {
            let (values, positions) = x(0).max_pool2d(params)?;
            two(values, positions, lead)
        }
        Primitive::Conv2d(params) => one(conv_with_weights(operands, params, batch, |x, w, p| {
            x.conv2d_with(w, p)
        })?),
        Primitive::Conv2dInputGrad { input_hw, params } => {
            one(conv_with_weights(operands, params, batch, |g, w, p| {
                g.conv2d_input_grad(w, *input_hw, p)
            })?)
        }
        Primitive::Conv2dWeightGrad { kernel_hw, params } => {
            one(conv2d_weight_grad(operands, *kernel_hw, params, batch)?)
        }
        Primitive::Extension(call) => one(extension(call, operands, lead, batch)?),
        Primitive::Fused { kernel, .. } => {
            let inputs = expand_all(operands, lead, batch)?;
            Tensor::fused_many(kernel, inputs, &[])?
                .into_iter()
                .map(|t| Ok(BatchValue::new(t, lead)))
                .collect()
        }
    }
}

fn two<B: Backend>(a: Tensor<B>, b: Tensor<B>, lead: bool) -> Result<Vec<BatchValue<B>>> {
    Ok(vec![BatchValue::new(a, lead), BatchValue::new(b, lead)])
}

/// Every operand with the batch dimension (unbatched ones broadcast along it) when `lead`.
fn expand_all<B: Backend>(
    operands: &[BatchValue<B>],
    lead: bool,
    batch: usize,
) -> Result<Vec<Tensor<B>>> {
    operands
        .iter()
        .map(|v| {
            if lead {
                v.expanded(batch)
            } else {
                Ok(v.tensor.clone())
            }
        })
        .collect()
}

fn expand_n<B: Backend, const N: usize>(
    operands: &[BatchValue<B>],
    lead: bool,
    batch: usize,
) -> Result<[Tensor<B>; N]> {
    let all = expand_all(operands, lead, batch)?;
    all.try_into().map_err(|v: Vec<Tensor<B>>| {
        nabla_core::Error::invalid("vmap", format!("expected {N} operands, got {}", v.len()))
    })
}

/// A batched matrix product: a batched left operand against a shared matrix is one tall product.
fn matmul<B: Backend>(
    a: &BatchValue<B>,
    b: &BatchValue<B>,
    batch: usize,
    precision: Precision,
) -> Result<Tensor<B>> {
    if a.batched && !b.batched && b.tensor.rank() == 2 {
        let (m, k) = (a.tensor.shape()[a.tensor.rank() - 2], b.tensor.shape()[0]);
        let mut out_shape = a.tensor.shape().to_vec();
        let n = b.tensor.shape()[1];
        *out_shape.last_mut().expect("rank >= 2") = n;
        let rows = batch
            * a.tensor.shape()[1..a.tensor.rank() - 2]
                .iter()
                .product::<usize>()
            * m;
        return a
            .tensor
            .reshape([rows, k])?
            .matmul_with(&b.tensor, precision)?
            .reshape(out_shape);
    }
    a.tensor.matmul_with(&b.tensor, precision)
}

/// `index_select` with a batched 1-D index becomes a gather along the shifted axis.
fn index_select<B: Backend>(
    operands: &[BatchValue<B>],
    axis: usize,
    batch: usize,
) -> Result<Tensor<B>> {
    let (x, index) = (&operands[0], &operands[1]);
    if !index.batched {
        return x
            .tensor
            .index_select((axis + usize::from(x.batched)) as isize, &index.tensor);
    }
    let x = x.expanded(batch)?;
    let count = index.tensor.shape()[1];
    let mut index_shape = vec![1; x.rank()];
    index_shape[0] = batch;
    index_shape[axis + 1] = count;
    let mut target = x.shape().to_vec();
    target[axis + 1] = count;
    let index = index.tensor.reshape(index_shape)?.broadcast_to(target)?;
    x.gather((axis + 1) as isize, &index)
}

/// Folds the batch into the images of `[B, N, C, H, W]`.
fn fold<B: Backend>(t: &Tensor<B>) -> Result<Tensor<B>> {
    let s = t.shape();
    t.reshape([s[0] * s[1], s[2], s[3], s[4]])
}

/// `[B, N, C, H, W]` as `[N, B·C, H, W]`: the batch becomes channel groups.
fn to_groups<B: Backend>(t: &Tensor<B>) -> Result<Tensor<B>> {
    let s = t.shape();
    t.permute(&[1, 0, 2, 3, 4])?
        .reshape([s[1], s[0] * s[2], s[3], s[4]])
}

/// `[N, B·C, H, W]` back to `[B, N, C, H, W]`.
fn from_groups<B: Backend>(t: &Tensor<B>, batch: usize) -> Result<Tensor<B>> {
    let s = t.shape();
    t.reshape([s[0], batch, s[1] / batch, s[2], s[3]])?
        .permute(&[1, 0, 2, 3, 4])
}

/// Per-example weights `[B, O, C/g, KH, KW]` as the `[B·O, C/g, KH, KW]` weights of `B·g` groups.
fn grouped_weights<B: Backend>(w: &Tensor<B>) -> Result<Tensor<B>> {
    let s = w.shape();
    w.reshape([s[0] * s[1], s[2], s[3], s[4]])
}

fn grouped(params: &Conv2dParams, batch: usize) -> Conv2dParams {
    Conv2dParams {
        groups: params.groups * batch,
        ..*params
    }
}

fn unfold<B: Backend>(t: &Tensor<B>, batch: usize) -> Result<Tensor<B>> {
    let s = t.shape();
    t.reshape([batch, s[0] / batch, s[1], s[2], s[3]])
}

/// A convolution-like op of `[images, weights]` (the convolution, or its input gradient from output
/// gradients): batched images against shared weights fold the batch into the images; batched weights
/// make the batch a set of channel groups.
fn conv_with_weights<B: Backend>(
    operands: &[BatchValue<B>],
    params: &Conv2dParams,
    batch: usize,
    op: impl Fn(&Tensor<B>, &Tensor<B>, &Conv2dParams) -> Result<Tensor<B>>,
) -> Result<Tensor<B>> {
    let (x, w) = (&operands[0], &operands[1]);
    match (x.batched, w.batched) {
        (false, false) => op(&x.tensor, &w.tensor, params),
        (true, false) => unfold(&op(&fold(&x.tensor)?, &w.tensor, params)?, batch),
        (_, true) => {
            let x = to_groups(&x.expanded(batch)?)?;
            let y = op(&x, &grouped_weights(&w.tensor)?, &grouped(params, batch))?;
            from_groups(&y, batch)
        }
    }
}

/// Per-example weight gradients: images and output gradients become `B·g` channel groups, whose
/// weight gradient is the stack of the per-example ones.
fn conv2d_weight_grad<B: Backend>(
    operands: &[BatchValue<B>],
    kernel_hw: (usize, usize),
    params: &Conv2dParams,
    batch: usize,
) -> Result<Tensor<B>> {
    let (x, g) = (&operands[0], &operands[1]);
    if !x.batched && !g.batched {
        return x.tensor.conv2d_weight_grad(&g.tensor, kernel_hw, params);
    }
    let x = to_groups(&x.expanded(batch)?)?;
    let g = to_groups(&g.expanded(batch)?)?;
    let dw = x.conv2d_weight_grad(&g, kernel_hw, &grouped(params, batch))?;
    let s = dw.shape();
    dw.reshape([batch, s[0] / batch, s[1], s[2], s[3]])
}

/// An extension op: one call on batched inputs when the op maps over leading dimensions (linear
/// algebra does), otherwise one call per example, stacked.
fn extension<B: Backend>(
    call: &ExtensionCall,
    operands: &[BatchValue<B>],
    lead: bool,
    batch: usize,
) -> Result<Tensor<B>> {
    let op = &call.0;
    if !lead || op.maps_leading_dims() {
        let inputs = expand_all(operands, lead, batch)?;
        return Tensor::apply_extension(op.clone(), &inputs.iter().collect::<Vec<_>>());
    }
    let mut results = Vec::with_capacity(batch);
    for b in 0..batch {
        let inputs = operands
            .iter()
            .map(|v| {
                if v.batched {
                    v.tensor.select_index(0, b as isize)
                } else {
                    Ok(v.tensor.clone())
                }
            })
            .collect::<Result<Vec<_>>>()?;
        results.push(Tensor::apply_extension(
            op.clone(),
            &inputs.iter().collect::<Vec<_>>(),
        )?);
    }
    Tensor::stack(&results.iter().collect::<Vec<_>>(), 0)
}
