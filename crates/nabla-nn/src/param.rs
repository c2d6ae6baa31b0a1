//! Parameters and buffers: named, shared, updatable tensors with a stable identity.

use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The stable identity of a [`Param`]: optimizer state is keyed by it, never by a graph node, so it
/// survives every update of the parameter's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamId(u64);

impl ParamId {
    fn fresh() -> ParamId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ParamId(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The identity as a number (unique within the process).
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Whether a [`Param`] is trained or is state the module updates itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A trainable parameter (a weight): optimizers update it from its gradient.
    Parameter,
    /// Module state that is saved and loaded but never trained (BatchNorm's running statistics).
    Buffer,
}

struct State<B: Backend> {
    /// A graph leaf when the parameter is trainable, an untracked tensor otherwise.
    value: Tensor<B>,
    trainable: bool,
}

struct Inner<B: Backend> {
    id: ParamId,
    kind: ParamKind,
    state: RwLock<State<B>>,
}

/// A parameter (or buffer) of a module: a tensor with a stable [`ParamId`], shared by every clone of
/// the handle, so a module, its optimizer and a checkpoint all see the same values.
///
/// [`Param::value`] gives the tensor to compute with: for a trainable parameter it is a graph leaf,
/// so `loss.backward()` returns its gradient, read with [`Param::grad`]. [`Param::set`] replaces the
/// values (what optimizers do); [`Param::freeze`] stops gradients from reaching it.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_nn::Param;
/// let cpu = CpuBackend::new();
/// let w = Param::new(Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu)?)?;
/// let loss = w.value().square()?.sum_all()?;
/// let grads = loss.backward()?;
/// assert_eq!(w.grad(&grads).unwrap().to_vec::<f32>()?, vec![2.0, 4.0]);
/// w.set(Tensor::from_vec(vec![0.5f32, 0.5], [2], &cpu)?)?;
/// assert_eq!(w.value().to_vec::<f32>()?, vec![0.5, 0.5]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct Param<B: Backend> {
    inner: Arc<Inner<B>>,
}

impl<B: Backend> Clone for Param<B> {
    fn clone(&self) -> Self {
        Param {
            inner: self.inner.clone(),
        }
    }
}

impl<B: Backend> std::fmt::Debug for Param<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = self.value();
        f.debug_struct("Param")
            .field("id", &self.inner.id.0)
            .field("kind", &self.inner.kind)
            .field("shape", &value.shape())
            .field("dtype", &value.dtype())
            .field("trainable", &self.is_trainable())
            .finish()
    }
}

impl<B: Backend> Param<B> {
    /// A trainable parameter holding `value` (a float tensor).
    pub fn new(value: Tensor<B>) -> Result<Param<B>> {
        Self::with_kind(value, ParamKind::Parameter)
    }

    /// A buffer: state saved with the module but never trained.
    pub fn buffer(value: Tensor<B>) -> Param<B> {
        Param {
            inner: Arc::new(Inner {
                id: ParamId::fresh(),
                kind: ParamKind::Buffer,
                state: RwLock::new(State {
                    value: value.detach(),
                    trainable: false,
                }),
            }),
        }
    }

    fn with_kind(value: Tensor<B>, kind: ParamKind) -> Result<Param<B>> {
        let id = ParamId::fresh();
        let value = leaf(id, &value)?;
        Ok(Param {
            inner: Arc::new(Inner {
                id,
                kind,
                state: RwLock::new(State {
                    value,
                    trainable: true,
                }),
            }),
        })
    }

    /// The stable identity of this parameter.
    pub fn id(&self) -> ParamId {
        self.inner.id
    }

    /// Parameter or buffer.
    pub fn kind(&self) -> ParamKind {
        self.inner.kind
    }

    /// The current values, as a graph leaf when trainable (so gradients reach it).
    pub fn value(&self) -> Tensor<B> {
        self.read().value.clone()
    }

    /// The current values, untracked.
    pub fn data(&self) -> Tensor<B> {
        self.read().value.detach()
    }

    /// Shape of the values.
    pub fn shape(&self) -> Vec<usize> {
        self.read().value.shape().to_vec()
    }

    /// Element type of the values.
    pub fn dtype(&self) -> nabla_core::DType {
        self.read().value.dtype()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.read().value.numel()
    }

    /// Replaces the values; `value` must have the same shape and dtype. The new values start a fresh
    /// graph leaf: gradients of losses computed before the update no longer refer to it.
    pub fn set(&self, value: Tensor<B>) -> Result<()> {
        let mut state = self.write();
        check_replacement(
            "Param::set",
            &value,
            state.value.shape(),
            state.value.dtype(),
        )?;
        state.value = if state.trainable {
            leaf(self.inner.id, &value)?
        } else {
            value.detach()
        };
        Ok(())
    }

