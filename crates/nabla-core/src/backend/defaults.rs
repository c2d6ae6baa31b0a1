//! The provided [`Backend`] methods: each derived from the required core, correct on every backend, and
//! overridden by a backend with a faster kernel of its own.

use crate::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Error, ExtensionOp, HostData,
    HostView, Layout, Pool2dParams, ReduceOp, Result, Scalar, UnaryOp, checked_numel,
    dispatch_dtype,
};
use std::sync::Arc;

/// [`Backend::pad`]: per padded axis, the input (or the previous result) between two filled blocks.
pub(super) fn pad<B: Backend>(
    b: &B,
    x: &B::Storage,
    layout: &Layout,
    pads: &[(usize, usize)],
    value: Scalar,
) -> Result<B::Storage> {
    if pads.len() != layout.rank() {
        return Err(Error::invalid(
            "pad",
            format!(
                "{} (before, after) pairs for a tensor of rank {}",
                pads.len(),
                layout.rank()
            ),
        ));
    }
    let dtype = b.storage_dtype(x);
    let mut current: Option<(B::Storage, Layout)> = None;
    let mut dims = layout.shape().to_vec();
    for (axis, &(before, after)) in pads.iter().enumerate() {
        if before == 0 && after == 0 {
            continue;
        }
        let block = |n: usize| -> Result<(B::Storage, Layout)> {
            let mut block_dims = dims.clone();
            block_dims[axis] = n;
            let len = checked_numel("pad", &block_dims)?;
            Ok((b.full(len, value, dtype)?, Layout::row_major(&block_dims)))
        };
        let (lo, hi) = (block(before)?, block(after)?);
        let (src, src_layout) = match &current {
            Some((s, l)) => (s, l),
            None => (x, layout),
        };
        let joined = b.concat(&[(&lo.0, &lo.1), (src, src_layout), (&hi.0, &hi.1)], axis)?;
        dims[axis] += before + after;
        current = Some((joined, Layout::row_major(&dims)));
    }
    match current {
        Some((s, _)) => Ok(s),
        None => b.copy(x, layout),
    }
}

/// [`Backend::index_select`] as a gather whose index is the 1-D index seen along `axis` and broadcast
/// (stride 0) over every other axis.
pub(super) fn index_select<B: Backend>(
    b: &B,
    x: &B::Storage,
    x_layout: &Layout,
    axis: usize,
    index: &B::Storage,
    index_layout: &Layout,
) -> Result<B::Storage> {
    let rank = x_layout.rank();
    if axis >= rank || index_layout.rank() != 1 {
        return Err(Error::invalid(
            "index_select",
            format!(
                "needs an axis below the rank {rank} of the input and a 1-D index, got axis {axis} \
                 and an index of shape {:?}",
                index_layout.shape()
            ),
        ));
    }
    let mut dims = x_layout.shape().to_vec();
    dims[axis] = index_layout.shape()[0];
    let mut strides = vec![0isize; rank];
    strides[axis] = index_layout.strides()[0];
    let spread = Layout::from_parts(dims, strides, index_layout.offset())?;
    b.gather(x, x_layout, axis, index, &spread)
}

/// [`Backend::one_hot`] encoded on the host from the indices read back.
pub(super) fn one_hot<B: Backend>(
    b: &B,
    index: &B::Storage,
    layout: &Layout,
    classes: usize,
    dtype: DType,
) -> Result<B::Storage> {
    let HostData::I64(indices) = b.read(index, layout)? else {
        return Err(Error::invalid("one_hot", "indices must be int64"));
    };
    let total = checked_numel("one_hot", &[indices.len(), classes])?;
    let mut hot = Vec::with_capacity(indices.len());
    for &i in &indices {
        match usize::try_from(i).ok().filter(|&c| c < classes) {
            Some(c) => hot.push(c),
            None => {
                return Err(Error::invalid(
                    "one_hot",
                    format!("index {i} is outside 0..{classes}"),
                ));
            }
        }
    }
    let data = dispatch_dtype!(dtype, T => {
        let one = <T as crate::Element>::from_scalar(Scalar::I64(1));
        let mut values = vec![T::default(); total];
        for (row, c) in hot.into_iter().enumerate() {
            values[row * classes + c] = one;
        }
        <T as crate::Element>::into_host(values)
    });
    b.upload(data)
}

