//! Each primitive of a traced program as ONNX operators (opset 18). Primitives ONNX cannot
//! express with nabla's semantics are an error naming them.

use crate::emit::{Emitter, OP, attr_int, attr_ints, attr_str, attr_tensor, i64s, tensor};
use nabla_core::{
    BinaryOp, CompareOp, Conv2dParams, DType, Distribution, Error, HostData, InOrder, Precision,
    Primitive, ReduceOp, Result, Scalar, UnaryOp, random_host,
};
use nabla_tensor::{Program, TraceNode as Node};

/// The error for a primitive ONNX export does not cover.
pub(crate) fn unsupported(what: &str, why: &str) -> Error {
    Error::invalid(OP, format!("`{what}` cannot be exported to ONNX: {why}"))
}

/// The inputs of one node, as ONNX value names with their traced dtypes and shapes.
struct Operands<'a> {
    names: Vec<String>,
    dtypes: Vec<DType>,
    shapes: Vec<&'a [usize]>,
}

/// Lowers `node` of `program`; `names[v]` is the ONNX name of value `v` (set for the node's
/// outputs here).
pub(crate) fn lower_node(
    e: &mut Emitter,
    program: &Program,
    node: &Node,
    names: &mut [String],
) -> Result<()> {
    let Some(p) = node.op.primitive() else {
        return Ok(());
    };
    // Elementwise operators broadcast as numpy does: their operands keep broadcast axes of size 1.
    let broadcasting = matches!(
        p,
        Primitive::Binary(_) | Primitive::Compare(_) | Primitive::Select
    );
    let mut ops = Operands {
        names: Vec::new(),
        dtypes: Vec::new(),
        shapes: Vec::new(),
    };
    for o in &node.inputs {
        let info = &program.values()[o.value];
        ops.names
            .push(e.view(&names[o.value], &info.shape, &o.layout, !broadcasting)?);
        ops.dtypes.push(info.dtype);
        ops.shapes.push(o.layout.shape());
    }
    if broadcasting {
        expand_if_needed(e, &mut ops, &program.values()[node.outputs[0]].shape);
    }
    let outputs = lower_primitive(e, p, &ops)?;
    for (&v, name) in node.outputs.iter().zip(outputs) {
        names[v] = name;
    }
    Ok(())
}

/// Expands the operands of an elementwise node when broadcasting alone would not reach the output
/// shape (every operand broadcast along one axis).
fn expand_if_needed(e: &mut Emitter, ops: &mut Operands<'_>, out: &[usize]) {
    let reached = (0..out.len())
        .all(|axis| out[axis] == 1 || ops.shapes.iter().any(|s| s.get(axis) == Some(&out[axis])));
    if !reached {
        let s = e.sizes(&i64s(out));
        for name in &mut ops.names {
            *name = e.op("Expand", &[name, &s], vec![]);
        }
    }
}

