//! The classifiers of the command line, built from a model kind and the input shape: three small
//! networks and the zoo's ResNets and ViT-Tiny.

use clap::ValueEnum;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_models::{ResNet, ResNetConfig, Vit, VitConfig};
use nabla_nn::activation::{Flatten, ReLU};
use nabla_nn::{
    AdaptiveAvgPool2d, BatchNorm2d, Conv2d, ConvOptions, Forward, Linear, MaxPool2d, Module,
    Sequential, Strictness, load_state_dict, load_tensors,
};
use nabla_tensor::Tensor;
use std::collections::HashMap;
use std::path::Path;

/// The model architectures `nabla train --model` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelKind {
    /// Flatten, one hidden layer of 128 units (256 for inputs of more than 256 values) with ReLU,
    /// linear.
    Mlp,
    /// Two 3x3 convolutions (16 and 32 channels) with ReLU and 2x2 max-pooling, a hidden layer of
    /// 64 units, linear (for images of 16x16 or more: pooling after both convolutions and 128
    /// hidden units).
    Cnn,
    /// A small residual network: a convolution stem, two residual blocks with batch norm (16 and
    /// 32 channels), global average pooling, linear.
    Resnet,
    /// ResNet-18 of the model zoo (torchvision's layout and names, so `--pretrained` takes
    /// torchvision's weights); for images under 64x64 (CIFAR) with a 3x3 stem and no max-pool.
    Resnet18,
    /// ResNet-34, as ResNet-18.
    Resnet34,
    /// ResNet-50 (bottleneck blocks), as ResNet-18.
    Resnet50,
    /// ViT-Tiny of the model zoo (Hugging Face's ViT names and DeiT-Tiny's sizes: 12 blocks of
    /// width 192 with 3 heads, so `--pretrained` takes `transformers` weights); 4x4 patches for
    /// images under 64x64 (CIFAR's 32x32: 64 tokens), ImageNet's 16x16 above. Square images only.
    #[value(name = "vit-tiny")]
    VitTiny,
}

impl ModelKind {
    /// The name used on the command line and in checkpoints.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Mlp => "mlp",
            ModelKind::Cnn => "cnn",
            ModelKind::Resnet => "resnet",
            ModelKind::Resnet18 => "resnet18",
            ModelKind::Resnet34 => "resnet34",
            ModelKind::Resnet50 => "resnet50",
            ModelKind::VitTiny => "vit-tiny",
        }
    }

    /// Whether the kind is a model of the zoo (`nabla_models`), whose weights `--pretrained` loads.
    pub fn is_zoo(self) -> bool {
        match self {
            ModelKind::Mlp | ModelKind::Cnn | ModelKind::Resnet => false,
            ModelKind::Resnet18
            | ModelKind::Resnet34
            | ModelKind::Resnet50
            | ModelKind::VitTiny => true,
        }
    }

    /// The parameters of a zoo model whose shape follows the data rather than the architecture:
    /// the stem (image channels and patch or kernel size), the ViT's positions (the image size)
    /// and the classifier (the number of classes). [`load_pretrained`] lets them start fresh when
    /// the file's do not fit.
    fn data_shaped(self) -> &'static [&'static str] {
        match self {
            ModelKind::Mlp | ModelKind::Cnn | ModelKind::Resnet => &[],
            ModelKind::Resnet18 | ModelKind::Resnet34 | ModelKind::Resnet50 => {
                &["conv1.weight", "fc.weight", "fc.bias"]
            }
            ModelKind::VitTiny => &[
                "vit.embeddings.patch_embeddings.projection.weight",
                "vit.embeddings.position_embeddings",
                "classifier.weight",
                "classifier.bias",
            ],
        }
    }

    /// The model's name for a tensor of a published file (`None` leaves it out): `transformers`'
    /// module names of a ViT mapped to its files' ([`nabla_models::vit::hf_name`]); torchvision's
    /// names as they are.
    fn file_name(self, name: &str) -> Option<String> {
        match self {
            ModelKind::VitTiny => nabla_models::vit::hf_name(name),
            _ => Some(name.to_string()),
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Result<Self> {
        ModelKind::from_str(name, true).map_err(|_| {
            Error::invalid(
                "model",
                format!(
                    "unknown model kind `{name}` (expected mlp, cnn, resnet, resnet18, resnet34, \
                     resnet50 or vit-tiny)"
                ),
            )
        })
    }
}

/// A `k x k` convolution with padding `k / 2` (same size), with or without bias.
fn conv<B: Backend>(
    cin: usize,
    cout: usize,
    bias: bool,
    rng: &mut Generator,
    backend: &B,
) -> Result<Conv2d<B>> {
    let options = ConvOptions {
        padding: (1, 1),
        bias,
        ..ConvOptions::default()
    };
    Conv2d::new(cin, cout, (3, 3), options, DType::F32, rng, backend)
}

/// Batch norm over `c` channels with PyTorch's defaults.
fn batch_norm<B: Backend>(c: usize, backend: &B) -> Result<BatchNorm2d<B>> {
    BatchNorm2d::new(c, 1e-5, Some(0.1), true, true, DType::F32, backend)
}

/// `model` followed by the classifier head `Linear(features, hidden) - ReLU - Linear(hidden, classes)`.
fn with_head<B: Backend>(
    model: Sequential<B>,
    features: usize,
    hidden: usize,
    classes: usize,
    rng: &mut Generator,
    backend: &B,
) -> Result<Sequential<B>> {
    let dense = |i, o, rng: &mut Generator| Linear::new(i, o, true, DType::F32, rng, backend);
    Ok(model
        .push(dense(features, hidden, rng)?)
        .push(ReLU)
        .push(dense(hidden, classes, rng)?))
}

/// 2x2 max pooling with stride 2.
fn pool2() -> Result<MaxPool2d> {
    MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false)
}

