//! Optimizers (PyTorch's `torch.optim`), gradient clipping and gradient accumulation.
//!
//! Every first-order optimizer is an [`Optim`] driven by an update [`Rule`] (its config type, such as
//! [`SgdConfig`] or [`AdamConfig`]); the aliases [`Sgd`], [`Adam`], [`AdamW`], ... name them. They follow
//! PyTorch's single-tensor update formulas (`foreach=False`) step for step, keep their state per
//! parameter by [`ParamId`], and save and restore it with [`Optimizer::state_dict`].
//!
//! ```
//! use nabla_nn::optim::{Optimizer, Sgd, SgdConfig};
//! use nabla_nn::Param;
//! use nabla_tensor::Tensor;
//! use nabla_cpu::CpuBackend;
//! let cpu = CpuBackend::new();
//! let w = Param::new(Tensor::from_vec(vec![1.0f64, -2.0], [2], &cpu)?)?;
//! let mut opt = Sgd::new(vec![w.clone()], SgdConfig { lr: 0.1, momentum: 0.9, ..Default::default() })?;
//! for _ in 0..3 {
//!     let loss = w.value().square()?.sum_all()?;
//!     opt.step(&loss.backward()?)?;
//! }
//! assert!(w.value().abs()?.max_all()?.item::<f64>()? < 1.0);
//! # Ok::<(), nabla_core::Error>(())
//! ```

mod adagrad;
mod adam;
mod adam_step;
mod clip;
mod config;
mod grad_scaler;
mod lbfgs;
mod lion;
mod rmsprop;
mod sgd;

pub use adagrad::{Adagrad, AdagradConfig};
pub use adam::{
    Adam, AdamConfig, AdamW, Adamax, AdamaxConfig, NAdam, NAdamConfig, RAdam, RAdamConfig,
};
pub use adam_step::{AdamCoefficients, AdamStep};
pub use clip::{
    clip_grad_norm, clip_grad_norm_opts, clip_grad_norm_tensors, clip_grad_value,
    clip_grad_value_tensors,
};
pub use config::OptimOptions;
pub use grad_scaler::{GradScaler, GradScalerConfig, GradScalerState};
pub use lbfgs::{Lbfgs, LbfgsConfig, LineSearch, LossAndGrads};
pub use lion::{Lion, LionConfig};
pub use rmsprop::{RmsProp, RmsPropConfig};
pub use sgd::{Sgd, SgdConfig};

use crate::param::{Param, ParamId};
use nabla_core::{Backend, Error, Result};
use nabla_tensor::{Gradients, Tensor};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// Gradients by parameter identity: what an optimizer steps with. Built from the [`Gradients`] of a
/// backward pass for a list of parameters; clipping rescales it in place and gradient accumulation sums
/// into it. Keeps insertion order.
#[derive(Clone, Default)]
pub struct GradMap<B: Backend> {
    entries: Vec<(ParamId, Tensor<B>)>,
    index: HashMap<ParamId, usize>,
}

impl<B: Backend> std::fmt::Debug for GradMap<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                self.entries
                    .iter()
                    .map(|(id, t)| (id.get(), t.shape().to_vec())),
            )
            .finish()
    }
}

impl<B: Backend> GradMap<B> {
    /// An empty map.
    pub fn new() -> Self {
        GradMap {
            entries: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// The (untracked) gradient of each of `params` in `grads`; parameters without one (frozen, or not
    /// used by the loss) are left out.
    pub fn from_gradients<'a>(
        params: impl IntoIterator<Item = &'a Param<B>>,
        grads: &Gradients<B>,
    ) -> Self {
        let mut map = GradMap::new();
        for p in params {
            if let Some(g) = p.grad(grads) {
                map.insert(p.id(), g.detach());
            }
        }
        map
    }

    /// Sets the gradient of parameter `id`, replacing any previous one.
    pub fn insert(&mut self, id: ParamId, grad: Tensor<B>) {
        match self.index.get(&id) {
            Some(&i) => self.entries[i].1 = grad,
            None => {
                self.index.insert(id, self.entries.len());
                self.entries.push((id, grad));
            }
        }
    }

    /// The gradient of parameter `id`, if any.
    pub fn get(&self, id: ParamId) -> Option<&Tensor<B>> {
        self.index.get(&id).map(|&i| &self.entries[i].1)
    }

    /// Number of gradients held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// `true` when no gradient is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Removes every gradient.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
    }

