//! Normalisation layers: `BatchNorm1d`, `BatchNorm2d`, `GroupNorm` and `RMSNorm`.
//!
//! Their scales start at one and their shifts at zero (PyTorch's `reset_parameters`), so unlike the
//! other layers their constructors draw nothing and take no random generator.

use super::batch_norm_fused;
use super::conv::per_channel;
use crate::module::{Forward, Module, join_name};
use crate::param::Param;
use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::Tensor;

/// An optional `(weight, bias)` pair.
type Affine<B> = (Option<Param<B>>, Option<Param<B>>);

/// `[n]` ones and zeros as a trainable `(weight, bias)` pair, when `affine`.
fn affine_params<B: Backend>(
    n: usize,
    affine: bool,
    dtype: DType,
    backend: &B,
) -> Result<Affine<B>> {
    if !affine {
        return Ok((None, None));
    }
    let weight = Param::new(Tensor::ones([n], dtype, backend)?)?;
    let bias = Param::new(Tensor::zeros([n], dtype, backend)?)?;
    Ok((Some(weight), Some(bias)))
}

/// `y * weight + bias` over the channel axis (axis 1), for the parameters that exist.
fn channel_affine<B: Backend>(
    y: Tensor<B>,
    weight: &Option<Param<B>>,
    bias: &Option<Param<B>>,
) -> Result<Tensor<B>> {
    let rank = y.rank();
    let y = match weight {
        Some(w) => y.mul(per_channel(&w.value(), rank)?)?,
        None => y,
    };
    match bias {
        Some(b) => y.add(per_channel(&b.value(), rank)?),
        None => Ok(y),
    }
}

/// Batch normalisation over the channel axis 1 of `[N, C, *]` with `D` spatial axes (PyTorch's
/// `nn.BatchNorm1d` for `D = 1`, input `[N, C]` or `[N, C, L]`, and `nn.BatchNorm2d` for `D = 2`,
/// input `[N, C, H, W]`).
///
/// In training mode (the default; see [`Module::set_training`]) it normalises with the batch mean and
/// the biased batch variance, and, when `track_running_stats`, updates the buffers `running_mean`
/// and `running_var` (with the *unbiased* variance) as `(1 - momentum) * running + momentum * batch`,
/// where `momentum: None` means the cumulative average `1 / num_batches_tracked`. In eval mode it
/// normalises with the running statistics (or the batch's, when it tracks none). `weight` starts at
/// ones and `bias` at zeros.
///
/// ```
/// use nabla_nn::{BatchNorm1d, Forward, Module};
/// use nabla_core::DType;
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let mut bn = BatchNorm1d::new(2, 1e-5, Some(0.1), true, true, DType::F64, &cpu)?;
/// let x = Tensor::from_vec(vec![1.0f64, 10.0, 3.0, 20.0], [2, 2], &cpu)?;
/// bn.forward(&x)?;
/// let rm = bn.running_mean.as_ref().unwrap().data().to_vec::<f64>()?;
/// assert!((rm[0] - 0.2).abs() < 1e-12 && (rm[1] - 1.5).abs() < 1e-12);
/// bn.eval();
/// assert_eq!(bn.forward(&x)?.shape(), &[2, 2]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct BatchNorm<B: Backend, const D: usize> {
    /// Per-channel scale `[C]`, when `affine`.
    pub weight: Option<Param<B>>,
    /// Per-channel shift `[C]`, when `affine`.
    pub bias: Option<Param<B>>,
    /// Buffer `[C]`, when `track_running_stats`.
    pub running_mean: Option<Param<B>>,
    /// Buffer `[C]`, when `track_running_stats`.
    pub running_var: Option<Param<B>>,
    /// Buffer: an `i64` scalar counting the training batches seen, when `track_running_stats`.
    pub num_batches_tracked: Option<Param<B>>,
    /// `C`.
    pub num_features: usize,
    /// Added to the variance before the square root.
    pub eps: f64,
    /// Weight of the new batch in the running statistics; `None` is the cumulative average.
    pub momentum: Option<f64>,
    training: bool,
}

/// `nn.BatchNorm1d`: input `[N, C]` or `[N, C, L]`.
pub type BatchNorm1d<B> = BatchNorm<B, 1>;
/// `nn.BatchNorm2d`: input `[N, C, H, W]`.
pub type BatchNorm2d<B> = BatchNorm<B, 2>;

