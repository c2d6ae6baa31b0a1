//! The messages of ONNX's `onnx.proto` that an exported model uses, declared with `prost`'s derive
//! (field numbers as in `onnx.proto`, version 1.x): the model, its graph, nodes, attributes,
//! tensors (initialisers) and the typed, shaped graph inputs and outputs.

use prost::Message;

/// `onnx.ModelProto`: the file's top-level message.
#[derive(Clone, PartialEq, Message)]
pub struct ModelProto {
    /// The IR version the file follows.
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// The operator sets the graph's nodes come from.
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// The tool that wrote the file.
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// Its version.
    #[prost(string, tag = "3")]
    pub producer_version: String,
    /// The computation.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
}

/// `onnx.OperatorSetIdProto`: an operator set and its version (the default domain is `""`).
#[derive(Clone, PartialEq, Message)]
pub struct OperatorSetIdProto {
    /// The domain (`""` for ONNX's own operators).
    #[prost(string, tag = "1")]
    pub domain: String,
    /// The opset version.
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// `onnx.GraphProto`: nodes in topological order over named values.
#[derive(Clone, PartialEq, Message)]
pub struct GraphProto {
    /// The nodes, each after the producers of its inputs.
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// The graph's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Constant tensors (weights, shape arguments), referred to by name.
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// The graph's inputs.
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// The graph's outputs.
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
}

/// `onnx.NodeProto`: one operator call.
#[derive(Clone, PartialEq, Message)]
pub struct NodeProto {
    /// Input value names (`""` for an optional input left out).
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// Output value names.
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// The node's name.
    #[prost(string, tag = "3")]
    pub name: String,
    /// The operator (`MatMul`, `Conv`, ...).
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// The operator's domain (`""` for ONNX's).
    #[prost(string, tag = "7")]
    pub domain: String,
    /// The operator's attributes.
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
}

/// `onnx.AttributeProto`: a named attribute of one of the kinds below.
#[derive(Clone, PartialEq, Message)]
pub struct AttributeProto {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Which field holds the value ([`AttributeType`]).
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    /// A float.
    #[prost(float, tag = "2")]
    pub f: f32,
    /// An integer.
    #[prost(int64, tag = "3")]
    pub i: i64,
    /// A string (bytes).
    #[prost(bytes = "vec", tag = "4")]
    pub s: Vec<u8>,
    /// A tensor.
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// Floats.
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    /// Integers.
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
}

/// `onnx.AttributeProto.AttributeType`: the kinds of attribute the exporter writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum AttributeType {
    /// [`AttributeProto::f`].
    Float = 1,
    /// [`AttributeProto::i`].
    Int = 2,
    /// [`AttributeProto::s`].
    String = 3,
    /// [`AttributeProto::t`].
    Tensor = 4,
    /// [`AttributeProto::ints`].
    Ints = 7,
}

/// `onnx.TensorProto`: a constant tensor, its values as little-endian `raw_data`.
#[derive(Clone, PartialEq, Message)]
pub struct TensorProto {
    /// The shape.
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// The element type (`TensorProto.DataType`).
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// The tensor's name (an initialiser's is the value it defines).
    #[prost(string, tag = "8")]
    pub name: String,
    /// The values, little-endian, row-major.
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
}

/// `onnx.ValueInfoProto`: a named, typed value (a graph input or output).
#[derive(Clone, PartialEq, Message)]
pub struct ValueInfoProto {
    /// The value's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its type.
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

/// `onnx.TypeProto`, the tensor case only.
#[derive(Clone, PartialEq, Message)]
pub struct TypeProto {
    /// A tensor type.
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TensorTypeProto>,
}

/// `onnx.TypeProto.Tensor`: element type and shape.
#[derive(Clone, PartialEq, Message)]
pub struct TensorTypeProto {
    /// The element type (`TensorProto.DataType`).
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    /// The shape.
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// `onnx.TensorShapeProto`.
#[derive(Clone, PartialEq, Message)]
pub struct TensorShapeProto {
    /// The dimensions, outermost first.
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// `onnx.TensorShapeProto.Dimension`: a fixed size or a named symbolic one.
#[derive(Clone, PartialEq, Message)]
pub struct Dimension {
    /// The size.
    #[prost(oneof = "DimensionValue", tags = "1, 2")]
    pub value: Option<DimensionValue>,
}

/// The value of a [`Dimension`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum DimensionValue {
    /// A fixed size.
    #[prost(int64, tag = "1")]
    DimValue(i64),
    /// A symbolic size (`"batch"`), the same wherever the name appears.
    #[prost(string, tag = "2")]
    DimParam(String),
}