    /// The gradients in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (ParamId, &Tensor<B>)> {
        self.entries.iter().map(|(id, t)| (*id, t))
    }

    /// The gradients in insertion order, for in-place rescaling.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ParamId, &mut Tensor<B>)> {
        self.entries.iter_mut().map(|(id, t)| (*id, t))
    }

    /// Adds `other` into this map: gradients of the same parameter are summed (shapes must agree),
    /// new ones are inserted (PyTorch's accumulation into `.grad` over several backward passes).
    pub fn accumulate(&mut self, other: &GradMap<B>) -> Result<()> {
        for (id, g) in other.iter() {
            let sum = match self.get(id) {
                Some(old) if old.shape() != g.shape() => {
                    return Err(Error::shapes("GradMap::accumulate", old.shape(), g.shape())
                        .with_hint("gradients of one parameter must keep its shape"));
                }
                Some(old) => old.add(g)?,
                None => g.clone(),
            };
            self.insert(id, sum);
        }
        Ok(())
    }
}

/// A group of parameters that share hyper-parameters (PyTorch's `param_groups` entries).
#[derive(Clone, Debug)]
pub struct ParamGroup<B: Backend> {
    /// The parameters, in order.
    pub params: Vec<Param<B>>,
    /// The group's hyper-parameters (learning rate, weight decay and the optimizer's other options).
    pub options: OptimOptions,
    /// The learning rate the group had when the first scheduler was attached (PyTorch's
    /// `initial_lr`); schedulers start from it.
    pub initial_lr: Option<f64>,
}

impl<B: Backend> ParamGroup<B> {
    /// The group's learning rate.
    pub fn lr(&self) -> f64 {
        self.options.lr()
    }

    /// The group's weight decay (0 for optimizers without one).
    pub fn weight_decay(&self) -> f64 {
        self.options.weight_decay()
    }
}

/// A saved optimizer: per-parameter state tensors named `state.{index}.{name}` (index: the
/// parameter's position across the groups, in order, as in PyTorch) and a JSON document with the
/// optimizer's name, each group's hyper-parameters and parameter indices, and per-parameter step
/// counts and scalars.
#[derive(Clone, Debug)]
pub struct OptimizerState<B: Backend> {
    /// State tensors by name (`state.0.exp_avg`, ...).
    pub tensors: Vec<(String, Tensor<B>)>,
    /// Everything else: `{"optimizer", "param_groups": [...], "state": {"0": {"step": 3, ...}}}`.
    pub meta: Value,
}

/// What every optimizer offers: a step from gradients, gradient accumulation, access to the parameter
/// groups' learning rates (for schedulers) and state save/restore.
pub trait Optimizer<B: Backend> {
    /// One update from the gradients of a backward pass. Parameters without a gradient, or frozen, are
    /// skipped (PyTorch skips `p.grad is None`).
    fn step(&mut self, grads: &Gradients<B>) -> Result<()> {
        let map = GradMap::from_gradients(
            self.param_groups().iter().flat_map(|g| g.params.iter()),
            grads,
        );
        self.step_with(&map)
    }

    /// One update from gradients given by parameter identity (after clipping, say).
    fn step_with(&mut self, grads: &GradMap<B>) -> Result<()>;