impl<B: Backend, const D: usize> BatchNorm<B, D> {
    const OP: &'static str = match D {
        1 => "BatchNorm1d",
        2 => "BatchNorm2d",
        3 => "BatchNorm3d",
        _ => "BatchNorm",
    };

    /// A layer for `num_features` channels with PyTorch's arguments (defaults `eps = 1e-5`,
    /// `momentum = Some(0.1)`, `affine = true`, `track_running_stats = true`), in training mode.
    pub fn new(
        num_features: usize,
        eps: f64,
        momentum: Option<f64>,
        affine: bool,
        track_running_stats: bool,
        dtype: DType,
        backend: &B,
    ) -> Result<Self> {
        if !dtype.is_float() || dtype.is_complex() || eps.is_nan() || eps < 0.0 {
            return Err(Error::invalid(
                Self::OP,
                format!("needs a real float dtype and eps >= 0, got {dtype:?} and eps {eps}"),
            ));
        }
        let (weight, bias) = affine_params(num_features, affine, dtype, backend)?;
        let (running_mean, running_var, num_batches_tracked) = if track_running_stats {
            (
                Some(Param::buffer(Tensor::zeros(
                    [num_features],
                    dtype,
                    backend,
                )?)),
                Some(Param::buffer(Tensor::ones([num_features], dtype, backend)?)),
                Some(Param::buffer(Tensor::scalar(0i64, DType::I64, backend)?)),
            )
        } else {
            (None, None, None)
        };
        Ok(BatchNorm {
            weight,
            bias,
            running_mean,
            running_var,
            num_batches_tracked,
            num_features,
            eps,
            momentum,
            training: true,
        })
    }

    /// `true` in training mode.
    pub fn is_training(&self) -> bool {
        self.training
    }

    fn check_input(&self, x: &Tensor<B>) -> Result<()> {
        let rank_ok = if D == 1 {
            x.rank() == 2 || x.rank() == 3
        } else {
            x.rank() == D + 2
        };
        let expected = match D {
            1 => "[N, C] or [N, C, L]".to_string(),
            _ => format!("of rank {} ([N, C, *])", D + 2),
        };
        if !rank_ok || x.shape()[1] != self.num_features {
            return Err(Error::invalid(
                Self::OP,
                format!(
                    "expected input {expected} with C = num_features = {}, got shape {:?}",
                    self.num_features,
                    x.shape()
                ),
            ));
        }
        Ok(())
    }

    /// The layer (and the ReLU after it when `relu`) with the batch statistics as one fused op (see
    /// [`batch_norm_fused`]), updating the running statistics in training; `None` where the fused
    /// op does not apply (other backends and dtypes, or an empty input). `n` is the number of values
    /// per channel.
    fn fused_forward(&self, x: &Tensor<B>, n: usize, relu: bool) -> Result<Option<Tensor<B>>> {
        let (weight, bias) = (
            self.weight.as_ref().map(Param::value),
            self.bias.as_ref().map(Param::value),
        );
        let kernels = batch_norm_fused::applies(x, weight.iter().chain(&bias));
        let Some(kernels) = kernels.filter(|_| x.numel() > 0) else {
            return Ok(None);
        };
        let c = [self.num_features];
        let w = weight.map_or_else(|| Tensor::ones(c, x.dtype(), x.backend()), Ok)?;
        let b = bias.map_or_else(|| Tensor::zeros(c, x.dtype(), x.backend()), Ok)?;
        let out = batch_norm_fused::batch_norm(kernels, x, &w, &b, self.eps, relu)?;
        if self.training {
            self.update_running(&out.mean, &out.var, n)?;
        }
        Ok(Some(out.y))
    }

    /// Folds the batch statistics (`[1, C, 1, ...]`, biased variance over `n` values) into the
    /// running statistics, untracked.
    fn update_running(&self, mean: &Tensor<B>, var: &Tensor<B>, n: usize) -> Result<()> {
        let (Some(rm), Some(rv), Some(nbt)) = (
            &self.running_mean,
            &self.running_var,
            &self.num_batches_tracked,
        ) else {
            return Ok(());
        };
        // Tensor ops only, no read of the count on the host, so that the update also runs inside
        // a traced program.
        let count = nbt.data().add(1i64)?;
        nbt.set(count.clone())?;
        let c = [self.num_features];
        let unbiased = var.detach().reshape(c)?.mul(n as f64 / (n - 1) as f64)?;
        let mean = mean.detach().reshape(c)?;
        match self.momentum {
            Some(f) => {
                rm.set(rm.data().mul(1.0 - f)?.add(mean.mul(f)?)?)?;
                rv.set(rv.data().mul(1.0 - f)?.add(unbiased.mul(f)?)?)
            }
            // The cumulative average: `f = 1 / count`, computed in f64 as the scalar form was.
            None => {
                let f = count.cast(DType::F64)?.recip()?;
                let keep = f.neg()?.add(1.0)?;
                let dtype = rm.dtype();
                let fold = |old: Tensor<B>, new: &Tensor<B>| -> Result<Tensor<B>> {
                    old.cast(DType::F64)?
                        .mul(&keep)?
                        .add(new.cast(DType::F64)?.mul(&f)?)?
                        .cast(dtype)
                };
                rm.set(fold(rm.data(), &mean)?)?;
                rv.set(fold(rv.data(), &unbiased)?)
            }
        }
    }
}