/// The operators of primitive `p` on `ops`; returns the names of its outputs.
fn lower_primitive(e: &mut Emitter, p: &Primitive, ops: &Operands<'_>) -> Result<Vec<String>> {
    let x = |i: usize| ops.names[i].as_str();
    match p {
        Primitive::Constant(data) => Ok(vec![e.constant(data, &[data.len()])?]),
        Primitive::Full { value, len, dtype } => {
            let value = tensor(String::new(), &HostData::filled(*dtype, 1, *value), &[1])?;
            let s = e.sizes(&[*len as i64]);
            Ok(vec![e.op(
                "ConstantOfShape",
                &[&s],
                vec![attr_tensor("value", value)],
            )])
        }
        // A coin flip per element is a dropout mask: in training mode, which an export is not.
        Primitive::Random {
            dist: Distribution::Bernoulli { .. },
            ..
        } => Err(unsupported(
            "random",
            "it draws a dropout mask (a model in training mode): call eval() on the model before \
             exporting",
        )),
        // Other draws (a fresh model's initial weights) are what the program computes on every
        // run, the same counter-based values on every backend: constants.
        Primitive::Random {
            dist,
            key,
            len,
            dtype,
        } => {
            let values = random_host(*dist, *len, *dtype, *key, &InOrder)?;
            Ok(vec![e.constant(&values, &[*len])?])
        }
        Primitive::Copy => Ok(vec![e.op("Identity", &[x(0)], vec![])]),
        Primitive::Unary(op) => Ok(vec![unary(e, *op, x(0), ops.dtypes[0])?]),
        Primitive::Binary(op) => Ok(vec![binary(e, *op, x(0), x(1), ops.dtypes[0])?]),
        Primitive::Compare(op) => Ok(vec![compare(e, *op, x(0), x(1))]),
        Primitive::Select => Ok(vec![e.op("Where", &[x(0), x(1), x(2)], vec![])]),
        Primitive::Cast(to) => {
            let to = crate::emit::onnx_type(*to)?;
            Ok(vec![e.op("Cast", &[x(0)], vec![attr_int("to", to.into())])])
        }
        Primitive::Reduce { op, axes } => Ok(vec![reduce(e, *op, axes, x(0))]),
        Primitive::ArgReduce { op, axis } => {
            let kind = match op {
                nabla_core::ArgReduceOp::ArgMax => "ArgMax",
                nabla_core::ArgReduceOp::ArgMin => "ArgMin",
            };
            let attrs = vec![attr_int("axis", *axis as i64), attr_int("keepdims", 1)];
            Ok(vec![e.op(kind, &[x(0)], attrs)])
        }
        Primitive::Cumsum { axis } => {
            let a = e.scalar(DType::I64, Scalar::I64(*axis as i64))?;
            Ok(vec![e.op("CumSum", &[x(0), &a], vec![])])
        }
        Primitive::Matmul => Ok(vec![e.op("MatMul", &[x(0), x(1)], vec![])]),
        Primitive::MatmulRounded(precision) => {
            let (a, b) = (rounded(e, x(0), *precision)?, rounded(e, x(1), *precision)?);
            Ok(vec![e.op("MatMul", &[&a, &b], vec![])])
        }
        Primitive::Pad { pads, value } => {
            let (before, after): (Vec<i64>, Vec<i64>) =
                pads.iter().map(|&(b, a)| (b as i64, a as i64)).unzip();
            let s = e.sizes(&[before, after].concat());
            let v = e.scalar(ops.dtypes[0], *value)?;
            Ok(vec![e.op(
                "Pad",
                &[x(0), &s, &v],
                vec![attr_str("mode", "constant")],
            )])
        }
        Primitive::Concat { axis } => {
            let inputs: Vec<&str> = ops.names.iter().map(String::as_str).collect();
            Ok(vec![e.op(
                "Concat",
                &inputs,
                vec![attr_int("axis", *axis as i64)],
            )])
        }
        Primitive::Gather { axis } => {
            let attrs = vec![attr_int("axis", *axis as i64)];
            Ok(vec![e.op("GatherElements", &[x(0), x(1)], attrs)])
        }
        Primitive::IndexSelect { axis } => Ok(vec![e.op(
            "Gather",
            &[x(0), x(1)],
            vec![attr_int("axis", *axis as i64)],
        )]),
        Primitive::ScatterAdd { axis } => {
            let attrs = vec![attr_int("axis", *axis as i64), attr_str("reduction", "add")];
            Ok(vec![e.op("ScatterElements", &[x(0), x(1), x(2)], attrs)])
        }
        Primitive::OneHot { classes, dtype } => {
            let depth = e.scalar(DType::I64, Scalar::I64(*classes as i64))?;
            // OneHot's `[off, on]` values.
            let mut raw = HostData::filled(*dtype, 1, Scalar::I64(0)).to_le_bytes();
            raw.extend(HostData::filled(*dtype, 1, Scalar::I64(1)).to_le_bytes());
            let v = e.raw_constant(crate::emit::onnx_type(*dtype)?, &[2], raw);
            Ok(vec![e.op(
                "OneHot",
                &[x(0), &depth, &v],
                vec![attr_int("axis", -1)],
            )])
        }
        Primitive::Sort { axis, descending } => {
            let k = ops.shapes[0][*axis] as i64;
            Ok(top_k(e, x(0), *axis, k, *descending))
        }
        Primitive::Topk { axis, k, largest } => Ok(top_k(e, x(0), *axis, *k as i64, *largest)),
        Primitive::MaxPool2d(params) => max_pool(e, x(0), ops.shapes[0], params),
        Primitive::Conv2d(params) => Ok(vec![conv(e, x(0), x(1), params)?]),
        Primitive::Conv2dInputGrad { input_hw, params } => Ok(vec![conv_transpose(
            e,
            x(0),
            x(1),
            &ops.shapes,
            *input_hw,
            params,
        )?]),
        Primitive::Conv2dWeightGrad { .. } => Err(unsupported(
            "conv2d_weight_grad",
            "a convolution's weight gradient belongs to training; export the forward pass",
        )),
        Primitive::Extension(call) => Err(unsupported(
            call.0.name(),
            "extension ops (linear algebra, FFT, special functions, fused CPU kernels) have no \
             ONNX lowering",
        )),
        Primitive::Fused { kernel, .. } => Err(unsupported(
            &format!("fused[{kernel}]"),
            "export the program as traced, before GraphCompiler fuses it",
        )),
    }
}

