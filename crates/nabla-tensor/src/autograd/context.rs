//! [`AdContext`]: graph-level transforms (`grad`, `vjp`, `jvp`, `hvp`) with an explicit rule set.

use super::backward::{BackwardOptions, Targets, run_backward};
use super::extension::ExtensionRules;
use super::forward::push_forward;
use crate::Tensor;
use nabla_core::{Backend, Error, Result};

/// Differentiates computed graphs (eager tensors, or traced ones on a
/// [`TracingBackend`](crate::TracingBackend)) with the core rules plus the extension rules it was
/// built with. Results are themselves differentiable (by default), so transforms compose to any order:
/// `ad.jvp(&ad.grad(&loss, &x)?, &x, &v)` is a Hessian-vector product, `ad.grad` of a gradient is a
/// second derivative, and so on.
///
/// The rule set belongs to the context: nothing is registered globally, so two contexts with different
/// extension families coexist, and an op without a rule in this context is an [`Error::Autodiff`] that
/// names the op and the mode.
///
/// ```
/// use nabla_tensor::{AdContext, Tensor};
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let ad = AdContext::<CpuBackend>::builder().build();
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
pub struct AdContext<B: Backend> {
    rules: ExtensionRules<B>,
    create_graph: bool,
}

/// Builds an [`AdContext`]: `AdContext::builder().with_extension_rules(family_rules).build()`.
#[derive(Clone, Debug)]
pub struct AdContextBuilder<B: Backend> {
    rules: ExtensionRules<B>,
    create_graph: bool,
}

impl<B: Backend> Default for AdContext<B> {
    fn default() -> Self {
        Self::builder().build()
    }
}

impl<B: Backend> AdContextBuilder<B> {
    /// Adds the derivative rules of an extension op family (several families may be added).
    pub fn with_extension_rules(mut self, rules: ExtensionRules<B>) -> Self {
        self.rules = self.rules.merge(&rules);
        self
    }

    /// Whether derivatives are recorded so they can be differentiated again (default `true`). Turn it
    /// off for first-order eager work to save the memory and time of recording the derivative graph.
    pub fn create_graph(mut self, on: bool) -> Self {
        self.create_graph = on;
        self
    }

    /// The context.
    pub fn build(self) -> AdContext<B> {
        AdContext {
            rules: self.rules,
            create_graph: self.create_graph,
        }
    }
}

impl<B: Backend> AdContext<B> {
    /// A builder with the core rules and `create_graph` on.
    pub fn builder() -> AdContextBuilder<B> {
        AdContextBuilder {
            rules: ExtensionRules::new(),
            create_graph: true,
        }
    }

    /// A context with the core rules only.
    pub fn new() -> Self {
        Self::default()
    }

    /// The extension rules of this context.
    pub fn rules(&self) -> &ExtensionRules<B> {
        &self.rules
    }

    /// The gradient of the one-element tensor `y` with respect to `x` (a variable, placeholder or any
    /// tracked tensor `y` was computed from), of `x`'s shape; zeros when `y` does not depend on `x`.
    pub fn grad(&self, y: &Tensor<B>, x: &Tensor<B>) -> Result<Tensor<B>> {
        Ok(self.pull("grad", y, &[x], None)?.remove(0))
    }

    /// The gradients of the one-element tensor `y` with respect to each of `xs`.
    pub fn grads(&self, y: &Tensor<B>, xs: &[&Tensor<B>]) -> Result<Vec<Tensor<B>>> {
        self.pull("grad", y, xs, None)
    }

    /// The vector-Jacobian product `cotangentᵀ ∂y/∂x`, of `x`'s shape (`cotangent` has `y`'s shape).
    pub fn vjp(&self, y: &Tensor<B>, x: &Tensor<B>, cotangent: &Tensor<B>) -> Result<Tensor<B>> {
        Ok(self.pull("vjp", y, &[x], Some(cotangent))?.remove(0))
    }

    /// [`AdContext::vjp`] with respect to several tensors.
    pub fn vjp_n(
        &self,
        y: &Tensor<B>,
        xs: &[&Tensor<B>],
        cotangent: &Tensor<B>,
    ) -> Result<Vec<Tensor<B>>> {
        self.pull("vjp", y, xs, Some(cotangent))
    }

    /// The Jacobian-vector product `∂y/∂x · tangent` by forward mode, of `y`'s shape (`tangent` has
    /// `x`'s shape); zeros when `y` does not depend on `x`.
    pub fn jvp(&self, y: &Tensor<B>, x: &Tensor<B>, tangent: &Tensor<B>) -> Result<Tensor<B>> {
        self.jvp_n(y, &[x], &[tangent])
    }

    /// `Σᵢ ∂y/∂xᵢ · tangentᵢ` by forward mode.
    pub fn jvp_n(
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
        match push_forward(y, &marks, self.create_graph, Some(&self.rules))? {
            Some(t) => Ok(t),
            None => y.detach().zeros_like(),
        }
    }

    /// The Hessian-vector product `∇²y(x) · v` of the one-element `y` (forward over reverse: the
    /// tangent of the gradient), of `x`'s shape.
    pub fn hvp(&self, y: &Tensor<B>, x: &Tensor<B>, v: &Tensor<B>) -> Result<Tensor<B>> {
        let recording = AdContext {
            rules: self.rules.clone(),
            create_graph: true,
        };
        let g = recording.grad(y, x)?;
        self.jvp(&g, x, v)
    }

    /// Reverse pass from `y` (seeded with `cotangent`, or 1 for a one-element `y`) to `xs`.
    fn pull(
        &self,
        op: &'static str,
        y: &Tensor<B>,
        xs: &[&Tensor<B>],
        cotangent: Option<&Tensor<B>>,
    ) -> Result<Vec<Tensor<B>>> {
        let ids = xs
            .iter()
            .map(|x| tracked_id(op, x))
            .collect::<Result<Vec<_>>>()?;
        let found = if y.requires_grad() {
            let seed = y.checked_seed(op, cotangent)?;
            let opts = BackwardOptions {
                create_graph: self.create_graph,
                retain_graph: true,
            };
            run_backward(y, seed, Targets::Nodes(&ids), opts, Some(&self.rules))?
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
        xs.iter()
            .zip(&ids)
            .map(|(x, id)| match found.iter().find(|(n, _)| n.id == *id) {
                Some((_, g)) => Ok(g.clone()),
                None => x.detach().zeros_like(),
            })
            .collect()
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
    /// The gradient of this one-element tensor with respect to `x`, with the core rules (use
    /// [`AdContext::grad`] for extension ops); differentiable again.
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

    /// `cotangentᵀ ∂self/∂x` with the core rules; see [`AdContext::vjp`].
    pub fn vjp(&self, x: &Tensor<B>, cotangent: &Tensor<B>) -> Result<Tensor<B>> {
        AdContext::new().vjp(self, x, cotangent)
    }

    /// `∂self/∂x · tangent` by forward mode with the core rules; see [`AdContext::jvp`].
    pub fn jvp(&self, x: &Tensor<B>, tangent: &Tensor<B>) -> Result<Tensor<B>> {
        AdContext::new().jvp(self, x, tangent)
    }
}
