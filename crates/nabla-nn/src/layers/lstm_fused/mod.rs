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
//! tensor ops), which has the same values up to rounding. The fused op ([`LstmOp`]) runs for `f32`
//! and `f64` on a backend with fast-path kernels ([`Backend::fast_path_kernels`]); elsewhere (other
//! backends, traced programs) the layer is the composite.

#[cfg(test)]
mod tests;

use crate::layers::fused::{composite_jvp, composite_vjp_if_tracked, recorded_op, split_flat};
use nabla_core::fast_path::LstmOp;
pub(crate) use nabla_core::fast_path::time_of_step;
use nabla_core::{Backend, DType, Error, FastPathOp, Result};
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
    let one_float_dtype = matches!(x.dtype(), DType::F32 | DType::F64)
        && dtypes.into_iter().all(|t| t.dtype() == x.dtype());
    let kernels = x.backend().fast_path_kernels().filter(|_| one_float_dtype);
    let Some(kernels) = kernels else {
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
    };
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
    let op = FastPathOp {
        op: LstmOp::Layer {
            reverse,
            activations,
        },
        kernels,
    };
    let planes = op.op.planes() as isize;
    let out = Tensor::apply_family_op::<FusedLstm>(Arc::new(op), &inputs)?;
    let outputs = out.select_index(0, planes - 2)?;
    let cells = out.select_index(0, planes - 1)?;
    Ok(LayerStates {
        h_n: outputs.select_index(0, last as isize)?,
        c_n: cells.select_index(0, last as isize)?,
        outputs,
    })
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

/// The family binding the layer's rules.
struct FusedLstm;

impl ExtensionFamily for FusedLstm {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse("fused.lstm_layer", layer_reverse)
            .forward("fused.lstm_layer", |args, t| {
                let op = layer_of(args)?.op;
                composite_jvp(args, t, |v| composite_layer(v, op))
            })
    }
}

/// The recorded layer op (a [`LstmOp::Layer`]).
fn layer_of<B: Backend>(args: &RuleArgs<'_, B>) -> Result<FastPathOp<LstmOp>> {
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
    let recorded = layer_of(args)?;
    let layer = recorded.op;
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
    let op = Arc::new(recorded.with(LstmOp::LayerVjp {
        reverse: layer.reverse(),
        input_grad,
    }));
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
