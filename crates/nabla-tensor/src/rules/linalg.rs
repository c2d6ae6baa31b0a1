//! The matrix product and the three convolutions (which are each other's transposes): each saves both
//! operands; reverse, forward and batching rules.

use super::{SavedValues, sum_terms};
use crate::vmap::BatchValue;
use crate::{Precision, Tensor};
use nabla_core::{Backend, Conv2dParams, Result};

/// For `c = a @ b` with equal batch dimensions: `da = g @ bᵀ`, `db = aᵀ @ g`, multiplied at the
/// product's `precision`.
pub(super) fn matmul<B: Backend>(
    s: &SavedValues<B>,
    g: &Tensor<B>,
    needs: &[bool],
    precision: Precision,
) -> Result<Vec<Option<Tensor<B>>>> {
    let (a, b) = (s.input(0)?, s.input(1)?);
    // Each gradient is computed in its input's layout: for a transposed view (a `Linear` weight seen
    // as `w.t()`), `(gᵀ a)ᵀ` instead of `aᵀ g`, so that the gradient reaching the parameter through
    // the transpose is contiguous (and later elementwise passes over it, such as optimizer updates,
    // read memory in order).
    let da = |a: &Tensor<B>| match is_transposed(a) {
        true => b.matmul_with(&g.t()?, precision)?.t(),
        false => g.matmul_with(&b.t()?, precision),
    };
    Ok(vec![
        needs[0].then(|| da(a)).transpose()?,
        needs[1]
            .then(|| rhs_cotangent(a, g, is_transposed(b), precision))
            .transpose()?,
    ])
}

/// `aᵀ @ g`, the cotangent of the right operand of `c = a @ b` for the cotangent `g` of `c`, computed
/// as `(gᵀ a)ᵀ` when `b` is a transposed view (`rhs_transposed`), so that it is contiguous in `b`'s
/// layout.
fn rhs_cotangent<B: Backend>(
    a: &Tensor<B>,
    g: &Tensor<B>,
    rhs_transposed: bool,
    precision: Precision,
) -> Result<Tensor<B>> {
    let product = rhs_cotangent_untransposed(a, g, rhs_transposed, precision)?;
    if rhs_transposed {
        product.t()
    } else {
        Ok(product)
    }
}

/// [`rhs_cotangent`] before its final transpose: `aᵀ g`, or `gᵀ a` when `b` is a transposed view. The
/// reverse pass sums these for several products sharing one right operand (contiguous plus contiguous
/// stays contiguous) and transposes the sum once (see `Cotangent::add_product`).
pub(crate) fn rhs_cotangent_untransposed<B: Backend>(
    a: &Tensor<B>,
    g: &Tensor<B>,
    rhs_transposed: bool,
    precision: Precision,
) -> Result<Tensor<B>> {
    match rhs_transposed {
        true => g.t()?.matmul_with(a, precision),
        false => a.t()?.matmul_with(g, precision),
    }
}

/// `true` when the last two dimensions of `t` are a dense column-major matrix (a transposed view).
pub(crate) fn is_transposed<B: Backend>(t: &Tensor<B>) -> bool {
    let (shape, strides) = (t.shape(), t.layout().strides());
    let r = shape.len();
    r >= 2
        && shape[r - 2] > 1
        && shape[r - 1] > 1
        && strides[r - 2] == 1
        && strides[r - 1] == shape[r - 2] as isize
}

fn spatial<B: Backend>(t: &Tensor<B>) -> (usize, usize) {
    (t.shape()[2], t.shape()[3])
}

/// `y = conv2d(x, w)`: `dx = conv2d_input_grad(g, w)`, `dw = conv2d_weight_grad(x, g)`.
pub(super) fn conv2d<B: Backend>(
    p: &Conv2dParams,
    s: &SavedValues<B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let (x, w) = (s.input(0)?, s.input(1)?);
    Ok(vec![
        needs[0]
            .then(|| g.conv2d_input_grad(w, spatial(x), p))
            .transpose()?,
        needs[1]
            .then(|| x.conv2d_weight_grad(g, spatial(w), p))
            .transpose()?,
    ])
}

