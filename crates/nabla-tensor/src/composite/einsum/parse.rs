//! Parsing an einsum equation against its operands' shapes: labels per operand (the ellipsis
//! expanded into numbered labels, right-aligned as NumPy broadcasts), the output labels (given after
//! `->`, or NumPy's implicit ones) and the size of every label.

use nabla_core::{Error, Result};
use std::collections::BTreeMap;

pub(super) const OP: &str = "einsum";

/// One index of an equation: a letter, or one dimension covered by an ellipsis (numbered from the
/// left of the widest ellipsis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Label {
    /// A broadcast dimension under `...`; they sort before letters.
    Ellipsis(usize),
    /// A letter of the equation.
    Letter(char),
}

/// A parsed equation.
#[derive(Clone, Debug)]
pub(crate) struct Equation {
    /// The labels of each operand's dimensions, in order.
    pub(crate) inputs: Vec<Vec<Label>>,
    /// The output's labels, in order.
    pub(crate) output: Vec<Label>,
    /// The size of each label (the largest over operands; others are that size or 1).
    pub(crate) sizes: BTreeMap<Label, usize>,
}

/// A term's letters and whether (and where) it holds an ellipsis: `(before, after)` around it.
fn split_term(term: &str) -> Result<(Vec<char>, Option<Vec<char>>)> {
    let letters = |s: &str| -> Result<Vec<char>> {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    Ok(c)
                } else {
                    Err(Error::invalid(
                        OP,
                        format!("invalid subscript {c:?} in {term:?}; use letters a-z, A-Z and one '...'"),
                    ))
                }
            })
            .collect()
    };
    match term.split_once("...") {
        None => Ok((letters(term)?, None)),
        Some((before, after)) => Ok((letters(before)?, Some(letters(after)?))),
    }
}

/// The labels of one input term for an operand of `rank` dimensions.
fn input_labels(term: &str, rank: usize, index: usize) -> Result<(Vec<Label>, usize)> {
    let (before, after) = split_term(term)?;
    let explicit = before.len() + after.as_ref().map_or(0, Vec::len);
    let letter = |c: &char| Label::Letter(*c);
    match after {
        None if explicit == rank => Ok((before.iter().map(letter).collect(), 0)),
        Some(after) if explicit <= rank => {
            let covered = rank - explicit;
            let mut labels: Vec<Label> = before.iter().map(letter).collect();
            // Numbered from the right; renumbered once the widest ellipsis is known.
            labels.extend((0..covered).map(|k| Label::Ellipsis(covered - 1 - k)));
            labels.extend(after.iter().map(letter));
            Ok((labels, covered))
        }
        _ => Err(Error::invalid(
            OP,
            format!(
                "operand {index} has {rank} dimensions but its subscripts {term:?} name {explicit}{}",
                if term.contains("...") {
                    " (more than it has)"
                } else {
                    ""
                }
            ),
        )),
    }
}

/// Parses `equation` for operands of the given shapes.
pub(crate) fn parse(equation: &str, shapes: &[&[usize]]) -> Result<Equation> {
    let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (equation.as_str(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != shapes.len() {
        return Err(Error::invalid(
            OP,
            format!(
                "the equation {equation:?} names {} operands, got {}",
                terms.len(),
                shapes.len()
            ),
        ));
    }
    let mut inputs = Vec::with_capacity(terms.len());
    let mut widest = 0;
    for (k, (term, shape)) in terms.iter().zip(shapes).enumerate() {
        let (labels, covered) = input_labels(term, shape.len(), k)?;
        widest = widest.max(covered);
        inputs.push(labels);
    }
    // Ellipsis labels counted from the right become positions from the left of the widest one.
    for labels in &mut inputs {
        for l in labels.iter_mut() {
            if let Label::Ellipsis(from_right) = *l {
                *l = Label::Ellipsis(widest - 1 - from_right);
            }
        }
    }
    let sizes = label_sizes(&inputs, shapes)?;
    let output = match rhs {
        Some(rhs) => explicit_output(rhs, widest, &sizes)?,
        None => implicit_output(&inputs, widest),
    };
    Ok(Equation {
        inputs,
        output,
        sizes,
    })
}

/// Each label's size; sizes that disagree (other than 1, which broadcasts) are an error.
fn label_sizes(inputs: &[Vec<Label>], shapes: &[&[usize]]) -> Result<BTreeMap<Label, usize>> {
    let mut sizes: BTreeMap<Label, usize> = BTreeMap::new();
    for (k, (labels, shape)) in inputs.iter().zip(shapes).enumerate() {
        for (&label, &n) in labels.iter().zip(shape.iter()) {
            let size = sizes.entry(label).or_insert(n);
            if *size == 1 {
                *size = n;
            } else if n != 1 && n != *size {
                let name = match label {
                    Label::Letter(c) => format!("subscript {c:?}"),
                    Label::Ellipsis(_) => "a dimension under '...'".to_string(),
                };
                return Err(Error::invalid(
                    OP,
                    format!("{name} has size {n} in operand {k} but {} elsewhere", *size),
                ));
            }
        }
    }
    Ok(sizes)
}

fn explicit_output(rhs: &str, widest: usize, sizes: &BTreeMap<Label, usize>) -> Result<Vec<Label>> {
    let (before, after) = split_term(rhs)?;
    let mut output: Vec<Label> = before.iter().map(|&c| Label::Letter(c)).collect();
    if let Some(after) = after {
        output.extend((0..widest).map(Label::Ellipsis));
        output.extend(after.iter().map(|&c| Label::Letter(c)));
    }
    for (i, l) in output.iter().enumerate() {
        if let Label::Letter(c) = l {
            if output[..i].contains(l) {
                return Err(Error::invalid(
                    OP,
                    format!("output subscript {c:?} appears twice in {rhs:?}"),
                ));
            }
            if !sizes.contains_key(l) {
                return Err(Error::invalid(
                    OP,
                    format!("output subscript {c:?} does not appear in any input"),
                ));
            }
        }
    }
    Ok(output)
}

/// NumPy's implicit output: the ellipsis dimensions, then the letters that appear exactly once, in
/// alphabetical (ASCII) order.
fn implicit_output(inputs: &[Vec<Label>], widest: usize) -> Vec<Label> {
    let mut counts: BTreeMap<char, usize> = BTreeMap::new();
    for l in inputs.iter().flatten() {
        if let Label::Letter(c) = l {
            *counts.entry(*c).or_default() += 1;
        }
    }
    (0..widest)
        .map(Label::Ellipsis)
        .chain(
            counts
                .into_iter()
                .filter(|&(_, n)| n == 1)
                .map(|(c, _)| Label::Letter(c)),
        )
        .collect()
}
