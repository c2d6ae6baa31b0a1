//! The batching table: how a node of a per-example program runs on operands that carry a leading
//! batch dimension (or not). One entry per primitive, routing to the batching rule in its family's
//! module beside the family's derivative rules; the primitives without derivative rules (sources,
//! comparisons, arg-reductions, sort, top-k, pooling, extension and fused calls) have theirs here. The
//! match is exhaustive, so a new primitive does not compile until it has a rule. Every rule is written
//! in differentiable tensor ops, so a batched replay is itself differentiable (`grad` of `vmap`) and
//! traceable (`vmap` inside a traced program, nested `vmap`).

use super::{indexing, linalg, movement, reduce};
use crate::trace::ValueInfo;
use crate::vmap::{BatchValue, any_batched, batch_axis, expand_all};
use crate::{Precision, Tensor};
use nabla_core::{ArgReduceOp, Backend, ExtensionCall, Primitive, Result};

/// The outputs of `primitive` applied to `operands`, where a batched operand has the batch dimension
/// (of size `batch`) in front; `outputs` are the per-example output specs.
pub(crate) fn batch<B: Backend>(
    primitive: &Primitive,
    operands: &[BatchValue<B>],
    outputs: &[ValueInfo],
    batch: usize,
    backend: &B,
) -> Result<Vec<BatchValue<B>>> {
    let lead = any_batched(operands);
    let shift = |axis: usize| batch_axis(axis, lead);
    let x = |i: usize| &operands[i].tensor;
    let one = |t: Tensor<B>| Ok(vec![BatchValue::new(t, lead)]);
    let two = |(a, b): (Tensor<B>, Tensor<B>)| {
        Ok(vec![BatchValue::new(a, lead), BatchValue::new(b, lead)])
    };
    match primitive {
        Primitive::Constant(_) | Primitive::Full { .. } | Primitive::Random { .. } => {
            source(primitive, outputs, backend)
        }
        // Elementwise ops broadcast an unbatched operand along the batch dimension by themselves.
        Primitive::Copy => one(x(0).contiguous()?),
        Primitive::Unary(op) => one(x(0).unary(*op)?),
        Primitive::Binary(op) => one(x(0).binary(*op, x(1))?),
        Primitive::Compare(op) => one(x(0).compare(*op, x(1))?),
        Primitive::Select => one(x(0).where_(x(1), x(2))?),
        Primitive::Cast(dtype) => one(x(0).cast(*dtype)?),
        Primitive::Reduce { op, axes } => one(reduce::reduce_batch(*op, axes, &operands[0])?),
        Primitive::ArgReduce { op, axis } => one(match op {
            ArgReduceOp::ArgMax => x(0).argmax(shift(*axis), true)?,
            ArgReduceOp::ArgMin => x(0).argmin(shift(*axis), true)?,
        }),
        Primitive::Cumsum { axis } => one(reduce::cumsum_batch(*axis, &operands[0])?),
        Primitive::Matmul => one(linalg::matmul_batch(operands, batch, Precision::Full)?),
        Primitive::MatmulRounded(precision) => {
            one(linalg::matmul_batch(operands, batch, *precision)?)
        }
        Primitive::Pad { pads, value } => one(movement::pad_batch(pads, *value, &operands[0])?),
        Primitive::Concat { axis } => one(movement::concat_batch(*axis, operands, batch)?),
        Primitive::Gather { axis } => one(indexing::gather_batch(*axis, operands, batch)?),
        Primitive::IndexSelect { axis } => {
            one(indexing::index_select_batch(*axis, operands, batch)?)
        }
        Primitive::ScatterAdd { axis } => one(indexing::scatter_add_batch(*axis, operands, batch)?),
        Primitive::OneHot { classes, dtype } => one(x(0).one_hot(*classes, *dtype)?),
        Primitive::Sort { axis, descending } => two(x(0).sort(shift(*axis), *descending)?),
        Primitive::Topk { axis, k, largest } => two(x(0).topk(*k, shift(*axis), *largest)?),
        // Pooling maps over every leading dimension, the batch included.
        Primitive::MaxPool2d(params) => two(x(0).max_pool2d(params)?),
        Primitive::Conv2d(params) => {
            one(linalg::conv_batch(operands, params, batch, |x, w, p| {
                x.conv2d_with(w, p)
            })?)
        }
        Primitive::Conv2dInputGrad { input_hw, params } => {
            one(linalg::conv_batch(operands, params, batch, |g, w, p| {
                g.conv2d_input_grad(w, *input_hw, p)
            })?)
        }
        Primitive::Conv2dWeightGrad { kernel_hw, params } => one(linalg::conv2d_weight_grad_batch(
            operands, *kernel_hw, params, batch,
        )?),
        Primitive::Extension(call) => one(extension(call, operands, batch)?),
        Primitive::Fused { kernel, .. } => {
            let inputs = expand_all(operands, batch)?;
            Tensor::fused_many(kernel, inputs, &[])?
                .into_iter()
                .map(|t| Ok(BatchValue::new(t, lead)))
                .collect()
        }
    }
}

/// A source (constant, fill, random draw) has no operand: the same value for every example (for
/// random draws, JAX's semantics for a key that is not batched).
fn source<B: Backend>(
    primitive: &Primitive,
    outputs: &[ValueInfo],
    backend: &B,
) -> Result<Vec<BatchValue<B>>> {
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

/// An extension op: one call on batched inputs when the op maps over leading dimensions (linear
/// algebra does), otherwise one call per example, stacked.
fn extension<B: Backend>(
    call: &ExtensionCall,
    operands: &[BatchValue<B>],
    batch: usize,
) -> Result<Tensor<B>> {
    let op = &call.0;
    if !any_batched(operands) || op.maps_leading_dims() {
        let inputs = expand_all(operands, batch)?;
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