/// `y = conv2d_input_grad(h, w)` is linear in `h` and in `w`: `dh = conv2d(g, w)`,
/// `dw = conv2d_weight_grad(g, h)`.
pub(super) fn conv2d_input_grad<B: Backend>(
    p: &Conv2dParams,
    s: &SavedValues<B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let (h, w) = (s.input(0)?, s.input(1)?);
    Ok(vec![
        needs[0].then(|| g.conv2d_with(w, p)).transpose()?,
        needs[1]
            .then(|| g.conv2d_weight_grad(h, spatial(w), p))
            .transpose()?,
    ])
}

/// `y = conv2d_weight_grad(x, h)` is linear in `x` and in `h`: `dx = conv2d_input_grad(h, g)`,
/// `dh = conv2d(x, g)`.
pub(super) fn conv2d_weight_grad<B: Backend>(
    p: &Conv2dParams,
    s: &SavedValues<B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let (x, h) = (s.input(0)?, s.input(1)?);
    Ok(vec![
        needs[0]
            .then(|| h.conv2d_input_grad(g, spatial(x), p))
            .transpose()?,
        needs[1].then(|| x.conv2d_with(g, p)).transpose()?,
    ])
}

/// The tangent `p + pᵀ` of a Gram product from its one product `p`: `ẋ xᵀ` for `x @ xᵀ` (whose
/// tangent `ẋ xᵀ + x ẋᵀ` is `p + pᵀ`), `xᵀ ẋ` for `xᵀ @ x` (tangent `ẋᵀ x + xᵀ ẋ`): one product
/// instead of two.
///
/// For real dtypes each element of the second product is the same sum of the same products, in the
/// same order of the contracted axis, as the matching element of the first's transpose
/// (multiplication commutes exactly), so on a backend whose matrix product sums every element in one
/// order (the CPU's) the tangent is bit for bit the two-product one; complex products round their
/// imaginary parts in an operand-dependent order and agree to rounding. The reverse pass of `p + pᵀ`
/// adds the two cotangents before its one product, so a Hessian-vector product taken reverse over
/// forward saves a product there too.
pub(crate) fn gram_jvp<B: Backend>(lhs: &Tensor<B>, rhs: &Tensor<B>) -> Result<Tensor<B>> {
    let p = lhs.matmul(rhs)?;
    p.add(&p.t()?)
}

/// The tangent of a bilinear op `f(a, b)` from its two partial maps: `f(ta, b) + f(a, tb)`.
pub(super) fn bilinear_jvp<B: Backend>(
    s: &SavedValues<B>,
    t: &[Option<Tensor<B>>],
    f: impl Fn(&Tensor<B>, &Tensor<B>) -> Result<Tensor<B>>,
) -> Result<Option<Tensor<B>>> {
    let (a, b) = (s.input(0)?, s.input(1)?);
    let da = t[0].as_ref().map(|ta| f(ta, b)).transpose()?;
    let db = t[1].as_ref().map(|tb| f(a, tb)).transpose()?;
    sum_terms([da, db])
}

/// Batching the matrix product: a batched left operand against a shared matrix is one tall product;
/// otherwise the product broadcasts over the batch dimension.
pub(super) fn matmul_batch<B: Backend>(
    operands: &[BatchValue<B>],
    batch: usize,
    precision: Precision,
) -> Result<Tensor<B>> {
    let (a, b) = (&operands[0], &operands[1]);
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

/// Batching a convolution-like op of `[images, weights]` (the convolution, or its input gradient from output
/// gradients): batched images against shared weights fold the batch into the images; batched weights
/// make the batch a set of channel groups.
pub(super) fn conv_batch<B: Backend>(
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

/// Batching the weight gradient: per-example weight gradients: images and output gradients become `B·g` channel groups, whose
/// weight gradient is the stack of the per-example ones.
pub(super) fn conv2d_weight_grad_batch<B: Backend>(
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