    /// The backward pass of the scalar `loss` and one update, the same as
    /// `self.step(&loss.backward()?)`. First-order optimizers ([`Optim`]) fuse the two: each
    /// parameter is updated as soon as its gradient is complete ([`Tensor::backward_each`]), while
    /// the gradient is still in cache, and all the gradients are never held at once. Use
    /// [`Optimizer::step`] when the gradients are needed together (clipping by their global norm,
    /// accumulation over several batches).
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// # use nabla_nn::{Param, optim::{Optimizer, Sgd, SgdConfig}};
    /// let cpu = CpuBackend::new();
    /// let w = Param::new(Tensor::from_vec(vec![1.0f32, -2.0], [2], &cpu)?)?;
    /// let mut opt = Sgd::new(vec![w.clone()], SgdConfig { lr: 0.5, ..Default::default() })?;
    /// let loss = w.value().square()?.sum_all()?; // gradient 2w
    /// opt.backward_step(&loss)?;
    /// assert_eq!(w.value().to_vec::<f32>()?, vec![0.0, 0.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    fn backward_step(&mut self, loss: &Tensor<B>) -> Result<()> {
        let grads = loss.backward()?;
        self.step(&grads)
    }

    /// Adds the gradients of a backward pass to the accumulated ones (for gradient accumulation).
    fn accumulate(&mut self, grads: &Gradients<B>) -> Result<()>;

    /// Clears the accumulated gradients (PyTorch's `zero_grad`).
    fn zero_grad(&mut self);

    /// The accumulated gradients, for clipping before [`Optimizer::step_accumulated`].
    fn accumulated_mut(&mut self) -> &mut GradMap<B>;

    /// One update from the accumulated gradients (which are kept until [`Optimizer::zero_grad`]).
    fn step_accumulated(&mut self) -> Result<()>;

    /// The parameter groups.
    fn param_groups(&self) -> &[ParamGroup<B>];

    /// The parameter groups, to change hyper-parameters (what schedulers do).
    fn param_groups_mut(&mut self) -> &mut [ParamGroup<B>];

    /// Sets the learning rate of group `group` (out-of-range groups are ignored).
    fn set_lr(&mut self, group: usize, lr: f64) {
        if let Some(g) = self.param_groups_mut().get_mut(group) {
            g.options.set_lr(lr);
        }
    }

    /// The learning rate of group `group` (NaN for an out-of-range group).
    fn lr(&self, group: usize) -> f64 {
        self.param_groups()
            .get(group)
            .map_or(f64::NAN, ParamGroup::lr)
    }

    /// The optimizer's state, for checkpoints.
    fn state_dict(&self) -> OptimizerState<B>;

    /// Restores a state saved by [`Optimizer::state_dict`] of the same kind of optimizer over
    /// parameters of the same shapes (hyper-parameters included, as in PyTorch).
    fn load_state_dict(&mut self, state: &OptimizerState<B>) -> Result<()>;

    /// Whether a step updates each parameter from its own gradient and state alone, so that one
    /// step may be taken as several over disjoint parts of the parameters (what data-parallel
    /// training does as each bucket of averaged gradients arrives). True for every first-order
    /// optimizer ([`Optim`]); false by default, and for optimizers that look at all gradients at
    /// once (L-BFGS).
    fn steps_each_parameter_alone(&self) -> bool {
        false
    }
}

/// The per-parameter state of an optimizer: the number of steps taken, scalars (NAdam's
/// `mu_product`) and tensors (`exp_avg`, `momentum_buffer`, ...).
#[derive(Clone, Debug)]
pub struct ParamState<B: Backend> {
    /// Number of `step` calls that updated this parameter.
    pub step: u64,
    /// Named scalars.
    pub scalars: Vec<(String, f64)>,
    /// Named tensors of the parameter's shape.
    pub buffers: Vec<(String, Tensor<B>)>,
}

impl<B: Backend> Default for ParamState<B> {
    fn default() -> Self {
        ParamState {
            step: 0,
            scalars: Vec::new(),
            buffers: Vec::new(),
        }
    }
}

