//! Recurrent layers: Elman RNN (tanh or ReLU), LSTM and GRU, multi-layer and bidirectional, with
//! PyTorch's parameter names, layouts, gate orders and initialisation.

use crate::init;
use crate::layers::dropout::Dropout;
use crate::layers::lstm_fused::{LayerWeights, lstm_layer, time_of_step};
use crate::module::{Forward, Module};
use crate::param::Param;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_tensor::Tensor;

/// The nonlinearity of an Elman [`RNN`] (PyTorch's `nonlinearity="tanh"` or `"relu"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RnnNonlinearity {
    /// `tanh` (PyTorch's default).
    #[default]
    Tanh,
    /// `relu`.
    Relu,
}

/// The settings shared by [`RNN`], [`LSTM`] and [`GRU`], with PyTorch's argument names; build it with
/// [`RnnConfig::new`] (PyTorch's defaults) and change fields with struct update syntax.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RnnConfig {
    /// Features of each input step.
    pub input_size: usize,
    /// Features of the hidden state.
    pub hidden_size: usize,
    /// Stacked recurrent layers (default 1).
    pub num_layers: usize,
    /// Whether the layers have the biases `b_ih` and `b_hh` (default true).
    pub bias: bool,
    /// Input and output are `[N, L, *]` instead of `[L, N, *]` (default false; states keep
    /// `[D * num_layers, N, H]`).
    pub batch_first: bool,
    /// Dropout on the outputs of every layer but the last, in training only (default 0).
    pub dropout: f64,
    /// Runs every layer in both directions and concatenates the outputs (default false).
    pub bidirectional: bool,
}

impl RnnConfig {
    /// PyTorch's defaults for the given sizes: one layer, biases, sequence first, no dropout, one
    /// direction.
    pub fn new(input_size: usize, hidden_size: usize) -> Self {
        RnnConfig {
            input_size,
            hidden_size,
            num_layers: 1,
            bias: true,
            batch_first: false,
            dropout: 0.0,
            bidirectional: false,
        }
    }

    fn directions(&self) -> usize {
        if self.bidirectional { 2 } else { 1 }
    }
}

/// The recurrence computed at each step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    Rnn(RnnNonlinearity),
    Lstm,
    Gru,
}

impl Cell {
    /// Gates stacked in the weights: `W_ih` is `[gates * hidden, input]`.
    fn gates(self) -> usize {
        match self {
            Cell::Rnn(_) => 1,
            Cell::Lstm => 4,
            Cell::Gru => 3,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Cell::Rnn(_) => "RNN",
            Cell::Lstm => "LSTM",
            Cell::Gru => "GRU",
        }
    }
}

/// The weights of one layer in one direction, named with `suffix` (`l0`, `l0_reverse`, ...).
#[derive(Debug, Clone)]
struct DirectionWeights<B: Backend> {
    suffix: String,
    weight_ih: Param<B>,
    weight_hh: Param<B>,
    bias_ih: Option<Param<B>>,
    bias_hh: Option<Param<B>>,
}

/// The engine shared by the three recurrent layers.
struct RnnCore<B: Backend> {
    cell: Cell,
    config: RnnConfig,
    /// Layer-major, then direction: index `layer * D + direction`, as PyTorch's state layout.
    weights: Vec<DirectionWeights<B>>,
    /// Between layers; its training flag is the layer's.
    dropout: Dropout,
}