/// `x` rounded to the precision's half type and back to f32 (autocast's products), or `x`.
fn rounded(e: &mut Emitter, x: &str, precision: Precision) -> Result<String> {
    Ok(match precision.rounding() {
        Some(half) => {
            let to = crate::emit::onnx_type(half)?;
            let h = e.op("Cast", &[x], vec![attr_int("to", to.into())]);
            e.op("Cast", &[&h], vec![attr_int("to", 1)])
        }
        None => x.to_string(),
    })
}

/// An elementwise unary op.
fn unary(e: &mut Emitter, op: UnaryOp, x: &str, dtype: DType) -> Result<String> {
    let simple = |name: &str| Some(name.to_string());
    let integral = dtype.is_int() || dtype.is_bool();
    let direct = match op {
        UnaryOp::Neg => simple("Neg"),
        UnaryOp::Abs => simple("Abs"),
        UnaryOp::Sign => simple("Sign"),
        UnaryOp::Recip => simple("Reciprocal"),
        UnaryOp::Sqrt => simple("Sqrt"),
        UnaryOp::Exp => simple("Exp"),
        UnaryOp::Log => simple("Log"),
        UnaryOp::Sin => simple("Sin"),
        UnaryOp::Cos => simple("Cos"),
        UnaryOp::Tan => simple("Tan"),
        UnaryOp::Asin => simple("Asin"),
        UnaryOp::Acos => simple("Acos"),
        UnaryOp::Atan => simple("Atan"),
        UnaryOp::Sinh => simple("Sinh"),
        UnaryOp::Cosh => simple("Cosh"),
        UnaryOp::Tanh => simple("Tanh"),
        UnaryOp::Asinh => simple("Asinh"),
        UnaryOp::Acosh => simple("Acosh"),
        UnaryOp::Atanh => simple("Atanh"),
        UnaryOp::Sigmoid => simple("Sigmoid"),
        UnaryOp::Erf => simple("Erf"),
        UnaryOp::Not => simple("Not"),
        // Rounding an integer, or the conjugate or real part of a real number, leaves it.
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc if integral => {
            simple("Identity")
        }
        UnaryOp::Conj | UnaryOp::Real => simple("Identity"),
        UnaryOp::Floor => simple("Floor"),
        UnaryOp::Ceil => simple("Ceil"),
        UnaryOp::Round => simple("Round"),
        UnaryOp::BitNot if dtype.is_bool() => simple("Not"),
        UnaryOp::BitNot => simple("BitwiseNot"),
        _ => None,
    };
    if let Some(kind) = direct {
        return Ok(e.op(&kind, &[x], vec![]));
    }
    let one = || Scalar::F64(1.0);
    Ok(match op {
        UnaryOp::Square => e.op("Mul", &[x, x], vec![]),
        UnaryOp::Rsqrt => {
            let r = e.op("Sqrt", &[x], vec![]);
            e.op("Reciprocal", &[&r], vec![])
        }
        UnaryOp::Expm1 => {
            let (ex, c) = (e.op("Exp", &[x], vec![]), e.scalar(dtype, one())?);
            e.op("Sub", &[&ex, &c], vec![])
        }
        UnaryOp::Log1p => {
            let c = e.scalar(dtype, one())?;
            let s = e.op("Add", &[x, &c], vec![]);
            e.op("Log", &[&s], vec![])
        }
        UnaryOp::Trunc => {
            let (sign, abs) = (e.op("Sign", &[x], vec![]), e.op("Abs", &[x], vec![]));
            let floor = e.op("Floor", &[&abs], vec![]);
            e.op("Mul", &[&sign, &floor], vec![])
        }
        // x == x is false only for NaN, so it answers both questions for integers too.
        UnaryOp::IsNan if integral => {
            let same = e.op("Equal", &[x, x], vec![]);
            e.op("Not", &[&same], vec![])
        }
        UnaryOp::IsNan => e.op("IsNaN", &[x], vec![]),
        UnaryOp::IsFinite if integral => e.op("Equal", &[x, x], vec![]),
        UnaryOp::IsFinite => {
            let (inf, nan) = (e.op("IsInf", &[x], vec![]), e.op("IsNaN", &[x], vec![]));
            let bad = e.op("Or", &[&inf, &nan], vec![]);
            e.op("Not", &[&bad], vec![])
        }
        UnaryOp::SignBit => {
            return Err(unsupported("signbit", "ONNX cannot tell -0.0 from 0.0"));
        }
        UnaryOp::Imag => return Err(unsupported("imag", "ONNX has no complex numbers")),
        _ => unreachable!("every other unary op maps to one operator above"),
    })
}

