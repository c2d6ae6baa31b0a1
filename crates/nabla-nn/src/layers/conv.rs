//! Convolutions: `Conv1d`, `Conv2d` and `ConvTranspose2d` (NCHW, PyTorch's weight layouts).

use crate::init::{self, FanMode, Nonlinearity};
use crate::module::Forward;
use crate::param::Param;
use nabla_core::{Backend, Conv2dParams, DType, Error, Generator, Result};
use nabla_tensor::Tensor;

/// A spatial size given per axis: `usize` for one-dimensional layers, `(height, width)` for
/// two-dimensional ones (PyTorch's `int | tuple` arguments).
pub trait SpatialSize: Copy + std::fmt::Debug {
    /// The size as `(height, width)`; a one-dimensional size puts `height` on the (absent) height axis.
    fn hw(self, height: usize) -> (usize, usize);
    /// The same value on every axis.
    fn splat(v: usize) -> Self;
}

impl SpatialSize for usize {
    fn hw(self, height: usize) -> (usize, usize) {
        (height, self)
    }
    fn splat(v: usize) -> Self {
        v
    }
}

impl SpatialSize for (usize, usize) {
    fn hw(self, _height: usize) -> (usize, usize) {
        self
    }
    fn splat(v: usize) -> Self {
        (v, v)
    }
}

/// The optional arguments of a convolution, with PyTorch's defaults (`stride=1, padding=0,
/// output_padding=0, dilation=1, groups=1, bias=True`). `K` is `usize` for `Conv1d` and
/// `(usize, usize)` for the 2-D layers.
///
/// ```
/// use nabla_nn::ConvOptions;
/// let opts = ConvOptions { stride: (2, 2), padding: (1, 1), ..ConvOptions::default() };
/// assert_eq!(opts.groups, 1);
/// assert!(opts.bias);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvOptions<K: SpatialSize> {
    /// Step between windows.
    pub stride: K,
    /// Zero padding on both sides (for a transposed convolution: removed from both sides of the output).
    pub padding: K,
    /// Extra size added to one side of a transposed convolution's output; must be 0 for ordinary ones.
    pub output_padding: K,
    /// Spacing between kernel taps.
    pub dilation: K,
    /// Number of blocked connections from input to output channels.
    pub groups: usize,
    /// Whether the layer has a learnable bias.
    pub bias: bool,
}

impl<K: SpatialSize> Default for ConvOptions<K> {
    fn default() -> Self {
        ConvOptions {
            stride: K::splat(1),
            padding: K::splat(0),
            output_padding: K::splat(0),
            dilation: K::splat(1),
            groups: 1,
            bias: true,
        }
    }
}

impl<K: SpatialSize> ConvOptions<K> {
    /// Checks the options and returns the 2-D convolution parameters they stand for.
    fn params(
        &self,
        op: &'static str,
        in_ch: usize,
        out_ch: usize,
        kernel: K,
    ) -> Result<Conv2dParams> {
        let (kernel, stride, dilation) = (kernel.hw(1), self.stride.hw(1), self.dilation.hw(1));
        let positive = [
            kernel.0, kernel.1, stride.0, stride.1, dilation.0, dilation.1,
        ];
        if positive.contains(&0) || self.groups == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "kernel_size, stride, dilation and groups must be positive, got kernel_size {kernel:?}, \
                     {self:?}"
                ),
            ));
        }
        if !in_ch.is_multiple_of(self.groups) || !out_ch.is_multiple_of(self.groups) {
            return Err(Error::invalid(
                op,
                format!(
                    "in_channels {in_ch} and out_channels {out_ch} must both be divisible by groups {}",
                    self.groups
                ),
            ));
        }
        Ok(Conv2dParams {
            stride,
            padding: self.padding.hw(0),
            dilation,
            groups: self.groups,
            precision: Default::default(),
        })
    }
}

/// PyTorch's default convolution initialisation: `weight ~ kaiming_uniform(a=√5)` and `bias ~ U(-1/√fan_in,
/// 1/√fan_in)`, with `fan_in = weight_shape[1] * prod(kernel)`.
pub(super) fn init_weight_bias<B: Backend>(
    weight_shape: &[usize],
    bias_len: Option<usize>,
    dtype: DType,
    rng: &mut Generator,
    backend: &B,
) -> Result<(Param<B>, Option<Param<B>>)> {
    let a = 5f64.sqrt();
    let weight = init::kaiming_uniform(
        weight_shape,
        a,
        FanMode::FanIn,
        Nonlinearity::LeakyRelu(a),
        dtype,
        rng,
        backend,
    )?;
    let bias = match bias_len {
        Some(n) => {
            let bound = init::bias_bound(init::fans(weight_shape)?.0);
            Some(Param::new(init::uniform(
                [n],
                -bound,
                bound,
                dtype,
                rng,
                backend,
            )?)?)
        }
        None => None,
    };
    Ok((Param::new(weight)?, bias))
}

