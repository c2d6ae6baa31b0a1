//! An LSTM that learns to continue noisy sine waves.
//!
//! ```sh
//! cargo run --release -p nabla --example lstm_sequence
//! ```
//!
//! What it shows: `nn::LSTM` (batch first) with a `Linear` read-out trained by `Adam` (cosine
//! learning-rate decay) on `mse_loss` to predict the next value at every step of sine waves of
//! random amplitude, frequency and phase with Gaussian noise; the training loss going down; the
//! one-step test error against the "repeat the last value" baseline and the noise floor; and a
//! 20-step forecast that feeds the model's own predictions back through the carried `(h, c)` state,
//! against the clean signal. Runs in well under a minute on two cores.

use nabla::nn::loss::{self, Reduction};
use nabla::nn::optim::{Adam, AdamConfig, Optimizer};
use nabla::nn::{Forward, LSTM, Linear, Module, RnnConfig};
use nabla::prelude::*;
use std::time::Instant;

/// Observed steps per sequence (the model predicts steps 1..=LEN from steps 0..LEN).
const LEN: usize = 48;
/// Steps forecast after the observed ones.
const HORIZON: usize = 20;
/// Standard deviation of the observation noise.
const NOISE: f64 = 0.05;
/// Hidden units of the LSTM.
const HIDDEN: usize = 32;
/// Sequences per training step.
const BATCH: usize = 32;
/// Training steps.
const STEPS: usize = 600;
/// Peak learning rate, decayed to zero along a cosine.
const LR: f64 = 1e-2;
/// Leading steps left out of the one-step test error (the model has not seen enough of the wave).
const WARMUP: usize = 12;

/// A uniform draw from `[lo, hi)`.
fn uniform(rng: &mut Generator, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.next_key(1).uniform_f64(0)
}

/// A batch of waves: the noisy observations `[n, LEN + 1 + HORIZON]` and the clean signal, row-major.
fn waves(n: usize, rng: &mut Generator) -> (Vec<f32>, Vec<f32>) {
    let total = LEN + 1 + HORIZON;
    let (mut noisy, mut clean) = (Vec::with_capacity(n * total), Vec::with_capacity(n * total));
    for _ in 0..n {
        let amplitude = uniform(rng, 0.5, 1.0);
        let omega = std::f64::consts::TAU * uniform(rng, 0.02, 0.08);
        let phase = uniform(rng, 0.0, std::f64::consts::TAU);
        for t in 0..total {
            let s = amplitude * (omega * t as f64 + phase).sin();
            clean.push(s as f32);
            noisy.push((s + NOISE * rng.next_key(1).normal_f64(0)) as f32);
        }
    }
    (noisy, clean)
}

/// Columns `from..to` of the `[n, LEN + 1 + HORIZON]` rows in `values`, as `[n, to - from, 1]`.
fn columns(
    values: &[f32],
    n: usize,
    from: usize,
    to: usize,
    cpu: &CpuBackend,
) -> Result<CpuTensor> {
    Tensor::from_vec(values.to_vec(), [n, LEN + 1 + HORIZON, 1], cpu)?.narrow(1, from, to - from)
}

/// The `(h, c)` state of an LSTM, each `[layers, N, hidden]`.
type State<B> = (Tensor<B>, Tensor<B>);

/// An LSTM and a linear read-out of every step's hidden state.
#[derive(Module)]
struct Forecaster<B: Backend> {
    lstm: LSTM<B>,
    head: Linear<B>,
}

impl<B: Backend> Forecaster<B> {
    /// Predictions `[N, L, 1]` of the next value after each step of `x` (`[N, L, 1]`), starting
    /// from `state` (zeros when `None`), with the final `(h, c)`.
    fn forward(
        &self,
        x: &Tensor<B>,
        state: Option<(&Tensor<B>, &Tensor<B>)>,
    ) -> Result<(Tensor<B>, State<B>)> {
        let (out, state) = self.lstm.forward(x, state)?;
        Ok((self.head.forward(&out)?, state))
    }
}

/// Mean squared difference over every element of two equal-length slices.
fn mse(a: &[f32], b: &[f32]) -> f64 {
    let sum: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
        .sum();
    sum / a.len() as f64
}

