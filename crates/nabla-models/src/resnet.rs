//! ResNets (He et al., "Deep Residual Learning for Image Recognition") as torchvision builds them:
//! the same module names (`conv1`, `bn1`, `layer1.0.conv1`, `layer2.0.downsample.0`, `fc`), the
//! same layouts and the same initialisation, so `torchvision.models.resnet50(weights=...)`'s state
//! dict loads by name. Bottleneck blocks put the stride on their 3x3 convolution (torchvision's
//! "ResNet v1.5"). [`ResNetConfig::small_images`] swaps ImageNet's 7x7 stride-2 stem and max-pool
//! for a 3x3 stride-1 stem, the usual layout for 32x32 images (CIFAR).

use crate::load_renamed;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_nn::init::{FanMode, Nonlinearity, kaiming_normal};
use nabla_nn::{BatchNorm2d, Conv2d, ConvOptions, Forward, Linear, MaxPool2d, Module};
use nabla_tensor::Tensor;
use std::path::Path;

/// A ResNet's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResNetConfig {
    /// Blocks in each of the four stages.
    pub layers: [usize; 4],
    /// Bottleneck blocks (1x1, 3x3, 1x1 with four times the width out: ResNet-50 and deeper) or
    /// basic blocks (two 3x3: ResNet-18 and 34).
    pub bottleneck: bool,
    /// Outputs of the classifier.
    pub num_classes: usize,
    /// Channels of the input images (3 in every published ResNet).
    pub in_channels: usize,
    /// Channels of the stem and the first stage (64 in every published ResNet); each later stage
    /// doubles them.
    pub base_width: usize,
    /// A 3x3 stride-1 stem without max-pool, for small images such as CIFAR's 32x32, instead of
    /// ImageNet's 7x7 stride-2 stem and 3x3 stride-2 max-pool.
    pub small_images: bool,
}

impl ResNetConfig {
    /// The published depths (`resnet18`, `resnet34`, `resnet50`, `resnet101`, `resnet152`) with
    /// `num_classes` outputs and ImageNet's stem; `None` for another name.
    pub fn from_name(name: &str, num_classes: usize) -> Option<Self> {
        let (layers, bottleneck) = match name {
            "resnet18" => ([2, 2, 2, 2], false),
            "resnet34" => ([3, 4, 6, 3], false),
            "resnet50" => ([3, 4, 6, 3], true),
            "resnet101" => ([3, 4, 23, 3], true),
            "resnet152" => ([3, 8, 36, 3], true),
            _ => return None,
        };
        Some(ResNetConfig {
            layers,
            bottleneck,
            num_classes,
            in_channels: 3,
            base_width: 64,
            small_images: false,
        })
    }

    /// The names [`ResNetConfig::from_name`] knows.
    pub const NAMES: [&'static str; 5] =
        ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"];

    /// Output channels of a block of the stage of width `width`.
    fn block_out(&self, width: usize) -> usize {
        if self.bottleneck { 4 * width } else { width }
    }
}

/// A block's shortcut when it changes the size: a strided 1x1 convolution and batch norm
/// (torchvision's `downsample`, a `Sequential` named `0` and `1`).
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct Downsample<B: Backend>(pub Conv2d<B>, pub BatchNorm2d<B>);

/// A residual block: torchvision's `BasicBlock` (`conv3` and `bn3` absent) or `Bottleneck`.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct Block<B: Backend> {
    pub conv1: Conv2d<B>,
    pub bn1: BatchNorm2d<B>,
    pub conv2: Conv2d<B>,
    pub bn2: BatchNorm2d<B>,
    pub conv3: Option<Conv2d<B>>,
    pub bn3: Option<BatchNorm2d<B>>,
    pub downsample: Option<Downsample<B>>,
}

/// What builds the layers: dtype, random stream and backend.
struct Builder<'a, B: Backend> {
    dtype: DType,
    rng: &'a mut Generator,
    backend: &'a B,
}

impl<B: Backend> Builder<'_, B> {
    /// A `k` x `k` convolution without bias (padding `k / 2`), initialised as torchvision does
    /// (Kaiming normal over the fan out, for ReLU).
    fn conv(&mut self, cin: usize, cout: usize, k: usize, stride: usize) -> Result<Conv2d<B>> {
        let options = ConvOptions {
            stride: (stride, stride),
            padding: (k / 2, k / 2),
            bias: false,
            ..ConvOptions::default()
        };
        let conv = Conv2d::new(
            cin,
            cout,
            (k, k),
            options,
            self.dtype,
            self.rng,
            self.backend,
        )?;
        let w = kaiming_normal(
            conv.weight.shape(),
            0.0,
            FanMode::FanOut,
            Nonlinearity::Relu,
            self.dtype,
            self.rng,
            self.backend,
        )?;
        conv.weight.set(w)?;
        Ok(conv)
    }

    /// Batch norm with PyTorch's defaults (weight ones, bias zeros).
    fn norm(&mut self, channels: usize) -> Result<BatchNorm2d<B>> {
        BatchNorm2d::new(
            channels,
            1e-5,
            Some(0.1),
            true,
            true,
            self.dtype,
            self.backend,
        )
    }

    /// A block from `cin` channels at `width` with `stride`.
    fn block(
        &mut self,
        config: &ResNetConfig,
        cin: usize,
        width: usize,
        stride: usize,
    ) -> Result<Block<B>> {
        let cout = config.block_out(width);
        let downsample = if stride != 1 || cin != cout {
            Some(Downsample(
                self.conv(cin, cout, 1, stride)?,
                self.norm(cout)?,
            ))
        } else {
            None
        };
        Ok(if config.bottleneck {
            Block {
                conv1: self.conv(cin, width, 1, 1)?,
                bn1: self.norm(width)?,
                conv2: self.conv(width, width, 3, stride)?,
                bn2: self.norm(width)?,
                conv3: Some(self.conv(width, cout, 1, 1)?),
                bn3: Some(self.norm(cout)?),
                downsample,
            }
        } else {
            Block {
                conv1: self.conv(cin, width, 3, stride)?,
                bn1: self.norm(width)?,
                conv2: self.conv(width, width, 3, 1)?,
                bn2: self.norm(width)?,
                conv3: None,
                bn3: None,
                downsample,
            }
        })
    }
}