impl<K: SpatialSize> ConvOptions<K> {
    /// A convolution's weight `[channels.0, channels.1 / groups, kernel...]` and, when `self.bias`,
    /// its `[out_channels]` bias, with PyTorch's default initialisation.
    fn weight_bias<B: Backend>(
        &self,
        channels: (usize, usize),
        kernel: &[usize],
        out_channels: usize,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<(Param<B>, Option<Param<B>>)> {
        let mut shape = vec![channels.0, channels.1 / self.groups];
        shape.extend_from_slice(kernel);
        let bias_len = self.bias.then_some(out_channels);
        init_weight_bias(&shape, bias_len, dtype, rng, backend)
    }
}

/// `v` (`[C]`) shaped to broadcast over the channel axis 1 of a rank-`rank` tensor: `[1, C, 1, ...]`.
pub(super) fn per_channel<B: Backend>(v: &Tensor<B>, rank: usize) -> Result<Tensor<B>> {
    let mut shape = vec![1; rank.max(2)];
    shape[1] = v.numel();
    v.reshape(shape)
}

/// `y + bias` over the channel axis, when there is a bias.
fn add_bias<B: Backend>(y: Tensor<B>, bias: &Option<Param<B>>) -> Result<Tensor<B>> {
    match bias {
        Some(b) => y.add(per_channel(&b.value(), y.rank())?),
        None => Ok(y),
    }
}

/// Runs `f` on a batched input of rank `rank`, adding the batch axis to an unbatched input (rank
/// `rank - 1`) and removing it from the result, as PyTorch does. Other ranks or a wrong channel count
/// are errors naming the weight's shape.
fn batched<B: Backend>(
    op: &'static str,
    x: &Tensor<B>,
    rank: usize,
    in_channels: usize,
    weight_shape: &[usize],
    f: impl FnOnce(&Tensor<B>) -> Result<Tensor<B>>,
) -> Result<Tensor<B>> {
    let unbatched = x.rank() + 1 == rank;
    if x.rank() != rank && !unbatched {
        return Err(
            Error::shapes(op, x.shape(), weight_shape).with_hint(format!(
                "expected a {rank}-D (batched) or {}-D (unbatched) input",
                rank - 1
            )),
        );
    }
    let xb = if unbatched {
        x.unsqueeze(0)?
    } else {
        x.clone()
    };
    if xb.shape()[1] != in_channels {
        return Err(
            Error::shapes(op, x.shape(), weight_shape).with_hint(format!(
                "the input has {} channels but the layer expects {in_channels}",
                xb.shape()[1]
            )),
        );
    }
    let y = f(&xb)?;
    if unbatched { y.squeeze(0) } else { Ok(y) }
}

/// 2-D convolution (PyTorch's `nn.Conv2d`): input `[N, C_in, H, W]` (or unbatched `[C_in, H, W]`),
/// `weight` `[C_out, C_in / groups, KH, KW]`, `bias` `[C_out]`.
///
/// ```
/// use nabla_nn::{Conv2d, ConvOptions, Forward};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let opts = ConvOptions { stride: (2, 2), padding: (1, 1), ..ConvOptions::default() };
/// let conv = Conv2d::new(3, 8, (3, 3), opts, DType::F32, &mut Generator::new(0), &cpu)?;
/// let y = conv.forward(&Tensor::ones([2, 3, 16, 16], DType::F32, &cpu)?)?;
/// assert_eq!(y.shape(), &[2, 8, 8, 8]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct Conv2d<B: Backend> {
    /// `[out_channels, in_channels / groups, kernel_h, kernel_w]`.
    pub weight: Param<B>,
    /// `[out_channels]`, when the layer has a bias.
    pub bias: Option<Param<B>>,
    #[module(skip)]
    params: Conv2dParams,
}

