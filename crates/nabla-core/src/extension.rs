//! Extension ops: op families that live outside the core (linear algebra, signal processing, ...).
//!
//! An extension op is a value implementing [`ExtensionOp`]: a namespaced name, a shape and dtype rule,
//! and a kernel on host memory that every backend can run. A backend with its own kernel for the op
//! (a GPU shader, say) overrides [`crate::Backend::extension`] and recognises the op by its type
//! (`op.as_any()`); every other backend moves the inputs to the host, runs
//! [`ExtensionOp::host_kernel`] and uploads the result (the default [`crate::Backend::extension`]). On the CPU backend the host kernel is the native kernel and runs on
//! the tensors' memory without copies.
//!
//! Derivative rules are not part of the op (this crate knows nothing about autodiff): a family binds
//! them when an op is recorded (see `nabla_tensor::ExtensionFamily`), so every transform sees them, and
//! a missing rule is an error naming the op and the mode rather than a wrong derivative.
//!
//! An op's identity is its name plus its parameters: the op type's own `Eq` and `Hash`
//! ([`OpIdentity`], implemented for every `Hash + Eq` type), never a printed form.

use crate::{DType, HostData, Result};
use std::any::Any;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};

/// The identity of an extension op's parameters, as `Eq` and `Hash` across op types: implemented for
/// every `Hash + Eq` type, so an op type gets it by deriving those. Two ops are the same function when
/// they have the same name, the same type and equal values.
pub trait OpIdentity {
    /// `true` when `other` is a value of the same type equal to `self`.
    fn same_params(&self, other: &dyn Any) -> bool;
    /// Feeds the type and the parameters to `state`.
    fn hash_params(&self, state: &mut dyn Hasher);
}

impl<T: Hash + Eq + Any> OpIdentity for T {
    fn same_params(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<T>() == Some(self)
    }

    fn hash_params(&self, mut state: &mut dyn Hasher) {
        std::any::TypeId::of::<T>().hash(&mut state);
        self.hash(&mut state);
    }
}

/// Where a host kernel takes its output buffers from: a backend hands its kernels an allocator that
/// may return recycled allocations (the CPU backend's buffer cache), so that outputs of a program run
/// again and again are not page-faulted in afresh.
///
/// # Safety
/// [`HostAllocator::take`] must return either `None` or memory allocated by the global allocator with
/// exactly `layout`, owned by nobody else: the caller takes ownership of it as a vector.
pub unsafe trait HostAllocator: Sync {
    /// An allocation of exactly `layout` from the allocator's cache, or `None` (then the caller
    /// allocates from the global allocator).
    fn take(&self, layout: std::alloc::Layout) -> Option<std::ptr::NonNull<u8>>;
}

impl dyn HostAllocator + '_ {
    /// An empty vector with capacity for exactly `len` elements, on a cached allocation when the
    /// allocator has one of that size.
    ///
    /// ```
    /// use nabla_core::{HostAllocator, SystemAllocator};
    /// let alloc: &dyn HostAllocator = &SystemAllocator;
    /// let v: Vec<f64> = alloc.vec(10);
    /// assert!(v.is_empty() && v.capacity() >= 10);
    /// ```
    pub fn vec<T>(&self, len: usize) -> Vec<T> {
        let cached = std::alloc::Layout::array::<T>(len)
            .ok()
            .filter(|l| l.size() > 0)
            .and_then(|l| self.take(l));
        match cached {
            // SAFETY: the trait's contract: a global-allocator allocation of exactly the layout of
            // `len` elements of `T`, owned by us alone; length 0 leaves every element uninitialised.
            Some(ptr) => unsafe { Vec::from_raw_parts(ptr.as_ptr().cast::<T>(), 0, len) },
            None => Vec::with_capacity(len),
        }
    }
}

/// The global allocator, with no cache: what backends without one pass to host kernels.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemAllocator;

// SAFETY: never returns memory.
unsafe impl HostAllocator for SystemAllocator {
    fn take(&self, _layout: std::alloc::Layout) -> Option<std::ptr::NonNull<u8>> {
        None
    }
}

