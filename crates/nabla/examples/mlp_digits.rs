//! A multi-layer perceptron learns to read handwritten digits, with an explicit training loop.
//!
//! ```sh
//! cargo run --release -p nabla --example mlp_digits                  # the embedded 8x8 digits
//! cargo run --release -p nabla --example mlp_digits -- --data-dir /usr/share/datasets/fashion-mnist
//! cargo run --release -p nabla --example mlp_digits -- --epochs 5 --data-dir ~/mnist
//! ```
//!
//! By default it trains on the UCI digits that ship inside nabla (1,797 images of 8x8 pixels; 80% to
//! train, 20% to test), so it needs no download. `--data-dir DIR` trains on MNIST-format IDX files
//! instead (`train-images-idx3-ubyte[.gz]`, `train-labels-idx1-ubyte[.gz]`, `t10k-...`: MNIST or
//! Fashion-MNIST). Every step of the loop is spelled out: a `DataLoader` hands out shuffled batches,
//! the model computes scores, `cross_entropy` turns them into a loss, `backward` gives the gradients
//! and `Adam` updates the weights. After each epoch the model is scored on the test set. The
//! `cnn_digits` example reuses this file's data loading, training loop and evaluation.

use nabla::CompareOp;
use nabla::data::{DataLoader, Digits, Mnist, TensorDataset};
use nabla::nn::activation::{Flatten, ReLU};
use nabla::nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla::nn::optim::{Adam, AdamConfig, Optimizer};
use nabla::nn::{Forward, Linear, Sequential};
use nabla::prelude::*;
use std::time::Instant;

/// Command-line options: `--data-dir DIR` and `--epochs N`.
pub struct Args {
    /// A directory of MNIST-format IDX files, instead of the embedded digits.
    pub data_dir: Option<String>,
    /// Passes over the training set, when given.
    epochs: Option<usize>,
}

impl Args {
    /// The number of epochs: as given, else `digits` on the embedded set and `idx` on IDX files.
    pub fn epochs(&self, digits: usize, idx: usize) -> usize {
        let default = if self.data_dir.is_none() { digits } else { idx };
        self.epochs.unwrap_or(default)
    }
}

/// Reads the options of the example `name`.
pub fn parse_args(name: &'static str) -> Result<Args> {
    let usage = format!("usage: {name} [--data-dir DIR] [--epochs N]");
    let mut args = Args {
        data_dir: None,
        epochs: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next();
        match (flag.as_str(), value) {
            ("--help" | "-h", _) => {
                println!("{usage}");
                std::process::exit(0);
            }
            ("--data-dir", Some(dir)) => args.data_dir = Some(dir),
            ("--epochs", Some(n)) => {
                let n = n.parse().ok().filter(|&n: &usize| n > 0);
                args.epochs =
                    Some(n.ok_or_else(|| {
                        Error::invalid(name, "--epochs needs a positive integer")
                    })?);
            }
            _ => {
                return Err(Error::invalid(
                    name,
                    format!("bad argument {flag:?}; {usage}"),
                ));
            }
        }
    }
    Ok(args)
}

/// Training and test sets: the embedded digits (a seeded 80/20 split) or the IDX files in `dir`.
/// Items are `[image [1, H, W], label []]`.
pub fn load_data(
    dir: Option<&str>,
    cpu: &CpuBackend,
) -> Result<(TensorDataset<CpuBackend>, TensorDataset<CpuBackend>)> {
    match dir {
        None => Digits::load(cpu)?.train_test_split(0.2, 0),
        Some(dir) => Ok((
            Mnist::load(dir, true, cpu)?.into_dataset()?,
            Mnist::load(dir, false, cpu)?.into_dataset()?,
        )),
    }
}

