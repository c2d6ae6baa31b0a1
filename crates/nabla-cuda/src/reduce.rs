//! Reductions over a set of axes and the cumulative sum.
//!
//! A reduction walks two index spaces: the kept dimensions (one output each) and the reduced ones. A
//! group of `G` threads (a power of two up to a warp) reduces one output, each thread striding over
//! the reduced elements and the group combining with warp shuffles; an output with at least
//! [`BLOCK_REDUCE_MIN`] elements takes a whole block, whose warps combine through shared memory.
//! `float32` sums and products accumulate in `double` (in another order than the CPU's pairwise sums,
//! which the tolerances allow, and at least as accurately), integers wrap, maximum and minimum
//! propagate NaN.

use crate::CudaBackend;
use crate::kernel::{Arg, BLOCK, Views, walk_with};
use crate::source::{compute_ty, load, storage_ty, store};
use crate::storage::{CudaStorage, check_dtype};
use nabla_core::{DType, Error, Layout, ReduceOp, Result};

/// Reduced lengths from which one block reduces each output.
const BLOCK_REDUCE_MIN: usize = 2048;

/// The accumulator type of `op` on `dtype`: floats their own, integer sums and products the unsigned
/// type of their width (wrapping), integer extrema a type that keeps the sign.
fn acc_ty(op: ReduceOp, dtype: DType) -> &'static str {
    let wide = dtype.size_in_bytes() == 8;
    match dtype {
        DType::F32 if matches!(op, ReduceOp::Sum | ReduceOp::Prod) => "double",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::Bool => "int",
        _ if matches!(op, ReduceOp::Sum | ReduceOp::Prod) => crate::source::wide_unsigned(dtype),
        d if d.is_signed_int() && wide => "long long",
        d if d.is_signed_int() => "int",
        _ => crate::source::wide_unsigned(dtype),
    }
}

/// The identity of `op` in accumulator type `acc`.
fn identity(op: ReduceOp, acc: &str) -> &'static str {
    match (op, acc) {
        (ReduceOp::Sum, _) => "0",
        (ReduceOp::Prod, _) => "1",
        (ReduceOp::Max, "float") | (ReduceOp::Max, "double") => "(-__int_as_float(0x7f800000))",
        (ReduceOp::Min, "float") | (ReduceOp::Min, "double") => "__int_as_float(0x7f800000)",
        (ReduceOp::Max, "int") => "(-2147483647 - 1)",
        (ReduceOp::Min, "int") => "2147483647",
        (ReduceOp::Max, "long long") => "(-9223372036854775807ll - 1)",
        (ReduceOp::Min, "long long") => "9223372036854775807ll",
        (ReduceOp::Max, _) => "0",
        (ReduceOp::Min, "unsigned int") => "0xffffffffu",
        (ReduceOp::Min, _) => "0xffffffffffffffffull",
    }
}

/// The C combination of accumulators `a` and `b`.
fn combine(op: ReduceOp, acc: &str, a: &str, b: &str) -> String {
    let float = acc == "float" || acc == "double";
    match op {
        ReduceOp::Sum => format!("({a} + {b})"),
        ReduceOp::Prod => format!("({a} * {b})"),
        ReduceOp::Max if float => format!("(({a} >= {b} || {a} != {a}) ? {a} : {b})"),
        ReduceOp::Min if float => format!("(({a} <= {b} || {a} != {a}) ? {a} : {b})"),
        ReduceOp::Max => format!("({a} >= {b} ? {a} : {b})"),
        ReduceOp::Min => format!("({a} <= {b} ? {a} : {b})"),
    }
}

/// The kept and reduced sub-views of `layout` for `axes`. The kept view carries the offset; the
/// reduced one starts at the offset `shift` that keeps its negative strides inside a valid layout,
/// which the caller subtracts from its kernel view again.
pub(crate) fn split(layout: &Layout, axes: &[usize]) -> Result<(Layout, Layout, i64)> {
    let (mut kd, mut ks, mut rd, mut rs) = (vec![], vec![], vec![], vec![]);
    let mut shift = 0i64;
    for (a, (&d, &s)) in layout.shape().iter().zip(layout.strides()).enumerate() {
        if axes.contains(&a) {
            rd.push(d);
            rs.push(s);
            if s < 0 && d > 0 {
                shift += (d as i64 - 1) * -(s as i64);
            }
        } else {
            kd.push(d);
            ks.push(s);
        }
    }
    Ok((
        Layout::from_parts(kd, ks, layout.offset())?,
        Layout::from_parts(rd, rs, shift as usize)?,
        shift,
    ))
}