impl<B: Backend> Forward<B> for Block<B> {
    /// The block on `x` `[N, C, H, W]`: the residual branch plus the shortcut, then ReLU.
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        // Batch norm and the ReLU after it run as one fused op (`forward_relu`).
        let h = self.bn1.forward_relu(&self.conv1.forward(x)?)?;
        let h = match (&self.conv3, &self.bn3) {
            (Some(conv3), Some(bn3)) => {
                let h = self.bn2.forward_relu(&self.conv2.forward(&h)?)?;
                bn3.forward(&conv3.forward(&h)?)?
            }
            _ => self.bn2.forward(&self.conv2.forward(&h)?)?,
        };
        let shortcut = match &self.downsample {
            Some(Downsample(conv, bn)) => bn.forward(&conv.forward(x)?)?,
            None => x.clone(),
        };
        h.add(&shortcut)?.relu()
    }
}

/// A ResNet with torchvision's names: `conv1`, `bn1`, `layer1` to `layer4` (lists of blocks) and
/// the classifier `fc`.
///
/// ```
/// use nabla_cpu::CpuBackend;
/// use nabla_core::{DType, Generator};
/// use nabla_models::{ResNet, ResNetConfig};
/// use nabla_nn::{Forward, Module};
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let config = ResNetConfig { base_width: 8, small_images: true, ..ResNetConfig::from_name("resnet18", 10).unwrap() };
/// let mut model = ResNet::new(config, DType::F32, &mut Generator::new(0), &cpu)?;
/// assert_eq!(model.named_parameters()[3].0, "layer1.0.conv1.weight");
/// model.eval();
/// let logits = model.forward(&Tensor::zeros([2, 3, 32, 32], DType::F32, &cpu)?)?;
/// assert_eq!(logits.shape(), &[2, 10]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct ResNet<B: Backend> {
    pub conv1: Conv2d<B>,
    pub bn1: BatchNorm2d<B>,
    pub layer1: Vec<Block<B>>,
    pub layer2: Vec<Block<B>>,
    pub layer3: Vec<Block<B>>,
    pub layer4: Vec<Block<B>>,
    pub fc: Linear<B>,
    #[module(skip)]
    config: ResNetConfig,
}

impl<B: Backend> ResNet<B> {
    /// A model of `config` in `dtype` (a real float type), initialised as torchvision does, in
    /// training mode.
    pub fn new(
        config: ResNetConfig,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        if config.layers.contains(&0)
            || config.base_width == 0
            || config.num_classes == 0
            || config.in_channels == 0
        {
            return Err(Error::invalid(
                "ResNet",
                format!(
                    "every stage needs a block, and widths and classes must be positive: {config:?}"
                ),
            ));
        }
        let mut build = Builder {
            dtype,
            rng,
            backend,
        };
        let (stem_k, stem_stride) = if config.small_images { (3, 1) } else { (7, 2) };
        let conv1 = build.conv(config.in_channels, config.base_width, stem_k, stem_stride)?;
        let bn1 = build.norm(config.base_width)?;
        let mut cin = config.base_width;
        let mut stages: Vec<Vec<Block<B>>> = Vec::with_capacity(4);
        for (stage, &depth) in config.layers.iter().enumerate() {
            let width = config.base_width << stage;
            let mut blocks = Vec::with_capacity(depth);
            for i in 0..depth {
                let stride = if stage > 0 && i == 0 { 2 } else { 1 };
                blocks.push(build.block(&config, cin, width, stride)?);
                cin = config.block_out(width);
            }
            stages.push(blocks);
        }
        let fc = Linear::new(cin, config.num_classes, true, dtype, build.rng, backend)?;
        let [layer1, layer2, layer3, layer4]: [Vec<Block<B>>; 4] = stages
            .try_into()
            .map_err(|_| Error::invalid("ResNet", "four stages"))?;
        Ok(ResNet {
            conv1,
            bn1,
            layer1,
            layer2,
            layer3,
            layer4,
            fc,
            config,
        })
    }

    /// The model's configuration.
    pub fn config(&self) -> ResNetConfig {
        self.config
    }

    /// Loads weights by torchvision's names from a safetensors file or a `torch.save` file (such as
    /// torchvision's `resnet50-11ad3fa6.pth`); every parameter and buffer must be given with its
    /// shape.
    pub fn load(&self, path: impl AsRef<Path>, backend: &B) -> Result<()> {
        load_renamed(self, path.as_ref(), backend, |name| Some(name.to_string()))
    }
}

impl<B: Backend> Forward<B> for ResNet<B> {
    /// Logits `[N, num_classes]` for images `[N, in_channels, H, W]`.
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let mut h = self.bn1.forward_relu(&self.conv1.forward(x)?)?;
        if !self.config.small_images {
            h = MaxPool2d::new((3, 3), Some((2, 2)), (1, 1), (1, 1), false)?.forward(&h)?;
        }
        for block in [&self.layer1, &self.layer2, &self.layer3, &self.layer4]
            .into_iter()
            .flatten()
        {
            h = block.forward(&h)?;
        }
        self.fc.forward(&h.mean(&[2, 3], false)?)
    }
}
