//! Lookup tables: `Embedding`.

use crate::init;
use crate::module::Forward;
use crate::param::Param;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_tensor::Tensor;

/// A lookup table of `num_embeddings` vectors of size `embedding_dim` (PyTorch's `nn.Embedding`):
/// integer indices of any shape `[*]` give `[*, embedding_dim]`. `weight` is initialised `N(0, 1)`;
/// with a `padding_idx`, that row starts at zero and receives no gradient. Indices outside
/// `0..num_embeddings` are an error naming the index.
///
/// ```
/// use nabla_nn::{Embedding, Forward};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let emb = Embedding::new(10, 4, Some(0), DType::F32, &mut Generator::new(0), &cpu)?;
/// let ids = Tensor::from_vec(vec![0i64, 3, 9, 3, 0, 1], [2, 3], &cpu)?;
/// let y = emb.forward(&ids)?;
/// assert_eq!(y.shape(), &[2, 3, 4]);
/// assert_eq!(y.to_vec::<f32>()?[..4], [0.0; 4]);
/// assert!(emb.forward(&Tensor::from_vec(vec![10i64], [1], &cpu)?).is_err());
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct Embedding<B: Backend> {
    /// `[num_embeddings, embedding_dim]`.
    pub weight: Param<B>,
    /// The row that is not trained (negative values given to the constructor are resolved).
    pub padding_idx: Option<i64>,
}

impl<B: Backend> Embedding<B> {
    /// A table with PyTorch's arguments; `padding_idx` may be negative (counted from the end).
    pub fn new(
        num_embeddings: usize,
        embedding_dim: usize,
        padding_idx: Option<i64>,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let n = num_embeddings as i64;
        let padding_idx = match padding_idx {
            Some(p) if p >= n || p < -n => {
                return Err(Error::invalid(
                    "Embedding",
                    format!("padding_idx {p} must be within num_embeddings {num_embeddings}"),
                ));
            }
            Some(p) if p < 0 => Some(p + n),
            other => other,
        };
        let mut weight = init::normal(
            [num_embeddings, embedding_dim],
            0.0,
            1.0,
            dtype,
            rng,
            backend,
        )?;
        if let Some(p) = padding_idx {
            // The padding row zeroed by a product (no read-back, so a tracing backend builds it).
            let mut keep = vec![1.0; num_embeddings];
            keep[p as usize] = 0.0;
            weight = weight.mul(Tensor::from_f64s(
                keep,
                [num_embeddings, 1],
                dtype,
                backend,
            )?)?;
        }
        Ok(Embedding {
            weight: Param::new(weight)?,
            padding_idx,
        })
    }

    /// `num_embeddings`.
    pub fn num_embeddings(&self) -> usize {
        self.weight.shape()[0]
    }

    /// `embedding_dim`.
    pub fn embedding_dim(&self) -> usize {
        self.weight.shape()[1]
    }

    /// The table to look rows up in: the weight, with the padding row cut off from the gradient.
    fn table(&self) -> Result<Tensor<B>> {
        let w = self.weight.value();
        let Some(p) = self.padding_idx else {
            return Ok(w);
        };
        let n = self.num_embeddings();
        let mut keep = vec![1.0; n];
        keep[p as usize] = 0.0;
        let keep = Tensor::from_f64s(keep, [n, 1], w.dtype(), w.backend())?;
        // Same values as `w`; only the rows where `keep` is 1 are tracked.
        w.mul(&keep)?.add(w.detach().mul(keep.neg()?.add(1.0)?)?)
    }
}

impl<B: Backend> Forward<B> for Embedding<B> {
    fn forward(&self, indices: &Tensor<B>) -> Result<Tensor<B>> {
        const OP: &str = "Embedding";
        if !indices.dtype().is_int() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: indices.dtype(),
                hint: Some("embedding indices must be integers".into()),
            });
        }
        let flat = indices.flatten_all()?.cast(DType::I64)?;
        let n = self.num_embeddings();
        // A symbolic (tracing) backend holds no values to check: the kernels that run the
        // program check the range.
        if !indices.backend().is_symbolic()
            && let Some(&bad) = flat
                .to_vec::<i64>()?
                .iter()
                .find(|&&i| i < 0 || i >= n as i64)
        {
            return Err(Error::IndexOutOfBounds {
                op: OP,
                index: bad,
                size: n,
            });
        }
        let mut shape = indices.shape().to_vec();
        shape.push(self.embedding_dim());
        self.table()?.index_select(0, &flat)?.reshape(shape)
    }
}