/// The share of `data` that `model` labels correctly.
pub fn accuracy(model: &impl Forward<CpuBackend>, data: &TensorDataset<CpuBackend>) -> Result<f64> {
    let mut loader = DataLoader::new(data.clone(), 256)?;
    let (mut correct, mut total) = (0.0, 0usize);
    // No gradients are needed to score the model: `no_grad` skips recording the graph.
    no_grad(|| {
        for batch in &mut loader {
            let [images, labels] = <[CpuTensor; 2]>::try_from(batch?)
                .map_err(|_| Error::invalid("accuracy", "expected (image, label) batches"))?;
            let predicted = model.forward(&images)?.argmax(1, false)?;
            let hits = predicted
                .compare(CompareOp::Eq, &labels)?
                .cast(DType::F32)?;
            correct += f64::from(hits.sum_all()?.item::<f32>()?);
            total += labels.shape()[0];
        }
        Ok(correct / total as f64)
    })
}

/// Trains `model` on `train` for `epochs` epochs with Adam (learning rate `lr`), printing the mean
/// training loss and the test accuracy after each epoch; returns the final test accuracy.
pub fn fit<M: Forward<CpuBackend>>(
    model: &mut M,
    train: TensorDataset<CpuBackend>,
    test: &TensorDataset<CpuBackend>,
    epochs: usize,
    lr: f64,
) -> Result<f64> {
    println!(
        "{} parameters; {} training and {} test images of shape {:?}",
        model.num_parameters(),
        train.tensors()[0].shape()[0],
        test.tensors()[0].shape()[0],
        &train.tensors()[0].shape()[1..],
    );
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr,
            ..Default::default()
        },
    )?;
    // Shuffled batches of 64, in a new (seeded) order every epoch.
    let mut loader = DataLoader::new(train, 64)?.shuffle(true).seed(1);
    let start = Instant::now();
    let mut acc = 0.0;
    for epoch in 1..=epochs {
        model.train(); // training mode (matters for dropout and batch norm)
        let mut loss_sum = 0.0;
        let batches = loader.len();
        for batch in &mut loader {
            // A batch is `[images [B, 1, H, W], labels [B]]`.
            let batch = batch?;
            let scores = model.forward(&batch[0])?; // [B, 10]: one score per class
            let loss = cross_entropy(&scores, &batch[1], &CrossEntropyOptions::default())?;
            let grads = loss.backward()?; // the loss's gradient for every parameter
            opt.step(&grads)?; // one Adam update
            loss_sum += f64::from(loss.item::<f32>()?);
        }
        model.eval();
        acc = accuracy(model, test)?;
        println!(
            "epoch {epoch:2}: train loss {:.4}, test accuracy {:.2}% ({:.1} s)",
            loss_sum / batches as f64,
            100.0 * acc,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(acc)
}

/// Prints an error (a missing file, a bad argument) as one line and turns it into a failing exit code.
pub fn report(result: Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn main() -> std::process::ExitCode {
    report(run())
}

fn run() -> Result<()> {
    let args = parse_args("mlp_digits")?;
    let cpu = CpuBackend::new();
    let (train, test) = load_data(args.data_dir.as_deref(), &cpu)?;
    // Pixels per image (64 for the digits, 784 for MNIST) fix the first layer's width.
    let pixels: usize = train.tensors()[0].shape()[1..].iter().product();
    let mut rng = Generator::new(0); // every random choice is seeded: runs are repeatable
    let mut model = Sequential::new()
        .push(Flatten::default()) // [B, 1, H, W] -> [B, H * W]
        .push(Linear::new(pixels, 256, true, DType::F32, &mut rng, &cpu)?)
        .push(ReLU)
        .push(Linear::new(256, 128, true, DType::F32, &mut rng, &cpu)?)
        .push(ReLU)
        .push(Linear::new(128, 10, true, DType::F32, &mut rng, &cpu)?);
    // The embedded set is tiny, so it gets more passes than a 60,000-image MNIST directory.
    let epochs = args.epochs(30, 3);
    let acc = fit(&mut model, train, &test, epochs, 1e-3)?;
    println!("MLP: final test accuracy {:.2}%", 100.0 * acc);
    Ok(())
}