/// [`Backend::topk`]: the first `k` entries of each sorted lane, copied out.
pub(super) fn topk<B: Backend>(
    b: &B,
    x: &B::Storage,
    layout: &Layout,
    axis: usize,
    k: usize,
    largest: bool,
) -> Result<(B::Storage, B::Storage)> {
    let prim = crate::Primitive::Topk { axis, k, largest };
    prim.output_specs(&[(b.storage_dtype(x), layout.shape())])?;
    let (values, positions) = b.sort(x, layout, axis, largest)?;
    let first_k = Layout::row_major(layout.shape()).slice(axis, 0, k, 1)?;
    Ok((b.copy(&values, &first_k)?, b.copy(&positions, &first_k)?))
}

/// A contiguous copy of the view `layout` of `x` reshaped to `dims`, and its row-major layout.
fn materialise<B: Backend>(
    b: &B,
    x: &B::Storage,
    layout: &Layout,
    dims: &[usize],
) -> Result<(B::Storage, Layout)> {
    Ok((b.copy(x, layout)?, Layout::row_major(dims)))
}

/// `(len, before, after)`: how to cut and pad a spatial axis holding `len` values so that position
/// `t` of the result holds value `t - shift` (zero outside `0..len`), over a result of length `target`.
fn window(len: usize, shift: isize, target: usize) -> Option<(usize, usize, usize, usize)> {
    let (len, target) = (len as isize, target as isize);
    let first = shift.max(0);
    let last = (shift + len).min(target);
    (first < last).then(|| {
        let start = (first - shift) as usize;
        (
            start,
            (last - first) as usize,
            first as usize,
            (target - last) as usize,
        )
    })
}

/// [`Backend::conv2d_input_grad`] as a stride-1 convolution of the output gradient, spread by the
/// stride (zeros between its entries) and shifted by the padding, with the kernel flipped and its
/// channel roles swapped within each group.
pub(super) fn conv2d_input_grad<B: Backend>(
    b: &B,
    dy: &B::Storage,
    dy_layout: &Layout,
    w: &B::Storage,
    w_layout: &Layout,
    input_hw: (usize, usize),
    params: &Conv2dParams,
) -> Result<B::Storage> {
    let (&[n, o, ho, wo], &[_, cg, kh, kw]) = (dy_layout.shape(), w_layout.shape()) else {
        return Err(Error::invalid(
            "conv2d_input_grad",
            "expects a 4-D output gradient and 4-D weights",
        ));
    };
    let g = params.groups.max(1);
    let (og, c) = (o / g, cg * g);
    let (sh, sw) = params.stride;
    let (dh, dw) = params.dilation;
    let dtype = b.storage_dtype(dy);
    // Spread: [n, o, ho, 1, wo, 1] padded to [n, o, ho, sh, wo, sw] is dy with zeros between rows.
    let spread_view = Layout::from_parts(
        vec![n, o, ho, 1, wo, 1],
        {
            let s = dy_layout.strides();
            vec![s[0], s[1], s[2], 0, s[3], 0]
        },
        dy_layout.offset(),
    )?;
    let pads = [(0, 0), (0, 0), (0, 0), (0, sh - 1), (0, 0), (0, sw - 1)];
    let spread = b.pad(dy, &spread_view, &pads, Scalar::F64(0.0))?;
    let (lh, lw) = (ho * sh, wo * sw);
    // Position t of the padded gradient holds spread entry t - shift.
    let shift_h = ((kh - 1) * dh) as isize - params.padding.0 as isize;
    let shift_w = ((kw - 1) * dw) as isize - params.padding.1 as isize;
    let (th, tw) = (input_hw.0 + (kh - 1) * dh, input_hw.1 + (kw - 1) * dw);
    let (Some((h0, hl, hb, ha)), Some((w0, wl, wb, wa))) =
        (window(lh, shift_h, th), window(lw, shift_w, tw))
    else {
        let len = checked_numel("conv2d_input_grad", &[n, c, input_hw.0, input_hw.1])?;
        return b.full(len, Scalar::F64(0.0), dtype);
    };
    let cut = Layout::row_major(&[n, o, lh, lw])
        .slice(2, h0, hl, 1)?
        .slice(3, w0, wl, 1)?;
    let padded = b.pad(
        &spread,
        &cut,
        &[(0, 0), (0, 0), (hb, ha), (wb, wa)],
        Scalar::F64(0.0),
    )?;
    // Kernel [c, og, kh, kw]: within group q, input channel j of output channel i is w[q og + j, i],
    // flipped in space.
    let grouped = Layout::from_parts(
        vec![g, og, cg, kh, kw],
        {
            let s = w_layout.strides();
            vec![s[0] * og as isize, s[0], s[1], s[2], s[3]]
        },
        w_layout.offset(),
    )?
    .permute(&[0, 2, 1, 3, 4])?;
    let (swapped, swapped_layout) = materialise(b, w, &grouped, &[c, og, kh, kw])?;
    let flipped = swapped_layout.flip(2)?.flip(3)?;
    let unit = Conv2dParams {
        stride: (1, 1),
        padding: (0, 0),
        dilation: params.dilation,
        groups: g,
        precision: params.precision,
    };
    b.conv2d(
        &padded,
        &Layout::row_major(&[n, o, th, tw]),
        &swapped,
        &flipped,
        &unit,
    )
}

