//! One LSTM layer in one direction as one fused op (what cuDNN's and oneDNN's RNN primitives do):
//! from the input `x` (`[L, N, I]`), the weights `W_ih` (`[4H, I]`) and `W_hh` (`[4H, H]`, gate
//! order i, f, g, o), the bias `b = b_ih + b_hh` (`[4H]`) and the initial states `h_0` and `c_0`
//! (`[N, H]`), one kernel runs the whole layer: the input projections `x W_ihᵀ` as one product, then
//! per step one product `h W_hhᵀ` and one pass of the cell, which adds the input part, the
//! recurrent part and the bias as it reads them. Its vector-Jacobian product is one kernel too:
//! the steps backwards, one product `dG W_hh` and one cell pass each, and every chunk of steps the
//! input's cotangent `dG W_ih` and the chunk's shares of the weights' and bias's cotangents, while
//! the chunk's gate cotangents are in cache. Nothing per step goes on the tape, and nothing is
//! stacked or concatenated.
//!
//! The op's output is `[6, L, N, H]`: its first `4LNH` elements are the activations `σ(i), σ(f),
//! tanh(g), σ(o)` of every step, laid out as `[L, N, 4H]` (read only by the vjp kernel), then every
//! step's `h` and `c` as contiguous `[L, N, H]` blocks, in time order. Where the op is not recorded
//! (no input tracked, or under [`nabla_tensor::no_grad`]), nothing will read the activations: the
//! output is then `[2, L, N, H]`, `h` and `c` only, a third of the memory that the layer's outputs
//! keep alive.
//!
//! Derivatives of any order: the reverse rule runs the fused vjp op when nothing it returns is
//! tracked (plain `backward`, the training case); when the pass builds a graph (`create_graph`,
//! higher order) and for forward mode, it differentiates the composite layer (the same steps from
//! tensor ops), which has the same values up to rounding. The fused op runs on the CPU backend for
//! `f32` and `f64`; elsewhere (other backends, traced programs) the layer is the composite.

mod kernel;
#[cfg(test)]
mod tests;

use crate::layers::fused::{composite_jvp, composite_vjp_if_tracked, recorded_op, split_flat};
use nabla_core::Result;
use nabla_core::{
    Backend, DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec,
};
use nabla_tensor::{ExtensionFamily, ExtensionRules, RuleArgs, Tensor, is_recorded};
use std::sync::Arc;

/// The outputs of [`lstm_layer`]: every step's `h` (`[L, N, H]`, time order), and the final `h` and
/// `c` (`[N, H]`; the last step's, or the first's when running in reverse).
pub(crate) struct LayerStates<B: Backend> {
    pub outputs: Tensor<B>,
    pub h_n: Tensor<B>,
    pub c_n: Tensor<B>,
}

/// The weights of one layer and direction: `w_ih` (`[4H, I]`), `w_hh` (`[4H, H]`) and the bias
/// (`[4H]`, both biases summed; `None` for none).
pub(crate) struct LayerWeights<'a, B: Backend> {
    pub w_ih: &'a Tensor<B>,
    pub w_hh: &'a Tensor<B>,
    pub bias: Option<&'a Tensor<B>>,
}

