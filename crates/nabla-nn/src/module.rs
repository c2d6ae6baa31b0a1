//! The `Module` trait: a tree of parameters and sub-modules with PyTorch-style dotted names.

use crate::param::{Param, ParamKind};
use nabla_core::{Backend, Result};
use nabla_tensor::Tensor;

/// Joins a parent's name and a child's: `join_name("encoder", "weight") == "encoder.weight"`, and
/// `join_name("", "weight") == "weight"`.
pub fn join_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else if name.is_empty() {
        prefix.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// A model or a part of one: something that holds parameters (and buffers) and sub-modules.
///
/// Implement it with `#[derive(Module)]`, which visits every field under its name; `Vec`s name their
/// items `0`, `1`, ... and `Option`s are visited when set. The provided methods give PyTorch's module
/// API: named parameters, parameter counts, train/eval mode, freezing and state dicts.
///
/// ```
/// use nabla_nn::{Linear, Module, Param};
/// use nabla_core::{Backend, Generator, DType};
/// use nabla_cpu::CpuBackend;
///
/// #[derive(nabla_nn::Module)]
/// #[module(crate = nabla_nn)]
/// struct Mlp<B: Backend> {
///     hidden: Linear<B>,
///     out: Linear<B>,
///     #[module(skip)]
///     note: &'static str,
/// }
///
/// let cpu = CpuBackend::new();
/// let mut rng = Generator::new(0);
/// let mlp = Mlp {
///     hidden: Linear::new(4, 8, true, DType::F32, &mut rng, &cpu)?,
///     out: Linear::new(8, 2, true, DType::F32, &mut rng, &cpu)?,
///     note: "two layers",
/// };
/// let names: Vec<String> = mlp.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["hidden.weight", "hidden.bias", "out.weight", "out.bias"]);
/// assert_eq!(mlp.num_parameters(), 4 * 8 + 8 + 8 * 2 + 2);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub trait Module<B: Backend> {
    /// Calls `visitor` with the dotted name and handle of every parameter and buffer, depth first in
    /// declaration order, names starting with `prefix`.
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>));

    /// Switches training mode (dropout active, batch statistics) on or off, here and in every
    /// sub-module.
    fn set_training(&mut self, training: bool);

    /// Every trainable parameter with its dotted name (buffers left out), in declaration order.
    fn named_parameters(&self) -> Vec<(String, Param<B>)> {
        let mut out = Vec::new();
        self.visit("", &mut |name, p| {
            if p.kind() == ParamKind::Parameter {
                out.push((name.to_string(), p.clone()));
            }
        });
        out
    }

    /// Every trainable parameter, in declaration order, once each: a parameter shared by several
    /// layers (tied weights) is listed where it first appears, as PyTorch's `parameters()` does, so
    /// an optimizer updates it once.
    fn parameters(&self) -> Vec<Param<B>> {
        let mut seen = std::collections::HashSet::new();
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .filter(|p| seen.insert(p.id()))
            .collect()
    }

    /// Every buffer (state that is saved but not trained) with its dotted name.
    fn named_buffers(&self) -> Vec<(String, Param<B>)> {
        let mut out = Vec::new();
        self.visit("", &mut |name, p| {
            if p.kind() == ParamKind::Buffer {
                out.push((name.to_string(), p.clone()));
            }
        });
        out
    }

    /// Number of parameter elements (buffers not counted), like `sum(p.numel() for p in
    /// model.parameters())`.
    fn num_parameters(&self) -> usize {
        self.parameters().iter().map(Param::numel).sum()
    }

    /// Number of parameter elements that are trainable (not frozen).
    fn num_trainable_parameters(&self) -> usize {
        self.parameters()
            .iter()
            .filter(|p| p.is_trainable())
            .map(Param::numel)
            .sum()
    }

    /// Training mode on: `model.train()` in PyTorch.
    fn train(&mut self) {
        self.set_training(true);
    }

    /// Training mode off: `model.eval()` in PyTorch.
    fn eval(&mut self) {
        self.set_training(false);
    }

    /// Freezes every parameter: gradients no longer reach them and optimizers leave them unchanged.
    fn freeze(&self) {
        for p in self.parameters() {
            p.freeze();
        }
    }

    /// Freezes the parameters whose dotted names match the glob `pattern` (`*` any run of
    /// characters, dots included; `?` one character; `[...]` a class), for fine-tuning part of a
    /// loaded model: `"layer[12].*"`, `"*.bn*.weight"`, `"conv1.weight"`. Returns how many it froze;
    /// a malformed pattern, or one that matches no parameter (a typo would otherwise train
    /// everything), is an error naming it.
    ///
    /// ```
    /// use nabla_nn::{Linear, Module, Sequential};
    /// use nabla_core::{DType, Generator};
    /// use nabla_cpu::CpuBackend;
    /// let (cpu, rng) = (CpuBackend::new(), &mut Generator::new(0));
    /// let model = Sequential::new()
    ///     .push(Linear::new(4, 8, true, DType::F32, rng, &cpu)?)
    ///     .push(Linear::new(8, 2, true, DType::F32, rng, &cpu)?);
    /// assert_eq!(model.freeze_matching("0.*")?, 2);
    /// assert_eq!(model.num_trainable_parameters(), 8 * 2 + 2);
    /// assert!(model.freeze_matching("head.*").is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    fn freeze_matching(&self, pattern: &str) -> Result<usize> {
        let glob = glob::Pattern::new(pattern).map_err(|e| {
            nabla_core::Error::invalid("freeze_matching", format!("pattern {pattern:?}: {e}"))
        })?;
        let matched: Vec<Param<B>> = self
            .named_parameters()
            .into_iter()
            .filter(|(name, _)| glob.matches(name))
            .map(|(_, p)| p)
            .collect();
        if matched.is_empty() {
            return Err(nabla_core::Error::invalid(
                "freeze_matching",
                format!("pattern {pattern:?} matches no parameter"),
            ));
        }
        for p in &matched {
            p.freeze();
        }
        Ok(matched.len())
    }

    /// Unfreezes every parameter.
    fn unfreeze(&self) -> Result<()> {
        for p in self.parameters() {
            p.unfreeze()?;
        }
        Ok(())
    }

    /// Parameters and buffers by dotted name, in declaration order (PyTorch's `state_dict()`).
    fn state_dict(&self) -> Vec<(String, Tensor<B>)> {
        let mut out = Vec::new();
        self.visit("", &mut |name, p| out.push((name.to_string(), p.data())));
        out
    }
}

