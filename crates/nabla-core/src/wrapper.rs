//! Delegation: a backend that runs every kernel on another backend and changes only what it says.
//!
//! A [`Wrapper`] states what a wrapping backend changes: its buffer handle (how a buffer the inner
//! backend returns is wrapped, and how the inner buffer is found again), a hook around every kernel
//! call, and (optionally) how fused kernels with donated inputs are forwarded. [`Wrapped`] pairs it
//! with the inner backend and implements the whole [`Backend`] contract by forwarding, so the memory
//! accounting of [`crate::MemoryTracked`], a profiler or a call counter is a few lines:
//!
//! ```
//! use nabla_core::{Backend, DType, Result, Scalar, Wrapped, Wrapper};
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! /// Counts kernel calls; buffers are the inner backend's own.
//! #[derive(Clone, Debug, Default)]
//! struct CountCalls(Arc<AtomicUsize>);
//!
//! impl<B: Backend> Wrapper<B> for CountCalls {
//!     type Storage = B::Storage;
//!     fn wrap(&self, _inner: &B, storage: B::Storage) -> B::Storage { storage }
//!     fn unwrap<'a>(&self, storage: &'a B::Storage) -> &'a B::Storage { storage }
//!     fn around<T>(&self, _op: &'static str, run: impl FnOnce() -> Result<T>) -> Result<T> {
//!         self.0.fetch_add(1, Ordering::Relaxed);
//!         run()
//!     }
//! }
//!
//! // Works for any device, e.g. `count(CpuBackend::new())`.
//! fn count<B: Backend>(device: B) -> Result<()> {
//!     let calls = CountCalls::default();
//!     let counted = Wrapped::with(device, calls.clone());
//!     let a = counted.full(4, Scalar::from(1.0), DType::F32)?;
//!     let _b = counted.copy(&a, &nabla_core::Layout::contiguous([4]))?;
//!     assert_eq!(calls.0.load(Ordering::Relaxed), 2);
//!     Ok(())
//! }
//! ```

use crate::{Backend, FusedKernel, Layout, Result};
use std::fmt::Debug;

/// A call of the inner backend's fused kernel on inner buffers (see [`Wrapper::forward_fused`]).
pub type FusedCall<'a, B> =
    dyn FnMut(Vec<(<B as Backend>::Storage, &Layout)>) -> Result<Vec<<B as Backend>::Storage>> + 'a;

/// What a [`Wrapped`] backend changes about the backend `B` it wraps. Only [`Wrapper::wrap`] and
/// [`Wrapper::unwrap`] are required.
pub trait Wrapper<B: Backend>: Clone + Debug + Send + Sync + 'static {
    /// The wrapped backend's buffer handle (`B::Storage` itself for a wrapper that only observes).
    type Storage: Clone + Debug + Send + Sync;

    /// Wraps a buffer that `inner` has just returned (a new allocation, by the [`Backend`] contract).
    fn wrap(&self, inner: &B, storage: B::Storage) -> Self::Storage;

    /// The inner backend's buffer behind a handle.
    fn unwrap<'a>(&self, storage: &'a Self::Storage) -> &'a B::Storage;

    /// Runs one kernel call of the inner backend, `op` naming the [`Backend`] method. The default just
    /// runs it; a profiler times it here, a tracer logs it.
    fn around<T>(&self, op: &'static str, run: impl FnOnce() -> Result<T>) -> Result<T> {
        let _ = op;
        run()
    }

    /// Forwards a fused-kernel call whose inputs come by value (some perhaps donated, see
    /// [`Backend::fused_many`]): `run` calls the inner backend on inner buffers and returns its
    /// results. The default hands each input's inner buffer down after dropping its handle (so a
    /// buffer whose only handle was donated is unique below too) and wraps every result.
    fn forward_fused(
        &self,
        inner: &B,
        kernel: &FusedKernel,
        inputs: Vec<(Self::Storage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
        run: &mut FusedCall<'_, B>,
    ) -> Result<Vec<Self::Storage>> {
        let _ = (kernel, shape, donate);
        let inner_inputs = inputs
            .into_iter()
            .map(|(storage, layout)| (self.unwrap(&storage).clone(), layout))
            .collect();
        Ok(run(inner_inputs)?
            .into_iter()
            .map(|s| self.wrap(inner, s))
            .collect())
    }
}