impl<B: Backend> ParamState<B> {
    /// The tensor named `name`, if set.
    pub fn buffer(&self, name: &str) -> Option<&Tensor<B>> {
        self.buffers.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// The tensor named `name`, or `init` (stored) when not yet set.
    pub fn buffer_or(
        &mut self,
        name: &str,
        init: impl FnOnce() -> Result<Tensor<B>>,
    ) -> Result<Tensor<B>> {
        match self.buffer(name) {
            Some(t) => Ok(t.clone()),
            None => {
                let t = init()?;
                self.set_buffer(name, t.clone());
                Ok(t)
            }
        }
    }

    /// Replaces the tensors named in `names` (zeros like the parameter `p` when not yet set) by the
    /// results of `f`, handing `f` the parameter and the only handles the state held, in order, so
    /// that `f` may update their buffers in place (a fused kernel donating them, say); `f` returns
    /// one new value per name, which take the old ones' places in the state, and a result of its
    /// own. `f` receives tensors checked to have `p`'s shape and dtype; if `f` fails, the buffers are
    /// dropped from the state.
    pub(crate) fn replace_buffers<R>(
        &mut self,
        names: &[&str],
        p: Tensor<B>,
        f: impl FnOnce(Tensor<B>, Vec<Tensor<B>>) -> Result<(Vec<Tensor<B>>, R)>,
    ) -> Result<R> {
        let like = &p;
        let mut places = Vec::with_capacity(names.len());
        for &name in names {
            let at = match self.buffers.iter().position(|(n, _)| n == name) {
                Some(at) => at,
                None => {
                    self.buffers.push((name.to_string(), like.zeros_like()?));
                    self.buffers.len() - 1
                }
            };
            let buffer = &self.buffers[at].1;
            if buffer.shape() != like.shape() || buffer.dtype() != like.dtype() {
                return Err(Error::shapes("Optimizer::step", buffer.shape(), like.shape())
                    .with_hint(format!(
                        "state buffer {name:?} ({:?}) must have its parameter's shape and dtype ({:?})",
                        buffer.dtype(),
                        like.dtype()
                    )));
            }
            places.push(at);
        }
        // Take the buffers out (from the back, so positions stay valid), keeping their places.
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by_key(|&j| std::cmp::Reverse(places[j]));
        let mut taken: Vec<Option<(String, Tensor<B>)>> = vec![None; names.len()];
        for &j in &order {
            taken[j] = Some(self.buffers.remove(places[j]));
        }
        let (keys, tensors): (Vec<String>, Vec<Tensor<B>>) = taken.into_iter().flatten().unzip();
        let (new, result) = f(p, tensors)?;
        if new.len() != names.len() {
            return Err(Error::invalid(
                "Optimizer::step",
                format!("{} new state buffers for {} names", new.len(), names.len()),
            ));
        }
        let mut back: Vec<(usize, (String, Tensor<B>))> =
            places.into_iter().zip(keys.into_iter().zip(new)).collect();
        back.sort_by_key(|(at, _)| *at);
        for (at, entry) in back {
            self.buffers.insert(at, entry);
        }
        Ok(result)
    }

    /// Replaces the tensor named `name` (zeros like `like` when not yet set) by `f` of it and returns
    /// the new value.
    pub(crate) fn update_buffer(
        &mut self,
        name: &str,
        like: &Tensor<B>,
        f: impl FnOnce(&Tensor<B>) -> Result<Tensor<B>>,
    ) -> Result<Tensor<B>> {
        let new = f(&self.buffer_or(name, || like.zeros_like())?)?;
        self.set_buffer(name, new.clone());
        Ok(new)
    }

    /// Sets the tensor named `name`.
    pub fn set_buffer(&mut self, name: &str, value: Tensor<B>) {
        match self.buffers.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.buffers.push((name.to_string(), value)),
        }
    }

    /// The scalar named `name`, or `default` when not yet set.
    pub fn scalar(&self, name: &str, default: f64) -> f64 {
        self.scalars
            .iter()
            .find(|(n, _)| n == name)
            .map_or(default, |(_, v)| *v)
    }

    /// Sets the scalar named `name`.
    pub fn set_scalar(&mut self, name: &str, value: f64) {
        match self.scalars.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.scalars.push((name.to_string(), value)),
        }
    }
}

/// The update rule of a first-order optimizer, implemented by its config type: it holds one group's
/// hyper-parameters and computes a parameter's new value from its gradient and state.
pub trait Rule: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The optimizer's name (PyTorch's class name), stored in saved states.
    fn name(&self) -> &'static str;

    /// Checks the hyper-parameters (PyTorch's constructor checks).
    fn validate(&self) -> Result<()>;

    /// `true` to ascend the gradient instead (PyTorch's `maximize`).
    fn maximize(&self) -> bool;

    /// The config as a group's [`OptimOptions`].
    fn wrap(self) -> OptimOptions;

    /// The config of this rule's type in `options`, if it holds one.
    fn unwrap(options: &OptimOptions) -> Option<&Self>;

    /// The new value of a parameter `p` (untracked) with gradient `g` (untracked, already negated
    /// under `maximize`); `state.step` has already been advanced for this step.
    fn update<B: Backend>(
        &self,
        state: &mut ParamState<B>,
        p: &Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>>;

    /// [`Rule::update`] given the parameter's own handle `p`, which the optimizer takes out of the
    /// [`Param`] for the update: a rule whose kernel donates `p` writes the new value into its
    /// buffer when no other handle exists. The default borrows it for [`Rule::update`].
    fn update_donated<B: Backend>(
        &self,
        state: &mut ParamState<B>,
        p: Tensor<B>,
        g: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        self.update(state, &p, g)
    }
}

