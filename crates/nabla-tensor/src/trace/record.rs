//! The recording kernels: `impl Backend for TracingBackend`, one node per call.

use super::backend::{TracedValue, TracingBackend};
use super::graph::{ExtensionCall, TraceOp, ValueInfo};
use nabla_core::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Distribution, Error,
    ExtensionOp, HostData, Layout, Pool2dParams, ReduceOp, Result, RngKey, Scalar, UnaryOp,
};
use std::sync::Arc;

fn with_axis(shape: &[usize], axis: usize, size: usize) -> Result<Vec<usize>> {
    let mut s = shape.to_vec();
    *s.get_mut(axis).ok_or_else(|| {
        Error::invalid("trace", format!("axis {axis} out of range for {shape:?}"))
    })? = size;
    Ok(s)
}

fn dim(shape: &[usize], i: usize, op: &'static str) -> Result<usize> {
    shape
        .get(i)
        .copied()
        .ok_or_else(|| Error::invalid(op, format!("shape {shape:?} has no dimension {i}")))
}

impl Backend for TracingBackend {
    type Storage = TracedValue;

    fn name(&self) -> &'static str {
        "trace"
    }

    fn device(&self) -> Device {
        Device {
            kind: "trace",
            ordinal: 0,
        }
    }

    fn storage_dtype(&self, storage: &TracedValue) -> DType {
        storage.dtype
    }

    fn storage_len(&self, storage: &TracedValue) -> usize {
        storage.len
    }

    fn upload(&self, data: HostData) -> Result<TracedValue> {
        let (len, dtype) = (data.len(), data.dtype());
        self.record(TraceOp::Constant(data), &[], vec![len], dtype)
    }

    fn read(&self, storage: &TracedValue, _layout: &Layout) -> Result<HostData> {
        Err(Error::invalid(
            "read",
            format!(
                "traced value %{} has no data while tracing: build a Program with \
                 TracingBackend::program and run it with GraphExecutor to get values",
                storage.id
            ),
        ))
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn full(&self, len: usize, value: Scalar, dtype: DType) -> Result<TracedValue> {
        self.record(TraceOp::Full(value), &[], vec![len], dtype)
    }

    fn random(
        &self,
        dist: Distribution,
        len: usize,
        dtype: DType,
        key: RngKey,
    ) -> Result<TracedValue> {
        self.record(TraceOp::Random { dist, key }, &[], vec![len], dtype)
    }

    fn copy(&self, x: &TracedValue, layout: &Layout) -> Result<TracedValue> {
        let shape = layout.shape().to_vec();
        self.record(TraceOp::Copy, &[(x, layout)], shape, x.dtype)
    }

    fn unary(&self, op: UnaryOp, x: &TracedValue, layout: &Layout) -> Result<TracedValue> {
        let dtype = op
            .output_dtype(x.dtype)
            .ok_or_else(|| Error::dtype(op.name(), x.dtype))?;
        let shape = layout.shape().to_vec();
        self.record(TraceOp::Unary(op), &[(x, layout)], shape, dtype)
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &TracedValue,
        a_layout: &Layout,
        b: &TracedValue,
        b_layout: &Layout,
    ) -> Result<TracedValue> {
        let shape = a_layout.shape().to_vec();
        let ins = [(a, a_layout), (b, b_layout)];
        self.record(TraceOp::Binary(op), &ins, shape, a.dtype)
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &TracedValue,
        a_layout: &Layout,
        b: &TracedValue,
        b_layout: &Layout,
    ) -> Result<TracedValue> {
        let shape = a_layout.shape().to_vec();
        let ins = [(a, a_layout), (b, b_layout)];
        self.record(TraceOp::Compare(op), &ins, shape, DType::Bool)
    }

    fn select(
        &self,
        cond: &TracedValue,
        cond_layout: &Layout,
        on_true: &TracedValue,
        true_layout: &Layout,
        on_false: &TracedValue,
        false_layout: &Layout,
    ) -> Result<TracedValue> {
        let shape = cond_layout.shape().to_vec();
        let ins = [
            (cond, cond_layout),
            (on_true, true_layout),
            (on_false, false_layout),
        ];
        self.record(TraceOp::Select, &ins, shape, on_true.dtype)
    }

    fn cast(&self, x: &TracedValue, layout: &Layout, dtype: DType) -> Result<TracedValue> {
        let shape = layout.shape().to_vec();
        self.record(TraceOp::Cast(dtype), &[(x, layout)], shape, dtype)
    }

    fn reduce(
        &self,
        op: ReduceOp,
        x: &TracedValue,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<TracedValue> {
        let mut shape = layout.shape().to_vec();
        for &a in axes {
            shape = with_axis(&shape, a, 1)?;
        }
        let op = TraceOp::Reduce {
            op,
            axes: axes.to_vec(),
        };
        self.record(op, &[(x, layout)], shape, x.dtype)
    }

    fn arg_reduce(
        &self,
        op: ArgReduceOp,
        x: &TracedValue,
        layout: &Layout,
        axis: usize,
    ) -> Result<TracedValue> {
        let shape = with_axis(layout.shape(), axis, 1)?;
        let op = TraceOp::ArgReduce { op, axis };
        self.record(op, &[(x, layout)], shape, DType::I64)
    }

    fn cumsum(&self, x: &TracedValue, layout: &Layout, axis: usize) -> Result<TracedValue> {
        let shape = layout.shape().to_vec();
        self.record(TraceOp::Cumsum { axis }, &[(x, layout)], shape, x.dtype)
    }

    fn matmul(
        &self,
        a: &TracedValue,
        a_layout: &Layout,
        b: &TracedValue,
        b_layout: &Layout,
    ) -> Result<TracedValue> {
        let (sa, sb) = (a_layout.shape(), b_layout.shape());
        if sa.len() < 2 || sb.len() < 2 {
            return Err(Error::shapes("matmul", sa, sb));
        }
        let mut shape = sa.to_vec();
        shape[sa.len() - 1] = sb[sb.len() - 1];
        let ins = [(a, a_layout), (b, b_layout)];
        self.record(TraceOp::Matmul, &ins, shape, a.dtype)
    }

    fn pad(
        &self,
        x: &TracedValue,
        layout: &Layout,
        pads: &[(usize, usize)],
        value: Scalar,
    ) -> Result<TracedValue> {
        let shape = layout
            .shape()
            .iter()
            .zip(pads)
            .map(|(&d, &(lo, hi))| d + lo + hi)
            .collect();
        let op = TraceOp::Pad {
            pads: pads.to_vec(),
            value,
        };
        self.record(op, &[(x, layout)], shape, x.dtype)
    }

    fn concat(&self, parts: &[(&TracedValue, &Layout)], axis: usize) -> Result<TracedValue> {
        let (first, first_layout) = parts
            .first()
            .ok_or_else(|| Error::invalid("concat", "no parts to join"))?;
        let total = parts
            .iter()
            .map(|(_, l)| dim(l.shape(), axis, "concat"))
            .sum::<Result<usize>>()?;
        let shape = with_axis(first_layout.shape(), axis, total)?;
        self.record(TraceOp::Concat { axis }, parts, shape, first.dtype)
    }

    fn gather(
        &self,
        x: &TracedValue,
        x_layout: &Layout,
        axis: usize,
        index: &TracedValue,
        index_layout: &Layout,
    ) -> Result<TracedValue> {
        let shape = index_layout.shape().to_vec();
        let ins = [(x, x_layout), (index, index_layout)];
        self.record(TraceOp::Gather { axis }, &ins, shape, x.dtype)
    }

    fn index_select(
        &self,
        x: &TracedValue,
        x_layout: &Layout,
        axis: usize,
        index: &TracedValue,
        index_layout: &Layout,
    ) -> Result<TracedValue> {
        let shape = with_axis(x_layout.shape(), axis, index_layout.numel())?;
        let ins = [(x, x_layout), (index, index_layout)];
        self.record(TraceOp::IndexSelect { axis }, &ins, shape, x.dtype)
    }

    fn scatter_add(
        &self,
        dst: &TracedValue,
        dst_layout: &Layout,
        axis: usize,
        index: &TracedValue,
        index_layout: &Layout,
        src: &TracedValue,
        src_layout: &Layout,
    ) -> Result<TracedValue> {
        let shape = dst_layout.shape().to_vec();
        let ins = [(dst, dst_layout), (index, index_layout), (src, src_layout)];
        self.record(TraceOp::ScatterAdd { axis }, &ins, shape, dst.dtype)
    }

    fn one_hot(
        &self,
        index: &TracedValue,
        layout: &Layout,
        classes: usize,
        dtype: DType,
    ) -> Result<TracedValue> {
        let mut shape = layout.shape().to_vec();
        shape.push(classes);
        let op = TraceOp::OneHot { classes, dtype };
        self.record(op, &[(index, layout)], shape, dtype)
    }

    fn sort(
        &self,
        x: &TracedValue,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(TracedValue, TracedValue)> {
        let shape = layout.shape().to_vec();
        self.values_and_indices(TraceOp::Sort { axis, descending }, x, layout, shape)
    }

    fn topk(
        &self,
        x: &TracedValue,
        layout: &Layout,
        axis: usize,
        k: usize,
        largest: bool,
    ) -> Result<(TracedValue, TracedValue)> {
        let shape = with_axis(layout.shape(), axis, k)?;
        self.values_and_indices(TraceOp::Topk { axis, k, largest }, x, layout, shape)
    }

    fn max_pool2d(
        &self,
        x: &TracedValue,
        layout: &Layout,
        params: &Pool2dParams,
    ) -> Result<(TracedValue, TracedValue)> {
        let sx = layout.shape();
        let rank = sx.len();
        let op = "max_pool2d";
        let (h, w) = (
            dim(sx, rank.wrapping_sub(2), op)?,
            dim(sx, rank.wrapping_sub(1), op)?,
        );
        let (ho, wo) = params.output_size((h, w)).ok_or_else(|| {
            Error::invalid(
                op,
                format!("parameters {params:?} give no output for {h}x{w}"),
            )
        })?;
        let mut shape = sx.to_vec();
        shape[rank - 2] = ho;
        shape[rank - 1] = wo;
        self.values_and_indices(TraceOp::MaxPool2d(*params), x, layout, shape)
    }

    fn conv2d(
        &self,
        x: &TracedValue,
        x_layout: &Layout,
        w: &TracedValue,
        w_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<TracedValue> {
        let (sx, sw) = (x_layout.shape(), w_layout.shape());
        let op = "conv2d";
        let (n, h, wd) = (dim(sx, 0, op)?, dim(sx, 2, op)?, dim(sx, 3, op)?);
        let (c_out, kh, kw) = (dim(sw, 0, op)?, dim(sw, 2, op)?, dim(sw, 3, op)?);
        let (ho, wo) = params
            .output_size((h, wd), (kh, kw))
            .ok_or_else(|| Error::shapes(op, sx, sw))?;
        let ins = [(x, x_layout), (w, w_layout)];
        self.record(
            TraceOp::Conv2d(*params),
            &ins,
            vec![n, c_out, ho, wo],
            x.dtype,
        )
    }

    fn conv2d_input_grad(
        &self,
        dy: &TracedValue,
        dy_layout: &Layout,
        w: &TracedValue,
        w_layout: &Layout,
        input_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<TracedValue> {
        let op = "conv2d_input_grad";
        let n = dim(dy_layout.shape(), 0, op)?;
        let c_in = dim(w_layout.shape(), 1, op)? * params.groups;
        let shape = vec![n, c_in, input_hw.0, input_hw.1];
        let ins = [(dy, dy_layout), (w, w_layout)];
        let op = TraceOp::Conv2dInputGrad {
            input_hw,
            params: *params,
        };
        self.record(op, &ins, shape, dy.dtype)
    }

    fn conv2d_weight_grad(
        &self,
        x: &TracedValue,
        x_layout: &Layout,
        dy: &TracedValue,
        dy_layout: &Layout,
        kernel_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<TracedValue> {
        let op = "conv2d_weight_grad";
        let c_out = dim(dy_layout.shape(), 1, op)?;
        let groups = params.groups.max(1);
        let c_in = dim(x_layout.shape(), 1, op)? / groups;
        let shape = vec![c_out, c_in, kernel_hw.0, kernel_hw.1];
        let ins = [(x, x_layout), (dy, dy_layout)];
        let op = TraceOp::Conv2dWeightGrad {
            kernel_hw,
            params: *params,
        };
        self.record(op, &ins, shape, x.dtype)
    }

    fn extension(
        &self,
        op: &Arc<dyn ExtensionOp>,
        inputs: &[(&TracedValue, &Layout)],
    ) -> Result<TracedValue> {
        let specs: Vec<_> = inputs.iter().map(|(v, l)| (v.dtype, l.shape())).collect();
        let spec = op.output_spec(&specs)?;
        let call = TraceOp::Extension(ExtensionCall(op.clone()));
        self.record(call, inputs, spec.shape, spec.dtype)
    }
}

impl TracingBackend {
    /// Records an op with two outputs of `shape`: values of `x`'s dtype and their `I64` indices.
    fn values_and_indices(
        &self,
        op: TraceOp,
        x: &TracedValue,
        layout: &Layout,
        shape: Vec<usize>,
    ) -> Result<(TracedValue, TracedValue)> {
        let outs = vec![
            ValueInfo {
                dtype: x.dtype,
                shape: shape.clone(),
            },
            ValueInfo {
                dtype: DType::I64,
                shape,
            },
        ];
        let mut v = self.record_n(op, &[(x, layout)], outs)?;
        let indices = v.pop().expect("two outputs recorded");
        let values = v.pop().expect("two outputs recorded");
        Ok((values, indices))
    }
}
