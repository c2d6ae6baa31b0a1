//! Gradients of a small CNN, a GPT and an LSTM on the CUDA backend agree with the CPU backend's to
//! `float32` rounding (the same weights: both backends draw the same streams for a seed), and
//! autocast's bf16 products run on the tensor cores within bf16 rounding of the CPU's.

mod common;

use nabla_core::{Backend, Conv2dParams, DType, Generator, Pool2dParams, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla_nn::{
    Embedding, Forward, LSTM, LayerNorm, Linear, Module, RnnConfig, TransformerEncoderLayer,
    TransformerLayerConfig, generate_square_subsequent_mask,
};
use nabla_tensor::Tensor;

const VOCAB: usize = 11;

/// Ids `[2, t]` and next-id targets `[2 * t]`.
fn batch<B: Backend>(t: usize, b: &B) -> Result<(Tensor<B>, Tensor<B>)> {
    let id = |i: usize, j: usize| ((7 * i + 3 * j) % VOCAB) as i64;
    let ids: Vec<i64> = (0..2).flat_map(|i| (0..t).map(move |j| id(i, j))).collect();
    let targets: Vec<i64> = (0..2)
        .flat_map(|i| (0..t).map(move |j| id(i, j + 1)))
        .collect();
    Ok((
        Tensor::from_vec(ids, [2, t], b)?,
        Tensor::from_vec(targets, [2 * t], b)?,
    ))
}

/// The loss and each named parameter's gradient, for a model built from seed 5 on `b`.
type Run = (f64, Vec<(String, Vec<f32>)>);

fn gradients<B: Backend>(loss: Tensor<B>, named: Vec<(String, nabla_nn::Param<B>)>) -> Result<Run> {
    let grads = loss.backward()?;
    let value = loss.item::<f32>()? as f64;
    let mut out = Vec::new();
    for (name, p) in named {
        let g = p
            .grad(&grads)
            .unwrap_or_else(|| panic!("no gradient for {name}"));
        out.push((name, g.to_vec::<f32>()?));
    }
    Ok((value, out))
}

fn gpt<B: Backend>(b: &B) -> Result<Run> {
    let rng = &mut Generator::new(5);
    let (d, t) = (16, 6);
    let config = TransformerLayerConfig {
        dim_feedforward: 32,
        dropout: 0.0,
        batch_first: true,
        norm_first: true,
        ..TransformerLayerConfig::new(d, 2)
    };
    let f32 = DType::F32;
    let tok = Embedding::new(VOCAB, d, None, f32, rng, b)?;
    let pos = Embedding::new(t, d, None, f32, rng, b)?;
    let layers = (0..2)
        .map(|_| TransformerEncoderLayer::new(config, f32, rng, b))
        .collect::<Result<Vec<_>>>()?;
    let norm = LayerNorm::new(vec![d], 1e-5, true, true, f32, b)?;
    let head = Linear::new(d, VOCAB, true, f32, rng, b)?;
    let (ids, targets) = batch(t, b)?;
    let positions = Tensor::arange(0.0, t as f64, 1.0, DType::I64, b)?;
    let mask = generate_square_subsequent_mask(t, f32, b)?;
    let mut x = tok.forward(&ids)?.add(&pos.forward(&positions)?)?;
    for layer in &layers {
        x = layer.forward(&x, Some(&mask), None, true)?;
    }
    let logits = head.forward(&norm.forward(&x)?)?.reshape([2 * t, VOCAB])?;
    let loss = cross_entropy(&logits, &targets, &CrossEntropyOptions::default())?;
    let mut named = tok.named_parameters();
    named.extend(pos.named_parameters());
    for (i, l) in layers.iter().enumerate() {
        named.extend(
            l.named_parameters()
                .into_iter()
                .map(|(n, p)| (format!("layers.{i}.{n}"), p)),
        );
    }
    named.extend(norm.named_parameters());
    named.extend(head.named_parameters());
    gradients(loss, named)
}

fn lstm<B: Backend>(b: &B) -> Result<Run> {
    let rng = &mut Generator::new(5);
    let t = 7;
    let config = RnnConfig {
        num_layers: 2,
        batch_first: true,
        ..RnnConfig::new(8, 12)
    };
    let embed = Embedding::new(VOCAB, 8, None, DType::F32, rng, b)?;
    let lstm = LSTM::new(config, DType::F32, rng, b)?;
    let head = Linear::new(12, VOCAB, true, DType::F32, rng, b)?;
    let (ids, targets) = batch(t, b)?;
    let (out, _) = lstm.forward(&embed.forward(&ids)?, None)?;
    let logits = head.forward(&out)?.reshape([2 * t, VOCAB])?;
    let loss = cross_entropy(&logits, &targets, &CrossEntropyOptions::default())?;
    let mut named = embed.named_parameters();
    named.extend(lstm.named_parameters());
    named.extend(head.named_parameters());
    gradients(loss, named)
}

fn cnn<B: Backend>(b: &B) -> Result<Run> {
    let rng = &mut Generator::new(5);
    let k = nabla_nn::Param::new(Tensor::randn([4, 2, 3, 3], DType::F32, rng, b)?.mul(0.3)?)?;
    let w = nabla_nn::Param::new(Tensor::randn([4 * 4 * 4, 3], DType::F32, rng, b)?.mul(0.2)?)?;
    let x = Tensor::randn([3, 2, 8, 8], DType::F32, rng, b)?;
    let labels = Tensor::from_vec(vec![0i64, 2, 1], [3], b)?;
    let conv = Conv2dParams {
        padding: (1, 1),
        ..Default::default()
    };
    let h = x.conv2d(&k.value(), &conv)?.relu()?;
    let (h, _) = h.max_pool2d(&Pool2dParams::square(2))?;
    let logits = h.reshape([3, 64])?.matmul(&w.value())?.tanh()?;
    let loss = cross_entropy(&logits, &labels, &CrossEntropyOptions::default())?;
    gradients(loss, vec![("conv".into(), k), ("linear".into(), w)])
}

/// Runs `model` on both backends and compares loss and gradients to `rtol` (relative to the
/// gradient's largest magnitude, so that near-zero entries are judged against the scale).
fn compare(what: &str, cpu: Run, gpu: Run, rtol: f64) {
    assert!(
        (cpu.0 - gpu.0).abs() <= rtol * (1.0 + cpu.0.abs()),
        "{what} loss: cpu {} vs cuda {}",
        cpu.0,
        gpu.0
    );
    for ((name, a), (_, b)) in cpu.1.iter().zip(&gpu.1) {
        assert_eq!(a.len(), b.len(), "{what} {name}");
        let scale = a.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(
                ((x - y).abs() as f64) <= rtol * (scale + 1e-6) + 1e-7,
                "{what} gradient {name}[{i}]: cpu {x} vs cuda {y} (scale {scale})"
            );
        }
    }
}

