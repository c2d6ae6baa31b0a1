//! Optimizer configs: plain structs with PyTorch's defaults that convert to and from JSON (for saved
//! states), and [`OptimOptions`], the config a parameter group holds.

use super::{
    AdagradConfig, AdamConfig, AdamaxConfig, LbfgsConfig, LionConfig, NAdamConfig, RAdamConfig,
    RmsPropConfig, SgdConfig,
};
use nabla_core::{Error, Result};
use serde_json::{Value, json};

/// A config field that round-trips through JSON.
pub(crate) trait JsonField: Sized {
    fn to_json(&self) -> Value;
    fn from_json(v: &Value, name: &str) -> Result<Self>;
}

fn missing(name: &str, what: &str) -> Error {
    Error::invalid(
        "Optimizer::load_state_dict",
        format!("hyper-parameter `{name}` is missing or not {what}"),
    )
}

impl JsonField for f64 {
    fn to_json(&self) -> Value {
        json!(self)
    }
    fn from_json(v: &Value, name: &str) -> Result<Self> {
        v.as_f64().ok_or_else(|| missing(name, "a number"))
    }
}

impl JsonField for usize {
    fn to_json(&self) -> Value {
        json!(self)
    }
    fn from_json(v: &Value, name: &str) -> Result<Self> {
        v.as_u64()
            .map(|x| x as usize)
            .ok_or_else(|| missing(name, "a count"))
    }
}

impl JsonField for bool {
    fn to_json(&self) -> Value {
        json!(self)
    }
    fn from_json(v: &Value, name: &str) -> Result<Self> {
        v.as_bool().ok_or_else(|| missing(name, "a bool"))
    }
}

impl JsonField for (f64, f64) {
    fn to_json(&self) -> Value {
        json!([self.0, self.1])
    }
    fn from_json(v: &Value, name: &str) -> Result<Self> {
        match v.as_array().map(Vec::as_slice) {
            Some([a, b]) => Ok((f64::from_json(a, name)?, f64::from_json(b, name)?)),
            _ => Err(missing(name, "a pair of numbers")),
        }
    }
}

impl<T: JsonField> JsonField for Option<T> {
    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_json)
    }
    fn from_json(v: &Value, name: &str) -> Result<Self> {
        if v.is_null() {
            Ok(None)
        } else {
            T::from_json(v, name).map(Some)
        }
    }
}

/// Declares a config struct with public fields, a `Default` with the given values, and JSON
/// conversion.
macro_rules! config_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$fmeta:meta])* pub $field:ident : $ty:ty = $default:expr,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $($field: $default,)* }
            }
        }

        impl $name {
            /// The hyper-parameters' names, in declaration order (PyTorch's argument order).
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];
        }

        impl $crate::optim::config::JsonField for $name {
            fn to_json(&self) -> serde_json::Value {
                let mut map = serde_json::Map::new();
                $(map.insert(
                    stringify!($field).to_string(),
                    $crate::optim::config::JsonField::to_json(&self.$field),
                );)*
                serde_json::Value::Object(map)
            }

            fn from_json(v: &serde_json::Value, _name: &str) -> nabla_core::Result<Self> {
                Ok($name {
                    $($field: $crate::optim::config::JsonField::from_json(
                        &v[stringify!($field)],
                        stringify!($field),
                    )?,)*
                })
            }
        }
    };
}
pub(crate) use config_struct;

