//! Merging matrix products that share a factor across a sum ([`Pass::Reassociate`], opt-in):
//! `a @ x + b @ x` becomes `(a + b) @ x` and `a @ x + a @ y` becomes `a @ (x + y)`, as XLA's algebraic
//! simplifier does. A reverse pass produces such sums wherever an operand is used twice: the gradient
//! of `sum(tanh(X Xᵀ))` is `S X + Sᵀ X`, and its Hessian-vector product sums four products two of
//! which share each factor.
//!
//! The pass looks at every tree of additions whose inner sums are read once (through their own view
//! or its transpose over the last two axes, at the tree's full shape), collects its terms, and groups
//! the matrix products among them (each read only there, through its own view or its transpose,
//! `(a @ b)ᵀ = bᵀ @ aᵀ`) by a shared right factor, then the rest by a shared left factor (same value,
//! same view). A group of `k` products becomes one sum of `k` operands and one product; the tree is
//! rebuilt over the merged products and the remaining terms. Dead-code elimination then drops the old
//! products and sums.
//!
//! It changes the order of floating-point additions, so results differ from the uncompiled program
//! by rounding; that is why [`GraphCompiler`](super::GraphCompiler) runs it only when asked
//! ([`GraphCompiler::with`](super::GraphCompiler::with)).
//!
//! [`Pass::Reassociate`]: super::Pass::Reassociate

use super::rebuild;
use crate::trace::graph::{Node, Program, TraceOp, TraceOperand, ValueId, ValueInfo};
use nabla_core::{BinaryOp, Layout, Primitive, Result};

/// One addend of a sum tree: a value read through a view.
#[derive(Clone, Debug, PartialEq)]
enum Term {
    /// A matrix product.
    Product(Box<ProductTerm>),
    /// Anything else.
    Other(TraceOperand),
}

/// A matrix product `lhs @ rhs` in a sum (operands as read, transposes already applied), and how the
/// sum reads the existing product.
#[derive(Clone, Debug, PartialEq)]
struct ProductTerm {
    lhs: TraceOperand,
    rhs: TraceOperand,
    read: TraceOperand,
}

impl Term {
    fn product(lhs: TraceOperand, rhs: TraceOperand, read: TraceOperand) -> Term {
        Term::Product(Box::new(ProductTerm { lhs, rhs, read }))
    }
}

/// How many times each value is read (by nodes and as a program output), and which node produces it.
struct Uses {
    reads: Vec<usize>,
    producer: Vec<Option<usize>>,
}

impl Uses {
    fn of(program: &Program) -> Uses {
        let mut reads = vec![0; program.values.len()];
        let mut producer = vec![None; program.values.len()];
        for (i, node) in program.nodes.iter().enumerate() {
            for o in &node.inputs {
                reads[o.value] += 1;
            }
            for &v in &node.outputs {
                producer[v] = Some(i);
            }
        }
        for o in &program.outputs {
            reads[o.value] += 1;
        }
        Uses { reads, producer }
    }
}

/// `layout` with its last two axes swapped, when it has at least two.
fn swapped(layout: &Layout) -> Option<Layout> {
    let r = layout.rank();
    layout.transpose(r.checked_sub(2)?, r - 1).ok()
}

/// An operand read through its transposed view.
fn transposed(o: &TraceOperand) -> Option<TraceOperand> {
    Some(TraceOperand {
        value: o.value,
        layout: swapped(&o.layout)?,
    })
}

/// `Some(false)` when `o` reads the whole of its value as produced, `Some(true)` when it reads its
/// transpose (last two axes), `None` otherwise.
fn plain_or_transposed(program: &Program, o: &TraceOperand) -> Option<bool> {
    let own = Layout::contiguous(program.values[o.value].shape.clone());
    if o.layout == own {
        Some(false)
    } else if swapped(&own).as_ref() == Some(&o.layout) {
        Some(true)
    } else {
        None
    }
}