    /// Replaces the values by `update(values)`, handing `update` the parameter's own handle on them
    /// (untracked). When no other handle exists (the usual case once `backward` has released the
    /// graph's saved values), an update kernel that donates its input writes the new values into the
    /// old buffer: PyTorch's in-place `param.add_(...)` without a second buffer. Otherwise the kernel
    /// writes a new buffer and the old values stay valid for whoever still holds them.
    ///
    /// The result must have the parameter's shape and dtype. Readers wait while the update runs, so
    /// `update` must not read this parameter itself (it would wait for ever).
    /// If `update` fails, the error is returned and the parameter's values are lost: they are set to
    /// NaN, so that the failure cannot pass unnoticed. Check what can be checked (shapes, dtypes,
    /// devices) before calling this.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_nn::Param;
    /// let cpu = CpuBackend::new();
    /// let w = Param::new(Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu)?)?;
    /// w.update_with(|v| v.mul(10.0))?;
    /// assert_eq!(w.value().to_vec::<f32>()?, vec![10.0, 20.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn update_with(&self, update: impl FnOnce(Tensor<B>) -> Result<Tensor<B>>) -> Result<()> {
        const OP: &str = "Param::update_with";
        let mut state = self.write();
        let (shape, dtype) = (state.value.shape().to_vec(), state.value.dtype());
        let backend = state.value.backend().clone();
        // The state gives up its handle for the duration: an empty stand-in holds its place, never
        // seen by anyone since the write lock is held until a real value is back.
        let stand_in = Tensor::zeros([0], dtype, &backend)?;
        let values = std::mem::replace(&mut state.value, stand_in).detach();
        let checked =
            update(values).and_then(|new| check_replacement(OP, &new, &shape, dtype).map(|()| new));
        let (new, failure) = match checked {
            Ok(new) => (new, None),
            Err(e) => (Tensor::full(shape, f64::NAN, dtype, &backend)?, Some(e)),
        };
        state.value = if state.trainable {
            leaf(self.inner.id, &new)?
        } else {
            new.detach()
        };
        match failure {
            None => Ok(()),
            Some(e) => Err(Error::invalid(
                OP,
                format!(
                    "the update of parameter {} failed and its values are lost (set to NaN; \
                     reload them): {e}",
                    self.inner.id.0
                ),
            )),
        }
    }

    /// Makes `value` the parameter's values exactly as given: the same graph node, not a fresh leaf,
    /// so that gradients of what the module computes reach whoever made `value`. For code that owns
    /// the values elsewhere and runs a module on them: a binding whose tensors are leaves of their
    /// own, or a traced program whose inputs are the parameters. The shape and dtype must match.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend; use nabla_nn::Param;
    /// let cpu = CpuBackend::new();
    /// let w = Param::new(Tensor::zeros([2], nabla_core::DType::F64, &cpu)?)?;
    /// let owned = Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?.leaf()?;
    /// w.bind(owned.clone())?;
    /// let grads = w.value().square()?.sum_all()?.backward()?;
    /// assert_eq!(grads.get(&owned).unwrap().to_vec::<f64>()?, vec![2.0, 4.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn bind(&self, value: Tensor<B>) -> Result<()> {
        let mut state = self.write();
        check_replacement(
            "Param::bind",
            &value,
            state.value.shape(),
            state.value.dtype(),
        )?;
        state.value = value;
        Ok(())
    }

    /// `true` when gradients reach this parameter (a parameter that is not frozen).
    pub fn is_trainable(&self) -> bool {
        self.read().trainable
    }

    /// Stops gradients from reaching this parameter; optimizers then leave it unchanged.
    pub fn freeze(&self) {
        let mut state = self.write();
        state.trainable = false;
        state.value = state.value.detach();
    }

    /// Lets gradients reach this parameter again (no effect on buffers).
    pub fn unfreeze(&self) -> Result<()> {
        if self.inner.kind == ParamKind::Buffer {
            return Ok(());
        }
        let mut state = self.write();
        if !state.trainable {
            state.value = leaf(self.inner.id, &state.value)?;
            state.trainable = true;
        }
        Ok(())
    }

    /// This parameter's gradient in `grads`, or `None` when the loss does not depend on it (or it is
    /// frozen).
    pub fn grad(&self, grads: &nabla_tensor::Gradients<B>) -> Option<Tensor<B>> {
        let state = self.read();
        if !state.trainable {
            return None;
        }
        grads.get(&state.value).cloned()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State<B>> {
        // A panic while holding the lock cannot leave the tensor half-written: recover the value.
        self.inner.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State<B>> {
        self.inner.state.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// Fails unless `value` has the parameter's `shape` and `dtype`.
fn check_replacement<B: Backend>(
    op: &'static str,
    value: &Tensor<B>,
    shape: &[usize],
    dtype: nabla_core::DType,
) -> Result<()> {
    if value.shape() != shape {
        return Err(Error::shapes(op, value.shape(), shape)
            .with_hint("the new value must have the parameter's shape"));
    }
    if value.dtype() != dtype {
        return Err(Error::DTypeMismatch {
            op,
            lhs: value.dtype(),
            rhs: dtype,
        });
    }
    Ok(())
}

/// A graph leaf holding `value`, named after the parameter's identity.
fn leaf<B: Backend>(id: ParamId, value: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::var(format!("param{}", id.0), value.detach())
}