impl CudaBackend {
    pub(crate) fn reduce_impl(
        &self,
        op: ReduceOp,
        x: &CudaStorage,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<CudaStorage> {
        let dtype = x.dtype;
        check_dtype(op.name(), dtype)?;
        if !op.supports(dtype) {
            return Err(Error::dtype(op.name(), dtype));
        }
        crate::elementwise::check_axes(op.name(), layout.rank(), axes)?;
        crate::elementwise::check_in_bounds(op.name(), x, layout)?;
        let (kept, reduced, shift) = split(layout, axes)?;
        let (n_out, n_red) = (kept.numel(), reduced.numel());
        let out = self.alloc(op.name(), dtype, n_out)?;
        if n_out == 0 {
            return Ok(out);
        }
        if n_red == 0 && matches!(op, ReduceOp::Max | ReduceOp::Min) {
            return Err(Error::invalid(
                op.name(),
                "a maximum or minimum over no elements is undefined",
            ));
        }
        let kv = Views::new(op.name(), &[&kept])?;
        let mut rv = Views::new(op.name(), &[&reduced])?;
        rv.views[0].shift(-shift);
        let group = if n_red >= BLOCK_REDUCE_MIN {
            BLOCK as usize
        } else {
            n_red.next_power_of_two().clamp(1, 32)
        };
        let src = render_reduce(op, dtype, group, (&kv, &rv));
        let per_block = BLOCK as usize / group;
        let grid = n_out
            .div_ceil(per_block)
            .min(self.inner.sms as usize * 16)
            .max(1);
        self.launch(
            op.name(),
            &src,
            (grid as u32, BLOCK),
            &[
                Arg::Shape(kv.shape),
                Arg::View(kv.views[0]),
                Arg::Shape(rv.shape),
                Arg::View(rv.views[0]),
                Arg::I64(n_out as i64),
                Arg::I64(n_red as i64),
                Arg::Ptr(x.block.ptr),
                Arg::Ptr(out.block.ptr),
            ],
        )?;
        Ok(out)
    }

    pub(crate) fn cumsum_impl(
        &self,
        x: &CudaStorage,
        layout: &Layout,
        axis: usize,
    ) -> Result<CudaStorage> {
        let dtype = x.dtype;
        check_dtype("cumsum", dtype)?;
        if dtype.is_bool() || dtype.is_half() {
            return Err(Error::dtype("cumsum", dtype));
        }
        crate::elementwise::check_axes("cumsum", layout.rank(), &[axis])?;
        crate::elementwise::check_in_bounds("cumsum", x, layout)?;
        let n = layout.numel();
        let out = self.alloc("cumsum", dtype, n)?;
        if n == 0 {
            return Ok(out);
        }
        let out_layout = Layout::row_major(layout.shape());
        let (lanes_in, _, _) = split(layout, &[axis])?;
        let (lanes_out, _, _) = split(&out_layout, &[axis])?;
        let views = Views::new("cumsum", &[&lanes_in, &lanes_out])?;
        let len = layout.shape()[axis];
        let src = render_cumsum(dtype, &views);
        let lanes = n / len;
        self.launch_elements(
            "cumsum",
            &src,
            lanes,
            &[
                Arg::Shape(views.shape),
                Arg::View(views.views[0]),
                Arg::View(views.views[1]),
                Arg::I64(lanes as i64),
                Arg::I64(len as i64),
                Arg::I64(layout.strides()[axis] as i64),
                Arg::I64(out_layout.strides()[axis] as i64),
                Arg::Ptr(x.block.ptr),
                Arg::Ptr(out.block.ptr),
            ],
        )?;
        Ok(out)
    }
}

/// The kernel reducing with groups of `group` threads (a whole block when `group` is the block size).
pub(crate) fn render_reduce(
    op: ReduceOp,
    dtype: DType,
    group: usize,
    (kept, reduced): (&Views, &Views),
) -> String {
    let acc = acc_ty(op, dtype);
    let id = identity(op, acc);
    let it = storage_ty(dtype);
    let comb = |a: &str, b: &str| combine(op, acc, a, b);
    let kept_off = walk_with("long long", ("ks", "base"), kept, &["kv"], "o");
    let red_off = walk_with("long long", ("rs", "step"), reduced, &["rv"], "r");
    let value = format!("({acc})({})", load(dtype, "in", "off"));
    let out = store(dtype, &format!("({})acc", compute_ty(dtype)));
    let head = format!(
        "extern \"C\" __global__ void k(Shape ks, View kv, Shape rs, View rv, long long n_out, \
         long long n_red, const {it}* __restrict__ in, {it}* __restrict__ out) {{\n"
    );
    if group == BLOCK as usize {
        format!(
            "{head}  __shared__ {acc} part[32];\n\
             int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;\n\
             for (long long o = blockIdx.x; o < n_out; o += gridDim.x) {{\n\
             {kept_off}\
             {acc} acc = {id};\n\
             for (long long r = threadIdx.x; r < n_red; r += blockDim.x) {{\n{red_off}\
             long long off = base0 + step0;\n\
             acc = {c1}; }}\n\
             for (int m = 16; m > 0; m >>= 1) {{ {acc} other = __shfl_xor_sync(0xffffffffu, acc, m); acc = {c2}; }}\n\
             if (lane == 0) part[warp] = acc;\n\
             __syncthreads();\n\
             if (warp == 0) {{ acc = lane < nw ? part[lane] : ({acc}){id};\n\
             for (int m = 16; m > 0; m >>= 1) {{ {acc} other = __shfl_xor_sync(0xffffffffu, acc, m); acc = {c2}; }}\n\
             if (lane == 0) out[o] = {out}; }}\n\
             __syncthreads();\n}}\n}}\n",
            c1 = comb("acc", &value),
            c2 = comb("acc", "other"),
        )
    } else {
        format!(
            "{head}  const int G = {group};\n\
             int lane = threadIdx.x % G;\n\
             unsigned int mask = G == 32 ? 0xffffffffu : (((1u << G) - 1u) << ((threadIdx.x & 31) / G * G));\n\
             long long groups = (long long)gridDim.x * (blockDim.x / G);\n\
             for (long long o = (long long)blockIdx.x * (blockDim.x / G) + threadIdx.x / G; o < n_out; o += groups) {{\n\
             {kept_off}\
             {acc} acc = {id};\n\
             for (long long r = lane; r < n_red; r += G) {{\n{red_off}\
             long long off = base0 + step0;\n\
             acc = {c1}; }}\n\
             for (int m = G / 2; m > 0; m >>= 1) {{ {acc} other = __shfl_xor_sync(mask, acc, m, G); acc = {c2}; }}\n\
             if (lane == 0) out[o] = {out};\n}}\n}}\n",
            c1 = comb("acc", &value),
            c2 = comb("acc", "other"),
        )
    }
}

/// The cumulative-sum kernel: one thread per lane, in order along the axis.
pub(crate) fn render_cumsum(dtype: DType, views: &Views) -> String {
    let acc = acc_ty(ReduceOp::Sum, dtype);
    format!(
        "extern \"C\" __global__ void k(Shape sh, View v0, View v1, long long lanes, long long len, \
         long long sa, long long so, const {it}* __restrict__ in, {it}* __restrict__ out) {{\n\
         GRID_LOOP(lane, lanes) {{\n{walk}\
         {acc} acc = 0;\n\
         for (long long j = 0; j < len; ++j) {{ acc = acc + ({acc})({ld}); out[o1 + j * so] = {st}; }}\n\
         }}\n}}\n",
        it = storage_ty(dtype),
        walk = walk_with("long long", ("sh", "o"), views, &["v0", "v1"], "lane"),
        ld = load(dtype, "in", "o0 + j * sa"),
        st = store(dtype, &format!("({})acc", compute_ty(dtype))),
    )
}