/// Runs one LSTM layer over the input `x` (`[L, N, I]`) with the weights `w` from `h0` and `c0`
/// (`[N, H]`), the steps in reverse time order when `reverse`.
pub(crate) fn lstm_layer<B: Backend>(
    x: &Tensor<B>,
    w: &LayerWeights<'_, B>,
    h0: &Tensor<B>,
    c0: &Tensor<B>,
    reverse: bool,
) -> Result<LayerStates<B>> {
    let len = x.shape().first().copied().unwrap_or(0);
    if len == 0 {
        return Err(Error::invalid(
            "LSTM",
            format!("the sequence is empty (input {:?})", x.shape()),
        ));
    }
    let last = if reverse { 0 } else { len - 1 };
    let w_hh = w.w_hh;
    // The fused op takes one float dtype; mixed dtypes promote through the composite's ops.
    let dtypes = [w.w_ih, w_hh, h0, c0].into_iter().chain(w.bias);
    let fused = x.backend().device().kind == "cpu"
        && matches!(x.dtype(), DType::F32 | DType::F64)
        && dtypes.into_iter().all(|t| t.dtype() == x.dtype());
    if !fused {
        let xw = x.matmul(&w.w_ih.t()?)?;
        let xw = match w.bias {
            Some(b) => xw.add(b)?,
            None => xw,
        };
        let steps = composite_steps(&xw, w_hh, h0, c0, reverse)?;
        let hs: Vec<&Tensor<B>> = steps.iter().map(|s| &s.h).collect();
        return Ok(LayerStates {
            outputs: Tensor::stack(&hs, 0)?,
            h_n: steps[last].h.clone(),
            c_n: steps[last].c.clone(),
        });
    }
    let zeros;
    let bias = match w.bias {
        Some(b) => b,
        None => {
            zeros = Tensor::zeros([w_hh.shape()[0]], x.dtype(), x.backend())?;
            &zeros
        }
    };
    let inputs = [x, w.w_ih, w_hh, h0, c0, bias];
    // Only the vjp reads the activations, and it runs only where the op is recorded.
    let activations = is_recorded(&inputs);
    let op = LstmOp::Layer {
        reverse,
        activations,
    };
    let planes = op.planes() as isize;
    let out = Tensor::apply_family_op::<FusedLstm>(Arc::new(op), &inputs)?;
    let outputs = out.select_index(0, planes - 2)?;
    let cells = out.select_index(0, planes - 1)?;
    Ok(LayerStates {
        h_n: outputs.select_index(0, last as isize)?,
        c_n: cells.select_index(0, last as isize)?,
        outputs,
    })
}

/// The time index of the `step`-th step run over `len` steps, counting down when `reverse`.
pub(crate) fn time_of_step(step: usize, len: usize, reverse: bool) -> usize {
    if reverse { len - 1 - step } else { step }
}

/// One step of the composite layer: the activations `[σ(i), σ(f), tanh(g), σ(o)]`, `h` and `c`.
struct Step<B: Backend> {
    acts: [Tensor<B>; 4],
    h: Tensor<B>,
    c: Tensor<B>,
}

/// The cell by its formula, from the gate pre-activations `gates` (`[N, 4H]`) and the state `c`.
fn composite_cell<B: Backend>(gates: &Tensor<B>, c: &Tensor<B>) -> Result<Step<B>> {
    let g = gates.chunk(4, -1)?;
    let i = g[0].sigmoid()?;
    let f = g[1].sigmoid()?;
    let cand = g[2].tanh()?;
    let o = g[3].sigmoid()?;
    let c_new = f.mul(c)?.add(i.mul(&cand)?)?;
    let h_new = o.mul(c_new.tanh()?)?;
    Ok(Step {
        acts: [i, f, cand, o],
        h: h_new,
        c: c_new,
    })
}

/// The layer from tensor ops, indexed by time step.
fn composite_steps<B: Backend>(
    xw: &Tensor<B>,
    w_hh: &Tensor<B>,
    h0: &Tensor<B>,
    c0: &Tensor<B>,
    reverse: bool,
) -> Result<Vec<Step<B>>> {
    let len = xw.shape()[0];
    let w_t = w_hh.t()?;
    let (mut h, mut c) = (h0.clone(), c0.clone());
    let mut steps: Vec<Option<Step<B>>> = (0..len).map(|_| None).collect();
    for s in 0..len {
        let t = time_of_step(s, len, reverse);
        let gates = xw.select_index(0, t as isize)?.add(&h.matmul(&w_t)?)?;
        let step = composite_cell(&gates, &c)?;
        (h, c) = (step.h.clone(), step.c.clone());
        steps[t] = Some(step);
    }
    Ok(steps.into_iter().flatten().collect())
}

