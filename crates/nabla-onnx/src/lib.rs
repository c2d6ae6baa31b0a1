//! Owns ONNX export: a traced program ([`Program`]) or a function traced on a [`TracingBackend`]
//! (a model built there, its weights uploaded as constants) written as an ONNX model at opset
//! [`OPSET`], for ONNX Runtime, TensorRT and the other runtimes that read ONNX.
//!
//! Each primitive becomes one or a few ONNX operators (`lower.rs`); a traced operand's strided view
//! becomes reshapes, slices and a transpose (`emit.rs`); constants become initialisers. A program
//! has static shapes, so [`export_traced`] with a dynamic batch traces the function at three batch
//! sizes and computes the sizes that change with the batch from the input's shape (`dynamic.rs`).
//! A fresh model's random initial weights are constants (the values the program draws on every
//! run); dropout masks, complex numbers, extension ops and fused kernels, which ONNX cannot
//! express with nabla's semantics, are an error naming them.
//!
//! Must depend only on `nabla-core`, `nabla-tensor` and `nabla-nn` (for atomic file writes);
//! the messages of `onnx.proto` are declared with `prost` (`proto.rs`).

mod dynamic;
mod emit;
mod lower;
pub mod proto;

use emit::{Emitter, OP, RESERVED, onnx_type};
use nabla_core::{DType, Error, Result};
use nabla_tensor::{Program, Tensor, TraceOp, TracingBackend, ValueId};
use prost::Message;
use proto::{
    Dimension, DimensionValue, GraphProto, ModelProto, OperatorSetIdProto, TensorShapeProto,
    TensorTypeProto, TypeProto, ValueInfoProto,
};
use std::path::Path;

/// The ONNX operator set the exported models use.
pub const OPSET: i64 = 18;

/// The ONNX IR version of the exported files (the one of opset 18).
pub const IR_VERSION: i64 = 8;

/// The largest model one protocol buffer holds (2 GiB); larger ones would need ONNX's external
/// data files, which the exporter does not write.
const MAX_MODEL_BYTES: usize = (1 << 31) - 1;

/// Names and the batch axis of an export.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// The graph inputs' names, one per input (`input0`, `input1`, ... when empty).
    pub input_names: Vec<String>,
    /// The graph outputs' names, one per output (`output0`, ... when empty).
    pub output_names: Vec<String>,
    /// [`export_traced`] only: axis 0 of every input is a batch axis of any size (ONNX's symbolic
    /// `batch`), as `torch.onnx.export`'s `dynamic_axes={"x": {0: "batch"}}`.
    pub dynamic_batch: bool,
}

/// The shape and dtype of an input of [`export_traced`].
#[derive(Clone, Debug, PartialEq)]
pub struct InputSpec {
    /// The shape (with a dynamic batch, axis 0's size is replaced by the trace sizes).
    pub shape: Vec<usize>,
    /// The element type.
    pub dtype: DType,
}

impl InputSpec {
    /// An input of `shape` and `dtype`.
    pub fn new(shape: impl Into<Vec<usize>>, dtype: DType) -> Self {
        InputSpec {
            shape: shape.into(),
            dtype,
        }
    }
}

/// A graph input or output: name, dtype, shape and the axes whose size is symbolic.
#[derive(Clone, Debug)]
pub(crate) struct Port {
    pub(crate) name: String,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<usize>,
    /// `(axis, symbol)`; an empty symbol is an unnamed size.
    pub(crate) dynamic: Vec<(usize, String)>,
}

/// A lowered program: its operators and initialisers, inputs and outputs.
pub(crate) struct Lowered {
    pub(crate) emitter: Emitter,
    pub(crate) inputs: Vec<Port>,
    pub(crate) outputs: Vec<Port>,
}

/// The names of `count` ports: `given` (checked) or `{stem}0`, `{stem}1`, ...
fn port_names(given: &[String], count: usize, stem: &str) -> Result<Vec<String>> {
    if given.is_empty() {
        return Ok((0..count).map(|i| format!("{stem}{i}")).collect());
    }
    if given.len() != count {
        return Err(Error::invalid(
            OP,
            format!("{} {stem} names given for {count} {stem}s", given.len()),
        ));
    }
    for (i, name) in given.iter().enumerate() {
        if name.is_empty() || name.starts_with(RESERVED) || given[..i].contains(name) {
            return Err(Error::invalid(
                OP,
                format!(
                    "{stem} name {name:?} must be non-empty, unique and not start with {RESERVED:?}"
                ),
            ));
        }
    }
    Ok(given.to_vec())
}

