//! Algebraic simplification and copy forwarding.
//!
//! Rewrites, all exact (they never change a value, a shape or a dtype, `-0.0` and NaN included):
//! - `x * 1`, `1 * x`, `x / 1` become `x`;
//! - `x + (-0.0)`, `(-0.0) + x` and `x - (+0.0)` become `x`, and for integers any `x + 0`, `0 + x`,
//!   `x - 0`. For floats `x + (+0.0)` is *not* rewritten: it turns `-0.0` into `+0.0`;
//! - `-(-x)` becomes `x`.
//!
//! The constant (`1`, `0`) is a `Full` or `Constant` node whose every element is exactly that value in
//! the op's (real, non-bool) dtype, read through any view (a broadcast, typically). The rewritten node
//! becomes a `Copy` of `x`'s view, which the forwarding below usually removes.
//!
//! Copy forwarding: a reader of a `Copy`'s output reads the copy's source instead, through the
//! composition of the two views, when that composition is exactly a strided view of the source
//! (permutations, broadcasts, slices, flips, unit-dimension insertion or removal and reshapes that do not
//! cross a non-contiguous boundary). A double transpose or a broadcast of a broadcast that went through
//! a copy thus reads the original buffer, and the copy becomes dead (dead-code elimination removes it;
//! this pass leaves it in place). Program outputs are forwarded only when their view and buffer size
//! stay exactly the same, so a materialised (contiguous) output stays materialised.

use super::rebuild;
use crate::trace::graph::{Node, Program, TraceOp, TraceOperand, ValueInfo};
use nabla_core::{
    BinaryOp, DType, Element, HostData, Layout, Primitive, Result, Scalar, UnaryOp, with_host_data,
};

/// A buffer whose elements all equal one identity value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fill {
    One,
    PosZero,
    NegZero,
    IntZero,
}

fn real_numeric(dtype: DType) -> bool {
    dtype.is_float() || dtype.is_int()
}

fn classify_scalar(s: Scalar) -> Option<Fill> {
    match s {
        Scalar::F64(v) if v != 0.0 => (v == 1.0).then_some(Fill::One),
        Scalar::F64(v) if v.is_sign_negative() => Some(Fill::NegZero),
        Scalar::F64(_) => Some(Fill::PosZero),
        Scalar::I64(1) => Some(Fill::One),
        Scalar::I64(0) => Some(Fill::IntZero),
        _ => None,
    }
}

/// The identity value every element of `data` holds, if any.
fn classify(data: &HostData) -> Option<Fill> {
    if !real_numeric(data.dtype()) {
        return None;
    }
    with_host_data!(data, v => {
        let first = classify_scalar(v.first()?.to_scalar())?;
        v.iter()
            .all(|x| classify_scalar(x.to_scalar()) == Some(first))
            .then_some(first)
    })
}

/// Which operand (0 or 1) is `x` when `op` applied to operands filled with `fills` is the identity.
fn identity_operand(op: BinaryOp, fills: [Option<Fill>; 2]) -> Option<usize> {
    use Fill::*;
    let add_identity = |f: Option<Fill>| matches!(f, Some(NegZero | IntZero));
    match op {
        BinaryOp::Mul if fills[1] == Some(One) => Some(0),
        BinaryOp::Mul if fills[0] == Some(One) => Some(1),
        BinaryOp::Div if fills[1] == Some(One) => Some(0),
        BinaryOp::Add if add_identity(fills[1]) => Some(0),
        BinaryOp::Add if add_identity(fills[0]) => Some(1),
        BinaryOp::Sub if matches!(fills[1], Some(PosZero | IntZero)) => Some(0),
        _ => None,
    }
}