/// The composite layer laid out as the fused op `op`'s output (`[6, L, N, H]`, the activations
/// first, or `[2, L, N, H]` without them), which the rules differentiate for higher orders and
/// forward mode; `v` are the op's inputs.
fn composite_layer<B: Backend>(v: &[Tensor<B>], op: LstmOp) -> Result<Tensor<B>> {
    let xw = v[0].matmul(&v[1].t()?)?.add(&v[5])?;
    let steps = composite_steps(&xw, &v[2], &v[3], &v[4], op.reverse())?;
    let hs = Tensor::stack(&steps.iter().map(|s| &s.h).collect::<Vec<_>>(), 0)?;
    let cs = Tensor::stack(&steps.iter().map(|s| &s.c).collect::<Vec<_>>(), 0)?;
    if op.planes() == 2 {
        return Tensor::stack(&[&hs, &cs], 0);
    }
    let (len, n, h) = (steps.len(), v[3].shape()[0], v[3].shape()[1]);
    let acts: Vec<Tensor<B>> = steps
        .iter()
        .map(|s| Tensor::cat(&[&s.acts[0], &s.acts[1], &s.acts[2], &s.acts[3]], -1))
        .collect::<Result<_>>()?;
    let acts = Tensor::stack(&acts.iter().collect::<Vec<_>>(), 0)?.reshape([4, len, n, h])?;
    Tensor::cat(&[&acts, &hs.unsqueeze(0)?, &cs.unsqueeze(0)?], 0)
}

/// The fused layer and its vector-Jacobian product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum LstmOp {
    /// `(x [L, N, I], w_ih [4H, I], w_hh [4H, H], h0 [N, H], c0 [N, H], bias [4H]) -> [6, L, N, H]`:
    /// the activations, then every step's `h` and `c`; without `activations`, `[2, L, N, H]`, the
    /// states only.
    Layer { reverse: bool, activations: bool },
    /// `(x, w_ih, w_hh, h0, c0, states [6, L, N, H], cotangent [6, L, N, H])
    /// -> [LNI + 2NH + 4H·I + 4H·H + 4H]`: the cotangents of `x`, `h0`, `c0`, `w_ih`, `w_hh` and
    /// the bias, flattened one after another, from the layer's output and its cotangent (whose
    /// activation part is ignored: only `h` and `c` leave the layer). Without `input_grad`, the
    /// cotangent of `x` (the first `LNI` elements) is left out.
    LayerVjp { reverse: bool, input_grad: bool },
}

/// The sizes of one layer: steps, batch rows, input features and hidden units.
#[derive(Clone, Copy, Debug)]
struct Dims {
    len: usize,
    n: usize,
    input: usize,
    h: usize,
}

impl Dims {
    /// The lengths of the vjp's flat output, in its order: `dx` (none without `input_grad`), `dh0`,
    /// `dc0`, `dw_ih`, `dw_hh`, `db`.
    fn vjp_lengths(self, input_grad: bool) -> [usize; 6] {
        let (len, n, i, h) = (self.len, self.n, self.input, self.h);
        let dx = if input_grad { len * n * i } else { 0 };
        [dx, n * h, n * h, 4 * h * i, 4 * h * h, 4 * h]
    }
}

/// The family binding the layer's rules.
struct FusedLstm;

impl ExtensionFamily for FusedLstm {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse("fused.lstm_layer", layer_reverse)
            .forward("fused.lstm_layer", |args, t| {
                let op = layer_of(args)?;
                composite_jvp(args, t, |v| composite_layer(v, op))
            })
    }
}

/// The recorded layer op (a [`LstmOp::Layer`]).
fn layer_of<B: Backend>(args: &RuleArgs<'_, B>) -> Result<LstmOp> {
    recorded_op(args, "fused.lstm_layer", |op| {
        matches!(op, LstmOp::Layer { .. })
    })
}

