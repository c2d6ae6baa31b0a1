//! The provided `Backend` methods, checked by the conformance suite: `CoreOnly` implements only the
//! required core of the contract (by forwarding to the CPU backend) and takes every provided method
//! (`full`, `random`, `copy`, `arg_reduce`, `pad`, `index_select`, `one_hot`, `topk`, both convolution
//! gradients, `max_pool2d`, extension ops through the host, fused kernels step by step) from the
//! trait's defaults. A user-written wrapper of a few lines (`Wrapped` with a call counter) passes the
//! suite too.

use nabla_backend_tests::{Capabilities, conformance_suite};
use nabla_core::{
    Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, HostData, Layout, ReduceOp, Result,
    UnaryOp, Wrapped, Wrapper,
};
use nabla_cpu::{CpuBackend, CpuStorage};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The required methods only, each forwarded to the CPU backend.
#[derive(Clone, Debug, Default)]
struct CoreOnly(CpuBackend);

type S = CpuStorage;

impl Backend for CoreOnly {
    type Storage = S;
    fn name(&self) -> &'static str {
        "core-only"
    }
    fn device(&self) -> Device {
        self.0.device()
    }
    fn storage_dtype(&self, s: &S) -> DType {
        self.0.storage_dtype(s)
    }
    fn storage_len(&self, s: &S) -> usize {
        self.0.storage_len(s)
    }
    fn upload(&self, data: HostData) -> Result<S> {
        self.0.upload(data)
    }
    fn read(&self, s: &S, l: &Layout) -> Result<HostData> {
        self.0.read(s, l)
    }
    fn synchronize(&self) -> Result<()> {
        self.0.synchronize()
    }
    fn unary(&self, op: UnaryOp, x: &S, l: &Layout) -> Result<S> {
        self.0.unary(op, x, l)
    }
    fn binary(&self, op: BinaryOp, a: &S, la: &Layout, b: &S, lb: &Layout) -> Result<S> {
        self.0.binary(op, a, la, b, lb)
    }
    fn compare(&self, op: CompareOp, a: &S, la: &Layout, b: &S, lb: &Layout) -> Result<S> {
        self.0.compare(op, a, la, b, lb)
    }
    fn select(&self, c: &S, lc: &Layout, t: &S, lt: &Layout, f: &S, lf: &Layout) -> Result<S> {
        self.0.select(c, lc, t, lt, f, lf)
    }
    fn cast(&self, x: &S, l: &Layout, dtype: DType) -> Result<S> {
        self.0.cast(x, l, dtype)
    }
    fn reduce(&self, op: ReduceOp, x: &S, l: &Layout, axes: &[usize]) -> Result<S> {
        self.0.reduce(op, x, l, axes)
    }
    fn cumsum(&self, x: &S, l: &Layout, axis: usize) -> Result<S> {
        self.0.cumsum(x, l, axis)
    }
    fn matmul(&self, a: &S, la: &Layout, b: &S, lb: &Layout) -> Result<S> {
        self.0.matmul(a, la, b, lb)
    }
    fn concat(&self, parts: &[(&S, &Layout)], axis: usize) -> Result<S> {
        self.0.concat(parts, axis)
    }
    fn gather(&self, x: &S, lx: &Layout, axis: usize, i: &S, li: &Layout) -> Result<S> {
        self.0.gather(x, lx, axis, i, li)
    }
    #[allow(clippy::too_many_arguments)]
    fn scatter_add(
        &self,
        d: &S,
        ld: &Layout,
        axis: usize,
        i: &S,
        li: &Layout,
        s: &S,
        ls: &Layout,
    ) -> Result<S> {
        self.0.scatter_add(d, ld, axis, i, li, s, ls)
    }
    fn sort(&self, x: &S, l: &Layout, axis: usize, descending: bool) -> Result<(S, S)> {
        self.0.sort(x, l, axis, descending)
    }
    fn conv2d(&self, x: &S, lx: &Layout, w: &S, lw: &Layout, p: &Conv2dParams) -> Result<S> {
        self.0.conv2d(x, lx, w, lw, p)
    }
}

conformance_suite!(mod core_only, make = CoreOnly::default, caps = Capabilities::all());

/// A user's wrapper: counts kernel calls, keeps the inner backend's buffers.
#[derive(Clone, Debug, Default)]
struct CountCalls(Arc<AtomicUsize>);

impl<B: Backend> Wrapper<B> for CountCalls {
    type Storage = B::Storage;
    fn wrap(&self, _inner: &B, storage: B::Storage) -> B::Storage {
        storage
    }
    fn unwrap<'a>(&self, storage: &'a B::Storage) -> &'a B::Storage {
        storage
    }
    fn around<T>(&self, _op: &'static str, run: impl FnOnce() -> Result<T>) -> Result<T> {
        self.0.fetch_add(1, Ordering::Relaxed);
        run()
    }
}

conformance_suite!(
    mod counted,
    make = || Wrapped::with(CpuBackend::new(), CountCalls::default()),
    caps = Capabilities::all()
);

#[test]
fn the_wrapper_sees_every_kernel_call() -> Result<()> {
    let calls = CountCalls::default();
    let counted = Wrapped::with(CpuBackend::new(), calls.clone());
    let layout = Layout::contiguous([2]);
    let x = counted.upload(HostData::F32(vec![1.0, 2.0]))?;
    let y = counted.unary(UnaryOp::Exp, &x, &layout)?;
    let total = counted.reduce(ReduceOp::Sum, &y, &layout, &[0])?;
    let HostData::F32(v) = counted.read(&total, &Layout::contiguous([1]))? else {
        panic!("f32 result expected");
    };
    assert!((v[0] - (1f32.exp() + 2f32.exp())).abs() < 1e-5);
    assert_eq!(calls.0.load(Ordering::Relaxed), 4); // upload, exp, sum, read
    Ok(())
}