/// An elementwise binary op (operands of one dtype).
fn binary(e: &mut Emitter, op: BinaryOp, a: &str, b: &str, dtype: DType) -> Result<String> {
    let integral = dtype.is_int();
    let boolean = dtype.is_bool();
    let kind = match op {
        BinaryOp::Add if boolean => "Or",
        BinaryOp::Mul if boolean => "And",
        BinaryOp::Add => "Add",
        BinaryOp::Sub => "Sub",
        BinaryOp::Mul => "Mul",
        BinaryOp::Div if !integral => "Div",
        BinaryOp::Pow => "Pow",
        BinaryOp::Maximum => "Max",
        BinaryOp::Minimum => "Min",
        BinaryOp::And => "And",
        BinaryOp::Or => "Or",
        BinaryOp::Xor => "Xor",
        BinaryOp::BitAnd if boolean => "And",
        BinaryOp::BitOr if boolean => "Or",
        BinaryOp::BitXor if boolean => "Xor",
        BinaryOp::BitAnd => "BitwiseAnd",
        BinaryOp::BitOr => "BitwiseOr",
        BinaryOp::BitXor => "BitwiseXor",
        // Integers: floor division and the divisor-signed remainder, from ONNX's Mod (fmod = 0
        // takes the divisor's sign, as Python's %).
        BinaryOp::Div => {
            let r = e.op("Mod", &[a, b], vec![attr_int("fmod", 0)]);
            let exact = e.op("Sub", &[a, &r], vec![]);
            return Ok(e.op("Div", &[&exact, b], vec![]));
        }
        BinaryOp::Rem if integral => "Mod",
        BinaryOp::Rem => {
            let q = e.op("Div", &[a, b], vec![]);
            let f = e.op("Floor", &[&q], vec![]);
            let m = e.op("Mul", &[&f, b], vec![]);
            return Ok(e.op("Sub", &[a, &m], vec![]));
        }
        BinaryOp::Atan2 | BinaryOp::NextAfter | BinaryOp::ShiftLeft | BinaryOp::ShiftRight => {
            return Err(unsupported(
                op.name(),
                "ONNX has no operator with its semantics (BitShift is for unsigned integers \
                 only and differs past the width)",
            ));
        }
    };
    Ok(e.op(kind, &[a, b], vec![]))
}

/// An elementwise comparison.
fn compare(e: &mut Emitter, op: CompareOp, a: &str, b: &str) -> String {
    let kind = match op {
        CompareOp::Eq | CompareOp::Ne => "Equal",
        CompareOp::Lt => "Less",
        CompareOp::Le => "LessOrEqual",
        CompareOp::Gt => "Greater",
        CompareOp::Ge => "GreaterOrEqual",
    };
    let y = e.op(kind, &[a, b], vec![]);
    match op {
        CompareOp::Ne => e.op("Not", &[&y], vec![]),
        _ => y,
    }
}