/// A first-order optimizer over parameter groups, applying the update [`Rule`] `R`.
#[derive(Debug)]
pub struct Optim<B: Backend, R: Rule> {
    groups: Vec<ParamGroup<B>>,
    state: HashMap<ParamId, ParamState<B>>,
    accumulated: GradMap<B>,
    _rule: std::marker::PhantomData<R>,
}

impl<B: Backend, R: Rule> Optim<B, R> {
    /// An optimizer over `params` as one group with hyper-parameters `config`.
    pub fn new(params: Vec<Param<B>>, config: R) -> Result<Self> {
        let mut opt = Optim {
            groups: Vec::new(),
            state: HashMap::new(),
            accumulated: GradMap::new(),
            _rule: std::marker::PhantomData,
        };
        opt.add_param_group(params, config)?;
        Ok(opt)
    }

    /// Adds a group of parameters with its own hyper-parameters (PyTorch's `add_param_group`). A
    /// parameter may belong to one group only.
    pub fn add_param_group(&mut self, params: Vec<Param<B>>, config: R) -> Result<()> {
        config.validate()?;
        let mut seen: HashSet<ParamId> = self
            .groups
            .iter()
            .flat_map(|g| g.params.iter().map(Param::id))
            .collect();
        for p in &params {
            if !seen.insert(p.id()) {
                return Err(Error::invalid(
                    "add_param_group",
                    format!("parameter {} appears in more than one group", p.id().get()),
                ));
            }
        }
        self.groups.push(ParamGroup {
            params,
            options: config.wrap(),
            initial_lr: None,
        });
        Ok(())
    }

    /// The state of parameter `id`, if it has been updated.
    pub fn param_state(&self, id: ParamId) -> Option<&ParamState<B>> {
        self.state.get(&id)
    }

    fn all_params(&self) -> impl Iterator<Item = &Param<B>> {
        self.groups.iter().flat_map(|g| g.params.iter())
    }
}

/// Updates the trainable parameter `p` from its gradient `g` with `config`'s rule, advancing its
/// state in `states`.
fn update_param<B: Backend, R: Rule>(
    config: &R,
    states: &mut HashMap<ParamId, ParamState<B>>,
    p: &Param<B>,
    g: &Tensor<B>,
) -> Result<()> {
    const OP: &str = "Optimizer::step";
    if g.shape() != p.shape().as_slice() {
        return Err(Error::shapes(OP, g.shape(), &p.shape())
            .with_hint("a gradient must have its parameter's shape"));
    }
    let g = g.detach().cast(p.dtype())?;
    let g = if config.maximize() { g.neg()? } else { g };
    // Checked here, before the parameter hands its values over to the update.
    let (on, from) = (p.data().backend().device(), g.backend().device());
    if on != from {
        return Err(Error::DeviceMismatch {
            op: OP,
            lhs: on.to_string(),
            rhs: from.to_string(),
        });
    }
    let state = states.entry(p.id()).or_default();
    state.step += 1;
    p.update_with(|value| config.update_donated(state, value, &g))
}

fn group_config<R: Rule>(options: &OptimOptions, index: usize) -> Result<&R> {
    R::unwrap(options).ok_or_else(|| {
        Error::invalid(
            "Optimizer::step",
            format!(
                "param group {index} holds {} options, not this optimizer's",
                options.name()
            ),
        )
    })
}

impl<B: Backend, R: Rule> Optimizer<B> for Optim<B, R> {
    fn step_with(&mut self, grads: &GradMap<B>) -> Result<()> {
        for (gi, group) in self.groups.iter().enumerate() {
            let config: &R = group_config(&group.options, gi)?;
            for p in &group.params {
                if let Some(g) = grads.get(p.id())
                    && p.is_trainable()
                {
                    update_param(config, &mut self.state, p, g)?;
                }
            }
        }
        Ok(())
    }