/// A basic residual block: `relu(x + bn(conv(relu(bn(conv(x))))))`.
#[derive(nabla_nn::Module)]
#[module(crate = nabla_nn)]
pub struct ResidualBlock<B: Backend> {
    conv1: Conv2d<B>,
    bn1: BatchNorm2d<B>,
    conv2: Conv2d<B>,
    bn2: BatchNorm2d<B>,
}

impl<B: Backend> ResidualBlock<B> {
    /// A block of `c` channels.
    pub fn new(c: usize, rng: &mut Generator, backend: &B) -> Result<Self> {
        Ok(ResidualBlock {
            conv1: conv(c, c, false, rng, backend)?,
            bn1: batch_norm(c, backend)?,
            conv2: conv(c, c, false, rng, backend)?,
            bn2: batch_norm(c, backend)?,
        })
    }
}

impl<B: Backend> Forward<B> for ResidualBlock<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let h = self.bn1.forward(&self.conv1.forward(x)?)?.relu()?;
        let h = self.bn2.forward(&self.conv2.forward(&h)?)?;
        h.add(x)?.relu()
    }
}

/// Builds the model of `kind` for inputs `[C, H, W]` and `classes` classes, initialised from `seed`.
pub fn build_model<B: Backend>(
    kind: ModelKind,
    input_shape: &[usize],
    classes: usize,
    seed: u64,
    backend: &B,
) -> Result<Sequential<B>> {
    let &[c, h, w] = input_shape else {
        return Err(Error::invalid(
            "model",
            format!("inputs must be images [C, H, W], got shape {input_shape:?}"),
        ));
    };
    if c == 0 || h < 4 || w < 4 || classes < 2 {
        return Err(Error::invalid(
            "model",
            format!(
                "need images of at least 4x4 pixels and 2 classes, got {input_shape:?} and {classes}"
            ),
        ));
    }
    let rng = &mut Generator::new(seed);
    let flatten = Flatten {
        start_dim: 1,
        end_dim: -1,
    };
    // Large inputs (MNIST's 28x28) are pooled once more before the second convolution.
    let big = h >= 16 && w >= 16;
    let model = match kind {
        ModelKind::Mlp => {
            let features = c * h * w;
            let hidden = if features > 256 { 256 } else { 128 };
            with_head(
                Sequential::new().push(flatten),
                features,
                hidden,
                classes,
                rng,
                backend,
            )?
        }
        ModelKind::Cnn => {
            let mut m = Sequential::new()
                .push(conv(c, 16, true, rng, backend)?)
                .push(ReLU);
            let (mut oh, mut ow) = (h, w);
            if big {
                m = m.push(pool2()?);
                (oh, ow) = (oh / 2, ow / 2);
            }
            let m = m
                .push(conv(16, 32, true, rng, backend)?)
                .push(ReLU)
                .push(pool2()?);
            let hidden = if big { 128 } else { 64 };
            with_head(
                m.push(flatten),
                32 * (oh / 2) * (ow / 2),
                hidden,
                classes,
                rng,
                backend,
            )?
        }
        ModelKind::Resnet => {
            let mut m = Sequential::new()
                .push(conv(c, 16, false, rng, backend)?)
                .push(batch_norm(16, backend)?)
                .push(ReLU)
                .push(ResidualBlock::new(16, rng, backend)?);
            if big {
                m = m.push(pool2()?);
            }
            m.push(conv(16, 32, false, rng, backend)?)
                .push(batch_norm(32, backend)?)
                .push(ReLU)
                .push(pool2()?)
                .push(ResidualBlock::new(32, rng, backend)?)
                .push(AdaptiveAvgPool2d::new((1, 1))?)
                .push(flatten)
                .push(Linear::new(32, classes, true, DType::F32, rng, backend)?)
        }
        ModelKind::Resnet18 | ModelKind::Resnet34 | ModelKind::Resnet50 => {
            let config = ResNetConfig {
                in_channels: c,
                small_images: h < 64 || w < 64,
                ..ResNetConfig::from_name(kind.name(), classes).expect("a zoo name")
            };
            Sequential::new().push(ResNet::new(config, DType::F32, rng, backend)?)
        }
        ModelKind::VitTiny => {
            let patch_size = if h < 64 { 4 } else { 16 };
            if h != w || !h.is_multiple_of(patch_size) {
                return Err(Error::invalid(
                    "model",
                    format!(
                        "vit-tiny needs square images whose side is a multiple of its {patch_size}x\
                         {patch_size} patches, got {h}x{w}"
                    ),
                ));
            }
            let config = VitConfig {
                image_size: h,
                patch_size,
                num_channels: c,
                ..VitConfig::from_name("vit-tiny", classes).expect("a zoo name")
            };
            Sequential::new().push(Vit::new(config, DType::F32, rng, backend)?)
        }
    };
    Ok(model)
}