#[test]
fn cnn_gpt_and_lstm_gradients_match_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let cpu = CpuBackend::new();
    compare("cnn", cnn(&cpu).unwrap(), cnn(gpu).unwrap(), 1e-5);
    compare("gpt", gpt(&cpu).unwrap(), gpt(gpu).unwrap(), 1e-5);
    compare("lstm", lstm(&cpu).unwrap(), lstm(gpu).unwrap(), 1e-5);
}

#[test]
fn bf16_products_match_the_cpu_within_bf16_rounding() {
    let Some(gpu) = common::gpu() else { return };
    let cpu = CpuBackend::new();
    let rng = &mut Generator::new(9);
    let a = Tensor::randn([3, 64, 48], DType::F32, rng, &cpu).unwrap();
    let b = Tensor::randn([3, 48, 40], DType::F32, rng, &cpu).unwrap();
    let on_cpu = nabla_tensor::autocast(DType::BF16, || a.matmul(&b))
        .unwrap()
        .unwrap();
    let (ga, gb) = (a.to_backend(gpu).unwrap(), b.to_backend(gpu).unwrap());
    let on_gpu = nabla_tensor::autocast(DType::BF16, || ga.matmul(&gb))
        .unwrap()
        .unwrap();
    let (x, y) = (
        on_cpu.to_vec::<f32>().unwrap(),
        on_gpu.to_vec::<f32>().unwrap(),
    );
    for (i, (p, q)) in x.iter().zip(&y).enumerate() {
        // Same rounded operands, f32 sums in another order: agreement to f32 summation error.
        assert!(
            (p - q).abs() <= 1e-4 * (1.0 + p.abs()),
            "element {i}: cpu {p} vs cuda {q}"
        );
    }
}