/// The layer's reverse rule: the fused vjp where no graph is built, the composite's otherwise.
fn layer_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let layer = layer_of(args)?;
    // An op run without its activations is one that was not expected to be recorded; its
    // composite still gives the right cotangents.
    let composite = |v: &[Tensor<B>]| composite_layer(v, layer);
    if layer.planes() == 2 {
        let (_, grads) = nabla_tensor::vjp_n(composite, args.inputs, g)?;
        return Ok(grads.into_iter().map(Some).collect());
    }
    if let Some(grads) = composite_vjp_if_tracked(args, g, composite)? {
        return Ok(grads);
    }
    let [x, w_ih, w_hh, h0, c0, bias] = args.inputs else {
        return Err(Error::invalid("fused.lstm_layer", "expected six inputs"));
    };
    // The input's cotangent only when asked for: a first layer's input is often data.
    let input_grad = needs.first().copied().unwrap_or(true);
    let op = Arc::new(LstmOp::LayerVjp {
        reverse: layer.reverse(),
        input_grad,
    });
    let inputs = [x, w_ih, w_hh, h0, c0, args.output, g];
    let flat = Tensor::apply_family_op::<FusedLstm>(op, &inputs)?;
    // The flat cotangent's pieces, in its order: dx, dh0, dc0, dw_ih, dw_hh, db.
    let likes = [
        input_grad.then_some(x),
        Some(h0),
        Some(c0),
        Some(w_ih),
        Some(w_hh),
        Some(bias),
    ];
    let [dx, dh0, dc0, dw_ih, dw_hh, db] = <[_; 6]>::try_from(split_flat(&flat, &likes)?)
        .map_err(|_| Error::invalid("fused.lstm_layer", "expected six cotangents"))?;
    Ok(vec![dx, dw_ih, dw_hh, dh0, dc0, db])
}

impl LstmOp {
    fn op_name(self) -> &'static str {
        match self {
            LstmOp::Layer { .. } => "fused.lstm_layer",
            LstmOp::LayerVjp { .. } => "fused.lstm_layer_vjp",
        }
    }

    fn reverse(self) -> bool {
        match self {
            LstmOp::Layer { reverse, .. } | LstmOp::LayerVjp { reverse, .. } => reverse,
        }
    }

    /// The `[L, N, H]` planes of the layer's output: the activations' four (where kept), `h`, `c`.
    fn planes(self) -> usize {
        match self {
            LstmOp::Layer { activations, .. } => 2 + 4 * usize::from(activations),
            LstmOp::LayerVjp { .. } => 6,
        }
    }

    /// The expected input shapes for the sizes `d`.
    fn input_shapes(self, d: Dims) -> Vec<Vec<usize>> {
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
    fn dims(self, inputs: &[(DType, &[usize])]) -> Result<(DType, Dims)> {
        let bad = || {
            let shapes: Vec<_> = inputs.iter().map(|(d, s)| (*d, s.to_vec())).collect();
            Error::invalid(
                self.op_name(),
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
            (&[len, n, input], &[_, h]) => Dims { len, n, input, h },
            _ => return Err(bad()),
        };
        let dtype = *dtype;
        // Every size the op works out fits a usize (a zero-size input may have huge dimensions).
        let Dims { len, n, input, h } = sizes;
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

impl ExtensionOp for LstmOp {
    fn name(&self) -> &str {
        self.op_name()
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, d) = self.dims(inputs)?;
        let shape = match self {
            LstmOp::Layer { .. } => vec![self.planes(), d.len, d.n, d.h],
            LstmOp::LayerVjp { input_grad, .. } => vec![d.vjp_lengths(*input_grad).iter().sum()],
        };
        Ok(OutputSpec { dtype, shape })
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        let specs: Vec<_> = views.iter().map(|v| (v.data.dtype(), v.shape)).collect();
        let (_, dims) = self.dims(&specs)?;
        let data: Vec<&HostData> = views.iter().map(|v| v.data).collect();
        match data[0] {
            HostData::F32(_) => Ok(HostData::F32(kernel::run::<f32>(
                *self, &data, dims, alloc,
            )?)),
            HostData::F64(_) => Ok(HostData::F64(kernel::run::<f64>(
                *self, &data, dims, alloc,
            )?)),
            other => Err(Error::dtype(self.op_name(), other.dtype())),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