/// Loads published weights (torchvision's names for the ResNets, `transformers`' for ViT-Tiny: a
/// `.pth` / `.bin` file of `torch.save` or safetensors) into the zoo model of `kind` built by
/// [`build_model`], the single layer of `model`. Every parameter and buffer must be in the file
/// with its shape, except the kind's data-shaped ones (its stem, positions and classifier), which
/// keep their fresh initialisation when the file has none or one of another shape (ImageNet
/// weights fine-tuned on CIFAR: a 3x3 stem or 4x4 patches and 10 classes, as CIFAR recipes do).
/// Returns the names that start fresh.
pub fn load_pretrained<B: Backend>(
    kind: ModelKind,
    model: &Sequential<B>,
    path: &Path,
    backend: &B,
) -> Result<Vec<String>> {
    let data_shaped = kind.data_shaped();
    let file = load_tensors(path, backend)?;
    // The model's names are `0.<torchvision name>` (the one layer of the Sequential).
    let ours: HashMap<String, Vec<usize>> = model
        .state_dict()
        .into_iter()
        .filter_map(|(n, t)| Some((n.strip_prefix("0.")?.to_string(), t.shape().to_vec())))
        .collect();
    let state: Vec<_> = file
        .tensors
        .into_iter()
        .filter_map(|(name, t)| Some((kind.file_name(&name)?, t)))
        .filter(|(name, t)| {
            !data_shaped.contains(&name.as_str())
                || ours.get(name).is_some_and(|s| s.as_slice() == t.shape())
        })
        .map(|(name, t)| (format!("0.{name}"), t))
        .collect();
    let report = load_state_dict(model, &state, Strictness::Lenient)?;
    let fresh: Vec<String> = report
        .missing
        .iter()
        .filter_map(|n| n.strip_prefix("0."))
        .filter(|n| data_shaped.contains(n))
        .map(str::to_string)
        .collect();
    if report.missing.len() != fresh.len() || !report.unexpected.is_empty() {
        return Err(Error::invalid(
            "--pretrained",
            format!(
                "{} does not fit the model: missing {:?}, unexpected {:?}",
                path.display(),
                report.missing,
                report.unexpected
            ),
        ));
    }
    Ok(fresh)
}

