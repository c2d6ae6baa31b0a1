//! [`AdContext`]: graph-level transforms (`grad`, `vjp`, `jvp`, `hvp`) with options and rule overrides.

use super::backward::{Targets, run_backward};
use super::extension_rules::ExtensionRules;
use super::forward::push_forward;
use super::pass::BackwardOptions;
use crate::Tensor;
use nabla_core::{Backend, Error, Result};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Differentiates computed graphs (eager tensors, or traced ones on a
/// [`TracingBackend`](crate::TracingBackend)) with options and optional rule overrides. Every op's rules
/// travel with the op (extension families bind theirs when an op is recorded), so a default context
/// differentiates everything; one context serves tensors of every backend, eager and traced. Results are
/// themselves differentiable (by default), so transforms compose to any order:
/// `ad.jvp(&ad.grad(&loss, &x)?, &x, &v)` is a Hessian-vector product, `ad.grad` of a gradient is a
/// second derivative, and so on.
///
/// Overrides ([`AdContextBuilder::with_extension_rules`]) replace an extension op's bound rules (or give
/// rules to an op applied without a family) for the transforms of this context only; nothing is
/// registered globally. An op without a rule is an [`Error::Autodiff`] that names the op and the mode.
///
/// ```
/// use nabla_tensor::{AdContext, Tensor};
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let ad = AdContext::new();
/// let x = Tensor::var("x", Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?)?;
/// let y = x.pow(3.0)?.sum_all()?;
/// let g = ad.grad(&y, &x)?; // 3x^2
/// assert_eq!(g.to_vec::<f64>()?, vec![3.0, 12.0]);
/// let v = Tensor::from_vec(vec![1.0f64, 1.0], [2], &cpu)?;
/// let hv = ad.jvp(&g, &x, &v)?; // 6 x v
/// assert_eq!(hv.to_vec::<f64>()?, vec![6.0, 12.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct AdContext {
    overrides: RuleOverrides,
    create_graph: bool,
}

/// Builds an [`AdContext`]: `AdContext::builder().create_graph(false).build()`.
#[derive(Clone, Debug)]
pub struct AdContextBuilder {
    overrides: RuleOverrides,
    create_graph: bool,
}

/// Extension rule overrides, one set per backend type (rules are functions of that backend's tensors).
#[derive(Clone, Default)]
struct RuleOverrides(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl RuleOverrides {
    fn get<B: Backend>(&self) -> Option<&ExtensionRules<B>> {
        self.0.get(&TypeId::of::<B>())?.downcast_ref()
    }
}

impl fmt::Debug for RuleOverrides {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RuleOverrides({} backend types)", self.0.len())
    }
}

impl Default for AdContext {
    fn default() -> Self {
        Self::builder().build()
    }
}

impl AdContextBuilder {
    /// Overrides extension ops' rules for tensors of backend `B` (several sets may be added; a later
    /// set wins on a name given twice). Ops whose name has no override keep their family's rules.
    pub fn with_extension_rules<B: Backend>(mut self, rules: ExtensionRules<B>) -> Self {
        let merged = match self.overrides.get::<B>() {
            Some(existing) => existing.clone().merge(&rules),
            None => rules,
        };
        self.overrides.0.insert(TypeId::of::<B>(), Arc::new(merged));
        self
    }

    /// Whether derivatives are recorded so they can be differentiated again (default `true`). Turn it
    /// off for first-order eager work to save the memory and time of recording the derivative graph.
    pub fn create_graph(mut self, on: bool) -> Self {
        self.create_graph = on;
        self
    }

    /// The context.
    pub fn build(self) -> AdContext {
        AdContext {
            overrides: self.overrides,
            create_graph: self.create_graph,
        }
    }
}

impl AdContext {
    /// A builder with no overrides and `create_graph` on.
    pub fn builder() -> AdContextBuilder {
        AdContextBuilder {
            overrides: RuleOverrides::default(),
            create_graph: true,
        }
    }

    /// A context with no overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// The extension rule overrides of this context for tensors of backend `B`, if any were given.
    pub fn overrides<B: Backend>(&self) -> Option<&ExtensionRules<B>> {
        self.overrides.get::<B>()
    }