impl<B: Backend> RnnCore<B> {
    fn new(
        cell: Cell,
        config: RnnConfig,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let op = cell.name();
        if config.input_size == 0 || config.hidden_size == 0 || config.num_layers == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "input_size, hidden_size and num_layers must be positive, got {}, {} and {}",
                    config.input_size, config.hidden_size, config.num_layers
                ),
            ));
        }
        let dropout = Dropout::new(config.dropout, rng)?;
        let (h, g) = (config.hidden_size, cell.gates());
        let k = 1.0 / (h as f64).sqrt();
        let mut draw = |shape: Vec<usize>| -> Result<Param<B>> {
            Param::new(init::uniform(shape, -k, k, dtype, rng, backend)?)
        };
        let mut weights = Vec::new();
        for layer in 0..config.num_layers {
            let input = if layer == 0 {
                config.input_size
            } else {
                h * config.directions()
            };
            for direction in 0..config.directions() {
                let reverse = if direction == 1 { "_reverse" } else { "" };
                weights.push(DirectionWeights {
                    suffix: format!("l{layer}{reverse}"),
                    weight_ih: draw(vec![g * h, input])?,
                    weight_hh: draw(vec![g * h, h])?,
                    bias_ih: config.bias.then(|| draw(vec![g * h])).transpose()?,
                    bias_hh: config.bias.then(|| draw(vec![g * h])).transpose()?,
                });
            }
        }
        Ok(RnnCore {
            cell,
            config,
            weights,
            dropout,
        })
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        for w in &self.weights {
            let s = &w.suffix;
            visitor(
                &crate::join_name(prefix, &format!("weight_ih_{s}")),
                &w.weight_ih,
            );
            visitor(
                &crate::join_name(prefix, &format!("weight_hh_{s}")),
                &w.weight_hh,
            );
            if let Some(b) = &w.bias_ih {
                visitor(&crate::join_name(prefix, &format!("bias_ih_{s}")), b);
            }
            if let Some(b) = &w.bias_hh {
                visitor(&crate::join_name(prefix, &format!("bias_hh_{s}")), b);
            }
        }
    }

    /// Checks a state against `[D * num_layers, N, H]` (`[D * num_layers, H]` unbatched).
    fn check_state(&self, what: &str, state: &Tensor<B>, batch: Option<usize>) -> Result<()> {
        let layers = self.config.directions() * self.config.num_layers;
        let expected: Vec<usize> = match batch {
            Some(n) => vec![layers, n, self.config.hidden_size],
            None => vec![layers, self.config.hidden_size],
        };
        if state.shape() != expected.as_slice() {
            return Err(
                Error::shapes(self.cell.name(), state.shape(), &expected).with_hint(format!(
                    "{what} must be [D * num_layers, N, hidden_size] = {expected:?} \
                     (without N for an unbatched input)"
                )),
            );
        }
        Ok(())
    }

    /// Runs a cell with a single state (RNN, GRU) from `h_0`: `(output, h_n)`.
    fn run_hidden(
        &self,
        input: &Tensor<B>,
        h_0: Option<&Tensor<B>>,
    ) -> Result<(Tensor<B>, Tensor<B>)> {
        let (out, mut states) = self.run(input, h_0.as_slice())?;
        Ok((out, states.remove(0)))
    }

    /// Runs the layers over `input` with initial states `states` (one for RNN/GRU, `(h, c)` for
    /// LSTM). Returns the output and the final states, in the caller's layout.
    fn run(&self, input: &Tensor<B>, states: &[&Tensor<B>]) -> Result<(Tensor<B>, Vec<Tensor<B>>)> {
        let op = self.cell.name();
        let c = &self.config;
        let batched = match input.rank() {
            3 => true,
            2 => false,
            _ => {
                return Err(Error::invalid(
                    op,
                    format!(
                        "expected a 3-D input ({}) or a 2-D unbatched input [L, input_size], \
                         got shape {:?}",
                        if c.batch_first {
                            "[N, L, input_size]"
                        } else {
                            "[L, N, input_size]"
                        },
                        input.shape()
                    ),
                ));
            }
        };
        if input.shape()[input.rank() - 1] != c.input_size {
            return Err(Error::invalid(
                op,
                format!(
                    "the input's last dimension must be input_size = {}, got shape {:?}",
                    c.input_size,
                    input.shape()
                ),
            ));
        }
        // Internally sequence first and batched: [L, N, input_size].
        let x = match (batched, c.batch_first) {
            (false, _) => input.unsqueeze(1)?,
            (true, true) => input.transpose(0, 1)?,
            (true, false) => input.clone(),
        };
        let (len, batch) = (x.shape()[0], x.shape()[1]);
        if len == 0 {
            return Err(Error::invalid(
                op,
                format!("the sequence is empty (input shape {:?})", input.shape()),
            ));
        }
        let d = c.directions();
        let mut initial = Vec::new();
        for (i, s) in states.iter().enumerate() {
            let what = if i == 0 { "h_0" } else { "c_0" };
            self.check_state(what, s, batched.then_some(batch))?;
            initial.push(if batched {
                (*s).clone()
            } else {
                s.unsqueeze(1)?
            });
        }
        let n_states = if self.cell == Cell::Lstm { 2 } else { 1 };
        if initial.is_empty() {
            let zeros = Tensor::zeros(
                [d * c.num_layers, batch, c.hidden_size],
                x.dtype(),
                x.backend(),
            )?;
            initial = vec![zeros; n_states];
        }

        let mut layer_input = x;
        let mut finals: Vec<Vec<Tensor<B>>> = vec![Vec::new(); n_states];
        for layer in 0..c.num_layers {
            let mut outputs = Vec::with_capacity(d);
            for direction in 0..d {
                let index = layer * d + direction;
                let start: Vec<Tensor<B>> = initial
                    .iter()
                    .map(|s| s.select_index(0, index as isize))
                    .collect::<Result<_>>()?;
                let (out, last) =
                    self.run_direction(&self.weights[index], &layer_input, start, direction == 1)?;
                outputs.push(out);
                for (f, l) in finals.iter_mut().zip(last) {
                    f.push(l);
                }
            }
            // One direction's output is the layer's as it is; two are joined feature-wise.
            layer_input = match outputs.as_slice() {
                [one] => one.clone(),
                both => Tensor::cat(&both.iter().collect::<Vec<_>>(), -1)?,
            };
            if layer + 1 < c.num_layers {
                layer_input = self.dropout.forward(&layer_input)?;
            }
        }
        let mut output = layer_input;
        let mut final_states = Vec::with_capacity(n_states);
        for f in &finals {
            let refs: Vec<&Tensor<B>> = f.iter().collect();
            let s = Tensor::stack(&refs, 0)?;
            final_states.push(if batched { s } else { s.squeeze(1)? });
        }
        output = match (batched, c.batch_first) {
            (false, _) => output.squeeze(1)?,
            (true, true) => output.transpose(0, 1)?,
            (true, false) => output,
        };
        Ok((output, final_states))
    }

    /// One layer in one direction over `x` (`[L, N, in]`): the outputs `[L, N, H]` in time order and
    /// the final states.
    fn run_direction(
        &self,
        w: &DirectionWeights<B>,
        x: &Tensor<B>,
        state: Vec<Tensor<B>>,
        reverse: bool,
    ) -> Result<(Tensor<B>, Vec<Tensor<B>>)> {
        // Where the cell only adds the two projections (RNN, LSTM), the two biases are summed once
        // instead of being added at every step; GRU's candidate scales its hidden part, bias
        // included.
        let biases = (
            w.bias_ih.as_ref().map(Param::value),
            w.bias_hh.as_ref().map(Param::value),
        );
        let (input_bias, b_hh) = match (self.cell, biases) {
            (Cell::Gru, unfolded) => unfolded,
            (Cell::Rnn(_) | Cell::Lstm, (Some(b_ih), Some(b_hh))) => (Some(b_ih.add(&b_hh)?), None),
            (Cell::Rnn(_) | Cell::Lstm, (b_ih, b_hh)) => (b_ih.or(b_hh), None),
        };
        let (w_ih, w_hh) = (w.weight_ih.value(), w.weight_hh.value());
        let b_hh = b_hh.as_ref();
        // The other cells take the input projection of every step at once, `[L, N, gates * H]`,
        // with the input bias.
        let projected = || -> Result<Tensor<B>> {
            let xw = x.matmul(&w_ih.t()?)?;
            match &input_bias {
                Some(b) => xw.add(b),
                None => Ok(xw),
            }
        };
        match self.cell {
            // The whole layer is one fused op on the CPU.
            Cell::Lstm => {
                let weights = LayerWeights {
                    w_ih: &w_ih,
                    w_hh: &w_hh,
                    bias: input_bias.as_ref(),
                };
                let s = lstm_layer(x, &weights, &state[0], &state[1], reverse)?;
                Ok((s.outputs, vec![s.h_n, s.c_n]))
            }
            Cell::Rnn(RnnNonlinearity::Tanh) => recur(
                &projected()?,
                &w_hh,
                b_hh,
                &state[0],
                reverse,
                |gi, gh, _| gi.add(gh)?.tanh(),
            ),
            Cell::Rnn(RnnNonlinearity::Relu) => recur(
                &projected()?,
                &w_hh,
                b_hh,
                &state[0],
                reverse,
                |gi, gh, _| gi.add(gh)?.relu(),
            ),
            Cell::Gru => recur(&projected()?, &w_hh, b_hh, &state[0], reverse, gru_step),
        }
    }
}

