//! Per-sample gradients: the gradient of each example's loss, not just of the batch mean.
//!
//! ```sh
//! cargo run --release -p nabla --example per_sample_grads
//! ```
//!
//! Differential privacy (clip each example's gradient), influence estimates and gradient-noise
//! statistics need one gradient per example. This example computes them for a small two-layer network
//! in two ways and checks both against the ordinary batch gradient, which is their mean:
//!
//! 1. functionally: the parameters are one flat vector `theta`, `f(theta)` returns the `B` per-example
//!    losses, and `jacrev(f)(theta)` is the `[B, P]` Jacobian, whose row `i` is example `i`'s gradient;
//! 2. with modules: the same network as `nn::Linear` layers, one `backward` per example.

use nabla::nn::loss::{CrossEntropyOptions, Reduction, cross_entropy};
use nabla::nn::{Forward, Linear, Module};
use nabla::prelude::*;

/// The gradients of a backward pass on the CPU.
type Gradients = nabla::Gradients<CpuBackend>;

const BATCH: usize = 8;
const INPUTS: usize = 4;
const HIDDEN: usize = 16;
const CLASSES: usize = 3;

/// The two-layer network: `Linear(INPUTS, HIDDEN)`, tanh, `Linear(HIDDEN, CLASSES)`.
struct Net {
    fc1: Linear<CpuBackend>,
    fc2: Linear<CpuBackend>,
}

impl Net {
    fn new(cpu: &CpuBackend) -> Result<Net> {
        let mut rng = Generator::new(0);
        Ok(Net {
            fc1: Linear::new(INPUTS, HIDDEN, true, DType::F64, &mut rng, cpu)?,
            fc2: Linear::new(HIDDEN, CLASSES, true, DType::F64, &mut rng, cpu)?,
        })
    }

    /// Every parameter, in the order `fc1.weight, fc1.bias, fc2.weight, fc2.bias`.
    fn parameters(&self) -> Vec<nabla::nn::Param<CpuBackend>> {
        [self.fc1.parameters(), self.fc2.parameters()].concat()
    }

    /// One loss per example.
    fn losses(&self, x: &CpuTensor, labels: &CpuTensor) -> Result<CpuTensor> {
        per_example_loss(&self.fc2.forward(&self.fc1.forward(x)?.tanh()?)?, labels)
    }

    /// The gradient of every parameter in `grads`, flattened and joined like `theta`: `[P]`.
    fn flat_grad(&self, grads: &Gradients) -> Result<CpuTensor> {
        join(self.parameters().iter().map(|p| {
            p.grad(grads)
                .ok_or_else(|| Error::invalid("per_sample_grads", "a parameter got no gradient"))
        }))
    }
}

/// Cross-entropy with `reduction: None`: one loss per example.
fn per_example_loss(scores: &CpuTensor, labels: &CpuTensor) -> Result<CpuTensor> {
    let opts = CrossEntropyOptions {
        reduction: Reduction::None,
        ..Default::default()
    };
    cross_entropy(scores, labels, &opts)
}

/// Flattens tensors and joins them into one vector.
fn join(tensors: impl Iterator<Item = Result<CpuTensor>>) -> Result<CpuTensor> {
    let flat = tensors
        .map(|t| t?.flatten_all())
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&flat.iter().collect::<Vec<_>>(), 0)
}

/// The per-example losses as a function of the flat vector `theta`: the pieces of `theta` are
/// reshaped into the layers' weights, and the same network is evaluated with them.
fn losses_of_theta(
    theta: &CpuTensor,
    net: &Net,
    x: &CpuTensor,
    labels: &CpuTensor,
) -> Result<CpuTensor> {
    let mut offset = 0;
    let mut take = |shape: &[usize]| -> Result<CpuTensor> {
        let len: usize = shape.iter().product();
        let piece = theta.narrow(0, offset, len)?.reshape(shape.to_vec())?;
        offset += len;
        Ok(piece)
    };
    let shapes: Vec<Vec<usize>> = net.parameters().iter().map(|p| p.shape()).collect();
    let (w1, b1, w2, b2) = (
        take(&shapes[0])?,
        take(&shapes[1])?,
        take(&shapes[2])?,
        take(&shapes[3])?,
    );
    let hidden = x.matmul(&w1.t()?)?.add(&b1)?.tanh()?;
    per_example_loss(&hidden.matmul(&w2.t()?)?.add(&b2)?, labels)
}

/// Largest absolute difference between two tensors of the same shape.
fn max_diff(a: &CpuTensor, b: &CpuTensor) -> Result<f64> {
    a.sub(b)?.abs()?.max_all()?.item::<f64>()
}

fn main() -> Result<()> {
    let cpu = CpuBackend::new();
    let net = Net::new(&cpu)?;
    let mut rng = Generator::new(1);
    let x = Tensor::randn([BATCH, INPUTS], DType::F64, &mut rng, &cpu)?;
    let labels = Tensor::from_vec(
        (0..BATCH as i64).map(|i| i % CLASSES as i64).collect(),
        [BATCH],
        &cpu,
    )?;

    // The ordinary batch gradient of the mean loss, flattened like theta: [P].
    let batch_grad = net.flat_grad(&net.losses(&x, &labels)?.mean_all()?.backward()?)?;
    let p = batch_grad.shape()[0];

    // 1. The parameters' values as one flat vector theta [P], and the Jacobian of the per-example
    //    losses with respect to it: [BATCH, P].
    let theta = join(net.parameters().iter().map(|p| Ok(p.data())))?;
    let per_sample = jacrev(|t: &CpuTensor| losses_of_theta(t, &net, &x, &labels))(&theta)?;
    println!(
        "per-sample gradients by jacrev: shape {:?} ({BATCH} examples x {p} parameters)",
        per_sample.shape()
    );
    let mean_gap = max_diff(&per_sample.mean(&[0], false)?, &batch_grad)?;
    println!("  mean over the batch vs the batch gradient: max difference {mean_gap:.1e}");

    // 2. One backward pass per example through the modules.
    let mut rows = Vec::with_capacity(BATCH);
    for i in 0..BATCH {
        let xi = x.narrow(0, i, 1)?; // [1, INPUTS]: a batch of one
        let li = labels.narrow(0, i, 1)?;
        rows.push(net.flat_grad(&net.losses(&xi, &li)?.sum_all()?.backward()?)?);
    }
    let looped = Tensor::stack(&rows.iter().collect::<Vec<_>>(), 0)?;
    println!(
        "  vs one backward per example: max difference {:.1e}",
        max_diff(&per_sample, &looped)?
    );

    // What per-sample gradients are for: their norms differ a lot from example to example.
    let norms = per_sample
        .square()?
        .sum(&[1], false)?
        .sqrt()?
        .to_vec::<f64>()?;
    let batch_norm = batch_grad.square()?.sum_all()?.sqrt()?.item::<f64>()?;
    println!("per-example gradient norms: {norms:.3?}");
    println!("norm of the batch gradient: {batch_norm:.3} (at most their mean)");
    let tolerance = 1e-12;
    if mean_gap > tolerance || max_diff(&per_sample, &looped)? > tolerance {
        return Err(Error::invalid(
            "per_sample_grads",
            format!("per-sample gradients disagree beyond {tolerance:e}"),
        ));
    }
    println!("both methods agree with the batch gradient to within {tolerance:e}");
    Ok(())
}