    /// The gradient of the one-element tensor `y` with respect to `x` (a variable, placeholder or any
    /// tracked tensor `y` was computed from), of `x`'s shape; zeros when `y` does not depend on `x`.
    pub fn grad<B: Backend>(&self, y: &Tensor<B>, x: &Tensor<B>) -> Result<Tensor<B>> {
        Ok(self.pull("grad", y, &[x], None)?.remove(0))
    }

    /// The gradients of the one-element tensor `y` with respect to each of `xs`.
    pub fn grads<B: Backend>(&self, y: &Tensor<B>, xs: &[&Tensor<B>]) -> Result<Vec<Tensor<B>>> {
        self.pull("grad", y, xs, None)
    }

    /// The vector-Jacobian product `cotangentᵀ ∂y/∂x`, of `x`'s shape (`cotangent` has `y`'s shape).
    pub fn vjp<B: Backend>(
        &self,
        y: &Tensor<B>,
        x: &Tensor<B>,
        cotangent: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        Ok(self.pull("vjp", y, &[x], Some(cotangent))?.remove(0))
    }

    /// [`AdContext::vjp`] with respect to several tensors.
    pub fn vjp_n<B: Backend>(
        &self,
        y: &Tensor<B>,
        xs: &[&Tensor<B>],
        cotangent: &Tensor<B>,
    ) -> Result<Vec<Tensor<B>>> {
        self.pull("vjp", y, xs, Some(cotangent))
    }

    /// [`AdContext::vjp_n`] with `None` for each of `xs` the reverse pass from `y` does not reach
    /// (`y` does not depend on it), where `vjp_n` gives zeros: what `torch.autograd.grad` needs to
    /// refuse or report unused inputs. `cotangent` may be `None` for a one-element `y`.
    ///
    /// ```
    /// # use nabla_tensor::{AdContext, Tensor}; use nabla_cpu::CpuBackend;
    /// let cpu = CpuBackend::new();
    /// let x = Tensor::var("x", Tensor::from_vec(vec![2.0f64], [1], &cpu)?)?;
    /// let unused = Tensor::var("u", Tensor::from_vec(vec![5.0f64], [1], &cpu)?)?;
    /// let y = x.mul(&x)?.sum_all()?;
    /// let g = AdContext::new().vjp_reached(&y, &[&x, &unused], None)?;
    /// assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, vec![4.0]);
    /// assert!(g[1].is_none());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn vjp_reached<B: Backend>(
        &self,
        y: &Tensor<B>,
        xs: &[&Tensor<B>],
        cotangent: Option<&Tensor<B>>,
    ) -> Result<Vec<Option<Tensor<B>>>> {
        self.reached("vjp", y, xs, cotangent)
    }

    /// The Jacobian-vector product `∂y/∂x · tangent` by forward mode, of `y`'s shape (`tangent` has
    /// `x`'s shape); zeros when `y` does not depend on `x`.
    pub fn jvp<B: Backend>(
        &self,
        y: &Tensor<B>,
        x: &Tensor<B>,
        tangent: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        self.jvp_n(y, &[x], &[tangent])
    }

    /// `Σᵢ ∂y/∂xᵢ · tangentᵢ` by forward mode.
    pub fn jvp_n<B: Backend>(
        &self,
        y: &Tensor<B>,
        xs: &[&Tensor<B>],
        tangents: &[&Tensor<B>],
    ) -> Result<Tensor<B>> {
        const OP: &str = "jvp";
        if xs.len() != tangents.len() {
            return Err(Error::invalid(
                OP,
                format!("{} inputs but {} tangents", xs.len(), tangents.len()),
            ));
        }
        let mut marks = Vec::with_capacity(xs.len());
        for (x, t) in xs.iter().zip(tangents) {
            x.check_matches(OP, t, "each tangent must have its input's shape")?;
            marks.push((tracked_id(OP, x)?, (*t).clone()));
        }
        match push_forward(y, &marks, self.create_graph, self.overrides.get::<B>())? {
            Some(t) => Ok(t),
            None => y.detach().zeros_like(),
        }
    }

    /// The Hessian-vector product `∇²y(x) · v` of the one-element `y`, of `x`'s shape.
    ///
    /// Computed reverse over forward: the gradient of the directional derivative `∇y · v`. With `y`
    /// already computed, that costs its tangent and one reverse pass over the value and the tangent.
    /// Forward over reverse (the tangent of the gradient) would here also compute the gradient itself
    /// eagerly only to throw it away. For `sum(tanh(X Xᵀ))`, `hvp` takes 5 matrix products, traced
    /// or not: the Gram product's tangent is one product `P + Pᵀ`, and the reverse pass of `P + Pᵀ`
    /// adds its two cotangents before its one product. Forward over reverse takes 8 eagerly (the
    /// gradient's 3, the Gram tangent's 1 and the 4 tangents of the gradient's two products), 6 once
    /// a compiler has dropped the unused gradient.
    pub fn hvp<B: Backend>(
        &self,
        y: &Tensor<B>,
        x: &Tensor<B>,
        v: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let recording = AdContext {
            overrides: self.overrides.clone(),
            create_graph: true,
        };
        let directional = recording.jvp(y, x, v)?;
        self.grad(&directional, x)
    }

    /// Reverse pass from `y` (seeded with `cotangent`, or 1 for a one-element `y`) to `xs`; zeros
    /// for the ones it does not reach.
    fn pull<B: Backend>(
        &self,
        op: &'static str,
        y: &Tensor<B>,
        xs: &[&Tensor<B>],
        cotangent: Option<&Tensor<B>>,
    ) -> Result<Vec<Tensor<B>>> {
        xs.iter()
            .zip(self.reached(op, y, xs, cotangent)?)
            .map(|(x, g)| match g {
                Some(g) => Ok(g),
                None => x.detach().zeros_like(),
            })
            .collect()
    }

    /// [`AdContext::pull`] with `None` for the inputs the pass does not reach.
    fn reached<B: Backend>(
        &self,
        op: &'static str,
        y: &Tensor<B>,
        xs: &[&Tensor<B>],
        cotangent: Option<&Tensor<B>>,
    ) -> Result<Vec<Option<Tensor<B>>>> {
        let ids = xs
            .iter()
            .map(|x| tracked_id(op, x))
            .collect::<Result<Vec<_>>>()?;
        let found = if y.requires_grad() {
            let seed = y.checked_seed(op, cotangent)?;
            let opts = BackwardOptions {
                create_graph: self.create_graph,
                retain_graph: true,
                ..Default::default()
            };
            run_backward(
                y,
                seed,
                Targets::Nodes(&ids),
                opts,
                self.overrides.get::<B>(),
            )?
        } else {
            match cotangent {
                Some(c) => y.check_matches(op, c, "the cotangent must have the output's shape")?,
                None if y.numel() != 1 => {
                    return Err(super::backward::not_one_element(op, y.shape()));
                }
                None => {}
            }
            Vec::new()
        };
        Ok(ids
            .iter()
            .map(|id| {
                found
                    .iter()
                    .find(|(n, _)| n.id == *id)
                    .map(|(_, g)| g.clone())
            })
            .collect())
    }
}