impl<B: Backend> Module<B> for Param<B> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        visitor(prefix, self);
    }

    fn set_training(&mut self, _training: bool) {}
}

impl<B: Backend, M: Module<B>> Module<B> for Vec<M> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        for (i, m) in self.iter().enumerate() {
            m.visit(&join_name(prefix, &i.to_string()), visitor);
        }
    }

    fn set_training(&mut self, training: bool) {
        for m in self {
            m.set_training(training);
        }
    }
}

impl<B: Backend, M: Module<B>> Module<B> for Option<M> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        if let Some(m) = self {
            m.visit(prefix, visitor);
        }
    }

    fn set_training(&mut self, training: bool) {
        if let Some(m) = self {
            m.set_training(training);
        }
    }
}

impl<B: Backend, M: Module<B> + ?Sized> Module<B> for Box<M> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        (**self).visit(prefix, visitor);
    }

    fn set_training(&mut self, training: bool) {
        (**self).set_training(training);
    }
}

/// Plain settings (sizes, rates, flags) hold no parameters: a derived module may keep them as fields.
macro_rules! settings_are_modules {
    ($($t:ty),*) => {$(
        impl<B: Backend> Module<B> for $t {
            fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Param<B>)) {}
            fn set_training(&mut self, _training: bool) {}
        }
    )*};
}

settings_are_modules!(
    bool,
    usize,
    isize,
    u32,
    i32,
    u64,
    i64,
    f32,
    f64,
    String,
    (usize, usize),
    nabla_core::DType
);

/// A module with one input and one output, so it can be chained in a [`crate::Sequential`].
pub trait Forward<B: Backend>: Module<B> {
    /// Applies the module to `x`.
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>>;

    /// What a [`crate::Sequential`] may assume of this layer when it reorders a pair of layers
    /// (see [`LayerAlgebra`]). The default, [`LayerAlgebra::Opaque`], promises nothing.
    fn algebra(&self) -> LayerAlgebra {
        LayerAlgebra::Opaque
    }
}

impl<B: Backend, M: Forward<B> + ?Sized> Forward<B> for Box<M> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        (**self).forward(x)
    }

    fn algebra(&self) -> LayerAlgebra {
        (**self).algebra()
    }
}

/// A property of a layer that lets a [`crate::Sequential`] run two neighbours in the cheaper order
/// when both orders give the same values and the same derivatives, bit for bit.
///
/// The one rewrite today: a [`CommutesWithMax`](LayerAlgebra::CommutesWithMax) layer followed by a
/// [`MaxOverWindows`](LayerAlgebra::MaxOverWindows) layer (ReLU then max pooling, as in most
/// convolutional networks) runs as pooling then ReLU, on the pooled tensor, a quarter of the size
/// for 2x2 windows. The order changes what runs, not what comes out: see the variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerAlgebra {
    /// Nothing is promised: the layer runs where it stands.
    Opaque,
    /// Elementwise, non-decreasing, `NaN` to `NaN`, positive values unchanged and the rest to `+0`
    /// with derivative 0 (ReLU). Then `f(max(window)) == max(f(window))` for every window, and the
    /// gradient reaches the same element: a positive or `NaN` maximum is picked at the same place
    /// in `x` as in `f(x)` (comparisons among positive values and `NaN` tests are unchanged by `f`),
    /// and a maximum of at most 0 gives a zero gradient in both orders.
    CommutesWithMax,
    /// Each output is the maximum of a window of its input, with the gradient to one picked element
    /// (max pooling; padding never wins).
    MaxOverWindows,
}
