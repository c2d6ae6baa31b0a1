//! A batch axis of any size from traces at fixed sizes: a traced program has static shapes, so a
//! function is traced at three batch sizes and lowered three times. The three graphs must be the
//! same but for the shape arguments (the `int64` sizes, offsets and positions the lowering derives
//! from shapes), and each entry of those must be an affine function of the batch size; such an
//! argument is then computed at run time from the batch size read off the first input
//! (`a · batch + c`), and the batch axes of the inputs and outputs get the symbolic size `batch`.

use crate::Lowered;
use crate::emit::{Emitter, OP, attr_int};
use crate::proto::TensorProto;
use nabla_core::{Error, Result};
use std::collections::HashMap;

/// The batch sizes of the three traces: two to fit each affine size, a third to check the fit. All
/// are above 1, so that no batch axis is mistaken for a size-1 axis.
pub(crate) const BATCHES: [i64; 3] = [2, 3, 5];

/// The name of the symbolic batch size in the model's input and output shapes.
pub(crate) const BATCH: &str = "batch";

/// The error for graphs that differ in more than their shape arguments.
fn varies(what: String) -> Error {
    Error::invalid(
        OP,
        format!(
            "{what} changes with the batch size, so the traced function cannot be exported with a \
             dynamic batch axis (export it at a fixed batch size instead)"
        ),
    )
}

/// The `int64` values of a shape argument.
fn int64s(t: &TensorProto) -> Vec<i64> {
    t.raw_data
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect()
}

/// The graph of `traces` (lowered at [`BATCHES`]) with a dynamic batch axis: shape arguments that
/// change with the batch size computed from it, the inputs' and outputs' batch axes symbolic.
pub(crate) fn merge(traces: [Lowered; 3]) -> Result<Lowered> {
    let [mut first, second, third] = traces;
    let others = [&second, &third];
    for (i, node) in first.emitter.nodes.iter().enumerate() {
        if others.iter().any(|o| o.emitter.nodes.get(i) != Some(node)) {
            return Err(varies(format!("node {i} ({})", node.op_type)));
        }
    }
    if others
        .iter()
        .any(|o| o.emitter.nodes.len() != first.emitter.nodes.len())
    {
        return Err(varies("the number of nodes".into()));
    }
    let mut affine = Vec::new();
    for (i, init) in first.emitter.initializers.iter().enumerate() {
        let at = |o: &Lowered| o.emitter.initializers.get(i).cloned();
        let (Some(b), Some(c)) = (at(&second), at(&third)) else {
            return Err(varies("the number of constants".into()));
        };
        if b == *init && c == *init {
            continue;
        }
        let same_kind = b.name == init.name && b.dims == init.dims && c.dims == init.dims;
        if !same_kind || !first.emitter.shape_args.contains(&init.name) {
            return Err(varies(format!("constant {} ({:?})", init.name, init.dims)));
        }
        let values = [int64s(init), int64s(&b), int64s(&c)];
        let mut slope = Vec::new();
        let mut intercept = Vec::new();
        for (k, ((&v0, &v1), &v2)) in values[0].iter().zip(&values[1]).zip(&values[2]).enumerate() {
            let a = v1 - v0;
            let c0 = v0 - a * BATCHES[0];
            if v2 != a * BATCHES[2] + c0 {
                return Err(varies(format!(
                    "size {} of {} (not an affine function of it)",
                    k, init.name
                )));
            }
            slope.push(a);
            intercept.push(c0);
        }
        affine.push((i, slope, intercept));
    }
    symbolic_shapes(&mut first, &second)?;
    compute_from_batch(&mut first, affine)?;
    Ok(first)
}

/// Marks the axes of the graph's inputs and outputs whose size changes with the batch: `batch`
/// where it is the batch size, otherwise unnamed.
fn symbolic_shapes(first: &mut Lowered, second: &Lowered) -> Result<()> {
    let pairs = first
        .inputs
        .iter_mut()
        .zip(&second.inputs)
        .chain(first.outputs.iter_mut().zip(&second.outputs));
    for (ours, theirs) in pairs {
        if ours.shape.len() != theirs.shape.len() {
            return Err(varies(format!("the rank of {}", ours.name)));
        }
        for (k, (d, e)) in ours.shape.iter().zip(&theirs.shape).enumerate() {
            if d != e {
                let symbol = if (*d as i64, *e as i64) == (BATCHES[0], BATCHES[1]) {
                    BATCH.to_string()
                } else {
                    String::new()
                };
                ours.dynamic.push((k, symbol));
            }
        }
    }
    Ok(())
}

/// Replaces the initialisers `affine` (index, slope, intercept) by `slope · batch + intercept`,
/// with `batch` read from the first input's first axis by nodes placed before every other.
fn compute_from_batch(first: &mut Lowered, affine: Vec<(usize, Vec<i64>, Vec<i64>)>) -> Result<()> {
    if affine.is_empty() {
        return Ok(());
    }
    let Some(input) = first.inputs.first().map(|i| i.name.clone()) else {
        return Err(varies("a graph without inputs".into()));
    };
    let mut head = Emitter::with_prefix("_nabla_batch_");
    let batch = head.op(
        "Shape",
        &[&input],
        vec![attr_int("start", 0), attr_int("end", 1)],
    );
    let mut removed = Vec::new();
    // One computation per distinct size vector; its readers are renamed to it.
    let mut computed: HashMap<(Vec<i64>, Vec<i64>), String> = HashMap::new();
    let mut renamed: HashMap<String, String> = HashMap::new();
    for (i, slope, intercept) in affine {
        let target = first.emitter.initializers[i].name.clone();
        removed.push(i);
        if let Some(name) = computed.get(&(slope.clone(), intercept.clone())) {
            renamed.insert(target, name.clone());
            continue;
        }
        let a = head.sizes(&slope);
        if intercept.iter().all(|&c| c == 0) {
            head.op_into("Mul", &[&batch, &a], &target);
        } else {
            let scaled = head.op("Mul", &[&batch, &a], vec![]);
            let c = head.sizes(&intercept);
            head.op_into("Add", &[&scaled, &c], &target);
        }
        computed.insert((slope, intercept), target);
    }
    for node in &mut first.emitter.nodes {
        for input in &mut node.input {
            if let Some(name) = renamed.get(input) {
                *input = name.clone();
            }
        }
    }
    let inits = std::mem::take(&mut first.emitter.initializers);
    first.emitter.initializers = inits
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !removed.contains(i))
        .map(|(_, t)| t)
        .chain(head.initializers)
        .collect();
    let rest = std::mem::take(&mut first.emitter.nodes);
    first.emitter.nodes = head.nodes.into_iter().chain(rest).collect();
    Ok(())
}
