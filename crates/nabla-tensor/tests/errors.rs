//! Every error path of the public `Tensor` API, checked for its exact message: the op, the shapes or
//! values involved, and the fix where there is one.

use nabla_core::Backend as _;
use nabla_core::{Conv2dParams, DType, Error, Generator, Layout, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{Indexer, Tensor, s};
use std::fmt::Debug;

type T = Tensor<CpuBackend>;

const HALF_HINT: &str = "half-precision types are for storage; cast to float32 first";

fn cpu() -> CpuBackend {
    CpuBackend::new()
}

fn f32s(shape: &[usize]) -> T {
    let n: usize = shape.iter().product();
    T::from_vec(
        (0..n).map(|i| i as f32).collect::<Vec<_>>(),
        shape.to_vec(),
        &cpu(),
    )
    .unwrap()
}

fn i64s(values: &[i64], shape: &[usize]) -> T {
    T::from_slice(values, shape.to_vec(), &cpu()).unwrap()
}

fn zeros(shape: &[usize], dtype: DType) -> T {
    T::zeros(shape.to_vec(), dtype, &cpu()).unwrap()
}

/// The error message of a call that must fail.
fn msg<V: Debug>(r: Result<V>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn construction() {
    assert_eq!(
        msg(T::from_vec(vec![1.0f32, 2.0, 3.0], [2, 2], &cpu())),
        "from_vec: shape [2, 2] needs 4 elements but 3 were given"
    );
    assert_eq!(
        msg(T::from_slice(&[1i64; 5], [2, 3], &cpu())),
        "from_slice: shape [2, 3] needs 6 elements but 5 were given"
    );
    assert_eq!(
        msg(T::from_host(nabla_core::HostData::U8(vec![1]), [0], &cpu())),
        "from_host: shape [0] needs 0 elements but 1 were given"
    );
    let storage = cpu()
        .upload(nabla_core::HostData::F32(vec![0.0; 4]))
        .unwrap();
    assert_eq!(
        msg(T::from_storage(storage, Layout::contiguous([10]), &cpu())),
        "from_storage: view Layout { shape: [10], strides: [1], offset: 0 } reaches outside a buffer of 4 elements"
    );
    assert_eq!(
        msg(T::arange(0, 5, 0, DType::I64, &cpu())),
        "arange: start 0, end 5 and step 0 must be finite with a non-zero step"
    );
    assert_eq!(
        msg(T::arange(0.0, f64::INFINITY, 1.0, DType::F32, &cpu())),
        "arange: start 0, end inf and step 1 must be finite with a non-zero step"
    );
    assert_eq!(
        msg(T::arange(0.0, 1e300, 1e-300, DType::F32, &cpu())),
        "arange: inf elements is too many"
    );
    assert_eq!(
        msg(T::linspace(f64::NEG_INFINITY, 1.0, 5, DType::F32, &cpu())),
        "linspace: start -inf and end 1 must be finite"
    );
}

#[test]
fn random_arguments() {
    let mut g = Generator::new(0);
    assert_eq!(
        msg(T::rand([3], DType::I64, &mut g, &cpu())),
        "random: not supported for dtype int64 (uniform draws need a real float dtype)"
    );
    assert_eq!(
        msg(T::randn([3], DType::C64, &mut g, &cpu())),
        "random: not supported for dtype complex64 (normal draws need a real float dtype)"
    );
    assert_eq!(
        msg(T::uniform([3], 1.0, 0.0, DType::F32, &mut g, &cpu())),
        "random: uniform needs finite bounds with low < high, got low = 1, high = 0"
    );
    assert_eq!(
        msg(T::normal([3], 0.0, -1.0, DType::F32, &mut g, &cpu())),
        "random: normal needs a finite mean and a finite std >= 0, got mean = 0, std = -1"
    );
    assert_eq!(
        msg(T::bernoulli([3], 1.5, DType::Bool, &mut g, &cpu())),
        "random: bernoulli needs a probability 0 <= p <= 1, got p = 1.5"
    );
}

#[test]
fn reading_back() {
    let x = f32s(&[2]);
    assert_eq!(
        msg(x.item::<f32>()),
        "item: a tensor of shape [2] has 2 elements, not 1"
    );
    assert_eq!(
        msg(x.to_scalar()),
        "to_scalar: a tensor of shape [2] has 2 elements, not 1"
    );
    assert_eq!(
        msg(x.to_vec::<i64>()),
        "to_vec: dtype mismatch between float32 and int64 (cast one operand with .cast(...))"
    );
    assert_eq!(
        msg(f32s(&[]).item::<f64>()),
        "item: dtype mismatch between float32 and float64 (cast one operand with .cast(...))"
    );
    assert_eq!(
        msg(x.to_vec2::<f32>()),
        "to_vec2: expected rank 2, got shape [2]"
    );
    assert_eq!(
        msg(x.dim(1)),
        "dim: axis 1 is out of range for a tensor of rank 1 (expected -1..=0)"
    );
}

#[test]
fn elementwise_shapes_and_dtypes() {
    let (a, b) = (f32s(&[2, 3]), f32s(&[4]));
    let broadcast = "add: shape mismatch between [2, 3] and [4] (dimension 1 of the broadcast has sizes 3 and 4; each must be equal or 1)";
    assert_eq!(msg(a.add(&b)), broadcast);
    assert_eq!(msg(&a + &b), broadcast);
    assert_eq!(
        msg(&a * &f32s(&[3, 1, 2])),
        "mul: shape mismatch between [2, 3] and [3, 1, 2] (dimension 2 of the broadcast has sizes 3 and 2; each must be equal or 1)"
    );
    // Mixed dtypes are promoted, not refused (see `promotion.rs`).
    let d = zeros(&[2, 3], DType::F64);
    assert_eq!((&a - &d).unwrap().dtype(), DType::F64);
    assert_eq!(a.lt(&d).unwrap().dtype(), DType::Bool);
    assert_eq!(
        msg(a.eq(&b)),
        "eq: shape mismatch between [2, 3] and [4] (dimension 1 of the broadcast has sizes 3 and 4; each must be equal or 1)"
    );
}

#[test]
fn unsupported_dtypes() {
    let i = i64s(&[1, 2], &[2]);
    let h = zeros(&[2], DType::F16);
    let bf = zeros(&[2], DType::BF16);
    let c = zeros(&[2], DType::C64);
    let b = zeros(&[2], DType::Bool);
    let f = f32s(&[2]);
    assert_eq!(msg(i.exp()), "exp: not supported for dtype int64");
    assert_eq!(msg(i.sqrt()), "sqrt: not supported for dtype int64");
    assert_eq!(msg(b.neg()), "neg: not supported for dtype bool");
    assert_eq!(
        msg(f.logical_not()),
        "logical_not: not supported for dtype float32"
    );
    assert_eq!(msg(c.erf()), "erf: not supported for dtype complex64");
    assert_eq!(msg(c.floor()), "floor: not supported for dtype complex64");
    // Half precision computes in float32 (tests/half_arithmetic.rs); what float32 refuses, it refuses.
    assert_eq!(
        msg(h.bitwise_invert()),
        format!("bitwise_invert: not supported for dtype float16 ({HALF_HINT})")
    );
    assert_eq!(
        msg(bf.logical_and(&bf)),
        format!("logical_and: not supported for dtype bfloat16 ({HALF_HINT})")
    );
    assert_eq!(
        msg(zeros(&[2, 2], DType::Bool).matmul(&zeros(&[2, 2], DType::Bool))),
        "matmul: not supported for dtype bool"
    );
    assert_eq!(
        msg(f.logical_and(&f)),
        "logical_and: not supported for dtype float32"
    );
    assert_eq!(msg(b.sub(&b)), "sub: not supported for dtype bool");
    assert_eq!(msg(b.pow(&b)), "pow: not supported for dtype bool");
    assert_eq!(msg(c.rem(&c)), "rem: not supported for dtype complex64");
    assert_eq!(msg(c.atan2(&c)), "atan2: not supported for dtype complex64");
    assert_eq!(msg(i.atan2(&i)), "atan2: not supported for dtype int64");
    assert_eq!(msg(c.lt(&c)), "lt: not supported for dtype complex64");
    assert_eq!(msg(c.max_all()), "max: not supported for dtype complex64");
    assert_eq!(
        msg(c.argmin(0, false)),
        "argmin: not supported for dtype complex64"
    );
    assert_eq!(
        msg(c.sort(0, false)),
        "sort: not supported for dtype complex64"
    );
    assert_eq!(
        msg(c.topk(1, 0, true)),
        "topk: not supported for dtype complex64"
    );
    assert_eq!(
        msg(i.mean_all()),
        "mean: not supported for dtype int64 (mean needs a float or complex tensor; cast integers first)"
    );
    let half = i.cast(nabla_core::DType::F16).unwrap();
    assert_eq!(half.mean_all().unwrap().dtype(), nabla_core::DType::F16);
}

#[test]
fn axes() {
    let x = f32s(&[2, 3]);
    let range = "is out of range for a tensor of rank 2 (expected -2..=1)";
    assert_eq!(msg(x.sum(&[2], false)), format!("sum: axis 2 {range}"));
    assert_eq!(msg(x.sum(&[-3], true)), format!("sum: axis -3 {range}"));
    assert_eq!(
        msg(x.sum(&[0, -2], false)),
        "sum: axis -2 is repeated in [0, -2]"
    );
    assert_eq!(msg(x.mean(&[7], false)), format!("mean: axis 7 {range}"));
    assert_eq!(msg(x.max(&[-5], false)), format!("max: axis -5 {range}"));
    assert_eq!(msg(x.argmax(5, false)), format!("argmax: axis 5 {range}"));
    assert_eq!(msg(x.argmin(-3, true)), format!("argmin: axis -3 {range}"));
    assert_eq!(msg(x.cumsum(2)), format!("cumsum: axis 2 {range}"));
    assert_eq!(msg(x.transpose(0, 3)), format!("transpose: axis 3 {range}"));
    assert_eq!(
        msg(x.slice(-3, None, None, 1)),
        format!("slice: axis -3 {range}")
    );
    assert_eq!(msg(x.narrow(2, 0, 1)), format!("narrow: axis 2 {range}"));
    assert_eq!(msg(x.flip(&[2])), format!("flip: axis 2 {range}"));
    assert_eq!(msg(x.squeeze(-3)), format!("squeeze: axis -3 {range}"));
    assert_eq!(msg(x.sort(2, false)), format!("sort: axis 2 {range}"));
    assert_eq!(msg(x.topk(1, -3, true)), format!("topk: axis -3 {range}"));
    assert_eq!(msg(x.split(1, 2)), format!("split: axis 2 {range}"));
    assert_eq!(msg(x.chunk(1, -3)), format!("chunk: axis -3 {range}"));
    assert_eq!(
        msg(x.gather(2, &i64s(&[0; 6], &[2, 3]))),
        format!("gather: axis 2 {range}")
    );
    assert_eq!(
        msg(x.index_select(-3, &i64s(&[0], &[1]))),
        format!("index_select: axis -3 {range}")
    );
    assert_eq!(msg(T::cat(&[&x, &x], 2)), format!("cat: axis 2 {range}"));
    assert_eq!(
        msg(x.unsqueeze(3)),
        "unsqueeze: axis 3 is out of range for inserting into a tensor of rank 2 (expected -3..=2)"
    );
    assert_eq!(
        msg(T::stack(&[&x, &x], -4)),
        "stack: axis -4 is out of range for a tensor of rank 3 (expected -3..=2)"
    );
    assert_eq!(
        msg(f32s(&[]).sum(&[0], false)),
        "sum: axis 0 is out of range for a tensor of rank 0"
    );
}

#[test]
fn shape_ops() {
    let x = f32s(&[6]);
    assert_eq!(
        msg(x.reshape([4, -1])),
        "reshape: cannot reshape a tensor of shape [6] into [4, -1]: 6 elements are not a multiple of 4"
    );
    assert_eq!(
        msg(x.reshape([4])),
        "reshape: cannot reshape a tensor of shape [6] into [4]: the tensor has 6 elements, the shape 4"
    );
    assert_eq!(
        msg(x.reshape([-1, -1])),
        "reshape: cannot reshape a tensor of shape [6] into [-1, -1]: each dimension must be in 0..=isize::MAX, and at most one may be -1"
    );
    assert_eq!(
        msg(x.reshape([0, -1])),
        "reshape: cannot reshape a tensor of shape [6] into [0, -1]: a -1 next to a dimension of 0 is ambiguous"
    );
    assert_eq!(
        msg(x.reshape([-2, 3])),
        "reshape: cannot reshape a tensor of shape [6] into [-2, 3]: each dimension must be in 0..=isize::MAX, and at most one may be -1"
    );
    let m = f32s(&[2, 3]);
    assert_eq!(
        msg(m.squeeze(0)),
        "squeeze: axis 0 of shape [2, 3] has size 2, not 1"
    );
    assert_eq!(
        msg(m.permute(&[0])),
        "permute: [0] has 1 axes but the tensor of shape [2, 3] has 2"
    );
    assert_eq!(
        msg(m.permute(&[1, -1])),
        "permute: [1, 1] is not a permutation of the 2 axes of shape [2, 3]"
    );
    assert_eq!(
        msg(m.flatten(1, 0)),
        "flatten: start axis 1 comes after end axis 0"
    );
    assert_eq!(
        msg(m.broadcast_to([2, 2])),
        "broadcast_to: shape mismatch between [2, 3] and [2, 2] (source dimension 1 has size 3, which is neither 1 nor 2)"
    );
    assert_eq!(
        msg(m.broadcast_to([3])),
        "broadcast_to: shape mismatch between [2, 3] and [3] (the target has fewer dimensions than the source)"
    );
    assert_eq!(
        msg(m.slice(1, None, None, 0)),
        "slice: step must not be zero"
    );
    assert_eq!(
        msg(m.narrow(1, 2, 2)),
        "narrow: start 2 + length 2 exceeds size 3 of axis 1 in shape [2, 3]"
    );
    assert_eq!(
        msg(m.select_index(0, 2)),
        "select_index: index 2 is out of bounds for a dimension of size 2"
    );
    assert_eq!(
        msg(m.select_index(1, -4)),
        "select_index: index -4 is out of bounds for a dimension of size 3"
    );
    assert_eq!(
        msg(m.pad(&[(1, 1)], 0.0)),
        "pad: 1 padding pairs given for a tensor of shape [2, 3]"
    );
    assert_eq!(msg(m.split(0, 0)), "split: piece size must be positive");
    assert_eq!(
        msg(m.chunk(0, 0)),
        "chunk: number of chunks must be positive"
    );
}

#[test]
fn joining() {
    let (a, b) = (f32s(&[2, 1]), f32s(&[2, 2]));
    assert_eq!(
        msg(T::cat(&[&a, &b], 0)),
        "cat: shape mismatch between [2, 1] and [2, 2] (all dimensions except axis 0 must match)"
    );
    assert_eq!(
        msg(T::cat(&[&a, &f32s(&[2])], 1)),
        "cat: shape mismatch between [2, 1] and [2] (all dimensions except axis 1 must match)"
    );
    assert_eq!(
        msg(T::cat(&[&a, &zeros(&[2, 2], DType::I64)], 0)),
        "cat: shape mismatch between [2, 1] and [2, 2] (all dimensions except axis 0 must match)"
    );
    assert_eq!(msg(T::cat(&[], 0)), "cat: needs at least one tensor");
    assert_eq!(msg(T::stack(&[], 0)), "stack: needs at least one tensor");
    assert_eq!(
        msg(T::stack(&[&a, &b], 0)),
        "stack: shape mismatch between [2, 1] and [2, 2] (stacked tensors need one shape)"
    );
}

#[test]
fn matmul_and_conv() {
    assert_eq!(
        msg(f32s(&[2, 3]).matmul(&f32s(&[4, 5]))),
        "matmul: shape mismatch between [2, 3] and [4, 5] (inner dimensions 3 and 4 differ)"
    );
    assert_eq!(
        msg(f32s(&[3]).matmul(&f32s(&[4]))),
        "matmul: shape mismatch between [3] and [4] (inner dimensions 3 and 4 differ)"
    );
    assert_eq!(
        msg(f32s(&[2, 2, 3]).matmul(&f32s(&[3, 3, 4]))),
        "matmul: shape mismatch between [2, 2, 3] and [3, 3, 4] (batch dimensions [2] and [3] do not broadcast)"
    );
    assert_eq!(
        msg(f32s(&[]).matmul(&f32s(&[3]))),
        "matmul: shape mismatch between [] and [3] (matmul needs operands of rank >= 1)"
    );
    assert_eq!(
        msg(f32s(&[2, 2]).matmul(&zeros(&[3, 2], DType::F64))),
        "matmul: shape mismatch between [2, 2] and [3, 2] (inner dimensions 2 and 3 differ)"
    );
    let p = Conv2dParams::default();
    assert_eq!(
        msg(f32s(&[1, 3, 5, 5]).conv2d(&f32s(&[2, 2, 3, 3]), &p)),
        "conv2d: shape mismatch between [1, 3, 5, 5] and [2, 2, 3, 3] (input channels 3 must equal weight channels 2 x groups 1, and output channels 2 must divide into the groups)"
    );
    assert_eq!(
        msg(f32s(&[3, 5, 5]).conv2d(&f32s(&[2, 3, 3, 3]), &p)),
        "conv2d: shape mismatch between [3, 5, 5] and [2, 3, 3, 3] (expected input [N, C, H, W] and weight [C_out, C_in/groups, KH, KW])"
    );
    assert_eq!(
        msg(f32s(&[1, 1, 2, 2]).conv2d(&f32s(&[1, 1, 3, 3]), &p)),
        "conv2d: shape mismatch between [1, 1, 2, 2] and [1, 1, 3, 3] (the dilated kernel does not fit the padded input with stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1)"
    );
    let bad = Conv2dParams {
        stride: (0, 1),
        ..p
    };
    assert_eq!(
        msg(f32s(&[1, 1, 4, 4]).conv2d(&f32s(&[1, 1, 3, 3]), &bad)),
        "conv2d: groups, strides and dilations must be positive, got stride=(0, 1), padding=(0, 0), dilation=(1, 1), groups=1"
    );
    let grouped = Conv2dParams { groups: 2, ..p };
    assert_eq!(
        msg(f32s(&[1, 4, 4, 4]).conv2d(&f32s(&[3, 2, 3, 3]), &grouped)),
        "conv2d: shape mismatch between [1, 4, 4, 4] and [3, 2, 3, 3] (input channels 4 must equal weight channels 2 x groups 2, and output channels 3 must divide into the groups)"
    );
    assert_eq!(
        msg(f32s(&[1, 1, 4, 4]).conv2d(&zeros(&[1, 1, 3, 3], DType::F64), &p)),
        "conv2d: dtype mismatch between float32 and float64 (cast one operand with .cast(...))"
    );
    assert_eq!(
        msg(f32s(&[1, 2, 2, 2]).conv2d_input_grad(&f32s(&[2, 1, 3, 3]), (5, 5), &p)),
        "conv2d_input_grad: shape mismatch between [1, 2, 2, 2] and [1, 2, 3, 3] (the output gradient does not match an input of spatial size (5, 5))"
    );
    assert_eq!(
        msg(f32s(&[1, 1, 5, 5]).conv2d_weight_grad(&f32s(&[1, 2, 2, 2]), (3, 3), &p)),
        "conv2d_weight_grad: shape mismatch between [1, 2, 2, 2] and [1, 2, 3, 3] (the output gradient does not match the input and kernel size)"
    );
}

#[test]
fn indexing_ops() {
    let x = f32s(&[2, 3]);
    assert_eq!(
        msg(x.gather(1, &i64s(&[0, 1], &[2]))),
        "gather: shape mismatch between [2, 3] and [2] (the index must have the tensor's rank)"
    );
    assert_eq!(
        msg(x.gather(1, &i64s(&[0, 1, 2], &[3, 1]))),
        "gather: shape mismatch between [2, 3] and [3, 1] (dimension 0 has sizes 2 and 3)"
    );
    assert_eq!(
        msg(x.gather(1, &i64s(&[0, 3], &[2, 1]))),
        "gather: index 3 is out of bounds for a dimension of size 3"
    );
    assert_eq!(
        msg(x.gather(0, &i64s(&[-3, 0, 0], &[1, 3]))),
        "gather: index -3 is out of bounds for a dimension of size 2"
    );
    assert_eq!(
        msg(x.gather(0, &f32s(&[1, 3]))),
        "gather: not supported for dtype float32 (indices must be integers)"
    );
    assert_eq!(
        msg(x.index_select(0, &i64s(&[0], &[1, 1]))),
        "index_select: the index must be 1-D, got shape [1, 1]"
    );
    assert_eq!(
        msg(x.index_select(1, &i64s(&[0, 4], &[2]))),
        "index_select: index 4 is out of bounds for a dimension of size 3"
    );
    assert_eq!(
        msg(x.index_select(1, &zeros(&[2], DType::Bool))),
        "index_select: not supported for dtype bool (indices must be integers)"
    );
    assert_eq!(
        msg(x.scatter_add(0, &i64s(&[0, 1], &[1, 2]), &f32s(&[1, 3]))),
        "scatter_add: shape mismatch between [1, 2] and [1, 3] (index and source must have one shape)"
    );
    assert_eq!(
        msg(x.scatter_add(0, &i64s(&[0; 4], &[1, 4]), &f32s(&[1, 4]))),
        "scatter_add: shape mismatch between [2, 3] and [1, 4] (the index must match the destination except on axis 0)"
    );
    assert_eq!(
        msg(x.scatter_add(0, &i64s(&[0, 1, 2], &[1, 3]), &f32s(&[1, 3]))),
        "scatter_add: index 2 is out of bounds for a dimension of size 2"
    );
    assert_eq!(
        msg(x.scatter_add(0, &i64s(&[0, 1, 1], &[1, 3]), &zeros(&[1, 3], DType::F64))),
        "scatter_add: dtype mismatch between float32 and float64 (cast one operand with .cast(...))"
    );
    assert_eq!(
        msg(x.index_add(0, &i64s(&[0, 1], &[2]), &f32s(&[1, 3]))),
        "index_add: shape mismatch between [2, 3] and [1, 3] (need a 1-D index with one entry per slice of src along axis 0)"
    );
    let labels = i64s(&[0, 3], &[2]);
    assert_eq!(
        msg(labels.one_hot(3, DType::F32)),
        "one_hot: index 3 is out of bounds for a dimension of size 3"
    );
    assert_eq!(
        msg(i64s(&[-1], &[1]).one_hot(3, DType::F32)),
        "one_hot: index -1 is out of bounds for a dimension of size 3"
    );
    assert_eq!(
        msg(f32s(&[2]).one_hot(3, DType::F32)),
        "one_hot: not supported for dtype float32 (indices must be integers)"
    );
    assert_eq!(
        msg(f32s(&[3]).topk(5, 0, true)),
        "topk: k = 5 exceeds the size 3 of axis 0"
    );
}

#[test]
fn reductions_over_nothing() {
    let e = zeros(&[0], DType::F32);
    assert_eq!(
        msg(e.max_all()),
        "max: zero-size reduction over axes [0] of shape [0] has no identity"
    );
    assert_eq!(
        msg(zeros(&[2, 0], DType::I64).min(&[1], true)),
        "min: zero-size reduction over axes [1] of shape [2, 0] has no identity"
    );
    assert_eq!(
        msg(zeros(&[0, 3], DType::F32).argmax(0, false)),
        "argmax: axis 0 of shape [0, 3] is empty"
    );
}

#[test]
fn where_condition_and_branches() {
    let x = f32s(&[2]);
    assert_eq!(
        msg(x.where_(&x, 0.0)),
        "where: not supported for dtype float32 (the condition must be bool; compare first, e.g. x.gt(0))"
    );
    let c = zeros(&[2], DType::Bool);
    assert_eq!(
        c.where_(&x, zeros(&[2], DType::I64)).unwrap().dtype(),
        DType::F32
    );
    assert_eq!(
        msg(c.where_(f32s(&[3]), 0.0)),
        "where: shape mismatch between [2] and [3] (dimension 0 of the broadcast has sizes 2 and 3; each must be equal or 1)"
    );
}

#[test]
fn basic_indexing() {
    let x = f32s(&[2, 3]);
    assert_eq!(
        msg(x.i((0, 3))),
        "index: index 3 is out of bounds for a dimension of size 3"
    );
    assert_eq!(
        msg(x.i(-3)),
        "index: index -3 is out of bounds for a dimension of size 2"
    );
    assert_eq!(
        msg(x.i((0, 0, 0))),
        "index: 3 indices given for a tensor of shape [2, 3] with 2 dimensions"
    );
    assert_eq!(
        msg(f32s(&[]).i(0)),
        "index: 1 indices given for a tensor of shape [] with 0 dimensions"
    );
    assert_eq!(
        msg(x.i((.., s(..).step(0)))),
        "index: slice step must not be zero (axis 1 of shape [2, 3])"
    );
    assert_eq!(
        msg(x.i(Indexer::Range {
            start: None,
            end: None,
            step: 0
        })),
        "index: slice step must not be zero (axis 0 of shape [2, 3])"
    );
}

/// `Error` values are plain data: they compare, clone and carry their fields.
#[test]
fn errors_are_values() {
    let e = f32s(&[2]).item::<f32>().unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "item", .. }));
    let e = f32s(&[2, 3]).sum(&[2], false).unwrap_err();
    assert_eq!(
        e,
        Error::InvalidAxis {
            op: "sum",
            axis: 2,
            rank: 2
        }
    );
    assert_eq!(e.clone(), e);
}
