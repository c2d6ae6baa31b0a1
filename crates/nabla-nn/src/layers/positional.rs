//! Positional embeddings added to a sequence: the fixed sinusoidal table of "Attention is all you
//! need" and a learned table.

use crate::init;
use crate::module::Forward;
use crate::param::Param;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_tensor::Tensor;

/// Adds `table[..seq]` (`[seq, dim]`) to `x` (`[batch, seq, dim]` when `batch_first`, else
/// `[seq, batch, dim]`; an unbatched `[seq, dim]` also works), checking the sequence length and the
/// feature size.
fn add_positions<B: Backend>(
    op: &'static str,
    x: &Tensor<B>,
    table: &Tensor<B>,
    batch_first: bool,
) -> Result<Tensor<B>> {
    let (max_len, dim) = (table.shape()[0], table.shape()[1]);
    let seq_axis = if batch_first && x.rank() == 3 { 1 } else { 0 };
    if !(x.rank() == 2 || x.rank() == 3) || x.shape()[x.rank() - 1] != dim {
        return Err(Error::invalid(
            op,
            format!(
                "expected input [batch, seq, {dim}] (batch_first) or [seq, batch, {dim}], got shape {:?}",
                x.shape()
            ),
        ));
    }
    let seq = x.shape()[seq_axis];
    if seq > max_len {
        return Err(Error::invalid(
            op,
            format!(
                "sequence length {seq} exceeds max_len {max_len} (input shape {:?})",
                x.shape()
            ),
        ));
    }
    let pe = table.narrow(0, 0, seq)?;
    let pe = if x.rank() == 3 && !batch_first {
        pe.unsqueeze(1)?
    } else {
        pe
    };
    x.add(pe)
}

/// The fixed sinusoidal positional encoding of "Attention is all you need", added to the input:
/// `pe[pos, 2i] = sin(pos · 10000^(-2i/dim))` and `pe[pos, 2i + 1] = cos(pos · 10000^(-2i/dim))`.
/// The table is computed once and is neither a parameter nor a buffer (it is not in the state dict).
/// Input `[batch, seq, dim]` when `batch_first`, else `[seq, batch, dim]`; `seq <= max_len`.
///
/// ```
/// use nabla_nn::{Forward, SinusoidalPositionalEmbedding};
/// use nabla_core::DType;
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let pe = SinusoidalPositionalEmbedding::new(16, 4, true, DType::F64, &cpu)?;
/// let y = pe.forward(&Tensor::zeros([2, 3, 4], DType::F64, &cpu)?)?;
/// assert_eq!(y.to_vec::<f64>()?[..4], [0.0, 1.0, 0.0, 1.0]);
/// assert!(pe.forward(&Tensor::zeros([2, 17, 4], DType::F64, &cpu)?).is_err());
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct SinusoidalPositionalEmbedding<B: Backend> {
    /// `[max_len, dim]`, untracked.
    #[module(skip)]
    table: Tensor<B>,
    /// Whether inputs are `[batch, seq, dim]` (else `[seq, batch, dim]`).
    pub batch_first: bool,
}

impl<B: Backend> SinusoidalPositionalEmbedding<B> {
    /// The encoding for sequences of up to `max_len` positions of `dim` features.
    pub fn new(
        max_len: usize,
        dim: usize,
        batch_first: bool,
        dtype: DType,
        backend: &B,
    ) -> Result<Self> {
        if max_len == 0 || dim == 0 {
            return Err(Error::invalid(
                "SinusoidalPositionalEmbedding",
                format!("max_len and dim must be positive, got {max_len} and {dim}"),
            ));
        }
        let scale = -(10000f64.ln()) / dim as f64;
        let mut table = vec![0.0; max_len * dim];
        for pos in 0..max_len {
            for i in (0..dim).step_by(2) {
                let angle = pos as f64 * (i as f64 * scale).exp();
                table[pos * dim + i] = angle.sin();
                if i + 1 < dim {
                    table[pos * dim + i + 1] = angle.cos();
                }
            }
        }
        Ok(SinusoidalPositionalEmbedding {
            table: Tensor::from_f64s(table, [max_len, dim], dtype, backend)?,
            batch_first,
        })
    }

    /// The table `[max_len, dim]`.
    pub fn table(&self) -> &Tensor<B> {
        &self.table
    }
}

impl<B: Backend> Forward<B> for SinusoidalPositionalEmbedding<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        add_positions(
            "SinusoidalPositionalEmbedding",
            x,
            &self.table,
            self.batch_first,
        )
    }
}

/// A learned positional embedding added to the input: `weight` `[max_len, dim]` initialised `N(0, 1)`
/// (as an `nn.Embedding` over the positions), `x + weight[..seq]`. Input `[batch, seq, dim]` when
/// `batch_first`, else `[seq, batch, dim]`; `seq <= max_len`.
///
/// ```
/// use nabla_nn::{Forward, LearnedPositionalEmbedding};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let pe = LearnedPositionalEmbedding::new(8, 4, false, DType::F32, &mut Generator::new(0), &cpu)?;
/// assert_eq!(pe.forward(&Tensor::zeros([5, 2, 4], DType::F32, &cpu)?)?.shape(), &[5, 2, 4]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct LearnedPositionalEmbedding<B: Backend> {
    /// `[max_len, dim]`.
    pub weight: Param<B>,
    /// Whether inputs are `[batch, seq, dim]` (else `[seq, batch, dim]`).
    pub batch_first: bool,
}

impl<B: Backend> LearnedPositionalEmbedding<B> {
    /// A table for sequences of up to `max_len` positions of `dim` features.
    pub fn new(
        max_len: usize,
        dim: usize,
        batch_first: bool,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        if max_len == 0 || dim == 0 {
            return Err(Error::invalid(
                "LearnedPositionalEmbedding",
                format!("max_len and dim must be positive, got {max_len} and {dim}"),
            ));
        }
        let weight = init::normal([max_len, dim], 0.0, 1.0, dtype, rng, backend)?;
        Ok(LearnedPositionalEmbedding {
            weight: Param::new(weight)?,
            batch_first,
        })
    }
}

impl<B: Backend> Forward<B> for LearnedPositionalEmbedding<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        add_positions(
            "LearnedPositionalEmbedding",
            x,
            &self.weight.value(),
            self.batch_first,
        )
    }
}
