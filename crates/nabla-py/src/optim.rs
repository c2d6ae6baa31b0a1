//! `nabla_rs._nabla.optim`: nabla-nn's optimizers driving Python tensors, so that Python and Rust
//! share one implementation of every update rule. `nabla_rs.optim` (python/nabla_rs/optim.py)
//! gives them PyTorch's classes and signatures; the schedulers are in `sched.rs`.
//!
//! An [`Engine`] keeps a `Param` per Python tensor. Each step reads the tensors' `.grad`, runs the
//! whole update in one Rust call, and makes each updated parameter's new leaf the tensor's values
//! (its `.grad` kept, as PyTorch's in-place update keeps it). Values the user replaced since
//! (`p.data = ...`, `load_state_dict`) are taken into the `Param` first.

use crate::error::{IntoPyResult, stash};
use crate::json::{to_json, to_py_tuples};
use crate::tensor::PyTensor;
use crate::value::{Eager, Value};
use nabla_any::AnyBackend;
use nabla_core::{Error, Result};
use nabla_nn::Param;
use nabla_nn::optim::{
    AdagradConfig, AdamConfig, AdamaxConfig, GradMap, Lbfgs, LbfgsConfig, LionConfig, NAdamConfig,
    Optim, OptimOptions, Optimizer, OptimizerState, RAdamConfig, RmsPropConfig, Rule, SgdConfig,
};
use nabla_tensor::Gradients;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value as Json;

type B = AnyBackend;

/// The optimizers Python can build, by PyTorch's class names, with their default hyper-parameters.
/// One line per optimizer: `nabla_rs.optim` makes a class of each.
fn default_options(kind: &str) -> Option<OptimOptions> {
    Some(match kind {
        "SGD" => OptimOptions::Sgd(SgdConfig::default()),
        "Adam" => OptimOptions::Adam(AdamConfig::default()),
        "AdamW" => OptimOptions::Adam(AdamConfig::adamw()),
        "Adamax" => OptimOptions::Adamax(AdamaxConfig::default()),
        "NAdam" => OptimOptions::NAdam(NAdamConfig::default()),
        "RAdam" => OptimOptions::RAdam(RAdamConfig::default()),
        "RMSprop" => OptimOptions::RmsProp(RmsPropConfig::default()),
        "Adagrad" => OptimOptions::Adagrad(AdagradConfig::default()),
        "Lion" => OptimOptions::Lion(LionConfig::default()),
        "LBFGS" => OptimOptions::Lbfgs(LbfgsConfig::default()),
        _ => return None,
    })
}

/// The names of the optimizers [`default_options`] knows.
const KINDS: &[&str] = &[
    "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Lion", "LBFGS",
];

fn unknown_kind(kind: &str) -> PyErr {
    PyValueError::new_err(format!(
        "unknown optimizer {kind:?}; nabla has {}",
        KINDS.join(", ")
    ))
}

/// `(names, defaults)` of optimizer `kind`'s hyper-parameters, in PyTorch's argument order.
#[pyfunction]
fn signature<'py>(py: Python<'py>, kind: &str) -> PyResult<(Vec<&'static str>, Bound<'py, PyAny>)> {
    let options = default_options(kind).ok_or_else(|| unknown_kind(kind))?;
    let json = options.to_json();
    let names = options.field_names().to_vec();
    let values = names
        .iter()
        .map(|n| to_py_tuples(py, &json[*n]))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((names, PyList::new(py, values)?.into_any()))
}

/// `defaults` of `kind` with the keys of `given` replaced, checked by nabla-nn's config parser.
fn options_from(kind: &str, given: &Bound<'_, PyDict>) -> PyResult<OptimOptions> {
    let defaults = default_options(kind).ok_or_else(|| unknown_kind(kind))?;
    let mut json = defaults.to_json();
    let Json::Object(map) = &mut json else {
        unreachable!("a config is a JSON object");
    };
    for (key, value) in given.iter() {
        let key: String = key.extract()?;
        if !map.contains_key(&key) {
            return Err(PyTypeError::new_err(format!(
                "{kind} got an unexpected keyword argument {key:?}; its hyper-parameters are {}",
                defaults.field_names().join(", ")
            )));
        }
        map.insert(key.clone(), to_json(&value, &format!("{kind}'s {key}"))?);
    }
    OptimOptions::from_json(kind, &json).map_err(|e| PyTypeError::new_err(e.to_string()))
}