/// Runs a single-state cell over the steps of `xw` (`[L, N, gates * H]`, the input part of every
/// step) from `h0`: `step(gi, gh, h)` gives the next state from the step's input part `gi`, its
/// hidden part `gh = h W_hhᵀ + b_hh` and the state. Returns the states `[L, N, H]` in time order
/// and the final one.
fn recur<B: Backend>(
    xw: &Tensor<B>,
    w_hh: &Tensor<B>,
    b_hh: Option<&Tensor<B>>,
    h0: &Tensor<B>,
    reverse: bool,
    step: impl Fn(&Tensor<B>, &Tensor<B>, &Tensor<B>) -> Result<Tensor<B>>,
) -> Result<(Tensor<B>, Vec<Tensor<B>>)> {
    // One transposed view for every step: the steps' contributions to W_hh's gradient then reach
    // that one view, where the reverse pass multiplies them out as one product of the stacked
    // hidden states and gate gradients, in W_hh's own layout.
    let w_hh_t = w_hh.t()?;
    let len = xw.shape()[0];
    let mut h = h0.clone();
    let mut outputs = vec![None; len];
    for s in 0..len {
        let t = time_of_step(s, len, reverse);
        let gi = xw.select_index(0, t as isize)?;
        let mut gh = h.matmul(&w_hh_t)?;
        if let Some(b) = b_hh {
            gh = gh.add(b)?;
        }
        h = step(&gi, &gh, &h)?;
        outputs[t] = Some(h.clone());
    }
    let outputs: Vec<Tensor<B>> = outputs.into_iter().flatten().collect();
    let refs: Vec<&Tensor<B>> = outputs.iter().collect();
    Ok((Tensor::stack(&refs, 0)?, vec![h]))
}