/// A reduction over `axes`, which are kept with size 1.
fn reduce(e: &mut Emitter, op: ReduceOp, axes: &[usize], x: &str) -> String {
    if axes.is_empty() {
        return e.op("Identity", &[x], vec![]);
    }
    let kind = match op {
        ReduceOp::Sum => "ReduceSum",
        ReduceOp::Prod => "ReduceProd",
        ReduceOp::Max => "ReduceMax",
        ReduceOp::Min => "ReduceMin",
    };
    let a = e.sizes(&i64s(axes));
    e.op(kind, &[x, &a], vec![attr_int("keepdims", 1)])
}

/// TopK's values and `int64` positions, sorted.
fn top_k(e: &mut Emitter, x: &str, axis: usize, k: i64, largest: bool) -> Vec<String> {
    let k = e.sizes(&[k]);
    let attrs = vec![
        attr_int("axis", axis as i64),
        attr_int("largest", largest.into()),
        attr_int("sorted", 1),
    ];
    e.node("TopK", &[x, &k], 2, attrs)
}

/// The attributes of a 2-D window: strides, symmetric pads and dilations.
fn window(
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
) -> Vec<crate::proto::AttributeProto> {
    vec![
        attr_ints("strides", &i64s(&[stride.0, stride.1])),
        attr_ints("pads", &i64s(&[padding.0, padding.1, padding.0, padding.1])),
        attr_ints("dilations", &i64s(&[dilation.0, dilation.1])),
    ]
}

/// Checks an image operand is `[N, C, H, W]`.
fn check_nchw(what: &str, shape: &[usize]) -> Result<()> {
    if shape.len() == 4 {
        Ok(())
    } else {
        Err(unsupported(
            what,
            &format!("ONNX needs [N, C, H, W] inputs, got {shape:?}"),
        ))
    }
}

/// Max pooling, with nabla's second output (each maximum's position within its `H x W` plane) from
/// ONNX's positions over the whole tensor.
fn max_pool(
    e: &mut Emitter,
    x: &str,
    shape: &[usize],
    p: &nabla_core::Pool2dParams,
) -> Result<Vec<String>> {
    check_nchw("max_pool2d", shape)?;
    let mut attrs = window(p.stride, p.padding, p.dilation);
    attrs.push(attr_ints("kernel_shape", &i64s(&[p.kernel.0, p.kernel.1])));
    attrs.push(attr_int("ceil_mode", p.ceil_mode.into()));
    let out = e.node("MaxPool", &[x], 2, attrs);
    let plane = e.scalar(DType::I64, Scalar::I64((shape[2] * shape[3]) as i64))?;
    let within = e.op("Mod", &[&out[1], &plane], vec![attr_int("fmod", 0)]);
    Ok(vec![out[0].clone(), within])
}

/// A convolution of `[N, C, H, W]` by `[O, C / groups, KH, KW]`.
fn conv(e: &mut Emitter, x: &str, w: &str, p: &Conv2dParams) -> Result<String> {
    let (x, w) = (rounded(e, x, p.precision)?, rounded(e, w, p.precision)?);
    let mut attrs = window(p.stride, p.padding, p.dilation);
    attrs.push(attr_int("group", p.groups as i64));
    Ok(e.op("Conv", &[&x, &w], attrs))
}

/// The gradient of a convolution with respect to its input (a transposed convolution), with the
/// output padding that gives the input's size `input_hw`.
fn conv_transpose(
    e: &mut Emitter,
    grad: &str,
    w: &str,
    shapes: &[&[usize]],
    input_hw: (usize, usize),
    p: &Conv2dParams,
) -> Result<String> {
    check_nchw("conv2d_input_grad", shapes[0])?;
    let (g, k) = (shapes[0], shapes[1]);
    let size = |out: usize, stride: usize, pad: usize, dil: usize, kernel: usize| {
        ((out - 1) * stride + dil * (kernel - 1) + 1) as i64 - 2 * pad as i64
    };
    let extra = [
        input_hw.0 as i64 - size(g[2], p.stride.0, p.padding.0, p.dilation.0, k[2]),
        input_hw.1 as i64 - size(g[3], p.stride.1, p.padding.1, p.dilation.1, k[3]),
    ];
    let (grad, w) = (rounded(e, grad, p.precision)?, rounded(e, w, p.precision)?);
    let mut attrs = window(p.stride, p.padding, p.dilation);
    attrs.push(attr_int("group", p.groups as i64));
    attrs.push(attr_ints("output_padding", &extra));
    Ok(e.op("ConvTranspose", &[&grad, &w], attrs))
}