/// Declares [`OptimOptions`] and its dispatch over every optimizer's config.
macro_rules! options {
    ($($(#[$vmeta:meta])* $variant:ident($config:ty) = $name:literal,)*) => {
        /// The hyper-parameters of one parameter group: the config of the optimizer that owns it.
        #[derive(Clone, Debug, PartialEq)]
        pub enum OptimOptions {
            $($(#[$vmeta])* $variant($config),)*
        }

        impl OptimOptions {
            fn base_name(&self) -> &'static str {
                match self { $(OptimOptions::$variant(_) => $name,)* }
            }

            fn lr_mut(&mut self) -> &mut f64 {
                match self { $(OptimOptions::$variant(c) => &mut c.lr,)* }
            }

            /// The learning rate.
            pub fn lr(&self) -> f64 {
                match self { $(OptimOptions::$variant(c) => c.lr,)* }
            }

            /// The hyper-parameters' names, in declaration order (PyTorch's argument order).
            pub fn field_names(&self) -> &'static [&'static str] {
                match self { $(OptimOptions::$variant(_) => <$config>::FIELDS,)* }
            }

            /// The config as JSON (field names as in the config structs).
            pub fn to_json(&self) -> Value {
                match self { $(OptimOptions::$variant(c) => JsonField::to_json(c),)* }
            }

            /// The config of optimizer `name` (as given by [`OptimOptions::name`]) from JSON.
            pub fn from_json(name: &str, v: &Value) -> Result<Self> {
                let base = if name == "AdamW" { "Adam" } else { name };
                match base {
                    $($name => Ok(OptimOptions::$variant(JsonField::from_json(v, name)?)),)*
                    _ => Err(Error::invalid(
                        "Optimizer::load_state_dict",
                        format!("unknown optimizer `{name}`"),
                    )),
                }
            }
        }
    };
}

options! {
    /// [`super::Sgd`].
    Sgd(SgdConfig) = "SGD",
    /// [`super::Adam`] and [`super::AdamW`].
    Adam(AdamConfig) = "Adam",
    /// [`super::Adamax`].
    Adamax(AdamaxConfig) = "Adamax",
    /// [`super::NAdam`].
    NAdam(NAdamConfig) = "NAdam",
    /// [`super::RAdam`].
    RAdam(RAdamConfig) = "RAdam",
    /// [`super::RmsProp`].
    RmsProp(RmsPropConfig) = "RMSprop",
    /// [`super::Adagrad`].
    Adagrad(AdagradConfig) = "Adagrad",
    /// [`super::Lion`].
    Lion(LionConfig) = "Lion",
    /// [`super::Lbfgs`].
    Lbfgs(LbfgsConfig) = "LBFGS",
}

impl OptimOptions {
    /// The optimizer's name, as PyTorch's class name (`"AdamW"` for Adam with decoupled decay).
    pub fn name(&self) -> &'static str {
        match self {
            OptimOptions::Adam(c) if c.decoupled_weight_decay => "AdamW",
            other => other.base_name(),
        }
    }

    /// Sets the learning rate.
    pub fn set_lr(&mut self, lr: f64) {
        *self.lr_mut() = lr;
    }

    /// The weight decay (0 for L-BFGS, which has none).
    pub fn weight_decay(&self) -> f64 {
        match self {
            OptimOptions::Sgd(c) => c.weight_decay,
            OptimOptions::Adam(c) => c.weight_decay,
            OptimOptions::Adamax(c) => c.weight_decay,
            OptimOptions::NAdam(c) => c.weight_decay,
            OptimOptions::RAdam(c) => c.weight_decay,
            OptimOptions::RmsProp(c) => c.weight_decay,
            OptimOptions::Adagrad(c) => c.weight_decay,
            OptimOptions::Lion(c) => c.weight_decay,
            OptimOptions::Lbfgs(_) => 0.0,
        }
    }
}

/// Implements the boilerplate of [`super::Rule`] for a config: its [`OptimOptions`] variant, name and
/// `maximize` flag.
macro_rules! rule_boilerplate {
    ($variant:ident, $name:expr) => {
        fn name(&self) -> &'static str {
            $name(self)
        }
        fn maximize(&self) -> bool {
            self.maximize
        }
        fn wrap(self) -> $crate::optim::OptimOptions {
            $crate::optim::OptimOptions::$variant(self)
        }
        fn unwrap(options: &$crate::optim::OptimOptions) -> Option<&Self> {
            match options {
                $crate::optim::OptimOptions::$variant(c) => Some(c),
                _ => None,
            }
        }
    };
}
pub(crate) use rule_boilerplate;
