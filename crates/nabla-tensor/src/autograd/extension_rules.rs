//! The derivative rules of extension ops as data: the rule types, a rule set ([`ExtensionRules`]), a
//! family that provides one ([`ExtensionFamily`]) and the record a graph node keeps of an extension
//! op with the rules bound to it ([`BoundExtension`]). Nothing here records or differentiates: the
//! graph's op record (module `op`) holds these, and the module `extension` applies and runs them.

use crate::Tensor;
use nabla_core::{Backend, Error, ExtensionOp, Result};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};

/// What a derivative rule of an extension op sees: the op (with its parameters), its inputs and its
/// output. When the derivative is itself differentiated (higher order), these tensors are tracked, so
/// rules must be written in differentiable tensor ops (extension ops included).
pub struct RuleArgs<'a, B: Backend> {
    /// The op that ran; downcast with [`ExtensionOp::as_any`] to read its parameters.
    pub op: &'a dyn ExtensionOp,
    /// Its inputs, in call order.
    pub inputs: &'a [Tensor<B>],
    /// Its output.
    pub output: &'a Tensor<B>,
}

/// A reverse (vector-Jacobian product) rule: given the output cotangent, the cotangent of each input
/// (`None` for an input that gets none). `needs[i]` is false for inputs nobody asked about; the rule
/// may return `None` for them.
pub type ReverseRule<B> = Arc<
    dyn Fn(&RuleArgs<'_, B>, &Tensor<B>, &[bool]) -> Result<Vec<Option<Tensor<B>>>> + Send + Sync,
>;

/// A forward (Jacobian-vector product) rule: given the tangent of each input (`None` where it is zero),
/// the tangent of the output (`None` when it is zero).
pub type ForwardRule<B> =
    Arc<dyn Fn(&RuleArgs<'_, B>, &[Option<Tensor<B>>]) -> Result<Option<Tensor<B>>> + Send + Sync>;

/// The derivative rules of one or more extension op families, keyed by op name, for tensors of backend
/// `B`. A family returns its rules from [`ExtensionFamily::rules`] and they are bound to each op it
/// records; a set given to
/// [`AdContextBuilder::with_extension_rules`](crate::AdContextBuilder::with_extension_rules) overrides
/// them for the transforms of that context.
///
/// ```
/// use nabla_tensor::{ExtensionRules, Tensor};
/// use nabla_cpu::CpuBackend;
/// // d/dx of an elementwise "demo.double" op is 2 in both modes.
/// let rules = ExtensionRules::<CpuBackend>::new()
///     .reverse("demo.double", |_args, g, _needs| Ok(vec![Some(g.mul(2.0)?)]))
///     .forward("demo.double", |_args, t| t[0].as_ref().map(|t| t.mul(2.0)).transpose());
/// assert!(rules.has_reverse("demo.double") && rules.has_forward("demo.double"));
/// assert!(!rules.has_reverse("demo.other"));
/// ```
pub struct ExtensionRules<B: Backend> {
    reverse: HashMap<String, ReverseRule<B>>,
    forward: HashMap<String, ForwardRule<B>>,
}

impl<B: Backend> Clone for ExtensionRules<B> {
    fn clone(&self) -> Self {
        ExtensionRules {
            reverse: self.reverse.clone(),
            forward: self.forward.clone(),
        }
    }
}

impl<B: Backend> Default for ExtensionRules<B> {
    fn default() -> Self {
        ExtensionRules {
            reverse: HashMap::new(),
            forward: HashMap::new(),
        }
    }
}

impl<B: Backend> fmt::Debug for ExtensionRules<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rev: Vec<&str> = self.reverse.keys().map(String::as_str).collect();
        let mut fwd: Vec<&str> = self.forward.keys().map(String::as_str).collect();
        rev.sort_unstable();
        fwd.sort_unstable();
        f.debug_struct("ExtensionRules")
            .field("reverse", &rev)
            .field("forward", &fwd)
            .finish()
    }
}

