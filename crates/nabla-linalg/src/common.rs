//! Helpers shared by the factor and spectral modules: packing several results of one op into its
//! single output, and the Hermitian transpose.
//!
//! An [`nabla_core::ExtensionOp`] has one output. An op with several results (QR -> Q, R; eigh -> w,
//! V; ...) writes, per matrix of the batch, each result flattened in row-major order, one after the
//! other, into an output of shape `[..., total]`, all in the input's dtype. A [`Packing`] describes
//! the per-matrix shapes of the results; it gives the output shape in `output_spec`, splits the packed
//! tensor into views in the user function and in reverse rules (the packed cotangent), and builds a
//! packed tangent in forward rules.

use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;

/// The per-matrix shapes of the results packed into one output of shape `[..., total]`.
///
/// A result of per-matrix shape `[]` (a scalar per matrix, e.g. slogdet's sign) takes one slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Packing {
    parts: Vec<Vec<usize>>,
}

impl Packing {
    /// A packing of results with these per-matrix shapes, in this order.
    pub(crate) fn new(parts: Vec<Vec<usize>>) -> Self {
        Self { parts }
    }

    /// Elements per matrix of the batch: the size of the packed output's last axis.
    pub(crate) fn total(&self) -> usize {
        self.parts.iter().map(|p| p.iter().product::<usize>()).sum()
    }

    /// The packed output's shape for a batch of shape `batch`: `[...batch, total]`.
    pub(crate) fn output_shape(&self, batch: &[usize]) -> Vec<usize> {
        let mut shape = batch.to_vec();
        shape.push(self.total());
        shape
    }

    /// Splits a packed `[..., total]` tensor into its results, of shapes `[..., *part]` (views).
    pub(crate) fn unpack<B: Backend>(&self, packed: &Tensor<B>) -> Result<Vec<Tensor<B>>> {
        let shape = packed.shape();
        if shape.last() != Some(&self.total()) {
            return Err(Error::invalid(
                "linalg.unpack",
                format!(
                    "expected a packed tensor of shape [..., {}], got {shape:?}",
                    self.total()
                ),
            ));
        }
        let batch = &shape[..shape.len() - 1];
        let mut start = 0;
        self.parts
            .iter()
            .map(|part| {
                let len = part.iter().product::<usize>();
                let piece = packed.narrow(-1, start, len)?;
                start += len;
                let dims: Vec<usize> = batch.iter().chain(part).copied().collect();
                piece.reshape(dims)
            })
            .collect()
    }

    /// Packs results of shapes `[...batch, *part]` into one `[...batch, total]` tensor; absent
    /// results are zeros. `None` when every result is absent. `batch` is the batch shape.
    pub(crate) fn pack<B: Backend>(
        &self,
        parts: &[Option<Tensor<B>>],
        batch: &[usize],
    ) -> Result<Option<Tensor<B>>> {
        let Some(like) = parts.iter().flatten().next() else {
            return Ok(None);
        };
        if parts.len() != self.parts.len() {
            return Err(Error::invalid(
                "linalg.pack",
                format!("expected {} results, got {}", self.parts.len(), parts.len()),
            ));
        }
        let flat = self
            .parts
            .iter()
            .zip(parts)
            .map(|(part, t)| {
                let len = part.iter().product::<usize>();
                let dims: Vec<usize> = batch.iter().copied().chain([len]).collect();
                match t {
                    Some(t) => t.reshape(dims),
                    None => Tensor::zeros(dims, like.dtype(), like.backend()),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Tensor<B>> = flat.iter().collect();
        Ok(Some(Tensor::cat(&refs, -1)?))
    }
}

/// The Hermitian transpose `conj(xᵀ)` of a batch of matrices (the plain transpose for real types).
pub(crate) fn h<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    x.t()?.conj()
}

/// `(X + Xᴴ) / 2` for square matrices; any other shape unchanged (the op then names the shape error).
pub(crate) fn hermitian_part<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    match x.shape() {
        [.., m, n] if m == n => x.add(&h(x)?)?.mul(0.5),
        _ => Ok(x.clone()),
    }
}

/// `x` with each matrix entry `(i, j)` scaled by `weight(i, j)` (a constant mask).
pub(crate) fn masked<B: Backend>(
    x: &Tensor<B>,
    weight: impl Fn(usize, usize) -> f64,
) -> Result<Tensor<B>> {
    let r = x.rank();
    if r < 2 {
        return Err(Error::invalid(
            "linalg.mask",
            format!("expects matrices, got shape {:?}", x.shape()),
        ));
    }
    let (m, n) = (x.shape()[r - 2], x.shape()[r - 1]);
    // Row by row: no division per element (this runs on every derivative of the triangular ops).
    let mut w = Vec::with_capacity(m * n);
    for i in 0..m {
        w.extend((0..n).map(|j| weight(i, j)));
    }
    let mask = Tensor::from_vec(w, [m, n], x.backend())?.cast(x.dtype())?;
    x.mul(&mask)
}

/// The batch shape of a `[..., m, n]` tensor.
pub(crate) fn batch_shape<B: Backend>(x: &Tensor<B>) -> &[usize] {
    &x.shape()[..x.rank().saturating_sub(2)]
}

/// Implements `nabla_core::ExtensionOp` for an op type from its name, output spec and kernel.
macro_rules! extension_op {
    ($ty:ty, $name:expr, |$op:ident, $inputs:ident| $spec:expr, |$kop:ident, $views:ident, $alloc:ident| $kernel:expr) => {
        impl nabla_core::ExtensionOp for $ty {
            fn name(&self) -> &str {
                $name
            }

            fn output_spec(
                &self,
                $inputs: &[(nabla_core::DType, &[usize])],
            ) -> nabla_core::Result<nabla_core::OutputSpec> {
                let $op = self;
                $spec
            }

            fn host_kernel(
                &self,
                $views: &[nabla_core::HostView<'_>],
                $alloc: &dyn nabla_core::HostAllocator,
            ) -> nabla_core::Result<nabla_core::HostData> {
                let $kop = self;
                $kernel
            }

            fn as_any(&self) -> &dyn std::any::Any {
                self
            }

            fn maps_leading_dims(&self) -> bool {
                true
            }
        }
    };
}
pub(crate) use extension_op;

/// Matrix products at full precision: linear-algebra functions and their derivative rules multiply in
/// their operands' dtype even inside an autocast scope, as PyTorch runs its `linalg` functions in
/// float32 under autocast (a bf16 rounding inside a factorisation's derivative would cost far more
/// accuracy than it saves time).
pub(crate) trait FullProduct: Sized {
    /// [`Tensor::matmul`] at [`nabla_tensor::Precision::Full`].
    fn matmul_full(&self, rhs: &Self) -> Result<Self>;
}

impl<B: Backend> FullProduct for Tensor<B> {
    fn matmul_full(&self, rhs: &Self) -> Result<Self> {
        self.matmul_with(rhs, nabla_tensor::Precision::Full)
    }
}