    fn steps_each_parameter_alone(&self) -> bool {
        true
    }

    fn backward_step(&mut self, loss: &Tensor<B>) -> Result<()> {
        // Each trainable parameter's graph leaf, with its group's rule.
        let mut by_var = HashMap::new();
        for (gi, group) in self.groups.iter().enumerate() {
            let config: &R = group_config(&group.options, gi)?;
            for p in &group.params {
                if let Some(id) = p.value().var_id() {
                    by_var.insert(id, (config, p));
                }
            }
        }
        let state = &mut self.state;
        loss.backward_each(|id, g| match by_var.get(&id) {
            Some(&(config, p)) => update_param(config, state, p, &g),
            None => Ok(()),
        })
    }

    fn accumulate(&mut self, grads: &Gradients<B>) -> Result<()> {
        let map = GradMap::from_gradients(self.all_params(), grads);
        self.accumulated.accumulate(&map)
    }

    fn zero_grad(&mut self) {
        self.accumulated.clear();
    }

    fn accumulated_mut(&mut self) -> &mut GradMap<B> {
        &mut self.accumulated
    }

    fn step_accumulated(&mut self) -> Result<()> {
        let grads = self.accumulated.clone();
        self.step_with(&grads)
    }

    fn param_groups(&self) -> &[ParamGroup<B>] {
        &self.groups
    }

    fn param_groups_mut(&mut self) -> &mut [ParamGroup<B>] {
        &mut self.groups
    }

    fn state_dict(&self) -> OptimizerState<B> {
        let mut tensors = Vec::new();
        let mut per_param = serde_json::Map::new();
        let mut groups = Vec::new();
        let mut index = 0usize;
        for group in &self.groups {
            let mut ids = Vec::new();
            for p in &group.params {
                if let Some(st) = self.state.get(&p.id()) {
                    let mut entry = serde_json::Map::new();
                    entry.insert("step".into(), json!(st.step));
                    for (name, v) in &st.scalars {
                        entry.insert(name.clone(), json!(v));
                    }
                    per_param.insert(index.to_string(), Value::Object(entry));
                    for (name, t) in &st.buffers {
                        tensors.push((format!("state.{index}.{name}"), t.clone()));
                    }
                }
                ids.push(index);
                index += 1;
            }
            let mut g = group.options.to_json();
            if let Value::Object(map) = &mut g {
                map.insert("params".into(), json!(ids));
                map.insert("initial_lr".into(), json!(group.initial_lr));
            }
            groups.push(g);
        }
        let name = self.groups.first().map_or("", |g| g.options.name());
        OptimizerState {
            tensors,
            meta: json!({"optimizer": name, "param_groups": groups, "state": per_param}),
        }
    }