/// The view of a copy's source equal to reading, through `outer`, the row-major buffer the copy of
/// the view `inner` produces; `None` unless it is exactly a strided view.
///
/// The copy's buffer is indexed by the (coalesced) dims of `inner`; each dimension of `outer` must
/// step along a single one of those dims without leaving it, for every index of the view, so that the
/// row-major position decomposes without carries and the source offset is affine in the index.
fn compose(inner: &Layout, outer: &Layout) -> Option<Layout> {
    let n = inner.numel();
    if n == 0 || outer.numel() == 0 || outer.offset() >= n {
        return None;
    }
    let (dims, mut strides) = Layout::coalesce(&[inner]);
    let src_strides = strides.pop()?;
    let dims: Vec<isize> = dims.iter().map(|&d| d as isize).collect();
    let mut row_major = vec![1isize; dims.len()];
    for m in (0..dims.len().saturating_sub(1)).rev() {
        row_major[m] = row_major[m + 1] * dims[m + 1];
    }
    let mut rest = outer.offset() as isize;
    let start: Vec<isize> = row_major
        .iter()
        .map(|&s| {
            let i = rest / s;
            rest %= s;
            i
        })
        .collect();
    let (mut lo, mut hi) = (start.clone(), start.clone());
    let mut composed = Vec::with_capacity(outer.rank());
    for (&len, &s) in outer.shape().iter().zip(outer.strides()) {
        if len == 1 || s == 0 {
            composed.push(if len == 1 { s } else { 0 });
            continue;
        }
        let span = len as isize - 1;
        let (m, c) = (0..dims.len()).find_map(|m| {
            let c = s / row_major[m];
            (s % row_major[m] == 0 && c.abs() * span < dims[m]).then_some((m, c))
        })?;
        if c > 0 {
            hi[m] += c * span;
        } else {
            lo[m] += c * span;
        }
        composed.push(c * src_strides[m]);
    }
    if (0..dims.len()).any(|m| lo[m] < 0 || hi[m] >= dims[m]) {
        return None;
    }
    let offset = inner.offset() as isize
        + start
            .iter()
            .zip(&src_strides)
            .map(|(i, s)| i * s)
            .sum::<isize>();
    let offset = usize::try_from(offset).ok()?;
    Layout::from_parts(outer.shape().to_vec(), composed, offset).ok()
}

/// The operands `o` can be replaced with by reading through copies, nearest first.
fn forward_chain(o: &TraceOperand, nodes: &[Node], producer: &[usize]) -> Vec<TraceOperand> {
    let mut chain = Vec::new();
    let mut current = o.clone();
    while let Some(node) = nodes.get(producer[current.value]) {
        let TraceOp::Primitive(Primitive::Copy) = node.op else {
            break;
        };
        let Some(src) = node.inputs.first() else {
            break;
        };
        let Some(layout) = compose(&src.layout, &current.layout) else {
            break;
        };
        current = TraceOperand {
            value: src.value,
            layout,
        };
        chain.push(current.clone());
    }
    chain
}

/// The simplified form of `node` (whose operands are already forwarded), if a rule applies.
fn rewrite(
    node: &Node,
    nodes: &[Node],
    producer: &[usize],
    fills: &[Option<Fill>],
    values: &[ValueInfo],
) -> Option<Node> {
    let [out] = node.outputs[..] else {
        return None;
    };
    let out_info = &values[out];
    let copy_of = |x: TraceOperand| {
        let same = values[x.value].dtype == out_info.dtype && x.layout.shape() == out_info.shape;
        same.then(|| Node {
            op: TraceOp::Primitive(Primitive::Copy),
            inputs: vec![x],
            outputs: vec![out],
        })
    };
    match (&node.op, &node.inputs[..]) {
        (TraceOp::Primitive(Primitive::Binary(op)), [a, b]) if real_numeric(out_info.dtype) => {
            let k = identity_operand(*op, [fills[a.value], fills[b.value]])?;
            let other = &node.inputs[1 - k];
            (values[other.value].dtype == out_info.dtype).then_some(())?;
            copy_of(node.inputs[k].clone())
        }
        (TraceOp::Primitive(Primitive::Unary(UnaryOp::Neg)), [o]) => {
            let inner = nodes.get(producer[o.value])?;
            let (TraceOp::Primitive(Primitive::Unary(UnaryOp::Neg)), [x]) =
                (&inner.op, &inner.inputs[..])
            else {
                return None;
            };
            (values[o.value].dtype == values[x.value].dtype).then_some(())?;
            let layout = compose(&x.layout, &o.layout)?;
            copy_of(TraceOperand {
                value: x.value,
                layout,
            })
        }
        _ => None,
    }
}