/// The graph node of `x`, which must be tracked for a derivative with respect to it to exist.
fn tracked_id<B: Backend>(op: &'static str, x: &Tensor<B>) -> Result<u64> {
    x.node_id().ok_or_else(|| {
        Error::autodiff(
            op,
            format!(
                "the {} tensor of shape {:?} we differentiate with respect to is not tracked; make it \
                 with Tensor::var or TracingBackend::placeholder and compute the output from it",
                x.dtype(),
                x.shape()
            ),
        )
    })
}

impl<B: Backend> Tensor<B> {
    /// The gradient of this one-element tensor with respect to `x` (see [`AdContext::grad`]);
    /// differentiable again.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::var("x", Tensor::from_vec(vec![3.0f64], [], &CpuBackend::new())?)?;
    /// let loss = x.pow(3.0)?;
    /// let dx = loss.grad(&x)?; // 3x^2
    /// assert_eq!(dx.item::<f64>()?, 27.0);
    /// assert_eq!(dx.grad(&x)?.item::<f64>()?, 18.0); // 6x
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn grad(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        AdContext::new().grad(self, x)
    }

    /// `cotangentᵀ ∂self/∂x`; see [`AdContext::vjp`].
    pub fn vjp(&self, x: &Tensor<B>, cotangent: &Tensor<B>) -> Result<Tensor<B>> {
        AdContext::new().vjp(self, x, cotangent)
    }

    /// `∂self/∂x · tangent` by forward mode; see [`AdContext::jvp`].
    pub fn jvp(&self, x: &Tensor<B>, tangent: &Tensor<B>) -> Result<Tensor<B>> {
        AdContext::new().jvp(self, x, tangent)
    }
}
