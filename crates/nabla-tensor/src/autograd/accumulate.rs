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
//! A weight that several matrix products share (a recurrent layer's `W_hh`, used once per step) gets
//! a contribution `aᵢᵀ gᵢ` from each product. When the `aᵢ` have few rows (a batch of 32 sequences),
//! each of those products is a thin matrix product that runs well below the machine's peak, and
//! summing them costs another pass over the full-size gradient per product. So the operands are kept
//! and multiplied once, stacked: `Σ aᵢᵀ gᵢ = [a₁; a₂; …]ᵀ [g₁; g₂; …]`, one well-shaped product
//! (the way cuDNN and oneDNN compute an RNN's weight gradient after the time loop).
//!
//! The joins are made of tensor ops, so a reverse pass that records itself (`create_graph`) records
//! them and they can be differentiated again.

use super::node::{Node, NodeKind};
use crate::Tensor;
use crate::rules;
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
    /// Matrix products `aᵀ g` not yet computed, whose sum is a contribution.
    products: Vec<Product<B>>,
    /// Elements held in `products`; past [`PRODUCT_MEMORY_FACTOR`] times the node's size they are
    /// multiplied out.
    product_elements: usize,
    /// The sum of the products multiplied out so far, before the final transpose when the node is
    /// a transposed view (see `rules::rhs_cotangent_untransposed`).
    product_sum: Option<Tensor<B>>,
    /// The node is a transposed view: its products are computed in its layout.
    products_transposed: bool,
}

/// The operands of a deferred contribution `lhsᵀ grad` to the right operand of a matrix product.
struct Product<B: Backend> {
    lhs: Tensor<B>,
    grad: Tensor<B>,
}

/// Deferred products may hold operands of up to this many times the node's own size before they are
/// multiplied out: enough for a 50-step recurrent layer of batch 32 and width 256 to make one product.
const PRODUCT_MEMORY_FACTOR: usize = 8;

