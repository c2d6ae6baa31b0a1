//! Dynamic loss scaling for f16 mixed precision (PyTorch's `torch.amp.GradScaler`).
//!
//! Under `autocast(DType::F16)` the products of backward round their operands to f16, whose
//! smallest normal number is `2^-14`: small gradients flush to zero. Multiplying the loss by a large
//! factor before backward lifts them into range; the gradients are divided by it again before the
//! update. When a step's gradients overflow (an infinity or NaN), the update is skipped and the
//! factor shrinks; after `growth_interval` good steps in a row it grows again.
//!
//! ```
//! use nabla_core::DType;
//! use nabla_cpu::CpuBackend;
//! use nabla_nn::optim::{GradMap, GradScaler, GradScalerConfig, Optimizer, Sgd, SgdConfig};
//! use nabla_nn::Param;
//! use nabla_tensor::{Tensor, autocast};
//!
//! let cpu = CpuBackend::new();
//! let w = Param::new(Tensor::from_vec(vec![0.5f32, -1.0], [2, 1], &cpu)?)?;
//! let x = Tensor::from_vec(vec![1.0f32, 2.0], [1, 2], &cpu)?;
//! let mut opt = Sgd::new(vec![w.clone()], SgdConfig { lr: 0.1, ..Default::default() })?;
//! let loss = || -> nabla_core::Result<Tensor<CpuBackend>> {
//!     autocast(DType::F16, || x.matmul(&w.value())?.sum_all())??.mul(1e-7)
//! };
//! // The gradient with respect to w is 1e-7 x. Without scaling, the cotangent 1e-7 reaches the
//! // product's backward and rounds to f16's subnormal 2^-23 (1.19e-7): 19% off.
//! let plain = GradMap::from_gradients([&w], &loss()?.backward()?);
//! assert!((plain.get(w.id()).unwrap().to_vec::<f32>()?[0] - 1.1920929e-7).abs() < 1e-13);
//! // Held at 2^16 times its size it is a normal f16 number, and the unscaled gradient is right.
//! let mut scaler = GradScaler::new(GradScalerConfig::default())?;
//! let grads = scaler.scale(&loss()?)?.backward()?;
//! let unscaled = scaler.unscale(&opt, &grads)?;
//! assert!((unscaled.get(w.id()).unwrap().to_vec::<f32>()?[0] - 1e-7).abs() < 1e-10);
//! assert!(scaler.step_unscaled(&mut opt, &unscaled)?); // finite: the update ran
//! scaler.update();
//! # Ok::<(), nabla_core::Error>(())
//! ```

use super::{GradMap, Optimizer};
use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::{Gradients, Tensor};

/// The settings of a [`GradScaler`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradScalerConfig {
    /// The first scale factor (`2^16`).
    pub init_scale: f64,
    /// What the factor is multiplied by after `growth_interval` steps without overflow (2).
    pub growth_factor: f64,
    /// What the factor is multiplied by after a step whose gradients overflowed (0.5).
    pub backoff_factor: f64,
    /// Steps without overflow before the factor grows (2000).
    pub growth_interval: u64,
    /// Whether scaling happens at all: a disabled scaler passes the loss through unchanged and
    /// always steps (PyTorch's `enabled=False`, for one script that runs with and without f16).
    pub enabled: bool,
}

impl Default for GradScalerConfig {
    fn default() -> Self {
        GradScalerConfig {
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            enabled: true,
        }
    }
}

/// The part of a [`GradScaler`] that a checkpoint keeps: the factor and the count of steps since
/// the last overflow (PyTorch's `scale` and `_growth_tracker`), with the settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradScalerState {
    /// The settings.
    pub config: GradScalerConfig,
    /// The current scale factor.
    pub scale: f64,
    /// Steps without overflow since the factor last changed.
    pub growth_tracker: u64,
}

/// Where a [`GradScaler`] is within one iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Nothing unscaled since the last [`GradScaler::update`].
    Ready,
    /// The gradients were unscaled; whether any was infinite or NaN.
    Unscaled { found_inf: bool },
    /// The step ran or was skipped; whether it was skipped for an overflow.
    Stepped { found_inf: bool },
}

