//! One LSTM layer as one op, and its vector-Jacobian product: the recurrence and the gates of every
//! step in one kernel (what cuDNN's and PyTorch's fused LSTM layers are).

use super::{FastPath, FastPathKernels, input_specs};
use crate::{DType, Error, HostAllocator, HostData, HostView, OutputSpec, Result};

/// The fused layer and its vector-Jacobian product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LstmOp {
    /// `(x [L, N, I], w_ih [4H, I], w_hh [4H, H], h0 [N, H], c0 [N, H], bias [4H]) -> [6, L, N, H]`:
    /// the activations, then every step's `h` and `c`; without `activations`, `[2, L, N, H]`, the
    /// states only.
    Layer {
        /// The steps run in reverse time order.
        reverse: bool,
        /// The output keeps the gate activations (the vjp reads them).
        activations: bool,
    },
    /// `(x, w_ih, w_hh, h0, c0, states [6, L, N, H], cotangent [6, L, N, H])
    /// -> [LNI + 2NH + 4H·I + 4H·H + 4H]`: the cotangents of `x`, `h0`, `c0`, `w_ih`, `w_hh` and
    /// the bias, flattened one after another, from the layer's output and its cotangent (whose
    /// activation part is ignored: only `h` and `c` leave the layer). Without `input_grad`, the
    /// cotangent of `x` (the first `LNI` elements) is left out.
    LayerVjp {
        /// The steps ran in reverse time order.
        reverse: bool,
        /// The cotangent of `x` is computed.
        input_grad: bool,
    },
}

/// The sizes of one layer: steps, batch rows, input features and hidden units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LstmDims {
    /// Steps.
    pub len: usize,
    /// Batch rows.
    pub n: usize,
    /// Input features.
    pub input: usize,
    /// Hidden units.
    pub h: usize,
}

impl LstmDims {
    /// The lengths of the vjp's flat output, in its order: `dx` (none without `input_grad`), `dh0`,
    /// `dc0`, `dw_ih`, `dw_hh`, `db`.
    pub fn vjp_lengths(self, input_grad: bool) -> [usize; 6] {
        let (len, n, i, h) = (self.len, self.n, self.input, self.h);
        let dx = if input_grad { len * n * i } else { 0 };
        [dx, n * h, n * h, 4 * h * i, 4 * h * h, 4 * h]
    }
}

/// The time index of the `step`-th step run over `len` steps, counting down when `reverse`.
pub fn time_of_step(step: usize, len: usize, reverse: bool) -> usize {
    if reverse { len - 1 - step } else { step }
}

impl LstmOp {
    /// `true` when the steps run in reverse time order.
    pub fn reverse(self) -> bool {
        match self {
            LstmOp::Layer { reverse, .. } | LstmOp::LayerVjp { reverse, .. } => reverse,
        }
    }

    /// The `[L, N, H]` planes of the layer's output: the activations' four (where kept), `h`, `c`.
    pub fn planes(self) -> usize {
        match self {
            LstmOp::Layer { activations, .. } => 2 + 4 * usize::from(activations),
            LstmOp::LayerVjp { .. } => 6,
        }
    }

    /// The expected input shapes for the sizes `d`.
    fn input_shapes(self, d: LstmDims) -> Vec<Vec<usize>> {
        let (len, n, i, h) = (d.len, d.n, d.input, d.h);
        let mut shapes = vec![
            vec![len, n, i],
            vec![4 * h, i],
            vec![4 * h, h],
            vec![n, h],
            vec![n, h],
        ];
        match self {
            LstmOp::Layer { .. } => shapes.push(vec![4 * h]),
            LstmOp::LayerVjp { .. } => shapes.extend([vec![6, len, n, h], vec![6, len, n, h]]),
        }
        shapes
    }

    /// The dtype and sizes from the input shapes, or an error naming the op and the expected
    /// shapes.
    pub fn dims(self, inputs: &[(DType, &[usize])]) -> Result<(DType, LstmDims)> {
        let bad = || {
            let shapes: Vec<_> = inputs.iter().map(|(d, s)| (*d, s.to_vec())).collect();
            Error::invalid(
                self.name(),
                format!(
                    "expected f32 or f64 inputs of one dtype: input [L, N, I], weights [4H, I] \
                     and [4H, H], states [N, H], then bias [4H] for the layer, or output and \
                     cotangent [6, L, N, H] for its vjp; got {shapes:?}"
                ),
            )
        };
        // The sizes come from the input and the recurrent weight.
        let (Some((dtype, x)), Some((_, w_hh))) = (inputs.first(), inputs.get(2)) else {
            return Err(bad());
        };
        let sizes = match (*x, *w_hh) {
            (&[len, n, input], &[_, h]) => LstmDims { len, n, input, h },
            _ => return Err(bad()),
        };
        let dtype = *dtype;
        // Every size the op works out fits a usize (a zero-size input may have huge dimensions).
        let LstmDims { len, n, input, h } = sizes;
        let fits = |factors: &[usize]| factors.iter().try_fold(1usize, |p, &f| p.checked_mul(f));
        let sized = [
            [4, h, input, 1],
            [4, h, h, 1],
            [6, len, n, h],
            [len, n, input, 1],
        ]
        .iter()
        .all(|f| fits(f).is_some());
        if !sized {
            return Err(bad());
        }
        let want = self.input_shapes(sizes);
        let ok = inputs.len() == want.len()
            && sizes.len > 0
            && sizes.h > 0
            && matches!(dtype, DType::F32 | DType::F64)
            && inputs
                .iter()
                .zip(&want)
                .all(|((d, s), w)| *d == dtype && *s == w.as_slice());
        if ok { Ok((dtype, sizes)) } else { Err(bad()) }
    }
}

impl FastPath for LstmOp {
    fn name(&self) -> &'static str {
        match self {
            LstmOp::Layer { .. } => "fused.lstm_layer",
            LstmOp::LayerVjp { .. } => "fused.lstm_layer_vjp",
        }
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, d) = self.dims(inputs)?;
        let shape = match self {
            LstmOp::Layer { .. } => vec![self.planes(), d.len, d.n, d.h],
            LstmOp::LayerVjp { input_grad, .. } => vec![d.vjp_lengths(*input_grad).iter().sum()],
        };
        Ok(OutputSpec { dtype, shape })
    }

    fn run(
        &self,
        kernels: &dyn FastPathKernels,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        let (_, dims) = self.dims(&input_specs(inputs))?;
        kernels.lstm(*self, dims, inputs, alloc)
    }
}