impl<B: Backend> ExtensionRules<B> {
    /// An empty rule set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the reverse rule of op `name` (replacing any earlier one).
    pub fn reverse(
        mut self,
        name: impl Into<String>,
        rule: impl Fn(&RuleArgs<'_, B>, &Tensor<B>, &[bool]) -> Result<Vec<Option<Tensor<B>>>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.reverse.insert(name.into(), Arc::new(rule));
        self
    }

    /// Registers the forward rule of op `name` (replacing any earlier one).
    pub fn forward(
        mut self,
        name: impl Into<String>,
        rule: impl Fn(&RuleArgs<'_, B>, &[Option<Tensor<B>>]) -> Result<Option<Tensor<B>>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.forward.insert(name.into(), Arc::new(rule));
        self
    }

    /// Adds every rule of `other` (its rules win on a name registered in both).
    pub fn merge(mut self, other: &ExtensionRules<B>) -> Self {
        self.reverse
            .extend(other.reverse.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.forward
            .extend(other.forward.iter().map(|(k, v)| (k.clone(), v.clone())));
        self
    }

    /// `true` when a reverse rule is registered for op `name`.
    pub fn has_reverse(&self, name: &str) -> bool {
        self.reverse.contains_key(name)
    }

    /// `true` when a forward rule is registered for op `name`.
    pub fn has_forward(&self, name: &str) -> bool {
        self.forward.contains_key(name)
    }
}

/// A family of extension ops with its derivative rules: [`Tensor::apply_family_op`] binds the family's
/// rules (built once per backend type, then shared) to each op it records, so every transform
/// differentiates the op with no setup.
///
/// ```
/// use nabla_core::{
///     Backend, DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
/// };
/// use nabla_tensor::{ExtensionFamily, ExtensionRules, Tensor};
/// use nabla_cpu::CpuBackend;
/// use std::sync::Arc;
///
/// /// `2x` for f64 tensors, as a toy extension op.
/// #[derive(Debug, PartialEq, Eq, Hash)]
/// struct Double;
/// impl ExtensionOp for Double {
///     fn name(&self) -> &str { "demo.double" }
///     fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
///         match inputs {
///             [(DType::F64, shape)] => Ok(OutputSpec { dtype: DType::F64, shape: shape.to_vec() }),
///             _ => Err(Error::invalid("demo.double", "expects one f64 tensor")),
///         }
///     }
///     fn host_kernel(&self, inputs: &[HostView<'_>], _alloc: &dyn HostAllocator) -> Result<HostData> {
///         let HostData::F64(x) = inputs[0].data else { unreachable!("checked by output_spec") };
///         Ok(HostData::F64(x.iter().map(|v| 2.0 * v).collect()))
///     }
///     fn as_any(&self) -> &dyn std::any::Any { self }
/// }
///
/// struct Demo;
/// impl ExtensionFamily for Demo {
///     fn rules<B: Backend>() -> ExtensionRules<B> {
///         ExtensionRules::new()
///             .reverse("demo.double", |_args, g, _needs| Ok(vec![Some(g.mul(2.0)?)]))
///             .forward("demo.double", |_args, t| t[0].as_ref().map(|t| t.mul(2.0)).transpose())
///     }
/// }
///
/// let x = Tensor::var("x", Tensor::from_vec(vec![1.0f64, 3.0], [2], &CpuBackend::new())?)?;
/// let y = Tensor::apply_family_op::<Demo>(Arc::new(Double), &[&x])?.square()?.sum_all()?;
/// // d/dx (2x)^2 = 8x, with plain backward and no context.
/// assert_eq!(y.backward()?.get(&x).unwrap().to_vec::<f64>()?, vec![8.0, 24.0]);
/// # Ok::<(), Error>(())
/// ```
pub trait ExtensionFamily: 'static {
    /// The forward and reverse rules of the family's ops for tensors of backend `B`, written in
    /// differentiable tensor ops.
    fn rules<B: Backend>() -> ExtensionRules<B>;
}

/// The rules of family `F` for backend `B`, built on first use and shared afterwards. The cache holds
/// only pure functions of the two types, so it never changes what a program computes.
pub(super) fn family_rules<F: ExtensionFamily, B: Backend>() -> Arc<ExtensionRules<B>> {
    type Cache = RwLock<HashMap<(TypeId, TypeId), Arc<dyn Any + Send + Sync>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (TypeId::of::<F>(), TypeId::of::<B>());
    let cache = CACHE.get_or_init(Cache::default);
    let found = cache
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned();
    let entry = found.unwrap_or_else(|| {
        let built: Arc<dyn Any + Send + Sync> = Arc::new(F::rules::<B>());
        let mut map = cache.write().unwrap_or_else(|e| e.into_inner());
        map.entry(key).or_insert(built).clone()
    });
    entry
        .downcast::<ExtensionRules<B>>()
        .unwrap_or_else(|_| unreachable!("the cache is keyed by the rules' backend type"))
}

/// An extension op as a graph node records it: the op and the rules its family bound (if any).
#[derive(Clone)]
pub(crate) struct BoundExtension<B: Backend> {
    pub(crate) op: Arc<dyn ExtensionOp>,
    pub(crate) rules: Option<Arc<ExtensionRules<B>>>,
}

impl<B: Backend> fmt::Debug for BoundExtension<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundExtension")
            .field("op", &self.op)
            .field("bound_rules", &self.rules.is_some())
            .finish()
    }
}