impl<B: Backend> Conv2d<B> {
    /// A layer from `in_channels` to `out_channels` with a `kernel_size` kernel and PyTorch's default
    /// initialisation; `options.output_padding` must be zero.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: (usize, usize),
        options: ConvOptions<(usize, usize)>,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let params = checked_params("Conv2d", in_channels, out_channels, kernel_size, &options)?;
        let (weight, bias) = options.weight_bias(
            (out_channels, in_channels),
            &[kernel_size.0, kernel_size.1],
            out_channels,
            dtype,
            rng,
            backend,
        )?;
        Ok(Conv2d {
            weight,
            bias,
            params,
        })
    }

    /// The convolution parameters (stride, padding, dilation, groups).
    pub fn params(&self) -> Conv2dParams {
        self.params
    }
}

/// Options of a non-transposed convolution: `output_padding` must be zero.
fn checked_params<K: SpatialSize>(
    op: &'static str,
    in_ch: usize,
    out_ch: usize,
    kernel: K,
    options: &ConvOptions<K>,
) -> Result<Conv2dParams> {
    if options.output_padding.hw(0) != (0, 0) {
        return Err(Error::invalid(
            op,
            format!(
                "output_padding {:?} applies to transposed convolutions only",
                options.output_padding
            ),
        ));
    }
    options.params(op, in_ch, out_ch, kernel)
}

impl<B: Backend> Forward<B> for Conv2d<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let w = self.weight.value();
        let in_channels = w.shape()[1] * self.params.groups;
        batched("Conv2d", x, 4, in_channels, w.shape(), |x| {
            add_bias(x.conv2d(&w, &self.params)?, &self.bias)
        })
    }
}

/// 1-D convolution (PyTorch's `nn.Conv1d`): input `[N, C_in, L]` (or unbatched `[C_in, L]`),
/// `weight` `[C_out, C_in / groups, K]`, `bias` `[C_out]`. Computed as a 2-D convolution of a
/// height-1 image.
///
/// ```
/// use nabla_nn::{Conv1d, ConvOptions, Forward};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let conv = Conv1d::new(4, 6, 3, ConvOptions::default(), DType::F32, &mut Generator::new(0), &cpu)?;
/// assert_eq!(conv.forward(&Tensor::ones([2, 4, 10], DType::F32, &cpu)?)?.shape(), &[2, 6, 8]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct Conv1d<B: Backend> {
    /// `[out_channels, in_channels / groups, kernel_size]`.
    pub weight: Param<B>,
    /// `[out_channels]`, when the layer has a bias.
    pub bias: Option<Param<B>>,
    #[module(skip)]
    params: Conv2dParams,
}

impl<B: Backend> Conv1d<B> {
    /// A layer from `in_channels` to `out_channels` with a `kernel_size` kernel and PyTorch's default
    /// initialisation; `options.output_padding` must be zero.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: usize,
        options: ConvOptions<usize>,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let params = checked_params("Conv1d", in_channels, out_channels, kernel_size, &options)?;
        let (weight, bias) = options.weight_bias(
            (out_channels, in_channels),
            &[kernel_size],
            out_channels,
            dtype,
            rng,
            backend,
        )?;
        Ok(Conv1d {
            weight,
            bias,
            params,
        })
    }
}

impl<B: Backend> Forward<B> for Conv1d<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let w = self.weight.value();
        let in_channels = w.shape()[1] * self.params.groups;
        batched("Conv1d", x, 3, in_channels, w.shape(), |x| {
            let y = x.unsqueeze(2)?.conv2d(&w.unsqueeze(2)?, &self.params)?;
            add_bias(y.squeeze(2)?, &self.bias)
        })
    }
}

/// 2-D transposed convolution (PyTorch's `nn.ConvTranspose2d`, the gradient of `Conv2d` with respect
/// to its input): input `[N, C_in, H, W]` (or unbatched `[C_in, H, W]`), `weight` `[C_in, C_out /
/// groups, KH, KW]`, `bias` `[C_out]`. The output size is `(H - 1) * stride - 2 * padding + dilation *
/// (KH - 1) + output_padding + 1` (likewise for the width).
///
/// ```
/// use nabla_nn::{ConvOptions, ConvTranspose2d, Forward};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let opts = ConvOptions { stride: (2, 2), padding: (1, 1), output_padding: (1, 1), ..ConvOptions::default() };
/// let up = ConvTranspose2d::new(8, 4, (3, 3), opts, DType::F32, &mut Generator::new(0), &cpu)?;
/// assert_eq!(up.forward(&Tensor::ones([1, 8, 5, 5], DType::F32, &cpu)?)?.shape(), &[1, 4, 10, 10]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct ConvTranspose2d<B: Backend> {
    /// `[in_channels, out_channels / groups, kernel_h, kernel_w]`.
    pub weight: Param<B>,
    /// `[out_channels]`, when the layer has a bias.
    pub bias: Option<Param<B>>,
    #[module(skip)]
    params: Conv2dParams,
    #[module(skip)]
    output_padding: (usize, usize),
}

