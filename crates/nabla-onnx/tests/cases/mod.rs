//! The export cases checked against ONNX Runtime: the model zoo's tiny models (the weights of
//! crates/nabla-models/tests/fixtures) and a sample of the primitive catalogue, each a function
//! generic over the backend, so that it runs eagerly on the CPU (nabla's result) and traced for
//! export. Shared by the test (`tests/onnxruntime.rs`) and the example that writes the fixtures
//! (`examples/onnx_fixtures.rs`, run by `scripts/gen_onnx_fixtures.py`).

#![allow(dead_code)]

use nabla_core::{Backend, Conv2dParams, DType, Generator, Pool2dParams, Result};
use nabla_cpu::CpuBackend;
#[path = "../../../nabla-models/tests/fixture_configs/mod.rs"]
mod fixture_configs;

use nabla_models::{Bert, Gpt2, ResNet, Vit};
use nabla_nn::{ConvOptions, ConvTranspose2d, Forward, Module};
use nabla_onnx::proto::ModelProto;
use nabla_onnx::{ExportOptions, InputSpec, traced_to_model};
use nabla_tensor::{Tensor, TracingBackend};
use std::path::PathBuf;

/// The batch size the fixtures run at: none of the three the dynamic export traces at.
pub const RUN_BATCH: usize = 4;

/// One export case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Case {
    ResNet,
    Gpt2,
    Bert,
    Vit,
    Elementwise,
    Integers,
    Indexing,
    Views,
    Convolutions,
}

impl Case {
    /// Every case.
    pub const ALL: [Case; 9] = [
        Case::ResNet,
        Case::Gpt2,
        Case::Bert,
        Case::Vit,
        Case::Elementwise,
        Case::Integers,
        Case::Indexing,
        Case::Views,
        Case::Convolutions,
    ];