/// `true` for a two-operand addition whose operands have its output's shape.
fn is_full_add(program: &Program, node: &Node) -> bool {
    let TraceOp::Primitive(Primitive::Binary(BinaryOp::Add)) = node.op else {
        return false;
    };
    let shape = &program.values[node.outputs[0]].shape;
    node.inputs.len() == 2 && node.inputs.iter().all(|o| o.layout.shape() == shape)
}

/// The node producing `o` when it is of the kind `want` accepts and read only here, with whether
/// `o` reads its output transposed.
fn single_use<'p>(
    program: &'p Program,
    uses: &Uses,
    o: &TraceOperand,
    want: impl Fn(&Node) -> bool,
) -> Option<(&'p Node, bool)> {
    if uses.reads[o.value] != 1 {
        return None;
    }
    let node = &program.nodes[uses.producer[o.value]?];
    let flip = plain_or_transposed(program, o)?;
    want(node).then_some((node, flip))
}

/// The terms of the sum read through `o` (transposed when `flip`), into `terms`.
fn collect(program: &Program, uses: &Uses, o: &TraceOperand, flip: bool, terms: &mut Vec<Term>) {
    let read = if flip { transposed(o) } else { Some(o.clone()) };
    let Some(read) = read else {
        return terms.push(Term::Other(o.clone()));
    };
    if let Some((add, f)) = single_use(program, uses, o, |n| is_full_add(program, n)) {
        for input in &add.inputs {
            collect(program, uses, input, flip ^ f, terms);
        }
        return;
    }
    let is_product = |n: &Node| {
        matches!(n.op, TraceOp::Primitive(Primitive::Matmul))
            && n.inputs.len() == 2
            && n.inputs
                .iter()
                .all(|i| i.layout.rank() == n_rank(program, n))
    };
    if let Some((mm, f)) = single_use(program, uses, o, is_product) {
        let (a, b) = (&mm.inputs[0], &mm.inputs[1]);
        // (a @ b)ᵀ = bᵀ @ aᵀ.
        let term = if flip ^ f {
            transposed(b)
                .zip(transposed(a))
                .map(|(bt, at)| Term::product(bt, at, read.clone()))
        } else {
            Some(Term::product(a.clone(), b.clone(), read.clone()))
        };
        if let Some(t) = term {
            return terms.push(t);
        }
    }
    terms.push(Term::Other(read));
}

/// The rank of a node's (first) output.
fn n_rank(program: &Program, n: &Node) -> usize {
    program.values[n.outputs[0]].shape.len()
}

/// Groups of products sharing a factor: `(shared, others, shared_is_rhs)` for each group of two or
/// more, and the terms left over.
type Groups = (Vec<(TraceOperand, Vec<TraceOperand>, bool)>, Vec<Term>);

/// The right factor of `p` when `right`, else the left one.
fn factor(p: &ProductTerm, right: bool) -> &TraceOperand {
    if right { &p.rhs } else { &p.lhs }
}

/// Groups the products of `terms` by a shared factor (the right one first).
fn group(terms: Vec<Term>) -> Groups {
    let mut groups = Vec::new();
    let mut rest = terms;
    for by_rhs in [true, false] {
        let mut left = Vec::new();
        let mut pending: Vec<Term> = rest;
        while let Some(t) = pending.pop() {
            let Term::Product(p) = t else {
                left.push(t);
                continue;
            };
            let (same, others): (Vec<Term>, Vec<Term>) = pending.into_iter().partition(|u| {
                matches!(u, Term::Product(q) if factor(q, by_rhs) == factor(&p, by_rhs)
                    && factor(q, !by_rhs).layout.shape() == factor(&p, !by_rhs).layout.shape())
            });
            pending = others;
            if same.is_empty() {
                left.push(Term::Product(p));
                continue;
            }
            let mut factors = vec![factor(&p, !by_rhs).clone()];
            for u in same {
                if let Term::Product(q) = u {
                    factors.push(factor(&q, !by_rhs).clone());
                }
            }
            groups.push((factor(&p, by_rhs).clone(), factors, by_rhs));
        }
        rest = left;
    }
    (groups, rest)
}