/// The number of trainable parameters of `model`, for the run's banner.
pub fn parameter_count<B: Backend>(model: &Sequential<B>) -> usize {
    model.num_trainable_parameters()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_cpu::CpuBackend;

    #[test]
    fn every_model_maps_images_to_class_scores() -> Result<()> {
        let cpu = CpuBackend::new();
        for shape in [[1, 8, 8], [1, 28, 28]] {
            let x = Tensor::ones([2, shape[0], shape[1], shape[2]], DType::F32, &cpu)?;
            for kind in [ModelKind::Mlp, ModelKind::Cnn, ModelKind::Resnet] {
                let model = build_model(kind, &shape, 10, 0, &cpu)?;
                assert_eq!(
                    model.forward(&x)?.shape(),
                    &[2, 10],
                    "{kind:?} on {shape:?}"
                );
                assert_eq!(ModelKind::from_name(kind.name())?, kind);
            }
        }
        assert!(build_model(ModelKind::Cnn, &[64], 10, 0, &cpu).is_err());
        assert!(build_model(ModelKind::Cnn, &[1, 2, 2], 10, 0, &cpu).is_err());
        assert!(ModelKind::from_name("vgg").is_err());
        Ok(())
    }

    /// The loss of `model` on one image `x` `[C, H, W]` with label `y` `[]`, and the gradient of every
    /// parameter, after setting the parameters to `params`.
    fn example_gradients<B: Backend>(
        model: &Sequential<B>,
        params: &[Tensor<B>],
        x: &Tensor<B>,
        y: &Tensor<B>,
    ) -> Result<Vec<Tensor<B>>> {
        use nabla_nn::loss::{CrossEntropyOptions, cross_entropy};
        let slots = model.parameters();
        for (p, v) in slots.iter().zip(params) {
            p.set(v.clone())?;
        }
        let logits = model.forward(&x.unsqueeze(0)?)?;
        let loss = cross_entropy(&logits, &y.unsqueeze(0)?, &CrossEntropyOptions::default())?;
        let grads = loss.backward()?;
        slots
            .iter()
            .map(|p| {
                p.grad(&grads)
                    .ok_or_else(|| Error::invalid("test", "a parameter got no gradient"))
            })
            .collect()
    }

    /// `vmap` of the CNN's per-example gradient (the weights shared, images and labels mapped) equals a
    /// loop of single-example gradients.
    #[test]
    fn per_example_gradients_of_the_cnn_by_vmap_equal_a_loop() -> Result<()> {
        use nabla_tensor::{TracedTensor, TracingBackend, vmap};
        let cpu = CpuBackend::new();
        let shape = [1, 8, 8];
        let model = build_model(ModelKind::Cnn, &shape, 10, 3, &cpu)?;
        let params: Vec<_> = model.parameters().iter().map(|p| p.data()).collect();
        let batch = 5;
        let pixels: Vec<f32> = (0..batch * 64)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) / 9.0)
            .collect();
        let xs = Tensor::from_vec(pixels, [batch, 1, 8, 8], &cpu)?;
        let ys = Tensor::from_vec(vec![3i64, 0, 9, 3, 7], [batch], &cpu)?;
        let count = params.len();
        let per_example = |t: &[TracedTensor]| {
            let tb: &TracingBackend = t[0].backend();
            let traced = build_model(ModelKind::Cnn, &shape, 10, 3, tb)?;
            example_gradients(&traced, &t[..count], &t[count], &t[count + 1])
        };
        let mut in_axes = vec![None; count];
        in_axes.extend([Some(0), Some(0)]);
        let mut inputs: Vec<&Tensor<CpuBackend>> = params.iter().collect();
        inputs.extend([&xs, &ys]);
        let batched = vmap(per_example).in_axes(&in_axes).call(&inputs)?;
        assert_eq!(batched.len(), count);
        for b in 0..batch {
            let (x, y) = (
                xs.select_index(0, b as isize)?,
                ys.select_index(0, b as isize)?,
            );
            let single = example_gradients(&model, &params, &x, &y)?;
            for (k, (g, want)) in batched.iter().zip(&single).enumerate() {
                let got = g.select_index(0, b as isize)?;
                assert_eq!(got.shape(), want.shape(), "parameter {k}");
                let (got, want) = (got.to_vec::<f32>()?, want.to_vec::<f32>()?);
                for (i, (a, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (a - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "example {b}, parameter {k}, element {i}: {a} vs {w}"
                    );
                }
            }
        }
        Ok(())
    }
}