impl<B: Backend, const D: usize> Module<B> for BatchNorm<B, D> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        let entries = [
            ("weight", &self.weight),
            ("bias", &self.bias),
            ("running_mean", &self.running_mean),
            ("running_var", &self.running_var),
            ("num_batches_tracked", &self.num_batches_tracked),
        ];
        for (name, p) in entries {
            if let Some(p) = p {
                visitor(&join_name(prefix, name), p);
            }
        }
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
}

impl<B: Backend, const D: usize> Forward<B> for BatchNorm<B, D> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        self.normalize(x, false)
    }
}

impl<B: Backend, const D: usize> BatchNorm<B, D> {
    /// `relu(self.forward(x))`, with the ReLU in the same pass as the normalisation where the
    /// layer runs as a fused op (training on the CPU; PyTorch's `BNReLU2d` module does the same
    /// fusion), so that the pair reads and writes its activations once each way.
    ///
    /// ```
    /// use nabla_nn::{BatchNorm2d, Forward};
    /// use nabla_core::{DType, Generator};
    /// use nabla_cpu::CpuBackend;
    /// use nabla_tensor::Tensor;
    /// let cpu = CpuBackend::new();
    /// let bn = BatchNorm2d::new(3, 1e-5, Some(0.1), true, true, DType::F32, &cpu)?;
    /// let x = Tensor::randn([4, 3, 5, 5], DType::F32, &mut Generator::new(0), &cpu)?;
    /// let y = bn.forward_relu(&x)?;
    /// assert!(y.to_vec::<f32>()?.iter().all(|&v| v >= 0.0));
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn forward_relu(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        self.normalize(x, true)
    }

    /// The layer's output, followed by a ReLU when `relu`.
    fn normalize(&self, x: &Tensor<B>, relu: bool) -> Result<Tensor<B>> {
        self.check_input(x)?;
        let rank = x.rank();
        let (mean, var) = match (&self.running_mean, &self.running_var) {
            (Some(rm), Some(rv)) if !self.training => (
                per_channel(&rm.value(), rank)?,
                per_channel(&rv.value(), rank)?,
            ),
            _ => {
                let axes: Vec<isize> = (0..rank as isize).filter(|&a| a != 1).collect();
                let n = x.numel() / self.num_features.max(1);
                if self.training && n <= 1 {
                    return Err(Error::invalid(
                        Self::OP,
                        format!(
                            "expected more than 1 value per channel when training, got input shape {:?}",
                            x.shape()
                        ),
                    ));
                }
                if let Some(y) = self.fused_forward(x, n, relu)? {
                    return Ok(y);
                }
                let mean = x.mean(&axes, true)?;
                let var = x.sub(&mean)?.square()?.mean(&axes, true)?;
                if self.training {
                    self.update_running(&mean, &var, n)?;
                }
                (mean, var)
            }
        };
        let y = x.sub(mean)?.mul(var.add(self.eps)?.rsqrt()?)?;
        let y = channel_affine(y, &self.weight, &self.bias)?;
        if relu { y.relu() } else { Ok(y) }
    }
}

/// Group normalisation (PyTorch's `nn.GroupNorm`): the `C` channels of `[N, C, *]` are split into
/// `num_groups` groups, each normalised over its channels and spatial positions (biased variance),
/// then scaled by `weight` `[C]` and shifted by `bias` `[C]` when `affine`.
///
/// ```
/// use nabla_nn::{Forward, GroupNorm};
/// use nabla_core::DType;
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let gn = GroupNorm::new(2, 4, 1e-5, true, DType::F32, &cpu)?;
/// assert_eq!(gn.forward(&Tensor::ones([3, 4, 5, 5], DType::F32, &cpu)?)?.shape(), &[3, 4, 5, 5]);
/// assert!(GroupNorm::new(3, 4, 1e-5, true, DType::F32, &cpu).is_err());
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct GroupNorm<B: Backend> {
    /// Per-channel scale `[C]`, when `affine`.
    pub weight: Option<Param<B>>,
    /// Per-channel shift `[C]`, when `affine`.
    pub bias: Option<Param<B>>,
    /// Number of groups.
    pub num_groups: usize,
    /// `C`.
    pub num_channels: usize,
    /// Added to the variance before the square root.
    pub eps: f64,
}

