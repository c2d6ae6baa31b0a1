//! The loss scaler of f16 mixed precision: `nabla_rs.amp.GradScaler` (in Python) keeps one of these,
//! `nabla::nn::optim::GradScaler`, for the factor, the overflow check and the growth schedule.

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use crate::value::Value;
use nabla_core::Error;
use nabla_nn::optim::{GradScaler, GradScalerConfig, GradScalerState};
use pyo3::prelude::*;

/// The Rust scaler behind `nabla_rs.amp.GradScaler`.
#[pyclass(module = "nabla_rs", name = "_GradScaler")]
pub struct PyGradScaler {
    inner: GradScaler,
}

#[pymethods]
impl PyGradScaler {
    #[new]
    #[pyo3(signature = (init_scale, growth_factor, backoff_factor, growth_interval, enabled))]
    fn py_new(
        init_scale: f64,
        growth_factor: f64,
        backoff_factor: f64,
        growth_interval: u64,
        enabled: bool,
    ) -> PyResult<Self> {
        let config = GradScalerConfig {
            init_scale,
            growth_factor,
            backoff_factor,
            growth_interval,
            enabled,
        };
        Ok(PyGradScaler {
            inner: GradScaler::new(config).py()?,
        })
    }

    /// The current factor (1.0 when disabled).
    fn get_scale(&self) -> f64 {
        self.inner.scale_factor()
    }

    fn is_enabled(&self) -> bool {
        self.inner.is_enabled()
    }

    /// The gradients divided by the factor; records whether any is infinite or NaN.
    fn unscale_grads(&mut self, grads: Vec<PyRef<'_, PyTensor>>) -> PyResult<Vec<PyTensor>> {
        let mut eager = grads
            .iter()
            .map(|g| match &g.value {
                Value::Eager(e) => Ok(e.detach()),
                Value::Traced(_) => Err(Error::invalid(
                    "GradScaler.unscale_",
                    "gradients inside jit or vmap cannot be unscaled",
                )),
            })
            .collect::<nabla_core::Result<Vec<_>>>()
            .py()?;
        self.inner.unscale_grads(eager.iter_mut()).py()?;
        Ok(eager.into_iter().map(PyTensor::eager).collect())
    }

    /// Whether the unscaled gradients held an infinity or NaN (`None` before unscaling).
    fn found_inf(&self) -> Option<bool> {
        self.inner.found_inf()
    }

    /// Marks the step as taken; `True` when the update should run.
    fn take_step(&mut self) -> PyResult<bool> {
        self.inner.take_step().py()
    }

    /// Ends the iteration: backoff or growth of the factor.
    fn update(&mut self) {
        self.inner.update();
    }

    fn set_scale(&mut self, scale: f64) -> PyResult<()> {
        self.inner.set_scale(scale).py()
    }

    /// `(scale, growth_factor, backoff_factor, growth_interval, growth_tracker, enabled)`.
    fn state(&self) -> (f64, f64, f64, u64, u64, bool) {
        let s = self.inner.state_dict();
        let c = s.config;
        (
            s.scale,
            c.growth_factor,
            c.backoff_factor,
            c.growth_interval,
            s.growth_tracker,
            c.enabled,
        )
    }

    /// Restores a [`PyGradScaler::state`]; an error (changing nothing) for one out of range.
    fn load_state(&mut self, state: (f64, f64, f64, u64, u64, bool)) -> PyResult<()> {
        let (scale, growth_factor, backoff_factor, growth_interval, growth_tracker, enabled) =
            state;
        let state = GradScalerState {
            config: GradScalerConfig {
                init_scale: scale,
                growth_factor,
                backoff_factor,
                growth_interval,
                enabled,
            },
            scale,
            growth_tracker,
        };
        self.inner.load_state_dict(&state).py()
    }
}
