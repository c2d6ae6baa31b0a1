//! A small convolutional network learns to read handwritten digits: about 98% of the embedded test
//! digits right after 20 short epochs.
//!
//! ```sh
//! cargo run --release -p nabla --example cnn_digits                  # the embedded 8x8 digits
//! cargo run --release -p nabla --example cnn_digits -- --data-dir /usr/share/datasets/fashion-mnist
//! cargo run --release -p nabla --example cnn_digits -- --epochs 2 --data-dir ~/mnist
//! ```
//!
//! The model is a struct of layers with `#[derive(Module)]`, which finds its parameters (named
//! `conv1.weight`, `conv1.bias`, ...) for the optimizer and for checkpoints; its `forward` says how the
//! layers connect. The data loading, the training loop (`DataLoader`, `cross_entropy`, `backward`,
//! `Adam`) and the evaluation are those of the `mlp_digits` example, shared from its file.

// Reuses `parse_args`, `load_data`, `fit` and `report` from the MLP example (its own `main` goes unused here).
#[allow(dead_code)]
#[path = "mlp_digits.rs"]
mod mlp_digits;

use nabla::nn::{Conv2d, ConvOptions, Forward, Linear, MaxPool2d, Module};
use nabla::prelude::*;

/// conv3x3(1->32)-relu-maxpool2-conv3x3(32->64)-relu-maxpool2-flatten-linear(->128)-relu-linear(->10).
/// The convolutions pad by one pixel, so only the poolings shrink the image: 8x8 -> 4x4 -> 2x2 for the
/// digits, 28x28 -> 14x14 -> 7x7 for MNIST.
#[derive(Module)]
struct Cnn<B: Backend> {
    conv1: Conv2d<B>,
    conv2: Conv2d<B>,
    fc1: Linear<B>,
    fc2: Linear<B>,
    /// 2x2 max pooling (no parameters).
    pool: MaxPool2d,
}

impl<B: Backend> Cnn<B> {
    /// A network for images of `height` x `width` pixels (each divisible by 4).
    fn new(height: usize, width: usize, rng: &mut Generator, backend: &B) -> Result<Self> {
        let same = ConvOptions {
            padding: (1, 1),
            ..ConvOptions::default()
        };
        let f32 = DType::F32;
        Ok(Cnn {
            conv1: Conv2d::new(1, 32, (3, 3), same, f32, rng, backend)?,
            conv2: Conv2d::new(32, 64, (3, 3), same, f32, rng, backend)?,
            fc1: Linear::new(
                64 * (height / 4) * (width / 4),
                128,
                true,
                f32,
                rng,
                backend,
            )?,
            fc2: Linear::new(128, 10, true, f32, rng, backend)?,
            pool: MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false)?,
        })
    }
}

impl<B: Backend> Forward<B> for Cnn<B> {
    /// `[N, 1, H, W]` images to `[N, 10]` class scores.
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let x = self.pool.forward(&self.conv1.forward(x)?.relu()?)?; // [N, 32, H/2, W/2]
        let x = self.pool.forward(&self.conv2.forward(&x)?.relu()?)?; // [N, 64, H/4, W/4]
        let x = self.fc1.forward(&x.flatten(1, -1)?)?.relu()?; // [N, 128]
        self.fc2.forward(&x)
    }
}

fn main() -> std::process::ExitCode {
    mlp_digits::report(run())
}

fn run() -> Result<()> {
    let args = mlp_digits::parse_args("cnn_digits")?;
    let cpu = CpuBackend::new();
    let (train, test) = mlp_digits::load_data(args.data_dir.as_deref(), &cpu)?;
    let (height, width) = {
        let shape = train.tensors()[0].shape(); // [N, 1, H, W]
        (shape[2], shape[3])
    };
    if height % 4 != 0 || width % 4 != 0 {
        return Err(Error::invalid(
            "cnn_digits",
            format!("images of {height}x{width} pixels: both sides must be divisible by 4"),
        ));
    }
    let mut model = Cnn::new(height, width, &mut Generator::new(0), &cpu)?;
    let epochs = args.epochs(20, 2);
    let acc = mlp_digits::fit(&mut model, train, &test, epochs, 2e-3)?;
    println!("CNN: final test accuracy {:.2}%", 100.0 * acc);
    Ok(())
}
