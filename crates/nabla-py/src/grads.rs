//! PyTorch's `.grad`: the gradient a leaf tensor accumulates over `backward()` calls.
//!
//! Several Python objects can wrap one leaf (a parameter returned by a module, say), so the slot
//! belongs to the leaf's graph node: a registry maps each live leaf to its slot, and every wrapper
//! of the leaf holds the slot alive. A slot also holds the leaf's gradient hooks
//! (`register_hook`), which see each gradient before it is added.

use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use crate::value::Eager;
use nabla_tensor::{Gradients, VarId};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

/// Where a leaf's gradient accumulates.
#[derive(Default)]
pub struct GradSlot {
    grad: Mutex<Option<Eager>>,
    /// `hook(grad) -> grad or None`, by handle, in the order registered.
    hooks: Mutex<Vec<(u64, Py<PyAny>)>>,
    /// `hook()`, run after each accumulation into `grad` (the Python side passes the tensor).
    post_hooks: Mutex<Vec<(u64, Py<PyAny>)>>,
}

impl GradSlot {
    /// The accumulated gradient.
    pub fn get(&self) -> Option<Eager> {
        lock(&self.grad).clone()
    }

    /// Replaces the accumulated gradient (`None` clears it).
    pub fn set(&self, grad: Option<Eager>) {
        *lock(&self.grad) = grad;
    }

    /// Adds a gradient hook (`post`: one run after accumulation); returns its handle for
    /// [`GradSlot::remove_hook`].
    pub fn add_hook(&self, hook: Py<PyAny>, post: bool) -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let list = if post { &self.post_hooks } else { &self.hooks };
        lock(list).push((id, hook));
        id
    }

    /// Removes the hook with this handle (a removed or unknown handle is ignored, as PyTorch's).
    pub fn remove_hook(&self, id: u64) {
        lock(&self.hooks).retain(|(h, _)| *h != id);
        lock(&self.post_hooks).retain(|(h, _)| *h != id);
    }

    /// Runs the post-accumulation hooks.
    fn run_post_hooks(&self, py: Python<'_>) -> PyResult<()> {
        let hooks: Vec<Py<PyAny>> = lock(&self.post_hooks)
            .iter()
            .map(|(_, h)| h.clone_ref(py))
            .collect();
        for hook in hooks {
            hook.bind(py).call0()?;
        }
        Ok(())
    }

    /// `grad` after every hook: each gets the previous one's result and may return a replacement
    /// of the same shape (converted to the gradient's dtype) or `None` to keep it.
    fn run_hooks(&self, py: Python<'_>, mut grad: Eager) -> PyResult<Eager> {
        let hooks: Vec<Py<PyAny>> = lock(&self.hooks)
            .iter()
            .map(|(_, h)| h.clone_ref(py))
            .collect();
        for hook in hooks {
            let out = hook.bind(py).call1((PyTensor::eager(grad.clone()),))?;
            if out.is_none() {
                continue;
            }
            let fresh = crate::convert::to_value(&out, Some(grad.dtype()))?
                .eager("register_hook")
                .py()?
                .clone();
            if fresh.shape() != grad.shape() {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "register_hook: the hook returned a gradient of shape {:?} for one of shape {:?}",
                    fresh.shape(),
                    grad.shape()
                )));
            }
            grad = fresh;
        }
        Ok(grad)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

static SLOTS: LazyLock<Mutex<HashMap<VarId, Weak<GradSlot>>>> = LazyLock::new(Default::default);

/// The slot of `t` when it is a leaf that can receive a gradient.
pub fn slot_for(t: &Eager) -> Option<Arc<GradSlot>> {
    if !t.is_leaf() {
        return None;
    }
    let id = t.var_id()?;
    let mut slots = lock(&SLOTS);
    if let Some(slot) = slots.get(&id).and_then(Weak::upgrade) {
        return Some(slot);
    }
    let slot = Arc::new(GradSlot::default());
    slots.insert(id, Arc::downgrade(&slot));
    Some(slot)
}

