//! Collecting a node's cotangent from its consumers during the reverse pass.
//!
//! Most consumers hand back a cotangent of the node's full shape, and those are summed. A slice of the
//! node (`narrow`, `select_index`, `split`, `chunk`, `unbind`) hands back only the cotangent of the
//! elements it took. Padding each of those with zeros to the full shape and summing, as the slice's
//! own reverse rule would, costs the full size per slice: a loop that reads the L steps of a sequence
//! one at a time would pay O(L²). So the pieces are kept as they are and joined once, when the
//! cotangent is complete: pieces along one axis that do not overlap become a single `cat` (with zero
//! blocks for the gaps), which is what PyTorch's `unbind` and `split` reverse rules build. Overlapping
//! pieces, or pieces along different axes, are placed one by one.
//!
//! The join is made of tensor ops, so a reverse pass that records itself (`create_graph`) records it
//! and it can be differentiated again.

use super::node::Node;
use super::rules;
use crate::Tensor;
use nabla_core::{Backend, DType, Error, Result};

/// The cotangent collected so far for one node.
pub(super) struct Cotangent<B: Backend> {
    /// The sum of the full-shape contributions.
    dense: Option<Tensor<B>>,
    /// Contributions of slices along one axis, not yet joined.
    pieces: Vec<Piece<B>>,
    /// Elements held in `pieces`; once they reach the node's size, they are joined, so that the
    /// pieces never hold more memory than the cotangent itself.
    piece_elements: usize,
}

/// The cotangent of the elements `first..first + len` of `axis` (`len` is `grad`'s size there).
struct Piece<B: Backend> {
    axis: usize,
    first: usize,
    grad: Tensor<B>,
}

impl<B: Backend> Default for Cotangent<B> {
    fn default() -> Self {
        Cotangent {
            dense: None,
            pieces: Vec::new(),
            piece_elements: 0,
        }
    }
}

impl<B: Backend> Cotangent<B> {
    /// A cotangent that starts as `seed`.
    pub(super) fn from_seed(seed: Tensor<B>) -> Self {
        Cotangent {
            dense: Some(seed),
            ..Cotangent::default()
        }
    }

    /// Adds `grad` (of the node's full shape), made by the reverse rule of `op`.
    pub(super) fn add(&mut self, node: &Node<B>, grad: Tensor<B>, op: &'static str) -> Result<()> {
        if grad.shape() != node.shape.as_slice() {
            return Err(wrong_shape(op, grad.shape(), &node.shape));
        }
        let grad = cast_to_node(node, grad)?;
        self.dense = Some(match self.dense.take() {
            None => grad,
            Some(sum) if grad.dtype().is_half() => {
                // Half precision is for storage only: add in f32 and round once.
                let f32 = DType::F32;
                sum.cast(f32)?.add(grad.cast(f32)?)?.cast(grad.dtype())?
            }
            Some(sum) => sum.add(&grad)?,
        });
        Ok(())
    }

    /// Adds `grad`, the cotangent of the elements `first..first + grad.shape()[axis]` of `axis`
    /// (a non-empty, unit-step slice of the node).
    pub(super) fn add_slice(
        &mut self,
        node: &Node<B>,
        axis: usize,
        first: usize,
        grad: Tensor<B>,
    ) -> Result<()> {
        let fits = grad.rank() == node.shape.len()
            && grad
                .shape()
                .iter()
                .zip(&node.shape)
                .enumerate()
                .all(|(a, (&g, &n))| {
                    if a == axis {
                        first.checked_add(g).is_some_and(|end| end <= n)
                    } else {
                        g == n
                    }
                });
        if !fits {
            return Err(wrong_shape("slice", grad.shape(), &node.shape));
        }
        self.piece_elements += grad.numel();
        self.pieces.push(Piece {
            axis,
            first,
            grad: cast_to_node(node, grad)?,
        });
        if self.piece_elements >= node.shape.iter().product::<usize>() {
            self.join_pieces(node)?;
        }
        Ok(())
    }

    /// The complete cotangent (`None` when no consumer contributed one), leaving this empty.
    #[inline]
    pub(super) fn take(&mut self, node: &Node<B>) -> Result<Option<Tensor<B>>> {
        if !self.pieces.is_empty() {
            self.join_pieces(node)?;
        }
        Ok(self.dense.take())
    }

    /// Joins the pieces into full-shape cotangents and adds them to the dense sum.
    fn join_pieces(&mut self, node: &Node<B>) -> Result<()> {
        let mut pieces = std::mem::take(&mut self.pieces);
        self.piece_elements = 0;
        pieces.sort_by_key(|p| (p.axis, p.first));
        let Some(first) = pieces.first() else {
            return Ok(());
        };
        let axis = first.axis;
        let size = node.shape[axis];
        let backend = first.grad.backend().clone();
        let len = |p: &Piece<B>| p.grad.shape()[p.axis];
        let disjoint = pieces.iter().all(|p| p.axis == axis)
            && pieces
                .windows(2)
                .all(|w| w[0].first + len(&w[0]) <= w[1].first);
        if !disjoint {
            for p in pieces {
                let size = node.shape[p.axis];
                let placed = rules::slice_cotangent(p.axis, p.first, len(&p), 1, size, &p.grad)?;
                self.add(node, placed, "slice")?;
            }
            return Ok(());
        }
        let gap = |n: usize| {
            let mut shape = node.shape.clone();
            shape[axis] = n;
            Tensor::zeros(shape, node.dtype, &backend)
        };
        let mut parts = Vec::with_capacity(pieces.len() * 2 + 1);
        let mut at = 0;
        for p in pieces {
            if p.first > at {
                parts.push(gap(p.first - at)?);
            }
            at = p.first + len(&p);
            parts.push(p.grad);
        }
        if at < size {
            parts.push(gap(size - at)?);
        }
        let joined = match parts.as_slice() {
            [whole] => whole.clone(),
            _ => Tensor::cat(&parts.iter().collect::<Vec<_>>(), axis as isize)?,
        };
        self.add(node, joined, "slice")
    }
}

/// `grad` in the node's dtype (a rule may hand back another one, as a cast's does).
fn cast_to_node<B: Backend>(node: &Node<B>, grad: Tensor<B>) -> Result<Tensor<B>> {
    if grad.dtype() == node.dtype {
        Ok(grad)
    } else {
        grad.cast(node.dtype)
    }
}

fn wrong_shape(op: &'static str, grad: &[usize], input: &[usize]) -> Error {
    Error::autodiff(
        op,
        format!(
            "internal error: the reverse rule produced a gradient of shape {grad:?} for an input \
             of shape {input:?}"
        ),
    )
}

/// The reverse pass may hand nodes, their cotangents and the tensors they hold to other threads (a
/// parallel backward over independent branches, see `docs/parallel-backward-design.md`): this stops
/// compiling if one of them is no longer `Send + Sync` for every backend.
#[allow(dead_code)]
fn nodes_cross_threads<B: Backend>() {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Node<B>>();
    send_and_sync::<Cotangent<B>>();
    send_and_sync::<Tensor<B>>();
}
