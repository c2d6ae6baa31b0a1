//! Gradient clipping by total norm or by value (PyTorch's `clip_grad_norm_` and `clip_grad_value_`).

use super::GradMap;
use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::Tensor;

/// The `norm_type`-norm of one gradient, on its device: in f64 for f64 gradients, otherwise in f32
/// (as PyTorch computes it; backends without f64, such as wgpu, hold f32).
fn norm<B: Backend>(g: &Tensor<B>, norm_type: f64) -> Result<f64> {
    let wide = if g.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let a = g.detach().cast(wide)?.abs()?;
    if a.numel() == 0 {
        return Ok(0.0);
    }
    if norm_type == f64::INFINITY {
        read(&a.max_all()?)
    } else if norm_type == 2.0 {
        Ok(read(&a.square()?.sum_all()?)?.sqrt())
    } else if norm_type == 1.0 {
        read(&a.sum_all()?)
    } else {
        Ok(read(&a.pow(norm_type)?.sum_all()?)?.powf(norm_type.recip()))
    }
}

/// The value of a one-element tensor, as f64.
fn read<B: Backend>(t: &Tensor<B>) -> Result<f64> {
    Ok(t.to_f64_vec()?[0])
}

/// The total norm of `norms` (each gradient's norm), as PyTorch: the norm of the vector of norms.
fn combine(norms: &[f64], norm_type: f64) -> f64 {
    if norm_type == f64::INFINITY {
        norms.iter().copied().fold(0.0, f64::max)
    } else {
        norms
            .iter()
            .map(|n| n.powf(norm_type))
            .sum::<f64>()
            .powf(norm_type.recip())
    }
}

/// Rescales the gradients so that their total `norm_type`-norm (2.0, 1.0, any p > 0, or
/// `f64::INFINITY`) is at most `max_norm`, and returns the total norm before clipping. As PyTorch's
/// `clip_grad_norm_`, every gradient is multiplied by `min(max_norm / (total + 1e-6), 1)`.
///
/// ```
/// use nabla_nn::optim::{GradMap, clip_grad_norm};
/// use nabla_nn::Param;
/// use nabla_tensor::Tensor;
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let w = Param::new(Tensor::from_vec(vec![0.0f64; 2], [2], &cpu)?)?;
/// let mut grads = GradMap::new();
/// grads.insert(w.id(), Tensor::from_vec(vec![3.0f64, 4.0], [2], &cpu)?);
/// let total = clip_grad_norm(&mut grads, 1.0, 2.0)?;
/// assert_eq!(total, 5.0);
/// let g = grads.get(w.id()).unwrap().to_vec::<f64>()?;
/// assert!((g[0] - 0.6).abs() < 1e-6 && (g[1] - 0.8).abs() < 1e-6);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn clip_grad_norm<B: Backend>(
    grads: &mut GradMap<B>,
    max_norm: f64,
    norm_type: f64,
) -> Result<f64> {
    clip_grad_norm_opts(grads, max_norm, norm_type, false)
}

/// [`clip_grad_norm`] with PyTorch's `error_if_nonfinite`: when set, a NaN or infinite total norm is an
/// error (and nothing is changed).
pub fn clip_grad_norm_opts<B: Backend>(
    grads: &mut GradMap<B>,
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<f64> {
    let grads = grads.iter_mut().map(|(_, g)| g).collect();
    clip_norm(grads, max_norm, norm_type, error_if_nonfinite)
}

/// [`clip_grad_norm_opts`] over plain gradient tensors (what a binding whose parameters keep their
/// own `.grad` holds): rescales them in place and returns their total norm before clipping.
///
/// ```
/// # use nabla_nn::optim::clip_grad_norm_tensors; use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let mut g = [Tensor::from_vec(vec![3.0f64, 4.0], [2], &CpuBackend::new())?];
/// assert_eq!(clip_grad_norm_tensors(&mut g, 1.0, 2.0, false)?, 5.0);
/// assert!((g[0].to_vec::<f64>()?[0] - 0.6).abs() < 1e-6);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn clip_grad_norm_tensors<B: Backend>(
    grads: &mut [Tensor<B>],
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<f64> {
    clip_norm(
        grads.iter_mut().collect(),
        max_norm,
        norm_type,
        error_if_nonfinite,
    )
}

fn clip_norm<B: Backend>(
    mut grads: Vec<&mut Tensor<B>>,
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<f64> {
    const OP: &str = "clip_grad_norm";
    if norm_type.is_nan() || norm_type <= 0.0 {
        return Err(Error::invalid(
            OP,
            format!("norm_type must be positive (or infinity), got {norm_type}"),
        ));
    }
    if grads.is_empty() {
        return Ok(0.0);
    }
    let norms = grads
        .iter()
        .map(|g| norm(g, norm_type))
        .collect::<Result<Vec<_>>>()?;
    let total = combine(&norms, norm_type);
    if error_if_nonfinite && !total.is_finite() {
        return Err(Error::invalid(
            OP,
            format!(
                "the total norm of order {norm_type} of the gradients is {total}, so they cannot be clipped"
            ),
        )
        .with_hint("pass error_if_nonfinite = false to clip anyway"));
    }
    // `f64::min` would turn a NaN coefficient into 1; PyTorch's clamp keeps it.
    let coef = max_norm / (total + 1e-6);
    let coef = if coef.is_nan() { coef } else { coef.min(1.0) };
    for g in grads.iter_mut() {
        **g = g.mul(coef)?;
    }
    Ok(total)
}

/// Clamps every gradient element to `[-clip, clip]` (PyTorch's `clip_grad_value_`).
pub fn clip_grad_value<B: Backend>(grads: &mut GradMap<B>, clip: f64) -> Result<()> {
    clip_value(grads.iter_mut().map(|(_, g)| g), clip)
}

/// [`clip_grad_value`] over plain gradient tensors, in place.
pub fn clip_grad_value_tensors<B: Backend>(grads: &mut [Tensor<B>], clip: f64) -> Result<()> {
    clip_value(grads.iter_mut(), clip)
}

fn clip_value<'a, B: Backend>(
    grads: impl Iterator<Item = &'a mut Tensor<B>>,
    clip: f64,
) -> Result<()> {
    if clip.is_nan() || clip < 0.0 {
        return Err(Error::invalid(
            "clip_grad_value",
            format!("clip_value must be non-negative, got {clip}"),
        ));
    }
    for g in grads {
        *g = g.clamp(-clip, clip)?;
    }
    Ok(())
}