/// Makes `slot` the slot of the leaf `t` (a parameter whose values were replaced keeps its `.grad`).
pub fn rebind(t: &Eager, slot: &Arc<GradSlot>) {
    if let Some(id) = t.var_id() {
        lock(&SLOTS).insert(id, Arc::downgrade(slot));
    }
}

/// Adds each gradient of `grads`, after its leaf's hooks, to its leaf's slot (leaves no Python
/// object holds are skipped), and forgets slots whose leaves are gone.
pub fn accumulate(py: Python<'_>, grads: &Gradients<nabla_any::AnyBackend>) -> PyResult<()> {
    let reached: Vec<(Arc<GradSlot>, Eager)> = {
        let mut slots = lock(&SLOTS);
        slots.retain(|_, slot| slot.strong_count() > 0);
        grads
            .iter()
            .filter_map(|(id, g)| Some((slots.get(&id)?.upgrade()?, g.clone())))
            .collect()
    };
    // The registry is not held while hooks run: a hook may make tensors of its own.
    for (slot, g) in reached {
        let g = slot.run_hooks(py, g)?;
        {
            let mut held = lock(&slot.grad);
            let sum = match held.take() {
                Some(old) => old.add(&g).py()?,
                None => g,
            };
            *held = Some(sum);
        }
        slot.run_post_hooks(py)?;
    }
    Ok(())
}

/// `_autograd_grad(output, inputs, cotangent, create_graph)`: the gradients of `output` (seeded
/// with `cotangent`, or 1 for one element) with respect to each tracked tensor of `inputs` (leaves
/// or computed), `None` for one `output` does not depend on: `torch.autograd.grad`'s core. The graph
/// is kept; with `create_graph` the gradients are tracked too.
#[pyfunction]
#[pyo3(signature = (output, inputs, cotangent, create_graph))]
pub fn _autograd_grad(
    py: Python<'_>,
    output: &Bound<'_, PyAny>,
    inputs: &Bound<'_, PyAny>,
    cotangent: Option<&Bound<'_, PyAny>>,
    create_graph: bool,
) -> PyResult<Vec<Option<PyTensor>>> {
    let mut values = vec![crate::convert::to_value(output, None)?];
    let n_inputs = {
        let xs = crate::transforms::read_values(inputs)?;
        let n = xs.len();
        values.extend(xs);
        n
    };
    let seed = cotangent.is_some_and(|c| !c.is_none());
    if let Some(c) = cotangent.filter(|c| !c.is_none()) {
        values.push(crate::convert::to_value(c, None)?);
    }
    let ctx = nabla_tensor::AdContext::builder()
        .create_graph(create_graph)
        .build();
    let grads = match crate::value::unify(&values).py()? {
        crate::value::Group::Eager(ts) => py
            .detach(|| reached(&ctx, &ts, n_inputs, seed))
            .py()?
            .into_iter()
            .map(|g| g.map(crate::value::Value::Eager))
            .collect::<Vec<_>>(),
        crate::value::Group::Traced(ts) => reached(&ctx, &ts, n_inputs, seed)
            .py()?
            .into_iter()
            .map(|g| g.map(crate::value::Value::Traced))
            .collect(),
    };
    Ok(grads.into_iter().map(|g| g.map(PyTensor::new)).collect())
}

/// The gradients of `ts[0]` with respect to `ts[1..=n]` (seeded with `ts[n + 1]` when `seed`).
fn reached<B: nabla_core::Backend>(
    ctx: &nabla_tensor::AdContext,
    ts: &[nabla_tensor::Tensor<B>],
    n: usize,
    seed: bool,
) -> nabla_core::Result<Vec<Option<nabla_tensor::Tensor<B>>>> {
    let xs: Vec<_> = ts[1..=n].iter().collect();
    ctx.vjp_reached(&ts[0], &xs, seed.then(|| &ts[n + 1]))
}