/// Which derivative rule of an extension op is wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A Jacobian-vector product (tangents pushed forward).
    Forward,
    /// A vector-Jacobian product (cotangents pulled back).
    Reverse,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Forward => "forward",
            Mode::Reverse => "reverse",
        }
    }

    /// The transform an error about this mode names.
    fn op(self) -> &'static str {
        match self {
            Mode::Forward => "jvp",
            Mode::Reverse => "backward",
        }
    }
}

impl<B: Backend> BoundExtension<B> {
    /// The error for a missing rule of `mode`, naming the op, the mode and the fix.
    fn missing(&self, mode: Mode) -> Error {
        let why = if self.rules.is_some() {
            "its family binds none and no AdContext override supplies one"
        } else {
            "it was applied without a family (Tensor::apply_extension): apply it with \
             Tensor::apply_family_op, or give rules to AdContext::builder().with_extension_rules"
        };
        Error::autodiff(
            mode.op(),
            format!(
                "no {}-mode derivative rule for extension op '{}' ({why})",
                mode.name(),
                self.op.name()
            ),
        )
    }

    /// The reverse rule: the context's override first, then the family's bound rule.
    pub(super) fn reverse_rule<'r>(
        &'r self,
        overrides: Option<&'r ExtensionRules<B>>,
    ) -> Result<&'r ReverseRule<B>> {
        self.rule(overrides, Mode::Reverse, |r| &r.reverse)
    }

    /// The forward rule: the context's override first, then the family's bound rule.
    pub(super) fn forward_rule<'r>(
        &'r self,
        overrides: Option<&'r ExtensionRules<B>>,
    ) -> Result<&'r ForwardRule<B>> {
        self.rule(overrides, Mode::Forward, |r| &r.forward)
    }

    /// The rule of `mode` from the table `of` picks in a rule set: the context's override first,
    /// then the family's bound rule.
    fn rule<'r, R>(
        &'r self,
        overrides: Option<&'r ExtensionRules<B>>,
        mode: Mode,
        of: impl Fn(&'r ExtensionRules<B>) -> &'r HashMap<String, R>,
    ) -> Result<&'r R> {
        let name = self.op.name();
        overrides
            .and_then(|r| of(r).get(name))
            .or_else(|| of(self.rules.as_deref()?).get(name))
            .ok_or_else(|| self.missing(mode))
    }
}