/// Lowers `program` with `inputs` (program input values, in order) as the graph's inputs; any other
/// program input must be unused.
fn lower_program(
    program: &Program,
    inputs: &[ValueId],
    options: &ExportOptions,
) -> Result<Lowered> {
    let values = program.values();
    let input_names = port_names(&options.input_names, inputs.len(), "input")?;
    let output_names = port_names(&options.output_names, program.outputs().len(), "output")?;
    if let Some(name) = input_names.iter().find(|n| output_names.contains(n)) {
        return Err(Error::invalid(
            OP,
            format!("{name:?} names an input and an output"),
        ));
    }
    let mut names = vec![String::new(); values.len()];
    for (&v, name) in inputs.iter().zip(&input_names) {
        names[v] = name.clone();
    }
    let mut e = Emitter::default();
    for node in program.nodes() {
        for &v in &node.outputs {
            onnx_type(values[v].dtype)?;
        }
        for o in &node.inputs {
            if names[o.value].is_empty() {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "the program reads %{}, an input that is not exported",
                        o.value
                    ),
                ));
            }
        }
        if let TraceOp::Primitive(_) = node.op {
            lower::lower_node(&mut e, program, node, &mut names)?;
        }
    }
    let port = |name: &String, v: ValueId, shape: &[usize]| Port {
        name: name.clone(),
        dtype: values[v].dtype,
        shape: shape.to_vec(),
        dynamic: Vec::new(),
    };
    let mut outputs = Vec::new();
    for (o, name) in program.outputs().iter().zip(&output_names) {
        if names[o.value].is_empty() {
            return Err(Error::invalid(
                OP,
                format!("output {name} reads an input that is not exported"),
            ));
        }
        let view = e.view(&names[o.value], &values[o.value].shape, &o.layout, true)?;
        e.op_into("Identity", &[&view], name);
        outputs.push(port(name, o.value, o.layout.shape()));
    }
    e.prune(&output_names);
    let inputs = inputs
        .iter()
        .zip(&input_names)
        .map(|(&v, name)| port(name, v, &values[v].shape))
        .collect();
    Ok(Lowered {
        emitter: e,
        inputs,
        outputs,
    })
}

/// ONNX's description of a port.
fn value_info(port: &Port) -> Result<ValueInfoProto> {
    let dim = port
        .shape
        .iter()
        .enumerate()
        .map(|(axis, &d)| Dimension {
            value: match port.dynamic.iter().find(|(a, _)| *a == axis) {
                Some((_, symbol)) if symbol.is_empty() => None,
                Some((_, symbol)) => Some(DimensionValue::DimParam(symbol.clone())),
                None => Some(DimensionValue::DimValue(d as i64)),
            },
        })
        .collect();
    Ok(ValueInfoProto {
        name: port.name.clone(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: onnx_type(port.dtype)?,
                shape: Some(TensorShapeProto { dim }),
            }),
        }),
    })
}

/// The model of a lowered graph.
fn into_model(lowered: Lowered) -> Result<ModelProto> {
    let bytes: usize = lowered
        .emitter
        .initializers
        .iter()
        .map(|t| t.raw_data.len())
        .sum();
    if bytes > MAX_MODEL_BYTES {
        return Err(Error::invalid(
            OP,
            format!(
                "the model's constants take {bytes} bytes, over the 2 GiB one ONNX file holds \
                 (external data files are not written)"
            ),
        ));
    }
    let graph = GraphProto {
        node: lowered.emitter.nodes,
        name: "nabla".into(),
        initializer: lowered.emitter.initializers,
        input: lowered
            .inputs
            .iter()
            .map(value_info)
            .collect::<Result<_>>()?,
        output: lowered
            .outputs
            .iter()
            .map(value_info)
            .collect::<Result<_>>()?,
    };
    Ok(ModelProto {
        ir_version: IR_VERSION,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: OPSET,
        }],
        producer_name: "nabla".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        graph: Some(graph),
    })
}

/// `program` as an ONNX model, with the shapes it was traced at: its inputs are the graph's inputs,
/// its constants the initialisers.
pub fn program_to_model(program: &Program, options: &ExportOptions) -> Result<ModelProto> {
    if options.dynamic_batch {
        return Err(Error::invalid(
            OP,
            "a traced program has fixed shapes: use export_traced for a dynamic batch axis",
        ));
    }
    into_model(lower_program(program, program.inputs(), options)?)
}