/// Dynamic loss scaling (see the [module docs](self)): [`GradScaler::scale`] the loss,
/// `backward`, [`GradScaler::step`] (which unscales, checks for overflow, and updates unless it
/// found one), then [`GradScaler::update`] the factor, once per iteration.
#[derive(Clone, Debug)]
pub struct GradScaler {
    state: GradScalerState,
    stage: Stage,
}

impl GradScaler {
    /// A scaler with `config`; an error names the setting that is out of range (a positive finite
    /// initial scale, a growth factor above 1, a backoff factor in (0, 1), an interval of at
    /// least 1).
    pub fn new(config: GradScalerConfig) -> Result<GradScaler> {
        const OP: &str = "GradScaler";
        let bad = |what: String| Err(Error::invalid(OP, what));
        if !(config.init_scale.is_finite() && config.init_scale > 0.0) {
            return bad(format!(
                "init_scale {} must be positive and finite",
                config.init_scale
            ));
        }
        if !(config.growth_factor.is_finite() && config.growth_factor > 1.0) {
            return bad(format!(
                "growth_factor {} must be above 1",
                config.growth_factor
            ));
        }
        if !(config.backoff_factor > 0.0 && config.backoff_factor < 1.0) {
            return bad(format!(
                "backoff_factor {} must be in (0, 1)",
                config.backoff_factor
            ));
        }
        if config.growth_interval == 0 {
            return bad("growth_interval must be at least 1".into());
        }
        Ok(GradScaler {
            state: GradScalerState {
                config,
                scale: config.init_scale,
                growth_tracker: 0,
            },
            stage: Stage::Ready,
        })
    }

    /// Whether the scaler scales (its `enabled` setting).
    pub fn is_enabled(&self) -> bool {
        self.state.config.enabled
    }

    /// The current scale factor (1 when disabled).
    pub fn scale_factor(&self) -> f64 {
        if self.is_enabled() {
            self.state.scale
        } else {
            1.0
        }
    }