/// One GRU step from the input part `gi = x W_ihᵀ + b_ih` and the hidden part `gh = h W_hhᵀ + b_hh`
/// (both `[N, 3H]`, gate order r, z, n); the candidate applies r to the whole hidden part.
fn gru_step<B: Backend>(gi: &Tensor<B>, gh: &Tensor<B>, h: &Tensor<B>) -> Result<Tensor<B>> {
    let gi = gi.chunk(3, -1)?;
    let gh = gh.chunk(3, -1)?;
    let r = gi[0].add(&gh[0])?.sigmoid()?;
    let z = gi[1].add(&gh[1])?.sigmoid()?;
    let n = gi[2].add(r.mul(&gh[2])?)?.tanh()?;
    // h' = (1 - z) * n + z * h = n + z * (h - n).
    n.add(z.mul(h.sub(&n)?)?)
}

/// Implements `Module` (PyTorch's flat parameter names) and the accessors for a recurrent layer.
macro_rules! recurrent_layer {
    ($name:ident) => {
        impl<B: Backend> Module<B> for $name<B> {
            fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
                self.core.visit(prefix, visitor);
            }

            fn set_training(&mut self, training: bool) {
                Module::<B>::set_training(&mut self.core.dropout, training);
            }
        }

        impl<B: Backend> $name<B> {
            /// The layer's settings.
            pub fn config(&self) -> &RnnConfig {
                &self.core.config
            }

            /// The parameter `name` (`weight_ih_l0`, `bias_hh_l1_reverse`, ...), if the layer has it.
            pub fn param(&self, name: &str) -> Option<Param<B>> {
                let mut found = None;
                self.core.visit("", &mut |n, p| {
                    if n == name {
                        found = Some(p.clone());
                    }
                });
                found
            }
        }

        impl<B: Backend> std::fmt::Debug for $name<B> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("config", &self.core.config)
                    .field("training", &self.core.dropout.is_training())
                    .finish()
            }
        }
    };
}

/// An Elman RNN (PyTorch's `nn.RNN`): `h_t = act(x_t W_ihᵀ + b_ih + h_(t-1) W_hhᵀ + b_hh)` with
/// `act` tanh or ReLU. Parameters `weight_ih_l{k}` `[H, in]`, `weight_hh_l{k}` `[H, H]`,
/// `bias_ih_l{k}`, `bias_hh_l{k}` `[H]` (and `_reverse` copies when bidirectional), all initialised
/// `U(-1/√H, 1/√H)`. Starts in training mode (which only matters for `dropout`).
///
/// ```
/// use nabla_nn::{RNN, RnnConfig, RnnNonlinearity};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let config = RnnConfig { num_layers: 2, ..RnnConfig::new(3, 5) };
/// let rnn = RNN::new(config, RnnNonlinearity::Tanh, DType::F32, &mut Generator::new(0), &cpu)?;
/// let (out, h_n) = rnn.forward(&Tensor::zeros([7, 2, 3], DType::F32, &cpu)?, None)?;
/// assert_eq!((out.shape(), h_n.shape()), (&[7, 2, 5][..], &[2, 2, 5][..]));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct RNN<B: Backend> {
    core: RnnCore<B>,
}

impl<B: Backend> RNN<B> {
    /// An RNN with PyTorch's initialisation.
    pub fn new(
        config: RnnConfig,
        nonlinearity: RnnNonlinearity,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let core = RnnCore::new(Cell::Rnn(nonlinearity), config, dtype, rng, backend)?;
        Ok(RNN { core })
    }