/// The update rule behind a Python optimizer.
enum Engine {
    /// A first-order optimizer (every kind but L-BFGS).
    FirstOrder(Box<dyn Optimizer<B> + Send + Sync>),
    /// L-BFGS, which steps with a closure.
    Lbfgs(Box<Lbfgs<B>>),
}

/// A first-order optimizer over `groups`, each group's options of the rule `R`.
fn first_order<R: Rule>(groups: Vec<(Vec<Param<B>>, OptimOptions)>) -> Result<Engine> {
    let config = |o: &OptimOptions| {
        R::unwrap(o).cloned().ok_or_else(|| {
            Error::invalid("optimizer", "param groups of one optimizer have one kind")
        })
    };
    let mut groups = groups.into_iter();
    let (params, options) = groups
        .next()
        .ok_or_else(|| Error::invalid("optimizer", "optimizer got an empty parameter list"))?;
    let mut opt = Optim::<B, R>::new(params, config(&options)?)?;
    for (params, options) in groups {
        opt.add_param_group(params, config(&options)?)?;
    }
    Ok(Engine::FirstOrder(Box::new(opt)))
}

fn build(groups: Vec<(Vec<Param<B>>, OptimOptions)>) -> Result<Engine> {
    let Some((_, first)) = groups.first() else {
        return Err(Error::invalid(
            "optimizer",
            "optimizer got an empty parameter list",
        ));
    };
    match first {
        OptimOptions::Sgd(_) => first_order::<SgdConfig>(groups),
        OptimOptions::Adam(_) => first_order::<AdamConfig>(groups),
        OptimOptions::Adamax(_) => first_order::<AdamaxConfig>(groups),
        OptimOptions::NAdam(_) => first_order::<NAdamConfig>(groups),
        OptimOptions::RAdam(_) => first_order::<RAdamConfig>(groups),
        OptimOptions::RmsProp(_) => first_order::<RmsPropConfig>(groups),
        OptimOptions::Adagrad(_) => first_order::<AdagradConfig>(groups),
        OptimOptions::Lion(_) => first_order::<LionConfig>(groups),
        OptimOptions::Lbfgs(config) => {
            let config = config.clone();
            let mut groups = groups.into_iter();
            let (params, _) = groups.next().expect("checked above");
            if groups.next().is_some() {
                return Err(Error::invalid(
                    "LBFGS",
                    "LBFGS doesn't support per-parameter options (parameter groups)",
                ));
            }
            Ok(Engine::Lbfgs(Box::new(Lbfgs::new(params, config)?)))
        }
    }
}

/// The optimizer of a `nabla_rs.optim` object: nabla-nn's optimizer over `Param`s that mirror the
/// Python tensors it was given.
#[pyclass(name = "Engine", module = "nabla_rs._nabla.optim")]
pub struct PyOptimizer {
    kind: String,
    engine: Engine,
    /// The Python tensors, in group order.
    tensors: Vec<Py<PyTensor>>,
    /// Their parameters, in the same order.
    params: Vec<Param<B>>,
    /// Number of tensors in each group.
    group_sizes: Vec<usize>,
}

/// The eager value of a tensor an optimizer may update: a leaf that requires gradients.
fn trainable_leaf(kind: &str, t: &PyTensor) -> PyResult<Eager> {
    let e = t.value.eager("optimizer").py()?;
    if !e.requires_grad() {
        return Err(PyValueError::new_err(format!(
            "{kind} can only optimize tensors that require grad (made with requires_grad=True or \
             nn.Parameter)"
        )));
    }
    if !e.is_leaf() {
        return Err(PyValueError::new_err(format!(
            "{kind} can't optimize a non-leaf tensor (the result of an op); optimize the leaves \
             it was computed from"
        )));
    }
    Ok(e.clone())
}

