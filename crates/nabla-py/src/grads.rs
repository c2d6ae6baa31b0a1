//! PyTorch's `.grad`: the gradient a leaf tensor accumulates over `backward()` calls.
//!
//! Several Python objects can wrap one leaf (a parameter returned by a module, say), so the slot
//! belongs to the leaf's graph node: a registry maps each live leaf to its slot, and every wrapper
//! of the leaf holds the slot alive.

use crate::value::Eager;
use nabla_core::Result;
use nabla_tensor::{Gradients, VarId};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

/// Where a leaf's gradient accumulates.
#[derive(Default, Debug)]
pub struct GradSlot {
    grad: Mutex<Option<Eager>>,
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

/// Adds each gradient of `grads` to its leaf's slot (leaves no Python object holds are skipped),
/// and forgets slots whose leaves are gone.
pub fn accumulate(grads: &Gradients<nabla_any::AnyBackend>) -> Result<()> {
    let mut slots = lock(&SLOTS);
    slots.retain(|_, slot| slot.strong_count() > 0);
    for (id, g) in grads.iter() {
        let Some(slot) = slots.get(&id).and_then(Weak::upgrade) else {
            continue;
        };
        let mut held = lock(&slot.grad);
        let sum = match held.take() {
            Some(old) => old.add(g)?,
            None => g.clone(),
        };
        *held = Some(sum);
    }
    Ok(())
}