    /// Sets the scale factor (PyTorch's `update(new_scale)`); an error for a factor that is not
    /// positive and finite.
    pub fn set_scale(&mut self, scale: f64) -> Result<()> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(Error::invalid(
                "GradScaler::set_scale",
                format!("the scale {scale} must be positive and finite"),
            ));
        }
        self.state.scale = scale;
        Ok(())
    }

    /// `loss` multiplied by the scale factor, to call `backward` on (the loss itself when disabled).
    pub fn scale<B: Backend>(&self, loss: &Tensor<B>) -> Result<Tensor<B>> {
        if !self.is_enabled() {
            return Ok(loss.clone());
        }
        loss.mul(self.state.scale)
    }

    /// The gradients of `optimizer`'s parameters in `grads`, divided by the scale factor, for
    /// clipping or inspection before [`GradScaler::step_unscaled`]; records whether any is infinite
    /// or NaN. An error when called twice in one iteration (before [`GradScaler::update`]), as
    /// PyTorch's `unscale_`.
    pub fn unscale<B: Backend, O: Optimizer<B> + ?Sized>(
        &mut self,
        optimizer: &O,
        grads: &Gradients<B>,
    ) -> Result<GradMap<B>> {
        let params = optimizer
            .param_groups()
            .iter()
            .flat_map(|g| g.params.iter());
        let mut map = GradMap::from_gradients(params, grads);
        self.unscale_grads(map.iter_mut().map(|(_, g)| g))?;
        Ok(map)
    }

    /// Divides each of `grads` by the scale factor in place and records whether any is infinite or
    /// NaN: [`GradScaler::unscale`] for gradients held outside a [`GradMap`] (the Python binding's
    /// `p.grad`). An error when called twice in one iteration.
    pub fn unscale_grads<'a, B: Backend + 'a>(
        &mut self,
        grads: impl IntoIterator<Item = &'a mut Tensor<B>>,
    ) -> Result<()> {
        if self.stage != Stage::Ready {
            return Err(Error::invalid(
                "GradScaler::unscale",
                "the gradients were already unscaled (or stepped) in this iteration; call update() first",
            ));
        }
        let mut found_inf = false;
        if self.is_enabled() {
            // The reciprocal in f64, applied in the gradient's own dtype (PyTorch rounds it to f32).
            let inverse = self.state.scale.recip();
            for g in grads {
                *g = g.mul(inverse)?;
                found_inf |= !all_finite(g)?;
            }
        }
        self.stage = Stage::Unscaled { found_inf };
        Ok(())
    }

    /// Unscales `grads` ([`GradScaler::unscale`]) and updates `optimizer` with them unless one
    /// was infinite or NaN; returns whether the update ran.
    pub fn step<B: Backend, O: Optimizer<B> + ?Sized>(
        &mut self,
        optimizer: &mut O,
        grads: &Gradients<B>,
    ) -> Result<bool> {
        let map = self.unscale(&*optimizer, grads)?;
        self.step_unscaled(optimizer, &map)
    }

    /// Updates `optimizer` with gradients that [`GradScaler::unscale`] returned in this iteration
    /// (clipped, say), unless that found an infinity or NaN; returns whether the update ran. An
    /// error without an `unscale` first, or after a step in the same iteration.
    pub fn step_unscaled<B: Backend, O: Optimizer<B> + ?Sized>(
        &mut self,
        optimizer: &mut O,
        grads: &GradMap<B>,
    ) -> Result<bool> {
        let finite = self.take_step()?;
        if finite {
            optimizer.step_with(grads)?;
        }
        Ok(finite)
    }

    /// Marks this iteration's step as taken and says whether the update should run (no infinity or
    /// NaN was found when unscaling): for a loop whose optimizer is not an [`Optimizer`]. An error
    /// without an unscale first, or after a step in the same iteration.
    pub fn take_step(&mut self) -> Result<bool> {
        let Stage::Unscaled { found_inf } = self.stage else {
            return Err(Error::invalid(
                "GradScaler::step",
                "call unscale() once in this iteration first (and update() after the step)",
            ));
        };
        self.stage = Stage::Stepped { found_inf };
        Ok(!found_inf)
    }

    /// Whether the gradients unscaled in this iteration held an infinity or NaN (`None` before
    /// they are unscaled).
    pub fn found_inf(&self) -> Option<bool> {
        match self.stage {
            Stage::Ready => None,
            Stage::Unscaled { found_inf } | Stage::Stepped { found_inf } => Some(found_inf),
        }
    }

    /// Ends the iteration: halves the factor (by `backoff_factor`) if this iteration's gradients
    /// overflowed, doubles it (by `growth_factor`, while it stays finite) after `growth_interval`
    /// iterations without overflow, and readies the scaler for the next iteration. An iteration
    /// that never unscaled changes nothing but the readiness.
    pub fn update(&mut self) {
        let found_inf = match self.stage {
            Stage::Ready => {
                return;
            }
            Stage::Unscaled { found_inf } | Stage::Stepped { found_inf } => found_inf,
        };
        self.stage = Stage::Ready;
        if !self.is_enabled() {
            return;
        }
        let s = &mut self.state;
        if found_inf {
            s.scale *= s.config.backoff_factor;
            s.growth_tracker = 0;
            return;
        }
        s.growth_tracker += 1;
        if s.growth_tracker == s.config.growth_interval {
            let grown = s.scale * s.config.growth_factor;
            if grown.is_finite() {
                s.scale = grown;
            }
            s.growth_tracker = 0;
        }
    }

    /// The factor, the growth count and the settings, for a checkpoint.
    pub fn state_dict(&self) -> GradScalerState {
        self.state
    }

    /// Restores a state from [`GradScaler::state_dict`]; an error (changing nothing) when its
    /// settings, scale or growth count (below `growth_interval`) are out of range.
    pub fn load_state_dict(&mut self, state: &GradScalerState) -> Result<()> {
        let mut checked = GradScaler::new(GradScalerConfig {
            init_scale: state.scale,
            ..state.config
        })?;
        if state.growth_tracker >= state.config.growth_interval {
            return Err(Error::invalid(
                "GradScaler::load_state_dict",
                format!(
                    "growth_tracker {} must be below growth_interval {}",
                    state.growth_tracker, state.config.growth_interval
                ),
            ));
        }
        checked.state = *state;
        *self = checked;
        Ok(())
    }
}

/// Whether every element of `g` is finite (true for an empty tensor).
fn all_finite<B: Backend>(g: &Tensor<B>) -> Result<bool> {
    let all = g.isfinite()?.all(&[], false)?.cast(DType::I64)?;
    Ok(all.to_vec::<i64>()?[0] == 1)
}

#[cfg(test)]
mod tests;