fn main() -> Result<()> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(7);
    let model = Forecaster {
        lstm: LSTM::new(
            RnnConfig {
                batch_first: true,
                ..RnnConfig::new(1, HIDDEN)
            },
            DType::F32,
            &mut rng,
            &cpu,
        )?,
        head: Linear::new(HIDDEN, 1, true, DType::F32, &mut rng, &cpu)?,
    };
    let config = AdamConfig {
        lr: LR,
        ..AdamConfig::default()
    };
    let mut opt = Adam::new(model.parameters(), config)?;
    println!(
        "LSTM({HIDDEN}) + Linear, {} parameters; {STEPS} steps of {BATCH} noisy sine waves of {LEN} steps",
        model.num_parameters()
    );

    let mut data_rng = Generator::new(1);
    let start = Instant::now();
    let mut recent = 0.0;
    for step in 1..=STEPS {
        let progress = (step - 1) as f64 / STEPS as f64;
        opt.set_lr(
            0,
            LR * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos()),
        );
        let (noisy, _) = waves(BATCH, &mut data_rng);
        let x = columns(&noisy, BATCH, 0, LEN, &cpu)?;
        let y = columns(&noisy, BATCH, 1, LEN + 1, &cpu)?;
        let loss = loss::mse_loss(&model.forward(&x, None)?.0, &y, Reduction::Mean)?;
        recent += loss.item::<f32>()? as f64;
        opt.step(&loss.backward()?)?;
        if step % 50 == 0 {
            println!(
                "step {step:>4}  train mse {:.5}  {:.1} s",
                recent / 50.0,
                start.elapsed().as_secs_f64()
            );
            recent = 0.0;
        }
    }

    // One-step predictions on fresh test waves, after the first WARMUP steps.
    let n = 256;
    let (noisy, clean) = waves(n, &mut Generator::new(2));
    let x = columns(&noisy, n, 0, LEN, &cpu)?;
    let (pred, (h, c)) = no_grad(|| model.forward(&x, None))?;
    let keep =
        |t: &CpuTensor| -> Result<Vec<f32>> { t.narrow(1, WARMUP, LEN - WARMUP)?.to_vec::<f32>() };
    let target = keep(&columns(&noisy, n, 1, LEN + 1, &cpu)?)?;
    let model_mse = mse(&keep(&pred)?, &target);
    let last_value_mse = mse(&keep(&x)?, &target);
    println!(
        "\none-step test mse over {n} new waves: model {model_mse:.5}, repeat-last-value baseline \
         {last_value_mse:.5}, noise floor {:.5}",
        NOISE * NOISE
    );

    // Forecast HORIZON steps, feeding each prediction back in, from the state after the LEN observed
    // steps; compared with the clean continuation.
    let (mut h, mut c) = (h, c);
    let mut next = pred.narrow(1, LEN - 1, 1)?;
    let mut forecast = Vec::with_capacity(HORIZON);
    no_grad(|| -> Result<()> {
        for _ in 0..HORIZON {
            forecast.push(next.clone());
            let (p, (h2, c2)) = model.forward(&next, Some((&h, &c)))?;
            (next, h, c) = (p, h2, c2);
        }
        Ok(())
    })?;
    let refs: Vec<&CpuTensor> = forecast.iter().collect();
    let forecast = Tensor::cat(&refs, 1)?.to_vec::<f32>()?;
    let truth = columns(&clean, n, LEN + 1, LEN + 1 + HORIZON, &cpu)?.to_vec::<f32>()?;
    let zeros = vec![0.0f32; truth.len()];
    println!(
        "{HORIZON}-step free-running forecast rmse: model {:.4}, predicting zero {:.4}",
        mse(&forecast, &truth).sqrt(),
        mse(&zeros, &truth).sqrt()
    );
    let show = |v: &[f32]| -> String {
        v[..HORIZON]
            .iter()
            .map(|x| format!("{x:6.2}"))
            .collect::<Vec<_>>()
            .join("")
    };
    println!("first wave, true  {}", show(&truth));
    println!("first wave, model {}", show(&forecast));
    println!("total {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}