    /// The fixture files' stem.
    pub fn name(self) -> &'static str {
        match self {
            Case::ResNet => "resnet_basic",
            Case::Gpt2 => "gpt2_tiny",
            Case::Bert => "bert_tiny",
            Case::Vit => "vit_tiny",
            Case::Elementwise => "elementwise",
            Case::Integers => "integers",
            Case::Indexing => "indexing",
            Case::Views => "views",
            Case::Convolutions => "convolutions",
        }
    }

    /// The inputs' shapes and dtypes at batch size `batch`.
    pub fn inputs(self, batch: usize) -> Vec<InputSpec> {
        let f32 = |shape: &[usize]| InputSpec::new(shape.to_vec(), DType::F32);
        let i64 = |shape: &[usize]| InputSpec::new(shape.to_vec(), DType::I64);
        match self {
            Case::ResNet => vec![f32(&[batch, 3, 32, 32])],
            Case::Gpt2 => vec![i64(&[batch, 12])],
            Case::Bert => vec![i64(&[batch, 10]), i64(&[batch, 10]), i64(&[batch, 10])],
            Case::Vit => vec![f32(&[batch, 3, 16, 16])],
            Case::Elementwise => vec![f32(&[batch, 6]), f32(&[batch, 6])],
            Case::Integers => vec![i64(&[batch, 5])],
            Case::Indexing => vec![f32(&[batch, 8])],
            Case::Views => vec![f32(&[batch, 4, 6]), f32(&[6])],
            Case::Convolutions => vec![f32(&[batch, 2, 8, 8])],
        }
    }

    /// Deterministic inputs at [`RUN_BATCH`] (token ids in range, a padding mask, positive floats
    /// for the logarithms).
    pub fn example_inputs(self, cpu: &CpuBackend) -> Result<Vec<Tensor<CpuBackend>>> {
        let rng = &mut Generator::new(7);
        self.inputs(RUN_BATCH)
            .into_iter()
            .enumerate()
            .map(|(i, spec)| match (self, i, spec.dtype) {
                (Case::Bert, 1, _) => {
                    let n: usize = spec.shape.iter().product();
                    let mask = (0..n).map(|k| i64::from(k % 10 < 7 || k < 10)).collect();
                    Tensor::from_vec(mask, spec.shape, cpu)
                }
                (Case::Bert, 2, _) => {
                    let n: usize = spec.shape.iter().product();
                    Tensor::from_vec(
                        (0..n).map(|k| i64::from(k % 10 >= 5)).collect(),
                        spec.shape,
                        cpu,
                    )
                }
                (_, _, DType::I64) => {
                    let n: usize = spec.shape.iter().product();
                    let high = if self == Case::Integers { 19 } else { 64 };
                    let ids = (0..n).map(|k| {
                        ((k * 37 + 11) % high) as i64 - if self == Case::Integers { 9 } else { 0 }
                    });
                    Tensor::from_vec(ids.collect(), spec.shape, cpu)
                }
                _ => Tensor::uniform(spec.shape, 0.1, 2.0, DType::F32, rng, cpu),
            })
            .collect()
    }

    /// The case's outputs on `backend`.
    pub fn run<B: Backend>(self, backend: &B, x: &[Tensor<B>]) -> Result<Vec<Tensor<B>>> {
        match self {
            Case::ResNet => {
                let config = fixture_configs::resnet_config(false);
                let mut model = ResNet::new(config, DType::F32, &mut Generator::new(1), backend)?;
                model.load(zoo_fixture("resnet_basic.pt"), backend)?;
                model.eval();
                Ok(vec![model.forward(&x[0])?])
            }
            Case::Gpt2 => {
                let config = fixture_configs::gpt2_config();
                let model = Gpt2::new(config, DType::F32, &mut Generator::new(1), backend)?;
                model.load(zoo_fixture("gpt2_tiny.safetensors"), backend)?;
                Ok(vec![model.forward(&x[0])?])
            }
            Case::Bert => {
                let config = fixture_configs::bert_config();
                let mut model = Bert::new(config, DType::F32, &mut Generator::new(1), backend)?;
                model.load(zoo_fixture("bert_tiny.safetensors"), backend)?;
                model.eval();
                let out = model.run(&x[0], Some(&x[2]), Some(&x[1]))?;
                Ok(vec![out.last_hidden_state, out.pooler_output])
            }
            Case::Vit => {
                let config = fixture_configs::vit_config();
                let model = Vit::new(config, DType::F32, &mut Generator::new(1), backend)?;
                model.load(zoo_fixture("vit_tiny.safetensors"), backend)?;
                Ok(vec![model.forward(&x[0])?])
            }
            Case::Elementwise => elementwise(&x[0], &x[1]),
            Case::Integers => integers(&x[0]),
            Case::Indexing => indexing(&x[0]),
            Case::Views => views(&x[0], &x[1]),
            Case::Convolutions => convolutions(backend, &x[0]),
        }
    }

    /// Whether the batch axis is dynamic (every case but the one with an unbatched input).
    pub fn dynamic_batch(self) -> bool {
        self != Case::Views
    }

    /// The case's ONNX model, traced at a dynamic batch (or at [`RUN_BATCH`]).
    pub fn export(self) -> Result<ModelProto> {
        let tb = TracingBackend::new();
        let options = ExportOptions {
            dynamic_batch: self.dynamic_batch(),
            ..Default::default()
        };
        traced_to_model(&tb, &self.inputs(RUN_BATCH), |x| self.run(&tb, x), &options)
    }
}

/// A file of the model zoo's fixtures.
pub fn zoo_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../nabla-models/tests/fixtures")
        .join(name)
}

/// A file of this crate's fixtures.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Unary and binary float ops, comparisons, selection and casts.
fn elementwise<B: Backend>(x: &Tensor<B>, y: &Tensor<B>) -> Result<Vec<Tensor<B>>> {
    let centred = x.sub(1.0)?;
    Ok(vec![
        x.exp()?.add(&x.log1p()?)?.add(&x.expm1()?)?,
        centred
            .tanh()?
            .add(&centred.sigmoid()?)?
            .add(&centred.erf()?)?,
        x.rsqrt()?
            .add(&x.sqrt()?)?
            .add(&x.recip()?)?
            .add(&x.log()?)?,
        x.mul(3.0)?.sub(3.0)?.trunc()?.add(&x.mul(3.0)?.round()?)?,
        centred
            .sign()?
            .add(&centred.abs()?)?
            .add(&centred.floor()?)?
            .add(&centred.ceil()?)?,
        x.rem(0.7)?.add(&centred.rem(&y.sub(1.0)?)?)?,
        x.div(y)?
            .add(&x.pow(1.5)?)?
            .add(&x.maximum(y)?)?
            .sub(&x.minimum(y)?)?,
        x.gt(y)?.where_(x, &y.neg()?)?,
        x.ge(1.0)?.logical_xor(&y.ne(x)?)?.cast(DType::F32)?,
        x.mul(10.0)?.cast(DType::I32)?.cast(DType::F32)?,
        centred
            .sin()?
            .add(&centred.cos()?)?
            .add(&centred.atan()?)?
            .add(&centred.asinh()?)?,
        x.softmax(-1)?.add(&y.log_softmax(-1)?)?,
    ])
}