/// The backend `B` seen through the [`Wrapper`] `W`: every kernel runs on `B`, with `W`'s handles and
/// hooks. Device identity and name are `B`'s.
#[derive(Clone, Debug, Default)]
pub struct Wrapped<B: Backend, W: Wrapper<B>> {
    inner: B,
    wrapper: W,
}

impl<B: Backend, W: Wrapper<B>> Wrapped<B, W> {
    /// `inner` seen through `wrapper`.
    pub fn with(inner: B, wrapper: W) -> Self {
        Wrapped { inner, wrapper }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The wrapper.
    pub fn wrapper(&self) -> &W {
        &self.wrapper
    }

    /// Runs the kernel `op` and wraps its buffer.
    fn one(
        &self,
        op: &'static str,
        run: impl FnOnce(&B) -> Result<B::Storage>,
    ) -> Result<W::Storage> {
        let out = self.wrapper.around(op, || run(&self.inner))?;
        Ok(self.wrapper.wrap(&self.inner, out))
    }

    /// Runs the kernel `op` and wraps its two buffers.
    fn two(
        &self,
        op: &'static str,
        run: impl FnOnce(&B) -> Result<(B::Storage, B::Storage)>,
    ) -> Result<(W::Storage, W::Storage)> {
        let (a, b) = self.wrapper.around(op, || run(&self.inner))?;
        Ok((
            self.wrapper.wrap(&self.inner, a),
            self.wrapper.wrap(&self.inner, b),
        ))
    }

    /// Runs the fused-kernel call `op` (`call` on the inner backend) through the wrapper's
    /// [`Wrapper::forward_fused`], with `donate` giving one entry per result.
    fn fused_call(
        &self,
        op: &'static str,
        kernel: &FusedKernel,
        inputs: Vec<(W::Storage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
        call: impl Fn(&B, Vec<(B::Storage, &Layout)>) -> Result<Vec<B::Storage>>,
    ) -> Result<Vec<W::Storage>> {
        let mut run =
            |ins: Vec<(B::Storage, &Layout)>| self.wrapper.around(op, || call(&self.inner, ins));
        self.wrapper
            .forward_fused(&self.inner, kernel, inputs, shape, donate, &mut run)
    }

    /// The inner buffers behind `parts`, with their views.
    fn unwrap_all<'a>(
        &self,
        parts: &[(&'a W::Storage, &'a Layout)],
    ) -> Vec<(&'a B::Storage, &'a Layout)> {
        parts
            .iter()
            .map(|(s, l)| (self.wrapper.unwrap(s), *l))
            .collect()
    }
}

/// Implements [`Backend`] for [`Wrapped`] from the method list of
/// [`backend_methods!`](crate::backend_methods): every method runs on the inner backend.
macro_rules! forward_to_inner {
    ($(
        $(#[$meta:meta])*
        $recipe:ident fn $name:ident(&$self:ident $(, $arg:ident: $kind:tt)* $(,)?) -> $ret:tt $body:tt
    )*) => {
        impl<B: Backend, W: Wrapper<B>> Backend for Wrapped<B, W> {
            type Storage = W::Storage;
            $(
                forward_method! { $recipe $name ($self) [$($arg: $kind),*] $ret }
            )*
        }
    };
}

/// One method of [`Wrapped`]'s [`Backend`], by its recipe (see `backend/methods.rs`).
macro_rules! forward_method {
    // A fact of the backend or of a buffer: asked of the inner backend.
    ($recipe:ident $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] ($($ret:tt)*)) => {
        forward_method! { @fact $recipe $name ($self) [$($arg: $kind),*] ($($ret)*) }
    };
    (@fact query $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] $ret:tt) => {
        forward_method! { @ask $name ($self) [$($arg: $kind),*] $ret }
    };
    (@fact buffer $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] $ret:tt) => {
        forward_method! { @ask $name ($self) [$($arg: $kind),*] $ret }
    };
    (@fact kernel $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] $ret:tt) => {
        fn $name(&$self $(, $arg: crate::backend_arg_type!($kind))*)
            -> crate::backend_return_type!($ret)
        {
            $self.wrapper.around(stringify!($name), || {
                $self.inner.$name($(inner_arg!($self, $kind, $arg)),*)
            })
        }
    };
    (@ask $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] $ret:tt) => {
        fn $name(&$self $(, $arg: crate::backend_arg_type!($kind))*)
            -> crate::backend_return_type!($ret)
        {
            $self.inner.$name($(inner_arg!($self, $kind, $arg)),*)
        }
    };
    // A kernel call with one or two new buffers: run through the wrapper's hook, results wrapped.
    (kernel $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] one) => {
        fn $name(&$self $(, $arg: crate::backend_arg_type!($kind))*) -> Result<W::Storage> {
            $self.one(stringify!($name), |inner| inner.$name($(inner_arg!($self, $kind, $arg)),*))
        }
    };
    (kernel $name:ident ($self:ident) [$($arg:ident: $kind:tt),*] two) => {
        fn $name(&$self $(, $arg: crate::backend_arg_type!($kind))*)
            -> Result<(W::Storage, W::Storage)>
        {
            $self.two(stringify!($name), |inner| inner.$name($(inner_arg!($self, $kind, $arg)),*))
        }
    };
    // A fused call: inputs by value, donations forwarded by the wrapper's hook.
    (fused $name:ident ($self:ident)
        [$kernel:ident: $kt:tt, $inputs:ident: owned, $shape:ident: $st:tt, $donate:ident: $dt:tt]
        $ret:tt) => {
        fn $name(
            &$self,
            $kernel: crate::backend_arg_type!($kt),
            $inputs: Vec<(W::Storage, &Layout)>,
            $shape: crate::backend_arg_type!($st),
            $donate: crate::backend_arg_type!($dt),
        ) -> crate::backend_return_type!($ret) {
            forward_method! { @fused $ret $name $self ($kernel, $inputs, $shape, $donate) }
        }
    };
    (@fused one $name:ident $self:ident ($kernel:ident, $inputs:ident, $shape:ident, $donate:ident)) => {{
        $kernel.check_single_output()?;
        let op = stringify!($name);
        let mut results = $self.fused_call(op, $kernel, $inputs, $shape, &[$donate], |inner, ins| {
            Ok(vec![inner.$name($kernel, ins, $shape, $donate)?])
        })?;
        results
            .pop()
            .ok_or_else(|| crate::Error::invalid(op, "the wrapped backend returned no result"))
    }};
    (@fused many $name:ident $self:ident ($kernel:ident, $inputs:ident, $shape:ident, $donate:ident)) => {
        $self.fused_call(stringify!($name), $kernel, $inputs, $shape, $donate, |inner, ins| {
            inner.$name($kernel, ins, $shape, $donate)
        })
    };
}

/// An argument as the inner backend takes it: buffers unwrapped, anything else as it is.
macro_rules! inner_arg {
    ($self:ident, buf, $arg:ident) => {
        $self.wrapper.unwrap($arg)
    };
    ($self:ident, bufs, $arg:ident) => {
        &$self.unwrap_all($arg)
    };
    ($self:ident, ($($ty:tt)*), $arg:ident) => {
        $arg
    };
}

crate::backend_methods!(forward_to_inner);