/// Writes `program` as an ONNX model to `path` (see [`program_to_model`]), atomically and never
/// through a link.
///
/// ```
/// use nabla_core::DType;
/// use nabla_tensor::TracingBackend;
/// let tb = TracingBackend::new();
/// let x = tb.placeholder([4, 3], DType::F32)?;
/// let y = x.matmul(&x.t()?)?.tanh()?;
/// let program = tb.program(&[&y])?;
/// let path = std::env::temp_dir().join(format!("nabla-doc-{}.onnx", std::process::id()));
/// nabla_onnx::export(&program, &path, &Default::default())?;
/// assert!(std::fs::metadata(&path)?.len() > 0);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn export(program: &Program, path: impl AsRef<Path>, options: &ExportOptions) -> Result<()> {
    save(&program_to_model(program, options)?, path)
}

/// Writes `model` to `path`, atomically and never through a link.
pub fn save(model: &ModelProto, path: impl AsRef<Path>) -> Result<()> {
    nabla_nn::write_atomic(path.as_ref(), &model.encode_to_vec())
}

/// Traces `f` on placeholders of `inputs` on `tb` (the backend the model `f` calls was built on,
/// its weights uploaded there) and lowers the program; with `options.dynamic_batch`, traces it at
/// three batch sizes and makes axis 0 of every input a batch axis of any size.
pub fn traced_to_model<F>(
    tb: &TracingBackend,
    inputs: &[InputSpec],
    f: F,
    options: &ExportOptions,
) -> Result<ModelProto>
where
    F: Fn(&[Tensor<TracingBackend>]) -> Result<Vec<Tensor<TracingBackend>>>,
{
    let trace = |batch: Option<i64>| -> Result<Lowered> {
        let placeholders = inputs
            .iter()
            .map(|spec| {
                let mut shape = spec.shape.clone();
                if let (Some(b), Some(first)) = (batch, shape.first_mut()) {
                    *first = b as usize;
                }
                tb.placeholder(shape, spec.dtype)
            })
            .collect::<Result<Vec<_>>>()?;
        let outputs = f(&placeholders)?;
        let program = tb.program(&outputs.iter().collect::<Vec<_>>())?;
        // The program's inputs are every placeholder of `tb`; this trace's are the last ones.
        let all = program.inputs();
        let ours = &all[all.len() - placeholders.len()..];
        lower_program(&program, ours, options)
    };
    if !options.dynamic_batch {
        return into_model(trace(None)?);
    }
    if let Some(spec) = inputs.iter().find(|s| s.shape.is_empty()) {
        return Err(Error::invalid(
            OP,
            format!("a dynamic batch needs every input to have an axis 0, got {spec:?}"),
        ));
    }
    let [a, b, c] = dynamic::BATCHES;
    into_model(dynamic::merge([
        trace(Some(a))?,
        trace(Some(b))?,
        trace(Some(c))?,
    ])?)
}

/// Writes the model of [`traced_to_model`] to `path`, atomically and never through a link.
///
/// ```
/// use nabla_core::{DType, Generator};
/// use nabla_nn::{Forward, Linear};
/// use nabla_onnx::{ExportOptions, InputSpec, export_traced};
/// use nabla_tensor::TracingBackend;
/// let tb = TracingBackend::new();
/// // A model built on the tracing backend: its weights are the model's constants.
/// let layer = Linear::new(3, 2, true, DType::F32, &mut Generator::new(0), &tb)?;
/// let options = ExportOptions { dynamic_batch: true, ..Default::default() };
/// let path = std::env::temp_dir().join(format!("nabla-linear-{}.onnx", std::process::id()));
/// export_traced(&tb, &[InputSpec::new([1, 3], DType::F32)], |x| Ok(vec![layer.forward(&x[0])?]), &path, &options)?;
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn export_traced<F>(
    tb: &TracingBackend,
    inputs: &[InputSpec],
    f: F,
    path: impl AsRef<Path>,
    options: &ExportOptions,
) -> Result<()>
where
    F: Fn(&[Tensor<TracingBackend>]) -> Result<Vec<Tensor<TracingBackend>>>,
{
    save(&traced_to_model(tb, inputs, f, options)?, path)
}