/// A contiguous row-major input of a host kernel.
#[derive(Clone, Copy, Debug)]
pub struct HostView<'a> {
    /// The elements, in row-major order.
    pub data: &'a HostData,
    /// The shape of the input.
    pub shape: &'a [usize],
}

/// The shape and dtype of an extension op's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSpec {
    /// Element type.
    pub dtype: DType,
    /// Row-major shape.
    pub shape: Vec<usize>,
}

/// One op of an extension family: a single-output function of tensors with a host kernel.
///
/// Implementations are plain values (a unit struct, or a struct holding the op's parameters, deriving
/// `PartialEq, Eq, Hash` for their identity); `nabla_tensor::Tensor::apply_family_op` runs one on
/// tensors of any backend and records it, with its family's derivative rules, for autodiff and
/// tracing.
///
/// ```
/// use nabla_core::{
///     DType, Element, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
/// };
/// /// Row sums of a matrix, as a toy extension.
/// #[derive(Debug, PartialEq, Eq, Hash)]
/// struct RowSum;
/// impl ExtensionOp for RowSum {
///     fn name(&self) -> &str { "demo.row_sum" }
///     fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
///         match inputs {
///             [(DType::F64, [m, _])] => Ok(OutputSpec { dtype: DType::F64, shape: vec![*m] }),
///             _ => Err(Error::invalid("demo.row_sum", "expects one f64 matrix")),
///         }
///     }
///     fn host_kernel(&self, inputs: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
///         let n = inputs[0].shape[1];
///         let x = f64::slice_of(inputs[0].data).expect("checked dtype");
///         let mut out = alloc.vec(inputs[0].shape[0]);
///         out.extend(x.chunks(n.max(1)).map(|r| r.iter().sum::<f64>()));
///         Ok(HostData::F64(out))
///     }
///     fn as_any(&self) -> &dyn std::any::Any { self }
/// }
/// let spec = RowSum.output_spec(&[(DType::F64, &[2, 3])])?;
/// assert_eq!(spec.shape, vec![2]);
/// # Ok::<(), Error>(())
/// ```
pub trait ExtensionOp: OpIdentity + Debug + Send + Sync + 'static {
    /// The op's name, namespaced by its family (`"linalg.solve"`); rules are registered under it.
    fn name(&self) -> &str;

    /// The output's dtype and shape for inputs of these dtypes and shapes; an error (naming the op and
    /// the shapes) when the inputs are not valid for the op. Called before any kernel runs.
    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec>;

    /// Computes the output on host memory from contiguous inputs already validated by
    /// [`ExtensionOp::output_spec`]. Must return data of the spec's dtype and element count. Large
    /// output buffers should come from `alloc` ([`HostAllocator::vec`]), which the backend provides.
    fn host_kernel(&self, inputs: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData>;

    /// The op as [`Any`], so rules can read the parameters of their own op type.
    fn as_any(&self) -> &dyn Any;

    /// `true` when the op maps over leading dimensions: given inputs that all have one more leading
    /// dimension of one size, it computes the op for each index of that dimension and stacks the
    /// outputs along a new leading dimension (as linear algebra does over `[..., m, n]` batches).
    /// `vmap` then batches the op with one call instead of one call per example. `false` (the
    /// default) is always correct.
    fn maps_leading_dims(&self) -> bool {
        false
    }

    /// `true` when `other` computes the same function: the same name and equal parameters
    /// ([`OpIdentity`]). Used to merge duplicate nodes of a traced program.
    fn same_as(&self, other: &dyn ExtensionOp) -> bool {
        self.name() == other.name() && self.same_params(other.as_any())
    }

    /// Feeds the op's identity (name and parameters) to `state`, consistently with
    /// [`ExtensionOp::same_as`].
    fn hash_identity(&self, mut state: &mut dyn Hasher) {
        self.name().hash(&mut state);
        self.hash_params(state);
    }
}
