//! The graph under construction: nodes, initialisers and fresh value names, attribute and constant
//! helpers, and the lowering of a strided view (a traced operand's layout) to ONNX's shape
//! operators.

use crate::proto::{AttributeProto, AttributeType, NodeProto, TensorProto};
use nabla_core::{DType, Error, HostData, Layout, Result, Scalar};

/// The op named in errors.
pub(crate) const OP: &str = "onnx::export";

/// ONNX's `TensorProto.DataType` of `dtype`; complex types have no ONNX operator and are refused.
pub(crate) fn onnx_type(dtype: DType) -> Result<i32> {
    Ok(match dtype {
        DType::F32 => 1,
        DType::U8 => 2,
        DType::I8 => 3,
        DType::U16 => 4,
        DType::I16 => 5,
        DType::I32 => 6,
        DType::I64 => 7,
        DType::Bool => 9,
        DType::F16 => 10,
        DType::F64 => 11,
        DType::U32 => 12,
        DType::U64 => 13,
        DType::BF16 => 16,
        DType::C64 | DType::C128 => {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype,
                hint: Some("ONNX has no operators on complex numbers".into()),
            });
        }
    })
}

/// An integer attribute.
pub(crate) fn attr_int(name: &str, value: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i: value,
        ..Default::default()
    }
}

/// An attribute of integers.
pub(crate) fn attr_ints(name: &str, values: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: values.to_vec(),
        ..Default::default()
    }
}

/// A string attribute.
pub(crate) fn attr_str(name: &str, value: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::String as i32,
        s: value.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// A tensor attribute.
pub(crate) fn attr_tensor(name: &str, value: TensorProto) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Tensor as i32,
        t: Some(value),
        ..Default::default()
    }
}

/// A tensor of `data` with shape `dims`.
pub(crate) fn tensor(name: String, data: &HostData, dims: &[usize]) -> Result<TensorProto> {
    Ok(TensorProto {
        dims: dims.iter().map(|&d| d as i64).collect(),
        data_type: onnx_type(data.dtype())?,
        name,
        raw_data: data.to_le_bytes(),
    })
}

/// Sizes as ONNX's `int64`.
pub(crate) fn i64s(values: &[usize]) -> Vec<i64> {
    values.iter().map(|&v| v as i64).collect()
}

/// The nodes and initialisers of a graph being built, in order.
#[derive(Default)]
pub(crate) struct Emitter {
    /// Nodes in topological order.
    pub(crate) nodes: Vec<NodeProto>,
    /// Constant tensors.
    pub(crate) initializers: Vec<TensorProto>,
    /// The initialisers holding sizes, offsets and positions derived from the traced shapes: the
    /// only constants a dynamic batch may change (see `crate::dynamic`).
    pub(crate) shape_args: Vec<String>,
    prefix: &'static str,
    next: usize,
}

/// The start of the names the exporter makes up; graph input and output names may not start so.
pub(crate) const RESERVED: &str = "_nabla_";

impl Emitter {
    /// An empty graph whose new value names start with `prefix` (which starts with [`RESERVED`]).
    pub(crate) fn with_prefix(prefix: &'static str) -> Self {
        Emitter {
            prefix,
            ..Emitter::default()
        }
    }

    /// A new value name.
    fn fresh(&mut self) -> String {
        self.next += 1;
        let prefix = if self.prefix.is_empty() {
            RESERVED
        } else {
            self.prefix
        };
        format!("{prefix}{}", self.next)
    }