pub(crate) fn simplify(program: &Program) -> Result<Program> {
    let values = &program.values;
    let mut nodes: Vec<Node> = Vec::with_capacity(program.nodes.len());
    let mut producer = vec![usize::MAX; values.len()];
    let mut fills: Vec<Option<Fill>> = vec![None; values.len()];
    for node in &program.nodes {
        let mut node = node.clone();
        for o in &mut node.inputs {
            if let Some(f) = forward_chain(o, &nodes, &producer).pop() {
                *o = f;
            }
        }
        if let Some(rewritten) = rewrite(&node, &nodes, &producer, &fills, values) {
            node = rewritten;
        }
        let out = node.outputs.first().copied();
        match (&node.op, out) {
            (TraceOp::Primitive(Primitive::Full { value: s, .. }), Some(v)) => {
                fills[v] = classify(&HostData::filled(values[v].dtype, 1, *s));
            }
            (TraceOp::Primitive(Primitive::Constant(data)), Some(v)) => fills[v] = classify(data),
            _ => {}
        }
        for &v in &node.outputs {
            producer[v] = nodes.len();
        }
        nodes.push(node);
    }
    let outputs = program
        .outputs
        .iter()
        .map(|o| {
            let same = |f: &TraceOperand| {
                f.layout == o.layout && values[f.value].len() == values[o.value].len()
            };
            let chain = forward_chain(o, &nodes, &producer);
            chain
                .into_iter()
                .rev()
                .find(same)
                .unwrap_or_else(|| o.clone())
        })
        .collect();
    rebuild(values, nodes, &program.inputs, outputs)
}

#[cfg(test)]
mod tests {
    use super::compose;
    use nabla_core::Layout;

    /// Views of a row-major buffer of `shape`: permutations, slices, flips, broadcasts, reshapes.
    fn views(shape: &[usize]) -> Vec<Layout> {
        let base = Layout::contiguous(shape.to_vec());
        let rev: Vec<usize> = (0..shape.len()).rev().collect();
        let mut out = vec![base.clone(), base.permute(&rev).unwrap()];
        for (axis, &d) in shape.iter().enumerate() {
            if d > 1 {
                out.push(base.slice(axis, 1, d - 1, 1).unwrap());
                out.push(base.slice(axis, 0, d.div_ceil(2), 2).unwrap());
                out.push(base.flip(axis).unwrap());
            }
            out.push(base.unsqueeze(axis).unwrap());
        }
        let mut wide = vec![2];
        wide.extend_from_slice(shape);
        out.push(base.broadcast_to(&wide).unwrap());
        let n = base.numel();
        out.extend(base.reshape(&[n]));
        let more: Vec<Layout> = out.iter().filter_map(|l| l.permute(&rev).ok()).collect();
        let flat: Vec<Layout> = out.iter().filter_map(|l| l.reshape(&[l.numel()])).collect();
        out.extend(more);
        out.extend(flat);
        out
    }

    #[test]
    fn compose_is_exact_whenever_it_answers() {
        let (mut answered, mut declined) = (0, 0);
        for source in [vec![2, 3, 4], vec![1, 5, 2], vec![6]] {
            for inner in views(&source) {
                let copied: Vec<usize> = inner.offsets().collect();
                for outer in views(inner.shape()) {
                    let want: Vec<usize> = outer.offsets().map(|o| copied[o]).collect();
                    match compose(&inner, &outer) {
                        Some(c) => {
                            assert_eq!(c.shape(), outer.shape());
                            assert_eq!(
                                c.offsets().collect::<Vec<_>>(),
                                want,
                                "{inner:?} {outer:?}"
                            );
                            answered += 1;
                        }
                        None => declined += 1,
                    }
                }
            }
        }
        assert!(
            answered > 500 && declined > 20,
            "{answered} composed, {declined} declined"
        );
    }

    #[test]
    fn compose_handles_the_common_cases() {
        let x = Layout::contiguous([2, 3]);
        let t = x.permute(&[1, 0]).unwrap();
        let tt = compose(&t, &Layout::contiguous([3, 2]).permute(&[1, 0]).unwrap());
        assert_eq!(tt, Some(x.clone()));
        let b = Layout::contiguous([3]).broadcast_to(&[2, 3]).unwrap();
        let bb = compose(
            &b,
            &Layout::contiguous([2, 3]).broadcast_to(&[4, 2, 3]).unwrap(),
        );
        assert_eq!(bb.unwrap().strides(), &[0, 0, 1]);
        let rows = Layout::contiguous([4, 3]).slice(0, 1, 2, 1).unwrap();
        let flat = compose(&rows, &Layout::contiguous([6])).unwrap();
        assert_eq!((flat.strides(), flat.offset()), (&[1][..], 3));
        // A flat view of a transposed copy is not a strided view of the source.
        assert_eq!(compose(&t, &Layout::contiguous([6])), None);
    }
}