    /// Runs over `input` (`[L, N, input_size]`, `[N, L, input_size]` when `batch_first`, or
    /// unbatched `[L, input_size]`) from `h_0` (`[D * num_layers, N, H]`; zeros when `None`).
    /// Returns `(output, h_n)`: `output` holds the last layer's hidden states (`[L, N, D * H]` in the
    /// input's layout) and `h_n` every layer's final state.
    pub fn forward(
        &self,
        input: &Tensor<B>,
        h_0: Option<&Tensor<B>>,
    ) -> Result<(Tensor<B>, Tensor<B>)> {
        self.core.run_hidden(input, h_0)
    }
}

/// A gated recurrent unit (PyTorch's `nn.GRU`), gates in PyTorch's order `r, z, n`:
/// `r = σ(W_ir x + b_ir + W_hr h + b_hr)`, `z = σ(W_iz x + b_iz + W_hz h + b_hz)`,
/// `n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`, `h' = (1 - z) * n + z * h`. Weights are
/// `[3H, in]` and `[3H, H]` with the gates stacked; names and initialisation as [`RNN`].
///
/// ```
/// use nabla_nn::{GRU, RnnConfig};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let config = RnnConfig { bidirectional: true, batch_first: true, ..RnnConfig::new(3, 4) };
/// let gru = GRU::new(config, DType::F32, &mut Generator::new(0), &cpu)?;
/// let (out, h_n) = gru.forward(&Tensor::zeros([2, 6, 3], DType::F32, &cpu)?, None)?;
/// assert_eq!((out.shape(), h_n.shape()), (&[2, 6, 8][..], &[2, 2, 4][..]));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct GRU<B: Backend> {
    core: RnnCore<B>,
}

impl<B: Backend> GRU<B> {
    /// A GRU with PyTorch's initialisation.
    pub fn new(config: RnnConfig, dtype: DType, rng: &mut Generator, backend: &B) -> Result<Self> {
        let core = RnnCore::new(Cell::Gru, config, dtype, rng, backend)?;
        Ok(GRU { core })
    }

    /// Runs over `input` from `h_0`; shapes and result as [`RNN::forward`].
    pub fn forward(
        &self,
        input: &Tensor<B>,
        h_0: Option<&Tensor<B>>,
    ) -> Result<(Tensor<B>, Tensor<B>)> {
        self.core.run_hidden(input, h_0)
    }
}

/// A long short-term memory layer (PyTorch's `nn.LSTM`), gates in PyTorch's order `i, f, g, o`:
/// `c' = σ(f) * c + σ(i) * tanh(g)`, `h' = σ(o) * tanh(c')`. Weights are `[4H, in]` and `[4H, H]`
/// with the gates stacked; names and initialisation as [`RNN`]. (`proj_size` is not supported.)
///
/// ```
/// use nabla_nn::{LSTM, RnnConfig};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let lstm = LSTM::new(RnnConfig::new(3, 4), DType::F32, &mut Generator::new(0), &cpu)?;
/// let (out, (h_n, c_n)) = lstm.forward(&Tensor::zeros([5, 3], DType::F32, &cpu)?, None)?;
/// assert_eq!((out.shape(), h_n.shape(), c_n.shape()), (&[5, 4][..], &[1, 4][..], &[1, 4][..]));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct LSTM<B: Backend> {
    core: RnnCore<B>,
}

impl<B: Backend> LSTM<B> {
    /// An LSTM with PyTorch's initialisation.
    pub fn new(config: RnnConfig, dtype: DType, rng: &mut Generator, backend: &B) -> Result<Self> {
        let core = RnnCore::new(Cell::Lstm, config, dtype, rng, backend)?;
        Ok(LSTM { core })
    }

    /// Runs over `input` from `(h_0, c_0)` (both `[D * num_layers, N, H]`; zeros when `None`).
    /// Returns `(output, (h_n, c_n))`; shapes as [`RNN::forward`].
    #[allow(clippy::type_complexity)]
    pub fn forward(
        &self,
        input: &Tensor<B>,
        state: Option<(&Tensor<B>, &Tensor<B>)>,
    ) -> Result<(Tensor<B>, (Tensor<B>, Tensor<B>))> {
        let initial: Vec<&Tensor<B>> = state.map(|(h, c)| vec![h, c]).unwrap_or_default();
        let (out, states) = self.core.run(input, &initial)?;
        let mut states = states.into_iter();
        match (states.next(), states.next()) {
            (Some(h), Some(c)) => Ok((out, (h, c))),
            _ => Err(Error::invalid("LSTM", "the cell did not return (h, c)")),
        }
    }
}

recurrent_layer!(RNN);
recurrent_layer!(GRU);
recurrent_layer!(LSTM);