/// Integer arithmetic (floor division, the divisor-signed remainder), reductions, a cumulative
/// sum, arg-max and one-hot.
fn integers<B: Backend>(x: &Tensor<B>) -> Result<Vec<Tensor<B>>> {
    Ok(vec![
        x.div(4)?,
        x.rem(4)?,
        x.cumsum(1)?,
        x.sum(&[1], false)?,
        x.max(&[1], true)?,
        x.argmax(1, false)?,
        x.rem(3)?.one_hot(3, DType::F32)?,
        x.abs()?.minimum(x.mul(2)?)?,
    ])
}

/// Sorting, top-k, gathers, scatters, padding and concatenation.
fn indexing<B: Backend>(x: &Tensor<B>) -> Result<Vec<Tensor<B>>> {
    let (sorted, order) = x.sort(1, true)?;
    let (top, top_at) = x.topk(3, 1, false)?;
    let index = Tensor::from_vec(vec![5i64, 0, 7], [3], x.backend())?;
    let picked = x.index_select(1, &index)?;
    let gathered = x.gather(1, &order)?;
    let scattered = x
        .mul(0.0)?
        .scatter_add(1, &order.narrow(1, 0, 4)?, &x.narrow(1, 0, 4)?)?;
    let padded = x.pad(&[(0, 0), (2, 1)], 0.5)?;
    Ok(vec![
        sorted,
        order,
        top,
        top_at,
        picked,
        gathered,
        scattered,
        Tensor::cat(&[&padded, x], 1)?,
    ])
}

/// Strided views: transposes, narrowing, steps, flips and broadcasts, into products and
/// reductions.
fn views<B: Backend>(x: &Tensor<B>, bias: &Tensor<B>) -> Result<Vec<Tensor<B>>> {
    let xt = x.transpose(1, 2)?;
    let gram = x.matmul(&xt)?;
    let stepped = x.slice(2, Some(1), None, 2)?;
    Ok(vec![
        gram,
        x.add(bias)?.flip(&[1, 2])?,
        stepped.mul(&x.narrow(2, 0, 3)?)?,
        xt.sum(&[0, 2], true)?.prod(&[1], false)?,
        x.permute(&[2, 0, 1])?.reshape([6, 16])?,
    ])
}

/// Deterministic values in [-0.5, 0.5) of `shape`, uploaded (constants when traced).
fn weights<B: Backend>(shape: &[usize], backend: &B) -> Result<Tensor<B>> {
    let n: usize = shape.iter().product();
    let values = (0..n)
        .map(|k| ((k * 37 + 5) % 17) as f32 / 17.0 - 0.5)
        .collect();
    Tensor::from_vec(values, shape.to_vec(), backend)
}

/// A strided, padded, grouped convolution, max pooling with its positions, and a transposed
/// convolution.
fn convolutions<B: Backend>(backend: &B, x: &Tensor<B>) -> Result<Vec<Tensor<B>>> {
    let params = Conv2dParams {
        stride: (2, 1),
        padding: (1, 1),
        groups: 2,
        ..Default::default()
    };
    let y = x.conv2d(&weights(&[4, 1, 3, 3], backend)?, &params)?;
    let (pooled, at) = x.max_pool2d(&Pool2dParams {
        padding: (1, 1),
        ..Pool2dParams::square(3)
    })?;
    let options = ConvOptions {
        stride: (2, 2),
        padding: (1, 1),
        output_padding: (1, 1),
        ..ConvOptions::default()
    };
    let rng = &mut Generator::new(3);
    let up = ConvTranspose2d::new(2, 3, (3, 3), options, DType::F32, rng, backend)?;
    up.weight.set(weights(&[2, 3, 3, 3], backend)?)?;
    if let Some(b) = &up.bias {
        b.set(weights(&[3], backend)?)?;
    }
    Ok(vec![y, pooled, at, up.forward(x)?])
}
