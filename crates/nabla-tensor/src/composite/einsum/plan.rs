//! The contraction order of an einsum with several operands: which pair to contract first, then
//! next, by the number of multiply-adds each pairwise contraction costs (the product of the sizes of
//! the labels it touches). Up to [`EXHAUSTIVE_UP_TO`] operands every order is tried (the optimum, as
//! `opt_einsum`'s `optimal`); beyond, the cheapest pair is taken at each step (`greedy`).

use super::parse::Label;
use std::collections::{BTreeMap, BTreeSet};

/// Operand counts planned by trying every order (6 operands: 2,700 orders).
pub(crate) const EXHAUSTIVE_UP_TO: usize = 6;

type Labels = BTreeSet<Label>;

/// A contraction order: pairs of positions in the current list of operands (a pair's result is
/// appended to the end, as in `numpy.einsum_path`), and its cost.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Order {
    pub(crate) steps: Vec<(usize, usize)>,
    pub(crate) flops: f64,
}

/// The labels of contracting `a` with `b` that someone still needs: the output or another operand.
fn kept(a: &Labels, b: &Labels, others: &[&Labels], output: &Labels) -> Labels {
    a.union(b)
        .filter(|l| output.contains(l) || others.iter().any(|o| o.contains(l)))
        .copied()
        .collect()
}

/// The multiply-adds of contracting `a` with `b`.
fn cost(a: &Labels, b: &Labels, sizes: &BTreeMap<Label, usize>) -> f64 {
    a.union(b).map(|l| sizes[l] as f64).product()
}

/// The operands after contracting positions `i < j`: the others in order, then the result.
fn contract(ops: &[Labels], i: usize, j: usize, output: &Labels) -> Vec<Labels> {
    let others: Vec<&Labels> = ops
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != i && k != j)
        .map(|(_, o)| o)
        .collect();
    let result = kept(&ops[i], &ops[j], &others, output);
    let mut next: Vec<Labels> = others.into_iter().cloned().collect();
    next.push(result);
    next
}

/// The cheapest order by trying every one.
fn exhaustive(ops: &[Labels], output: &Labels, sizes: &BTreeMap<Label, usize>) -> Order {
    if ops.len() < 2 {
        return Order {
            steps: vec![],
            flops: 0.0,
        };
    }
    let mut best: Option<Order> = None;
    for i in 0..ops.len() {
        for j in i + 1..ops.len() {
            let here = cost(&ops[i], &ops[j], sizes);
            let rest = exhaustive(&contract(ops, i, j, output), output, sizes);
            let total = here + rest.flops;
            if best.as_ref().is_none_or(|b| total < b.flops) {
                let mut steps = vec![(i, j)];
                steps.extend(rest.steps);
                best = Some(Order {
                    steps,
                    flops: total,
                });
            }
        }
    }
    best.unwrap_or(Order {
        steps: vec![],
        flops: 0.0,
    })
}

/// The order that contracts the cheapest pair at each step.
fn greedy(ops: &[Labels], output: &Labels, sizes: &BTreeMap<Label, usize>) -> Order {
    let mut ops = ops.to_vec();
    let mut order = Order {
        steps: vec![],
        flops: 0.0,
    };
    while ops.len() > 1 {
        let mut pick = (0, 1, f64::INFINITY);
        for i in 0..ops.len() {
            for j in i + 1..ops.len() {
                let c = cost(&ops[i], &ops[j], sizes);
                if c < pick.2 {
                    pick = (i, j, c);
                }
            }
        }
        order.steps.push((pick.0, pick.1));
        order.flops += pick.2;
        ops = contract(&ops, pick.0, pick.1, output);
    }
    order
}

/// The contraction order of operands with these labels.
pub(crate) fn plan(
    inputs: &[Vec<Label>],
    output: &[Label],
    sizes: &BTreeMap<Label, usize>,
) -> Order {
    let ops: Vec<Labels> = inputs.iter().map(|l| l.iter().copied().collect()).collect();
    let output: Labels = output.iter().copied().collect();
    if ops.len() <= EXHAUSTIVE_UP_TO {
        exhaustive(&ops, &output, sizes)
    } else {
        greedy(&ops, &output, sizes)
    }
}

/// The cost of contracting left to right, `((A B) C) ...`: the order without planning.
pub(crate) fn left_to_right(
    inputs: &[Vec<Label>],
    output: &[Label],
    sizes: &BTreeMap<Label, usize>,
) -> f64 {
    let mut ops: Vec<Labels> = inputs.iter().map(|l| l.iter().copied().collect()).collect();
    let output: Labels = output.iter().copied().collect();
    let mut flops = 0.0;
    while ops.len() > 1 {
        flops += cost(&ops[0], &ops[1], sizes);
        ops = contract(&ops, 0, 1, &output);
        // `contract` appends the result; move it to the front to keep going left to right.
        if let Some(last) = ops.pop() {
            ops.insert(0, last);
        }
    }
    flops
}
