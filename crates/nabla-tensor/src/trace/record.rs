//! The recording kernels: `impl Backend for TracingBackend`, one [`Primitive`] node per call, its
//! output shapes and dtypes from [`Primitive::output_specs`].

use super::backend::{TracedValue, TracingBackend};
use super::graph::ValueInfo;
use nabla_core::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Distribution, Error,
    ExtensionCall, ExtensionOp, FusedKernel, HostData, Layout, Pool2dParams, Primitive, ReduceOp,
    Result, RngKey, Scalar, UnaryOp,
};
use std::sync::Arc;

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
        self.apply_one(Primitive::Constant(data), &[])
    }

    fn is_symbolic(&self) -> bool {
        true
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
        self.apply_one(Primitive::Full { value, len, dtype }, &[])
    }

    fn random(
        &self,
        dist: Distribution,
        len: usize,
        dtype: DType,
        key: RngKey,
    ) -> Result<TracedValue> {
        let prim = Primitive::Random {
            dist,
            key,
            len,
            dtype,
        };
        self.apply_one(prim, &[])
    }

    fn copy(&self, x: &TracedValue, layout: &Layout) -> Result<TracedValue> {
        self.apply_one(Primitive::Copy, &[(x, layout)])
    }

    fn unary(&self, op: UnaryOp, x: &TracedValue, layout: &Layout) -> Result<TracedValue> {
        self.apply_one(Primitive::Unary(op), &[(x, layout)])
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &TracedValue,
        a_layout: &Layout,
        b: &TracedValue,
        b_layout: &Layout,
    ) -> Result<TracedValue> {
        self.apply_one(Primitive::Binary(op), &[(a, a_layout), (b, b_layout)])
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &TracedValue,
        a_layout: &Layout,
        b: &TracedValue,
        b_layout: &Layout,
    ) -> Result<TracedValue> {
        self.apply_one(Primitive::Compare(op), &[(a, a_layout), (b, b_layout)])
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
        let ins = [
            (cond, cond_layout),
            (on_true, true_layout),
            (on_false, false_layout),
        ];
        self.apply_one(Primitive::Select, &ins)
    }

    fn cast(&self, x: &TracedValue, layout: &Layout, dtype: DType) -> Result<TracedValue> {
        self.apply_one(Primitive::Cast(dtype), &[(x, layout)])
    }

    fn reduce(
        &self,
        op: ReduceOp,
        x: &TracedValue,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<TracedValue> {
        let axes = axes.to_vec();
        self.apply_one(Primitive::Reduce { op, axes }, &[(x, layout)])
    }

    fn arg_reduce(
        &self,
        op: ArgReduceOp,
        x: &TracedValue,
        layout: &Layout,
        axis: usize,
    ) -> Result<TracedValue> {
        self.apply_one(Primitive::ArgReduce { op, axis }, &[(x, layout)])
    }

    fn cumsum(&self, x: &TracedValue, layout: &Layout, axis: usize) -> Result<TracedValue> {
        self.apply_one(Primitive::Cumsum { axis }, &[(x, layout)])
    }

    fn matmul(
        &self,
        a: &TracedValue,
        a_layout: &Layout,
        b: &TracedValue,
        b_layout: &Layout,
    ) -> Result<TracedValue> {
        self.apply_one(Primitive::Matmul, &[(a, a_layout), (b, b_layout)])
    }

    fn matmul_rounded(
        &self,
        a: &TracedValue,
        a_layout: &Layout,
        b: &TracedValue,
        b_layout: &Layout,
        precision: nabla_core::Precision,
    ) -> Result<TracedValue> {
        let op = crate::linalg::matmul_primitive(precision);
        self.apply_one(op, &[(a, a_layout), (b, b_layout)])
    }

    fn pad(
        &self,
        x: &TracedValue,
        layout: &Layout,
        pads: &[(usize, usize)],
        value: Scalar,
    ) -> Result<TracedValue> {
        let pads = pads.to_vec();
        self.apply_one(Primitive::Pad { pads, value }, &[(x, layout)])
    }

    fn concat(&self, parts: &[(&TracedValue, &Layout)], axis: usize) -> Result<TracedValue> {
        if parts.is_empty() {
            return Err(Error::invalid("concat", "no parts to join"));
        }
        self.apply_one(Primitive::Concat { axis }, parts)
    }

    fn gather(
        &self,
        x: &TracedValue,
        x_layout: &Layout,
        axis: usize,
        index: &TracedValue,
        index_layout: &Layout,
    ) -> Result<TracedValue> {
        let ins = [(x, x_layout), (index, index_layout)];
        self.apply_one(Primitive::Gather { axis }, &ins)
    }

    fn index_select(
        &self,
        x: &TracedValue,
        x_layout: &Layout,
        axis: usize,
        index: &TracedValue,
        index_layout: &Layout,
    ) -> Result<TracedValue> {
        let ins = [(x, x_layout), (index, index_layout)];
        self.apply_one(Primitive::IndexSelect { axis }, &ins)
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
        let ins = [(dst, dst_layout), (index, index_layout), (src, src_layout)];
        self.apply_one(Primitive::ScatterAdd { axis }, &ins)
    }

    fn one_hot(
        &self,
        index: &TracedValue,
        layout: &Layout,
        classes: usize,
        dtype: DType,
    ) -> Result<TracedValue> {
        self.apply_one(Primitive::OneHot { classes, dtype }, &[(index, layout)])
    }

    fn sort(
        &self,
        x: &TracedValue,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(TracedValue, TracedValue)> {
        self.apply_two(Primitive::Sort { axis, descending }, &[(x, layout)])
    }

    fn topk(
        &self,
        x: &TracedValue,
        layout: &Layout,
        axis: usize,
        k: usize,
        largest: bool,
    ) -> Result<(TracedValue, TracedValue)> {
        self.apply_two(Primitive::Topk { axis, k, largest }, &[(x, layout)])
    }

    fn max_pool2d(
        &self,
        x: &TracedValue,
        layout: &Layout,
        params: &Pool2dParams,
    ) -> Result<(TracedValue, TracedValue)> {
        self.apply_two(Primitive::MaxPool2d(*params), &[(x, layout)])
    }

    fn conv2d(
        &self,
        x: &TracedValue,
        x_layout: &Layout,
        w: &TracedValue,
        w_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<TracedValue> {
        self.apply_one(Primitive::Conv2d(*params), &[(x, x_layout), (w, w_layout)])
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
        let prim = Primitive::Conv2dInputGrad {
            input_hw,
            params: *params,
        };
        self.apply_one(prim, &[(dy, dy_layout), (w, w_layout)])
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
        let prim = Primitive::Conv2dWeightGrad {
            kernel_hw,
            params: *params,
        };
        self.apply_one(prim, &[(x, x_layout), (dy, dy_layout)])
    }

    /// Records the kernel as one fused node (the compiler may merge it with neighbours).
    fn fused(
        &self,
        kernel: &FusedKernel,
        inputs: Vec<(TracedValue, &Layout)>,
        shape: &[usize],
        _donate: Option<usize>,
    ) -> Result<TracedValue> {
        let refs: Vec<(&TracedValue, &Layout)> = inputs.iter().map(|(v, l)| (v, *l)).collect();
        let prim = Primitive::Fused {
            kernel: kernel.clone(),
            shape: shape.to_vec(),
        };
        self.apply_one(prim, &refs)
    }

    fn extension(
        &self,
        op: &Arc<dyn ExtensionOp>,
        inputs: &[(&TracedValue, &Layout)],
    ) -> Result<TracedValue> {
        self.apply_one(Primitive::Extension(ExtensionCall(op.clone())), inputs)
    }
}

impl TracingBackend {
    /// Records `prim` applied to `ins`; returns its outputs.
    fn apply(&self, prim: Primitive, ins: &[(&TracedValue, &Layout)]) -> Result<Vec<TracedValue>> {
        let specs: Vec<(DType, &[usize])> = ins.iter().map(|(v, l)| (v.dtype, l.shape())).collect();
        let outs = prim
            .output_specs(&specs)?
            .into_iter()
            .map(|o| ValueInfo {
                dtype: o.dtype,
                shape: o.shape,
            })
            .collect();
        self.record_n(prim.into(), ins, outs)
    }

    /// Records a primitive with one output.
    fn apply_one(&self, prim: Primitive, ins: &[(&TracedValue, &Layout)]) -> Result<TracedValue> {
        let name = prim.kind().name();
        let mut outs = self.apply(prim, ins)?;
        match (outs.pop(), outs.is_empty()) {
            (Some(v), true) => Ok(v),
            _ => Err(Error::invalid("trace", format!("{name} has one output"))),
        }
    }

    /// Records a primitive with two outputs (values and positions).
    fn apply_two(
        &self,
        prim: Primitive,
        ins: &[(&TracedValue, &Layout)],
    ) -> Result<(TracedValue, TracedValue)> {
        let name = prim.kind().name();
        let mut outs = self.apply(prim, ins)?;
        match (outs.pop(), outs.pop(), outs.is_empty()) {
            (Some(indices), Some(values), true) => Ok((values, indices)),
            _ => Err(Error::invalid("trace", format!("{name} has two outputs"))),
        }
    }
}
