//! Activations as modules, for [`crate::Sequential`] chains (`nn.ReLU()`, `nn.Tanh()`, ...), and the
//! shape helpers `Identity` and `Flatten`.

use crate::module::{Forward, LayerAlgebra, Module};
use crate::param::Param;
use nabla_core::{Backend, Result};
use nabla_tensor::Tensor;

/// Declares an activation type and implements `Module` (no parameters) and `Forward`
/// (`|m, x| body`) for it.
macro_rules! activation {
    ($(#[$doc:meta])* $name:ident, |$m:ident, $x:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name;
        activation!(@impl $name, |$m, $x| $body);
    };
    ($(#[$doc:meta])* $name:ident { $($field:ident : $ty:ty),* }, |$m:ident, $x:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name { $(#[doc = concat!("`", stringify!($field), "` as in PyTorch.")] pub $field: $ty),* }
        activation!(@impl $name, |$m, $x| $body);
    };
    (@impl $name:ident, |$m:ident, $x:ident| $body:expr) => {
        activation!(@impl $name, |$m, $x| $body, LayerAlgebra::Opaque);
    };
    (@impl $name:ident, |$m:ident, $x:ident| $body:expr, $algebra:expr) => {
        impl<B: Backend> Module<B> for $name {
            fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Param<B>)) {}
            fn set_training(&mut self, _training: bool) {}
        }

        impl<B: Backend> Forward<B> for $name {
            fn forward(&self, $x: &Tensor<B>) -> Result<Tensor<B>> {
                let $m = self;
                let _ = $m;
                $body
            }

            fn algebra(&self) -> LayerAlgebra {
                $algebra
            }
        }
    };
}

activation!(
    /// The identity: returns its input.
    Identity, |_m, x| Ok(x.clone())
);
/// `max(x, 0)` (`NaN` stays `NaN`). Followed by max pooling in a [`crate::Sequential`], it runs
/// after the pooling instead, on the smaller tensor, with the same values and derivatives (see
/// [`LayerAlgebra::CommutesWithMax`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReLU;
activation!(@impl ReLU, |_m, x| x.relu(), LayerAlgebra::CommutesWithMax);
activation!(
    /// `tanh(x)`.
    Tanh, |_m, x| x.tanh()
);
activation!(
    /// `1 / (1 + e^-x)`.
    Sigmoid, |_m, x| x.sigmoid()
);
activation!(
    /// `x * sigmoid(x)` (also called Swish).
    SiLU, |_m, x| x.silu()
);
activation!(
    /// GELU, exact (`approximate="none"`) or with the tanh approximation (`approximate="tanh"`).
    GELU { tanh_approximation: bool },
    |m, x| if m.tanh_approximation { x.gelu_tanh() } else { x.gelu() }
);
activation!(
    /// `x` for positive inputs, `negative_slope * x` otherwise (PyTorch's default slope is 0.01). As in
    /// PyTorch, the derivative at 0 is `negative_slope` (the tensor op `leaky_relu` follows JAX: 1).
    LeakyReLU { negative_slope: f64 },
    |m, x| x.gt(0.0)?.where_(x, x.mul(m.negative_slope)?)
);
activation!(
    /// `x` for positive inputs, `alpha * (e^x - 1)` otherwise (PyTorch's default alpha is 1).
    ELU { alpha: f64 },
    |m, x| x.elu(m.alpha)
);
activation!(
    /// `log(1 + e^(beta x)) / beta`, linear above `threshold` (PyTorch's defaults: beta 1, threshold 20).
    Softplus { beta: f64, threshold: f64 },
    |m, x| {
        let bx = x.mul(m.beta)?;
        let soft = bx.softplus()?.div(m.beta)?;
        let linear = bx.gt(m.threshold)?;
        linear.where_(x, &soft)
    }
);
activation!(
    /// Softmax over `dim`.
    Softmax { dim: isize },
    |m, x| x.softmax(m.dim)
);
activation!(
    /// Log-softmax over `dim`.
    LogSoftmax { dim: isize },
    |m, x| x.log_softmax(m.dim)
);
activation!(
    /// Flattens dimensions `start_dim..=end_dim` into one (PyTorch's defaults: 1 and -1).
    Flatten { start_dim: isize, end_dim: isize },
    |m, x| x.flatten(m.start_dim, m.end_dim)
);

impl Default for LeakyReLU {
    fn default() -> Self {
        LeakyReLU {
            negative_slope: 0.01,
        }
    }
}

impl Default for ELU {
    fn default() -> Self {
        ELU { alpha: 1.0 }
    }
}

impl Default for Softplus {
    fn default() -> Self {
        Softplus {
            beta: 1.0,
            threshold: 20.0,
        }
    }
}

impl Default for Flatten {
    fn default() -> Self {
        Flatten {
            start_dim: 1,
            end_dim: -1,
        }
    }
}