    /// Appends a node of `op` on `inputs` whose one output is named `output`.
    pub(crate) fn op_into(&mut self, op: &str, inputs: &[&str], output: &str) {
        self.nodes.push(NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.to_string()],
            name: format!("{op}_{output}"),
            op_type: op.into(),
            domain: String::new(),
            attribute: Vec::new(),
        });
    }

    /// Appends a node of `op` on `inputs` with `outputs` outputs; returns their names.
    pub(crate) fn node(
        &mut self,
        op: &str,
        inputs: &[&str],
        outputs: usize,
        attrs: Vec<AttributeProto>,
    ) -> Vec<String> {
        let out: Vec<String> = (0..outputs).map(|_| self.fresh()).collect();
        self.nodes.push(NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: out.clone(),
            name: format!("{}_{op}", out[0]),
            op_type: op.into(),
            domain: String::new(),
            attribute: attrs,
        });
        out
    }

    /// Appends a node of one output; returns its name.
    pub(crate) fn op(&mut self, op: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> String {
        self.node(op, inputs, 1, attrs).remove(0)
    }

    /// A constant initialiser of `data` with shape `dims`; returns its name.
    pub(crate) fn constant(&mut self, data: &HostData, dims: &[usize]) -> Result<String> {
        let name = self.fresh();
        self.initializers.push(tensor(name.clone(), data, dims)?);
        Ok(name)
    }

    /// A constant initialiser of ONNX type `data_type` and shape `dims` from its raw bytes.
    pub(crate) fn raw_constant(&mut self, data_type: i32, dims: &[usize], raw: Vec<u8>) -> String {
        let name = self.fresh();
        self.initializers.push(TensorProto {
            dims: i64s(dims),
            data_type,
            name: name.clone(),
            raw_data: raw,
        });
        name
    }

    /// A 0-d constant of `value` in `dtype`.
    pub(crate) fn scalar(&mut self, dtype: DType, value: Scalar) -> Result<String> {
        self.constant(&HostData::filled(dtype, 1, value), &[])
    }

    /// A 1-D `int64` initialiser of sizes, offsets or positions (a shape argument).
    pub(crate) fn sizes(&mut self, values: &[i64]) -> String {
        let name = self.fresh();
        let data = HostData::I64(values.to_vec());
        self.initializers
            .push(tensor(name.clone(), &data, &[values.len()]).expect("int64 is an ONNX type"));
        self.shape_args.push(name.clone());
        name
    }

    /// `x` reshaped to `shape` (sizes taken literally, zeros included).
    pub(crate) fn reshape(&mut self, x: &str, shape: &[usize]) -> String {
        // A reshape of a reshape is one reshape of the first's input (the first is pruned when
        // nothing else reads it).
        let source = self
            .nodes
            .iter()
            .rev()
            .find(|n| n.output.first().is_some_and(|o| o == x))
            .filter(|n| n.op_type == "Reshape")
            .map_or_else(|| x.to_string(), |n| n.input[0].clone());
        let s = self.sizes(&i64s(shape));
        self.op("Reshape", &[&source, &s], vec![attr_int("allowzero", 1)])
    }

    /// Removes the nodes no graph output depends on, and the initialisers no node reads.
    pub(crate) fn prune(&mut self, outputs: &[String]) {
        let mut needed: std::collections::HashSet<&str> =
            outputs.iter().map(String::as_str).collect();
        let mut keep = vec![false; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate().rev() {
            if node.output.iter().any(|o| needed.contains(o.as_str())) {
                keep[i] = true;
                needed.extend(node.input.iter().map(String::as_str));
            }
        }
        let needed: std::collections::HashSet<String> =
            needed.into_iter().map(str::to_string).collect();
        let mut k = keep.into_iter();
        self.nodes.retain(|_| k.next().unwrap_or(false));
        self.initializers.retain(|t| needed.contains(&t.name));
        self.shape_args.retain(|name| needed.contains(name));
    }

    /// `x[start..end]` along `axes`, with `steps` when given.
    pub(crate) fn slice(
        &mut self,
        x: &str,
        starts: &[i64],
        ends: &[i64],
        axes: &[i64],
        steps: Option<&[i64]>,
    ) -> String {
        let (s, e, a) = (self.sizes(starts), self.sizes(ends), self.sizes(axes));
        let mut inputs = vec![x, &s, &e, &a];
        let st;
        if let Some(steps) = steps {
            st = self.sizes(steps);
            inputs.push(&st);
        }
        self.op("Slice", &inputs, vec![])
    }

    /// The view `layout` of the contiguous buffer `x` of shape `buffer` (a traced operand). With
    /// `expand` false, broadcast dimensions stay of size 1 (for operators that broadcast).
    pub(crate) fn view(
        &mut self,
        x: &str,
        buffer: &[usize],
        layout: &Layout,
        expand: bool,
    ) -> Result<String> {
        let n: usize = buffer.iter().product();
        let shape = layout.shape();
        if layout.offset() == 0 && layout.is_contiguous() && layout.numel() == n {
            return Ok(if shape == buffer {
                x.to_string()
            } else {
                self.reshape(x, shape)
            });
        }
        let flat = self.reshape(x, &[n]);
        if layout.numel() == 0 {
            let none = self.slice(&flat, &[0], &[0], &[0], None);
            return Ok(self.reshape(&none, shape));
        }
        let mut offset = layout.offset() as i64;
        let mut flips = Vec::new();
        let mut kept = shape.to_vec();
        // The dimensions that move through the buffer: (axis, size, positive stride).
        let mut core = Vec::new();
        for (axis, (&d, &s)) in shape.iter().zip(layout.strides()).enumerate() {
            if d == 1 {
                continue;
            }
            if s == 0 {
                kept[axis] = 1;
                continue;
            }
            let mut s = s as i64;
            if s < 0 {
                offset += (d as i64 - 1) * s;
                s = -s;
                flips.push(axis as i64);
            }
            core.push((axis, d, s));
        }
        core.sort_by_key(|c| std::cmp::Reverse(c.2));
        let nested = core.windows(2).all(|w| w[0].2 >= w[1].1 as i64 * w[1].2);
        let ordered = if nested {
            self.strided_blocks(&flat, n as i64, offset, &core)
        } else {
            self.gathered(&flat, offset, &core)?
        };
        let mut by_axis: Vec<usize> = (0..core.len()).collect();
        by_axis.sort_by_key(|&i| core[i].0);
        let mut y = if by_axis.iter().enumerate().all(|(i, &p)| i == p) {
            ordered
        } else {
            let perm: Vec<i64> = by_axis.iter().map(|&p| p as i64).collect();
            self.op("Transpose", &[&ordered], vec![attr_ints("perm", &perm)])
        };
        if core.len() != kept.len() {
            y = self.reshape(&y, &kept);
        }
        if !flips.is_empty() {
            let k = flips.len();
            y = self.slice(
                &y,
                &vec![-1; k],
                &vec![i64::MIN; k],
                &flips,
                Some(&vec![-1; k]),
            );
        }
        if expand && kept != shape {
            let s = self.sizes(&i64s(shape));
            y = self.op("Expand", &[&y, &s], vec![]);
        }
        Ok(y)
    }

    /// The elements `offset + Σ iₖ sₖ` of the flat buffer `flat` (of `n` elements), for sizes and
    /// strides `core` sorted by decreasing stride, each stride at least the extent of the next
    /// dimension (so the view cuts the buffer into nested blocks): a slice and a reshape per
    /// dimension. Returns the dimensions in `core`'s order.
    fn strided_blocks(
        &mut self,
        flat: &str,
        n: i64,
        offset: i64,
        core: &[(usize, usize, i64)],
    ) -> String {
        let Some(&(_, d0, s0)) = core.first() else {
            let one = self.slice(flat, &[offset], &[offset + 1], &[0], None);
            return self.reshape(&one, &[]);
        };
        let span = d0 as i64 * s0;
        let mut x = flat.to_string();
        if offset + span > n {
            // The last block reaches past the buffer, into elements the view never reads.
            let pads = self.sizes(&[0, offset + span - n]);
            x = self.op("Pad", &[&x, &pads], vec![attr_str("mode", "constant")]);
        }
        if offset != 0 || span != n {
            x = self.slice(&x, &[offset], &[offset + span], &[0], None);
        }
        let mut dims = vec![d0];
        x = self.reshape(&x, &[d0, s0 as usize]);
        let mut last = s0;
        for &(_, d, s) in &core[1..] {
            if d as i64 * s != last {
                x = self.slice(&x, &[0], &[d as i64 * s], &[dims.len() as i64], None);
            }
            dims.push(d);
            let mut blocks = dims.clone();
            blocks.push(s as usize);
            x = self.reshape(&x, &blocks);
            last = s;
        }
        if last != 1 {
            x = self.slice(&x, &[0], &[1], &[dims.len() as i64], None);
        }
        self.reshape(&x, &dims)
    }

    /// The elements of an overlapping view gathered by their positions (a constant index tensor,
    /// one entry per element).
    fn gathered(
        &mut self,
        flat: &str,
        offset: i64,
        core: &[(usize, usize, i64)],
    ) -> Result<String> {
        let dims: Vec<usize> = core.iter().map(|c| c.1).collect();
        let mut positions = vec![offset];
        for &(_, d, s) in core {
            positions = positions
                .iter()
                .flat_map(|&p| (0..d as i64).map(move |i| p + i * s))
                .collect();
        }
        let index = self.constant(&HostData::I64(positions), &dims)?;
        Ok(self.op("Gather", &[flat, &index], vec![attr_int("axis", 0)]))
    }
}