/// [`Backend::conv2d_weight_grad`] as a convolution of the input (channels as the batch) with the
/// output gradient (batch as channels) as its kernel: stride and dilation trade places, and the
/// result is cut to the kernel size.
pub(super) fn conv2d_weight_grad<B: Backend>(
    b: &B,
    x: &B::Storage,
    x_layout: &Layout,
    dy: &B::Storage,
    dy_layout: &Layout,
    kernel_hw: (usize, usize),
    params: &Conv2dParams,
) -> Result<B::Storage> {
    let (&[n, c, h, wd], &[_, o, ho, wo]) = (x_layout.shape(), dy_layout.shape()) else {
        return Err(Error::invalid(
            "conv2d_weight_grad",
            "expects a 4-D input and a 4-D output gradient",
        ));
    };
    let g = params.groups.max(1);
    let cg = c / g;
    let (kh, kw) = kernel_hw;
    // Input [cg, g n, h, w]: within group q, the batch entries of channel q cg + i.
    let xs = x_layout.strides();
    let x_view = Layout::from_parts(
        vec![cg, g, n, h, wd],
        vec![xs[1], xs[1] * cg as isize, xs[0], xs[2], xs[3]],
        x_layout.offset(),
    )?;
    let (xt, xt_layout) = materialise(b, x, &x_view, &[cg, g * n, h, wd])?;
    // Kernel [o, n, ho, wo]: the output gradient with batch and channel swapped.
    let (dyt, dyt_layout) =
        materialise(b, dy, &dy_layout.permute(&[1, 0, 2, 3])?, &[o, n, ho, wo])?;
    let swapped = Conv2dParams {
        stride: params.dilation,
        padding: params.padding,
        dilation: params.stride,
        groups: g,
        precision: params.precision,
    };
    let full = b.conv2d(&xt, &xt_layout, &dyt, &dyt_layout, &swapped)?;
    let (fh, fw) = swapped
        .checked_output_size("conv2d_weight_grad", (h, wd), (ho, wo))?
        .ok_or_else(|| Error::invalid("conv2d_weight_grad", "the output gradient does not fit"))?;
    // [cg, o, fh, fw] cut to the kernel and reordered to [o, cg, kh, kw].
    let cut = Layout::row_major(&[cg, o, fh, fw])
        .slice(2, 0, kh, 1)?
        .slice(3, 0, kw, 1)?
        .permute(&[1, 0, 2, 3])?;
    b.copy(&full, &cut)
}