/// Appends the nodes of a rewritten sum to the program being built, with fresh values for its
/// intermediate results.
struct Emitter<'a> {
    values: &'a mut Vec<ValueInfo>,
    nodes: &'a mut Vec<Node>,
}

impl Emitter<'_> {
    fn fresh(&mut self, like: &ValueInfo, shape: &[usize]) -> ValueId {
        self.values.push(ValueInfo {
            dtype: like.dtype,
            shape: shape.to_vec(),
        });
        self.values.len() - 1
    }

    fn node(&mut self, op: Primitive, inputs: Vec<TraceOperand>, out: ValueId) -> TraceOperand {
        self.nodes.push(Node {
            op: TraceOp::Primitive(op),
            inputs,
            outputs: vec![out],
        });
        TraceOperand {
            value: out,
            layout: Layout::contiguous(self.values[out].shape.clone()),
        }
    }

    /// `first + Σ rest`, the last addition writing `out` when given (`rest` must then be non-empty).
    fn sum(
        &mut self,
        first: TraceOperand,
        rest: Vec<TraceOperand>,
        like: &ValueInfo,
        out: Option<ValueId>,
    ) -> TraceOperand {
        let shape = first.layout.shape().to_vec();
        let count = rest.len();
        let mut acc = first;
        for (k, o) in rest.into_iter().enumerate() {
            let target = match out {
                Some(v) if k + 1 == count => v,
                _ => self.fresh(like, &shape),
            };
            acc = self.node(Primitive::Binary(BinaryOp::Add), vec![acc, o], target);
        }
        acc
    }
}

/// Merges products sharing a factor in every sum tree of `program` (see the module docs).
pub(crate) fn merge_products(program: &Program) -> Result<Program> {
    let uses = Uses::of(program);
    // A sum absorbed into the tree of the addition reading it is not a root.
    let mut absorbed = vec![false; program.nodes.len()];
    for node in program.nodes.iter().filter(|n| is_full_add(program, n)) {
        for o in &node.inputs {
            if single_use(program, &uses, o, |n| is_full_add(program, n)).is_some()
                && let Some(p) = uses.producer[o.value]
            {
                absorbed[p] = true;
            }
        }
    }
    let mut values = program.values.clone();
    let mut nodes = Vec::with_capacity(program.nodes.len());
    for (i, node) in program.nodes.iter().enumerate() {
        if absorbed[i] || !is_full_add(program, node) {
            nodes.push(node.clone());
            continue;
        }
        let mut terms = Vec::new();
        for o in &node.inputs {
            collect(program, &uses, o, false, &mut terms);
        }
        let (groups, rest) = group(terms);
        if groups.is_empty() {
            nodes.push(node.clone());
            continue;
        }
        let out = node.outputs[0];
        let like = program.values[out].clone();
        let mut e = Emitter {
            values: &mut values,
            nodes: &mut nodes,
        };
        // A lone merged product is written straight into the sum's value.
        let lone = groups.len() == 1 && rest.is_empty();
        let mut addends = Vec::new();
        for (shared, factors, shared_is_rhs) in groups {
            let (first, others) = (factors[0].clone(), factors[1..].to_vec());
            let summed = e.sum(first, others, &like, None);
            let operands = if shared_is_rhs {
                vec![summed, shared]
            } else {
                vec![shared, summed]
            };
            let product = if lone {
                out
            } else {
                e.fresh(&like, &like.shape)
            };
            addends.push(e.node(Primitive::Matmul, operands, product));
        }
        if lone {
            continue;
        }
        addends.extend(rest.into_iter().map(|t| match t {
            Term::Other(read) => read,
            Term::Product(p) => p.read,
        }));
        let first = addends.remove(0);
        e.sum(first, addends, &like, Some(out));
    }
    rebuild(&values, nodes, &program.inputs, program.outputs.clone())
}