/// A `Param` for each of `tensors` (trainable leaves, none already among `existing`), each tensor
/// taking its `Param`'s leaf as its value.
fn params_of(
    py: Python<'_>,
    kind: &str,
    existing: &[Py<PyTensor>],
    tensors: &[Py<PyTensor>],
) -> PyResult<Vec<Param<B>>> {
    if tensors.is_empty() {
        return Err(PyValueError::new_err(format!(
            "{kind} got an empty parameter list"
        )));
    }
    let mut out = Vec::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        if existing.iter().chain(&tensors[..i]).any(|o| o.is(t)) {
            return Err(PyValueError::new_err(
                "some parameters appear in more than one parameter group",
            ));
        }
        let leaf = trainable_leaf(kind, &t.borrow(py))?;
        let param = Param::new(leaf.detach()).py()?;
        t.borrow_mut(py).adopt(param.value());
        out.push(param);
    }
    Ok(out)
}

impl PyOptimizer {
    /// Takes values the user gave a tensor since the last step (`p.data = ...`) into its `Param`.
    fn sync_in(&self, py: Python<'_>) -> PyResult<()> {
        for (i, (t, p)) in self.tensors.iter().zip(&self.params).enumerate() {
            let t = t.borrow(py);
            let Value::Eager(e) = &t.value else { continue };
            if e.var_id().is_none() || e.var_id() != p.value().var_id() {
                if e.dtype() != p.value().dtype() {
                    return Err(PyTypeError::new_err(format!(
                        "optimizer: parameter {i} is now {} but the optimizer was made for {} \
                         parameters; make the optimizer after converting the model (model.to(dtype))",
                        e.dtype(),
                        p.value().dtype()
                    )));
                }
                p.set(e.detach()).py()?;
            }
        }
        Ok(())
    }

    /// Makes each updated parameter's values its tensor's (the tensors in `which`, or all).
    fn sync_out(&self, py: Python<'_>, which: Option<&[bool]>) -> PyResult<()> {
        for (i, (t, p)) in self.tensors.iter().zip(&self.params).enumerate() {
            if which.is_none_or(|w| w[i]) {
                t.try_borrow_mut(py)
                    .map_err(|_| {
                        PyRuntimeError::new_err("a parameter is in use while the optimizer steps")
                    })?
                    .adopt(p.value());
            }
        }
        Ok(())
    }

    /// The first-order optimizer (what schedulers drive); an error for L-BFGS.
    pub(crate) fn first_order(&mut self) -> PyResult<&mut (dyn Optimizer<B> + Send + Sync)> {
        match &mut self.engine {
            Engine::FirstOrder(opt) => Ok(opt.as_mut()),
            Engine::Lbfgs(_) => Err(PyTypeError::new_err(
                "LBFGS steps with a closure and has no learning-rate schedulers",
            )),
        }
    }

    /// The optimizer's groups' options, for reading.
    fn group_options(&self, group: usize) -> PyResult<(OptimOptions, Option<f64>)> {
        let groups = match &self.engine {
            Engine::FirstOrder(opt) => opt.param_groups(),
            Engine::Lbfgs(opt) => opt.param_groups(),
        };
        let g = groups
            .get(group)
            .ok_or_else(|| PyKeyError::new_err(format!("no param group {group}")))?;
        Ok((g.options.clone(), g.initial_lr))
    }
}

#[pymethods]
impl PyOptimizer {
    /// `Engine(kind, params, options)`: optimizer `kind` (PyTorch's class name) over one group.
    #[new]
    fn new(
        py: Python<'_>,
        kind: String,
        params: Vec<Py<PyTensor>>,
        options: &Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let options = options_from(&kind, options)?;
        let made = params_of(py, &kind, &[], &params)?;
        let engine = build(vec![(made.clone(), options)]).py()?;
        Ok(PyOptimizer {
            kind,
            engine,
            tensors: params,
            group_sizes: vec![made.len()],
            params: made,
        })
    }