/// Products whose operands have fewer rows than this are deferred (see the module docs): below it the
/// contraction is too short for a matrix product to reach the machine's peak.
pub(super) const THIN_PRODUCT_ROWS: usize = 128;

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
            products: Vec::new(),
            product_elements: 0,
            product_sum: None,
            products_transposed: false,
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
            // A leaf keeps a row-major gradient (optimisers then update it in memory order).
            Some(sum) if matches!(node.kind, NodeKind::Leaf { .. }) => sum.add(&grad)?,
            Some(sum) => add_in_buffer_order(&sum, &grad)?,
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

    /// Adds `lhsᵀ grad`, the contribution of a product `lhs @ node` whose cotangent is `grad`
    /// (`lhs` is `[m, k]`, `grad` `[m, n]`, the node `[k, n]`), computing it later together with the
    /// node's other deferred products. `rhs_transposed` says whether the node is a transposed view,
    /// which every product of one node sees alike.
    pub(super) fn add_product(
        &mut self,
        node: &Node<B>,
        lhs: Tensor<B>,
        grad: Tensor<B>,
        rhs_transposed: bool,
    ) -> Result<()> {
        let fits = matches!((lhs.shape(), grad.shape(), node.shape.as_slice()),
            ([m, k], [gm, n], [nk, nn]) if m == gm && k == nk && n == nn);
        if !fits {
            return Err(wrong_shape("matmul", grad.shape(), &node.shape));
        }
        self.product_elements += lhs.numel() + grad.numel();
        self.products_transposed = rhs_transposed;
        self.products.push(Product { lhs, grad });
        if self.product_elements > PRODUCT_MEMORY_FACTOR * node.shape.iter().product::<usize>() {
            self.join_products()?;
        }
        Ok(())
    }

    /// `true` when no consumer has contributed anything yet.
    pub(super) fn is_empty(&self) -> bool {
        self.dense.is_none()
            && self.pieces.is_empty()
            && self.products.is_empty()
            && self.product_sum.is_none()
    }

    /// The complete cotangent (`None` when no consumer contributed one), leaving this empty.
    #[inline]
    pub(super) fn take(&mut self, node: &Node<B>) -> Result<Option<Tensor<B>>> {
        if !self.pieces.is_empty() {
            self.join_pieces(node)?;
        }
        if !self.products.is_empty() {
            self.join_products()?;
        }
        if let Some(sum) = self.product_sum.take() {
            let sum = if self.products_transposed {
                sum.t()?
            } else {
                sum
            };
            self.add(node, sum, "matmul")?;
        }
        Ok(self.dense.take())
    }

    /// Multiplies the deferred products out as one product of the stacked operands and adds it to
    /// the products' sum.
    fn join_products(&mut self) -> Result<()> {
        let products = std::mem::take(&mut self.products);
        self.product_elements = 0;
        let (lhs, grad) = match products.as_slice() {
            [] => return Ok(()),
            [one] => (one.lhs.clone(), one.grad.clone()),
            _ => {
                let stack = |part: fn(&Product<B>) -> &Tensor<B>| {
                    Tensor::cat(&products.iter().map(part).collect::<Vec<_>>(), 0)
                };
                (stack(|p| &p.lhs)?, stack(|p| &p.grad)?)
            }
        };
        let product = rules::rhs_cotangent_untransposed(
            &lhs,
            &grad,
            self.products_transposed,
            crate::Precision::Full,
        )?;
        self.product_sum = Some(match self.product_sum.take() {
            None => product,
            Some(sum) => sum.add(&product)?,
        });
        Ok(())
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
        // One piece with gaps around it (a selection out of a larger output) is placed as a slice's
        // cotangent is, with one zero pad, rather than joined to zero tensors made first.
        if let [one] = pieces.as_slice()
            && (one.first > 0 || one.first + len(one) < size)
        {
            let placed = rules::slice_cotangent(axis, one.first, len(one), 1, size, &one.grad)?;
            return self.add(node, placed, "slice");
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
/// parallel backward over independent branches, see `docs/src/parallel-backward.md`): this stops
/// compiling if one of them is no longer `Send + Sync` for every backend.
#[allow(dead_code)]
fn nodes_cross_threads<B: Backend>() {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Node<B>>();
    send_and_sync::<Cotangent<B>>();
    send_and_sync::<Tensor<B>>();
}

/// `a + b`. When both are transposed views (the cotangents a transposed operand of several
/// products receives, such as `xᵀ` in `x @ xᵀ` and `v @ xᵀ`), they are added in their buffers'
/// order and the sum is a transposed view too: the same values, read and written in memory order,
/// and the transpose back to the operand's source (`x`) is then free.
fn add_in_buffer_order<B: Backend>(a: &Tensor<B>, b: &Tensor<B>) -> Result<Tensor<B>> {
    if rules::is_transposed(a) && rules::is_transposed(b) {
        return a.t()?.add(&b.t()?)?.t();
    }
    a.add(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_cpu::CpuBackend;

    #[test]
    fn transposed_cotangents_add_in_buffer_order_to_the_same_values() -> Result<()> {
        let cpu = CpuBackend::new();
        let matrix = |seed: f32| {
            let v: Vec<f32> = (0..35).map(|k| (k as f32 * seed).sin()).collect();
            Tensor::from_vec(v, [5, 7], &cpu)?.t()
        };
        let (a, b) = (matrix(0.3)?, matrix(1.7)?);
        let sum = add_in_buffer_order(&a, &b)?;
        assert!(
            rules::is_transposed(&sum),
            "the sum stays a transposed view"
        );
        let plain = a.contiguous()?.add(&b.contiguous()?)?;
        let bits = |t: &Tensor<CpuBackend>| -> Result<Vec<u32>> {
            Ok(t.to_vec::<f32>()?.iter().map(|v| v.to_bits()).collect())
        };
        assert_eq!(bits(&sum)?, bits(&plain)?);
        // Anything else adds as it is.
        let mixed = add_in_buffer_order(&a, &plain)?;
        assert!(mixed.is_contiguous());
        assert_eq!(bits(&mixed)?, bits(&a.add(&plain)?)?);
        Ok(())
    }
}