impl<B: Backend> ConvTranspose2d<B> {
    /// A layer from `in_channels` to `out_channels` with a `kernel_size` kernel and PyTorch's default
    /// initialisation (fans taken from the weight shape, as PyTorch does).
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: (usize, usize),
        options: ConvOptions<(usize, usize)>,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        const OP: &str = "ConvTranspose2d";
        let params = options.params(OP, in_channels, out_channels, kernel_size)?;
        let op = options.output_padding;
        let (s, d) = (params.stride, params.dilation);
        if (op.0 >= s.0 && op.0 >= d.0) || (op.1 >= s.1 && op.1 >= d.1) {
            return Err(Error::invalid(
                OP,
                format!(
                    "output_padding {op:?} must be smaller than either stride {s:?} or dilation {d:?}"
                ),
            ));
        }
        let (weight, bias) = options.weight_bias(
            (in_channels, out_channels),
            &[kernel_size.0, kernel_size.1],
            out_channels,
            dtype,
            rng,
            backend,
        )?;
        Ok(ConvTranspose2d {
            weight,
            bias,
            params,
            output_padding: op,
        })
    }

    /// The output spatial size for an input of spatial size `(h, w)`, or `None` when it would not be
    /// positive.
    pub fn output_size(&self, (h, w): (usize, usize)) -> Option<(usize, usize)> {
        let ws = self.weight.shape();
        let p = &self.params;
        let axis = |n: usize, s: usize, pad: usize, d: usize, k: usize, op: usize| {
            let full = n.checked_sub(1)? * s + d * (k - 1) + op + 1;
            full.checked_sub(2 * pad).filter(|&v| v > 0)
        };
        Some((
            axis(
                h,
                p.stride.0,
                p.padding.0,
                p.dilation.0,
                ws[2],
                self.output_padding.0,
            )?,
            axis(
                w,
                p.stride.1,
                p.padding.1,
                p.dilation.1,
                ws[3],
                self.output_padding.1,
            )?,
        ))
    }
}

impl<B: Backend> Forward<B> for ConvTranspose2d<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        const OP: &str = "ConvTranspose2d";
        let w = self.weight.value();
        batched(OP, x, 4, w.shape()[0], w.shape(), |x| {
            let hw = (x.shape()[2], x.shape()[3]);
            let out_hw = self.output_size(hw).ok_or_else(|| {
                Error::shapes(OP, x.shape(), w.shape()).with_hint(format!(
                    "the output of an input of spatial size {hw:?} would be empty with {:?} and \
                     output_padding {:?}",
                    self.params, self.output_padding
                ))
            })?;
            // The full (unpadded) transposed convolution, then PyTorch's window of it: `padding` cut
            // from both sides and `output_padding` added on the far side (zeros where the full output
            // ends). Cropping afterwards keeps every output_padding < max(stride, dilation) exact.
            let p = self.params;
            let (k, op) = ((w.shape()[2], w.shape()[3]), self.output_padding);
            let full = (
                (hw.0 - 1) * p.stride.0 + p.dilation.0 * (k.0 - 1) + 1,
                (hw.1 - 1) * p.stride.1 + p.dilation.1 * (k.1 - 1) + 1,
            );
            // A transposed convolution is a product for autocast, as PyTorch's `conv_transpose2d`.
            let unpadded = Conv2dParams {
                padding: (0, 0),
                ..nabla_tensor::autocast_conv_params(&p, x.dtype())
            };
            let mut y = x.conv2d_input_grad(&w, full, &unpadded)?;
            let extra = (
                op.0.saturating_sub(p.padding.0),
                op.1.saturating_sub(p.padding.1),
            );
            if extra != (0, 0) {
                y = y.pad(&[(0, 0), (0, 0), (0, extra.0), (0, extra.1)], 0.0)?;
            }
            let y = y
                .narrow(2, p.padding.0, out_hw.0)?
                .narrow(3, p.padding.1, out_hw.1)?;
            add_bias(y, &self.bias)
        })
    }
}