/// [`Backend::arg_reduce`]: the smallest position along `axis` holding the lane's maximum (minimum),
/// a NaN counting as both (reductions propagate it), by a reduction, a comparison, a select of
/// positions and a minimum over them.
pub(super) fn arg_reduce<B: Backend>(
    b: &B,
    op: ArgReduceOp,
    x: &B::Storage,
    layout: &Layout,
    axis: usize,
) -> Result<B::Storage> {
    let dims = layout.shape();
    let n = *dims.get(axis).ok_or_else(|| {
        Error::invalid(
            op.name(),
            format!("axis {axis} is out of range for shape {dims:?}"),
        )
    })?;
    let extreme = match op {
        ArgReduceOp::ArgMax => ReduceOp::Max,
        ArgReduceOp::ArgMin => ReduceOp::Min,
    };
    let m = b.reduce(extreme, x, layout, &[axis])?;
    let mut kept = dims.to_vec();
    kept[axis] = 1;
    let spread = Layout::row_major(&kept).broadcast_to(dims)?;
    let mut hit = b.compare(CompareOp::Eq, x, layout, &m, &spread)?;
    let whole = Layout::row_major(dims);
    if b.storage_dtype(x).is_float() {
        let nan_x = b.unary(UnaryOp::IsNan, x, layout)?;
        let nan_m = b.unary(UnaryOp::IsNan, &m, &Layout::row_major(&kept))?;
        let both = b.binary(BinaryOp::And, &nan_x, &whole, &nan_m, &spread)?;
        hit = b.binary(BinaryOp::Or, &hit, &whole, &both, &whole)?;
    }
    let positions = b.upload(HostData::I64((0..n as i64).collect()))?;
    let mut strides = vec![0isize; dims.len()];
    strides[axis] = 1;
    let along = Layout::from_parts(dims.to_vec(), strides, 0)?;
    let past_end = b.full(1, Scalar::I64(n as i64), DType::I64)?;
    let everywhere = Layout::from_parts(dims.to_vec(), vec![0; dims.len()], 0)?;
    let candidates = b.select(&hit, &whole, &positions, &along, &past_end, &everywhere)?;
    b.reduce(ReduceOp::Min, &candidates, &whole, &[axis])
}

/// For each output position of a pooling window and each of its taps (row-major), the flat position
/// `h * W + w` in the input plane it reads. A tap in the padding reads the window's first tap inside
/// the plane instead: a duplicate never changes the maximum, and maps back to the same position.
fn pool_taps(params: &Pool2dParams, (h, w): (usize, usize), (ho, wo): (usize, usize)) -> Vec<i64> {
    let (kh, kw) = params.kernel;
    let mut table = Vec::with_capacity(ho * wo * kh * kw);
    for oh in 0..ho {
        for ow in 0..wo {
            let at = |a: usize, b: usize| {
                let r =
                    (oh * params.stride.0 + a * params.dilation.0).checked_sub(params.padding.0)?;
                let c =
                    (ow * params.stride.1 + b * params.dilation.1).checked_sub(params.padding.1)?;
                (r < h && c < w).then_some((r * w + c) as i64)
            };
            let taps: Vec<Option<i64>> = (0..kh)
                .flat_map(|a| (0..kw).map(move |b| (a, b)))
                .map(|(a, b)| at(a, b))
                .collect();
            let inside = taps.iter().flatten().next().copied().unwrap_or(0);
            table.extend(taps.into_iter().map(|t| t.unwrap_or(inside)));
        }
    }
    table
}