    fn load_state_dict(&mut self, saved: &OptimizerState<B>) -> Result<()> {
        const OP: &str = "Optimizer::load_state_dict";
        let meta = &saved.meta;
        let name = self.groups.first().map_or("", |g| g.options.name());
        let saved_name = meta["optimizer"].as_str().unwrap_or("<missing>");
        if saved_name != name {
            return Err(Error::invalid(
                OP,
                format!("the state is of a {saved_name} optimizer, not of a {name}"),
            ));
        }
        let groups = meta["param_groups"]
            .as_array()
            .ok_or_else(|| Error::invalid(OP, "the state has no `param_groups` list"))?;
        if groups.len() != self.groups.len() {
            return Err(Error::invalid(
                OP,
                format!(
                    "the state has {} param groups, the optimizer {}",
                    groups.len(),
                    self.groups.len()
                ),
            ));
        }
        let mut options = Vec::new();
        let mut params = Vec::new();
        for (gi, (saved_group, group)) in groups.iter().zip(&self.groups).enumerate() {
            let n = saved_group["params"].as_array().map_or(0, Vec::len);
            if n != group.params.len() {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "param group {gi} has {n} parameters in the state, {} in the optimizer",
                        group.params.len()
                    ),
                ));
            }
            options.push((
                OptimOptions::from_json(name, saved_group)?,
                saved_group["initial_lr"].as_f64(),
            ));
            params.extend(group.params.iter().cloned());
        }
        let mut state: HashMap<ParamId, ParamState<B>> = HashMap::new();
        let per_param = meta["state"].as_object().cloned().unwrap_or_default();
        for (key, entry) in &per_param {
            let index: usize = key
                .parse()
                .map_err(|_| Error::invalid(OP, format!("bad state index `{key}`")))?;
            let p = params.get(index).ok_or_else(|| {
                Error::invalid(
                    OP,
                    format!(
                        "state index {index} is past the {} parameters",
                        params.len()
                    ),
                )
            })?;
            let mut st = ParamState::default();
            for (k, v) in entry.as_object().into_iter().flatten() {
                let v = v.as_f64().ok_or_else(|| {
                    Error::invalid(OP, format!("state.{index}.{k} is not a number"))
                })?;
                if k == "step" {
                    st.step = v as u64;
                } else {
                    st.set_scalar(k, v);
                }
            }
            state.insert(p.id(), st);
        }
        for (tname, t) in &saved.tensors {
            let rest = tname.strip_prefix("state.").unwrap_or("");
            let (index, bname) = rest
                .split_once('.')
                .and_then(|(i, b)| Some((i.parse::<usize>().ok()?, b)))
                .ok_or_else(|| Error::invalid(OP, format!("bad state tensor name `{tname}`")))?;
            let p = params.get(index).ok_or_else(|| {
                Error::invalid(
                    OP,
                    format!("`{tname}` names parameter {index} of {}", params.len()),
                )
            })?;
            if t.shape() != p.shape().as_slice() {
                return Err(Error::shapes(OP, t.shape(), &p.shape())
                    .with_hint(format!("`{tname}` does not have its parameter's shape")));
            }
            let dtype = p.data().dtype();
            state
                .entry(p.id())
                .or_default()
                .set_buffer(bname, t.detach().cast(dtype)?);
        }
        for (group, (opts, initial)) in self.groups.iter_mut().zip(options) {
            group.options = opts;
            group.initial_lr = initial;
        }
        self.state = state;
        Ok(())
    }
}

/// Applies PyTorch's L2 weight decay `g + wd * p` when `wd` is not zero.
pub(crate) fn l2_decay<B: Backend>(g: &Tensor<B>, p: &Tensor<B>, wd: f64) -> Result<Tensor<B>> {
    if wd != 0.0 {
        g.add(p.mul(wd)?)
    } else {
        Ok(g.clone())
    }
}

/// `a + w * (b - a)`: PyTorch's `a.lerp_(b, w)`.
pub(crate) fn lerp<B: Backend>(a: &Tensor<B>, b: &Tensor<B>, w: f64) -> Result<Tensor<B>> {
    a.add(b.sub(a)?.mul(w)?)
}

/// `a * beta + (1 - beta) * g * g`: an exponential average of squared gradients.
pub(crate) fn ema_sq<B: Backend>(a: &Tensor<B>, g: &Tensor<B>, beta: f64) -> Result<Tensor<B>> {
    a.mul(beta)?.add(g.mul(g)?.mul(1.0 - beta)?)
}

/// Checks that a hyper-parameter lies in `[lo, hi)` (`hi` included when `closed`).
pub(crate) fn check_range(
    op: &'static str,
    name: &str,
    v: f64,
    lo: f64,
    hi: f64,
    closed: bool,
) -> Result<()> {
    let ok = v >= lo && (v < hi || (closed && v <= hi));
    if ok {
        Ok(())
    } else {
        let close = if closed { ']' } else { ')' };
        Err(Error::invalid(
            op,
            format!("invalid {name}: {v} (must lie in [{lo}, {hi}{close})"),
        ))
    }
}

/// Checks that each named hyper-parameter `(name, value)` lies in `[0, inf)`, in order.
pub(crate) fn check_nonneg(op: &'static str, params: &[(&str, f64)]) -> Result<()> {
    params
        .iter()
        .try_for_each(|&(name, v)| check_range(op, name, v, 0.0, f64::INFINITY, false))
}

/// Checks that both betas lie in `[0, 1)` (`[0, 1]` when `closed`).
pub(crate) fn check_betas(op: &'static str, betas: (f64, f64), closed: bool) -> Result<()> {
    check_range(op, "beta parameter at index 0", betas.0, 0.0, 1.0, closed)?;
    check_range(op, "beta parameter at index 1", betas.1, 0.0, 1.0, closed)
}