impl<B: Backend> GroupNorm<B> {
    /// A layer with PyTorch's arguments (defaults `eps = 1e-5`, `affine = true`);
    /// `num_channels` must be divisible by `num_groups`.
    pub fn new(
        num_groups: usize,
        num_channels: usize,
        eps: f64,
        affine: bool,
        dtype: DType,
        backend: &B,
    ) -> Result<Self> {
        if num_groups == 0 || !num_channels.is_multiple_of(num_groups) {
            return Err(Error::invalid(
                "GroupNorm",
                format!("num_channels {num_channels} must be divisible by num_groups {num_groups}"),
            ));
        }
        let (weight, bias) = affine_params(num_channels, affine, dtype, backend)?;
        Ok(GroupNorm {
            weight,
            bias,
            num_groups,
            num_channels,
            eps,
        })
    }
}

impl<B: Backend> Forward<B> for GroupNorm<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        if x.rank() < 2 || x.shape()[1] != self.num_channels {
            return Err(Error::invalid(
                "GroupNorm",
                format!(
                    "expected input [N, C, *] with C = num_channels = {}, got shape {:?}",
                    self.num_channels,
                    x.shape()
                ),
            ));
        }
        let per_group =
            x.shape()[2..].iter().product::<usize>() * (self.num_channels / self.num_groups);
        let grouped = x.reshape([x.shape()[0], self.num_groups, per_group])?;
        let y = grouped.layer_norm(&[2], self.eps)?.reshape(x.shape())?;
        channel_affine(y, &self.weight, &self.bias)
    }
}

/// The machine epsilon of a float dtype (`torch.finfo(dtype).eps`).
fn machine_eps(op: &'static str, dtype: DType) -> Result<f64> {
    match dtype {
        DType::F64 => Ok(f64::EPSILON),
        DType::F32 => Ok(f32::EPSILON as f64),
        DType::F16 => Ok(2f64.powi(-10)),
        DType::BF16 => Ok(2f64.powi(-7)),
        other => Err(Error::dtype(op, other)),
    }
}

/// Root-mean-square normalisation (PyTorch's `nn.RMSNorm`): `x / sqrt(mean(x²) + eps) * weight`, the
/// mean taken over the trailing `normalized_shape` axes; `eps: None` is the machine epsilon of the
/// input's dtype. `weight` (`normalized_shape`, ones) exists when `elementwise_affine`.
///
/// ```
/// use nabla_nn::{Forward, RMSNorm};
/// use nabla_core::DType;
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let norm = RMSNorm::new(&[2], Some(0.0), true, DType::F64, &cpu)?;
/// let y = norm.forward(&Tensor::from_vec(vec![3.0f64, 4.0], [1, 2], &cpu)?)?;
/// let r = (12.5f64).sqrt();
/// assert_eq!(y.to_vec::<f64>()?, vec![3.0 / r, 4.0 / r]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct RMSNorm<B: Backend> {
    /// Elementwise scale of shape `normalized_shape`, when `elementwise_affine`.
    pub weight: Option<Param<B>>,
    /// The trailing shape normalised over.
    #[module(skip)]
    pub normalized_shape: Vec<usize>,
    /// Added to the mean square; `None` is the dtype's machine epsilon.
    pub eps: Option<f64>,
}

impl<B: Backend> RMSNorm<B> {
    /// A layer with PyTorch's arguments (defaults `eps = None`, `elementwise_affine = true`).
    pub fn new(
        normalized_shape: &[usize],
        eps: Option<f64>,
        elementwise_affine: bool,
        dtype: DType,
        backend: &B,
    ) -> Result<Self> {
        if normalized_shape.is_empty() || eps.is_some_and(|e| e.is_nan() || e < 0.0) {
            return Err(Error::invalid(
                "RMSNorm",
                format!(
                    "needs a non-empty normalized_shape and eps >= 0, got {normalized_shape:?} and {eps:?}"
                ),
            ));
        }
        let weight = if elementwise_affine {
            Some(Param::new(Tensor::ones(
                normalized_shape.to_vec(),
                dtype,
                backend,
            )?)?)
        } else {
            None
        };
        Ok(RMSNorm {
            weight,
            normalized_shape: normalized_shape.to_vec(),
            eps,
        })
    }
}

impl<B: Backend> Forward<B> for RMSNorm<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        const OP: &str = "RMSNorm";
        let k = self.normalized_shape.len();
        if x.rank() < k || x.shape()[x.rank() - k..] != self.normalized_shape[..] {
            return Err(Error::invalid(
                OP,
                format!(
                    "the input's trailing dimensions must be normalized_shape {:?}, got shape {:?}",
                    self.normalized_shape,
                    x.shape()
                ),
            ));
        }
        let eps = match self.eps {
            Some(e) => e,
            None => machine_eps(OP, x.dtype())?,
        };
        let axes: Vec<isize> = (-(k as isize)..0).collect();
        let y = x.mul(x.square()?.mean(&axes, true)?.add(eps)?.rsqrt()?)?;
        match &self.weight {
            Some(w) => y.mul(w.value()),
            None => Ok(y),
        }
    }
}