    /// Adds a parameter group with its own hyper-parameters (the rest as the optimizer's defaults).
    fn add_param_group(
        &mut self,
        py: Python<'_>,
        params: Vec<Py<PyTensor>>,
        options: &Bound<'_, PyDict>,
    ) -> PyResult<()> {
        let options = options_from(&self.kind, options)?;
        let made = params_of(py, &self.kind, &self.tensors, &params)?;
        let Engine::FirstOrder(_) = &self.engine else {
            return Err(PyValueError::new_err(
                "LBFGS doesn't support per-parameter options (parameter groups)",
            ));
        };
        // Rebuild over every group: `Optim::add_param_group` is generic over the rule.
        let mut groups = Vec::new();
        let mut start = 0;
        for (gi, &n) in self.group_sizes.iter().enumerate() {
            let (o, _) = self.group_options(gi)?;
            groups.push((self.params[start..start + n].to_vec(), o));
            start += n;
        }
        groups.push((made.clone(), options));
        // Carry the state over: the saved groups, then the new one without state.
        let saved = self.first_order()?.state_dict();
        let mut engine = build(groups).py()?;
        if let Engine::FirstOrder(opt) = &mut engine {
            let mut meta = saved.meta;
            let mut added = opt.param_groups()[self.group_sizes.len()].options.to_json();
            let first = self.params.len();
            added["params"] = Json::from((first..first + made.len()).collect::<Vec<_>>());
            if let Some(list) = meta["param_groups"].as_array_mut() {
                list.push(added);
            }
            let tensors = saved.tensors;
            opt.load_state_dict(&OptimizerState { tensors, meta })
                .py()?;
        }
        self.engine = engine;
        self.tensors.extend(params);
        self.params.extend(made);
        self.group_sizes
            .push(self.params.len() - self.group_sizes.iter().sum::<usize>());
        Ok(())
    }

    /// One update from the tensors' `.grad` (tensors without one are skipped, as PyTorch).
    fn step(&mut self, py: Python<'_>) -> PyResult<()> {
        self.sync_in(py)?;
        let mut grads = GradMap::new();
        let mut updated = vec![false; self.tensors.len()];
        for (i, (t, p)) in self.tensors.iter().zip(&self.params).enumerate() {
            if let Some(g) = t.borrow(py).grad_value() {
                grads.insert(p.id(), g.detach());
                updated[i] = true;
            }
        }
        let opt = self.first_order()?;
        py.detach(|| opt.step_with(&grads)).py()?;
        self.sync_out(py, Some(&updated))
    }

    /// One L-BFGS step: `closure()` recomputes the loss, calling `backward()` on it (after
    /// clearing the gradients) so that the parameters' `.grad` are its gradients. Returns the first
    /// loss, as PyTorch.
    fn step_closure(&mut self, py: Python<'_>, closure: Py<PyAny>) -> PyResult<PyTensor> {
        self.sync_in(py)?;
        let PyOptimizer {
            engine,
            tensors,
            params,
            ..
        } = self;
        let Engine::Lbfgs(opt) = engine else {
            return Err(PyTypeError::new_err("step_closure is L-BFGS's"));
        };
        let evaluate = || -> Result<(Eager, Gradients<B>)> {
            for (t, p) in tensors.iter().zip(params.iter()) {
                t.try_borrow_mut(py)
                    .map_err(|_| Error::invalid("LBFGS::step", "a parameter is in use"))?
                    .adopt(p.value());
            }
            let loss = closure.call0(py).map_err(stash)?;
            let loss = loss
                .bind(py)
                .cast::<PyTensor>()
                .map_err(|_| {
                    Error::invalid("LBFGS::step", "the closure must return the loss tensor")
                })?
                .borrow()
                .value
                .eager("LBFGS::step")?
                .detach();
            let pairs = tensors
                .iter()
                .zip(params.iter())
                .filter_map(|(t, p)| t.borrow(py).grad_value().map(|g| (p.value(), g)));
            Ok((loss, Gradients::from_pairs(pairs)?))
        };
        let loss = opt.step(evaluate).py()?;
        self.sync_out(py, None)?;
        Ok(PyTensor::eager(loss))
    }

    /// Number of parameter groups.
    fn group_count(&self) -> usize {
        self.group_sizes.len()
    }