/// [`Backend::max_pool2d`]: every window gathered by a table of tap positions, its maximum by a
/// reduction and its first maximum's tap by an arg-reduction, mapped back to a plane position through
/// the same table.
pub(super) fn max_pool2d<B: Backend>(
    b: &B,
    x: &B::Storage,
    layout: &Layout,
    params: &Pool2dParams,
) -> Result<(B::Storage, B::Storage)> {
    let dims = layout.shape();
    let rank = dims.len();
    let (Some(&h), Some(&w)) = (dims.get(rank.wrapping_sub(2)), dims.last()) else {
        return Err(Error::invalid(
            "max_pool2d",
            "needs at least two dimensions",
        ));
    };
    const OP: &str = "max_pool2d";
    let (ho, wo) = params.checked_output_size(OP, (h, w))?.ok_or_else(|| {
        Error::invalid(
            OP,
            format!("{params:?} does not fit an input plane of {h}x{w}"),
        )
    })?;
    let planes = checked_numel(OP, &dims[..rank - 2])?;
    let taps = checked_numel(OP, &[params.kernel.0, params.kernel.1])?;
    let outputs = checked_numel(OP, &[ho, wo])?;
    // The tap table and the gathered windows are the large buffers.
    crate::check_allocation(OP, &[outputs, taps], DType::I64)?;
    crate::check_allocation(OP, &[planes, outputs, taps], b.storage_dtype(x))?;
    let table = b.upload(HostData::I64(pool_taps(params, (h, w), (ho, wo))))?;
    let x = b.copy(x, layout)?;
    // Windows [planes, outputs * taps], read from each plane through the table (shared by the planes).
    let spread = Layout::from_parts(vec![planes, outputs * taps], vec![0, 1], 0)?;
    let windows = b.gather(&x, &Layout::row_major(&[planes, h * w]), 1, &table, &spread)?;
    let grouped = Layout::row_major(&[planes, outputs, taps]);
    let values = b.reduce(ReduceOp::Max, &windows, &grouped, &[2])?;
    let tap = b.arg_reduce(ArgReduceOp::ArgMax, &windows, &grouped, 2)?;
    let table_view = Layout::from_parts(vec![planes, outputs, taps], vec![0, taps as isize, 1], 0)?;
    let positions = b.gather(
        &table,
        &table_view,
        2,
        &tap,
        &Layout::row_major(&[planes, outputs, 1]),
    )?;
    Ok((values, positions))
}

/// [`Backend::matmul_rounded`]: both operands rounded through the precision's type back to F32
/// ([`super::round_operand`]), then multiplied in f32.
pub(super) fn matmul_rounded<B: Backend>(
    b: &B,
    (x, x_layout): (&B::Storage, &Layout),
    (y, y_layout): (&B::Storage, &Layout),
    precision: crate::Precision,
) -> Result<B::Storage> {
    const OP: &str = "matmul_rounded";
    precision.check_operand(OP, b.storage_dtype(x))?;
    precision.check_operand(OP, b.storage_dtype(y))?;
    let Some(to) = precision.rounding() else {
        return b.matmul(x, x_layout, y, y_layout);
    };
    b.matmul(
        &super::round_operand(b, x, x_layout, to)?,
        &Layout::row_major(x_layout.shape()),
        &super::round_operand(b, y, y_layout, to)?,
        &Layout::row_major(y_layout.shape()),
    )
}

/// [`Backend::extension`]'s default: each input read to the host, the op's
/// [`ExtensionOp::host_kernel`] run there, the result uploaded.
pub(super) fn extension<B: Backend>(
    b: &B,
    op: &Arc<dyn ExtensionOp>,
    inputs: &[(&B::Storage, &Layout)],
) -> Result<B::Storage> {
    let host = inputs
        .iter()
        .map(|(s, l)| b.read(s, l))
        .collect::<Result<Vec<_>>>()?;
    let views: Vec<HostView<'_>> = host
        .iter()
        .zip(inputs)
        .map(|(data, (_, l))| HostView {
            data,
            shape: l.shape(),
        })
        .collect();
    b.upload(op.host_kernel(&views, &crate::SystemAllocator)?)
}