    /// The tensors of group `group`.
    fn group_params<'py>(&self, py: Python<'py>, group: usize) -> PyResult<Bound<'py, PyList>> {
        let start: usize = self.group_sizes.iter().take(group).sum();
        let n = *self
            .group_sizes
            .get(group)
            .ok_or_else(|| PyKeyError::new_err(format!("no param group {group}")))?;
        PyList::new(
            py,
            self.tensors[start..start + n]
                .iter()
                .map(|t| t.clone_ref(py)),
        )
    }

    /// The names of group `group`'s entries besides `params`: the hyper-parameters in PyTorch's
    /// order, then `initial_lr` once a scheduler set it.
    fn option_names(&self, group: usize) -> PyResult<Vec<&'static str>> {
        let (options, initial) = self.group_options(group)?;
        let mut names = options.field_names().to_vec();
        if initial.is_some() {
            names.push("initial_lr");
        }
        Ok(names)
    }

    /// Group `group`'s hyper-parameter `key`.
    fn get_option<'py>(
        &self,
        py: Python<'py>,
        group: usize,
        key: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (options, initial) = self.group_options(group)?;
        if key == "initial_lr" {
            return match initial {
                Some(v) => Ok(v.into_pyobject(py)?.into_any()),
                None => Err(PyKeyError::new_err("initial_lr")),
            };
        }
        match &options.to_json()[key] {
            Json::Null if !options.field_names().contains(&key) => {
                Err(PyKeyError::new_err(key.to_string()))
            }
            v => to_py_tuples(py, v),
        }
    }

    /// Sets group `group`'s hyper-parameter `key` (what schedulers and users do to `param_groups`).
    fn set_option(&mut self, group: usize, key: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (options, _) = self.group_options(group)?;
        let what = format!("{}'s {key}", self.kind);
        let opt = match &mut self.engine {
            Engine::FirstOrder(opt) => opt,
            Engine::Lbfgs(opt) if key == "lr" => {
                opt.set_lr(value.extract()?);
                return Ok(());
            }
            Engine::Lbfgs(_) => {
                return Err(PyValueError::new_err(format!(
                    "LBFGS's {key} is fixed when it is built; only lr may change"
                )));
            }
        };
        let g = &mut opt.param_groups_mut()[group];
        if key == "initial_lr" {
            g.initial_lr = Some(value.extract()?);
            return Ok(());
        }
        if !options.field_names().contains(&key) {
            return Err(PyKeyError::new_err(format!(
                "{} param groups hold {}; {key:?} is not one",
                self.kind,
                options.field_names().join(", ")
            )));
        }
        let mut json = options.to_json();
        json[key] = to_json(value, &what)?;
        g.options = OptimOptions::from_json(options.name(), &json)
            .map_err(|e| PyTypeError::new_err(e.to_string()))?;
        Ok(())
    }

    /// The state in PyTorch's layout: `{"state": {index: {"step": n, name: tensor, ...}},
    /// "param_groups": [{hyper-parameters..., "params": [indices]}]}`.
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let saved = match &self.engine {
            Engine::FirstOrder(opt) => opt.state_dict(),
            Engine::Lbfgs(opt) => opt.state_dict().py()?,
        };
        crate::optim_state::to_python(py, saved)
    }

    /// Restores a state from `state_dict` (of the same optimizer over tensors of the same shapes).
    fn load_state_dict(&mut self, py: Python<'_>, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let name = match &self.engine {
            Engine::FirstOrder(opt) => opt.param_groups()[0].options.name(),
            Engine::Lbfgs(_) => "LBFGS",
        };
        let saved = crate::optim_state::from_python(py, state, name)?;
        self.sync_in(py)?;
        match &mut self.engine {
            Engine::FirstOrder(opt) => opt.load_state_dict(&saved).py(),
            Engine::Lbfgs(opt) => opt.load_state_dict(&saved).py(),
        }
    }
}

/// `zero_grad(tensors, set_to_none=True)`: clears each tensor's `.grad`, or sets it to zeros. A
/// function of the tensors rather than an `Engine` method, so that an L-BFGS closure may call it
/// while the engine steps.
#[pyfunction]
#[pyo3(signature = (tensors, set_to_none = true))]
fn zero_grad(py: Python<'_>, tensors: Vec<Py<PyTensor>>, set_to_none: bool) -> PyResult<()> {
    for t in &tensors {
        let t = t.borrow(py);
        if let Some(g) = t.grad_value() {
            let zeros = if set_to_none {
                None
            } else {
                Some(g.zeros_like().py()?)
            };
            t.set_grad_value(zeros);
        }
    }
    Ok(())
}

/// The `nabla_rs._nabla.optim` submodule.
pub fn optim_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "optim")?;
    m.add_class::<PyOptimizer>()?;
    m.add_class::<crate::sched::PyScheduler>()?;
    m.add_function(wrap_pyfunction!(signature, &m)?)?;
    m.add_function(wrap_pyfunction!(zero_grad, &m)?)?;
    m.add("KINDS", KINDS.to_vec())?;
    Ok(m)
}
