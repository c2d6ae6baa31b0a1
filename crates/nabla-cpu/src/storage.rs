//! CPU buffers: immutable, reference-counted host vectors.

use nabla_core::{
    DType, Element, Error, HostData, HostSlice, Layout, Result, dispatch_dtype, with_host_data,
};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// A CPU buffer. Cloning shares the data; kernels never write into a buffer that another handle can
/// see (a fused kernel may reuse a donated buffer only while it holds the only handle).
///
/// The elements are either owned host data or memory owned by a foreign object (see
/// [`CpuStorage::from_foreign`]), which is read in place and never written.
#[derive(Clone)]
pub struct CpuStorage {
    data: Arc<Buffer>,
}

/// What a [`CpuStorage`] reads its elements from.
enum Buffer {
    /// Host data owned by the buffer.
    Owned(HostData),
    /// Memory owned by someone else.
    Foreign(Foreign),
}

/// `len` elements of `dtype` at `ptr`, kept valid by `owner`.
struct Foreign {
    dtype: DType,
    /// Aligned for `dtype`, non-null (dangling when `len` is 0).
    ptr: *const u8,
    len: usize,
    /// Dropped (releasing the memory) with the last handle to the buffer.
    _owner: Box<dyn Any + Send + Sync>,
}

// SAFETY: the memory at `ptr` is only ever read (kernels never write into a foreign buffer, and the
// contract of `CpuStorage::from_foreign` has nothing else write to it while kernels read it), so
// shared references to it may live on any thread; the owner that keeps it valid is `Send + Sync`.
unsafe impl Send for Foreign {}
// SAFETY: as for `Send`: the elements are read-only while any handle exists.
unsafe impl Sync for Foreign {}

impl Buffer {
    /// The elements.
    fn view(&self) -> HostSlice<'_> {
        match self {
            Buffer::Owned(data) => data.as_slice(),
            Buffer::Foreign(f) => {
                dispatch_dtype!(f.dtype, T => {
                    // SAFETY: `from_foreign` checked that `ptr` is non-null and aligned for `T` and
                    // that `len` elements span at most `isize::MAX` bytes; its caller guaranteed
                    // that they are valid `T`s that nobody writes while `owner` (held in `f`, which
                    // outlives the borrow of `self`) keeps them alive.
                    T::view_of(unsafe { std::slice::from_raw_parts(f.ptr.cast::<T>(), f.len) })
                })
            }
        }
    }
}

/// The last handle to a buffer gives a large owned allocation to the buffer cache (`host_pool`); a
/// foreign buffer drops its owner instead.
impl Drop for CpuStorage {
    fn drop(&mut self) {
        if let Some(Buffer::Owned(data)) = Arc::get_mut(&mut self.data) {
            crate::host_pool::recycle(data);
        }
    }
}

/// Two handles are equal when they share one buffer.
impl PartialEq for CpuStorage {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
    }
}

impl fmt::Debug for CpuStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("CpuStorage");
        d.field("data", &self.host());
        if self.is_foreign() {
            d.field("foreign", &true);
        }
        d.finish()
    }
}

impl CpuStorage {
    /// Wraps host data.
    pub fn new(data: HostData) -> Self {
        CpuStorage {
            data: Arc::new(Buffer::Owned(data)),
        }
    }

    /// Wraps a typed vector.
    pub fn from_vec<T: Element>(data: Vec<T>) -> Self {
        CpuStorage::new(T::into_host(data))
    }

    /// Wraps `len` elements of `dtype` at `ptr`, which live in memory owned by `owner`, without a
    /// copy (as `torch.from_numpy` does). `owner` is dropped when the last handle to the buffer goes.
    ///
    /// Kernels only read the elements: results are always new buffers, and a foreign buffer is never
    /// donated to a fused kernel or moved out by [`CpuStorage::into_host`] (which copies it).
    ///
    /// Returns an error when `ptr` is null (and `len > 0`), is not aligned for `dtype`, or `len`
    /// elements would span more than `isize::MAX` bytes. With `len == 0`, `ptr` is not read and may be
    /// anything.
    ///
    /// # Safety
    ///
    /// - `ptr` points to `len` consecutive, initialized, valid elements of `dtype` (for `Bool`, every
    ///   byte is 0 or 1) inside one allocation;
    /// - that memory stays valid, and is not freed or moved, for as long as `owner` lives;
    /// - nothing writes to that memory while a handle to the buffer exists (kernels read it on any
    ///   thread at any time while a handle exists).
    pub unsafe fn from_foreign(
        dtype: DType,
        ptr: *const u8,
        len: usize,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Result<CpuStorage> {
        const OP: &str = "from_foreign";
        let (size, align, dangling) = dispatch_dtype!(dtype, T => (
            std::mem::size_of::<T>(),
            std::mem::align_of::<T>(),
            std::ptr::NonNull::<T>::dangling().as_ptr().cast_const().cast::<u8>(),
        ));
        let ptr = if len == 0 {
            dangling
        } else if ptr.is_null() {
            return Err(Error::invalid(
                OP,
                format!("null pointer to {len} elements of {dtype}"),
            ));
        } else if !(ptr as usize).is_multiple_of(align) {
            return Err(Error::invalid(
                OP,
                format!("pointer {ptr:p} is not aligned to {align} bytes, as {dtype} needs"),
            )
            .with_hint("copy the array to aligned memory first"));
        } else if len
            .checked_mul(size)
            .is_none_or(|b| b > isize::MAX as usize)
        {
            return Err(Error::invalid(
                OP,
                format!("{len} elements of {dtype} overflow the address space"),
            ));
        } else {
            ptr
        };
        Ok(CpuStorage {
            data: Arc::new(Buffer::Foreign(Foreign {
                dtype,
                ptr,
                len,
                _owner: owner,
            })),
        })
    }

    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        match &*self.data {
            Buffer::Owned(data) => data.dtype(),
            Buffer::Foreign(f) => f.dtype,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &*self.data {
            Buffer::Owned(data) => data.len(),
            Buffer::Foreign(f) => f.len,
        }
    }

    /// `true` if the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `true` if the elements live in memory owned by a foreign object (see
    /// [`CpuStorage::from_foreign`]).
    pub fn is_foreign(&self) -> bool {
        matches!(*self.data, Buffer::Foreign(_))
    }

    /// The address of the first element (aligned and non-null, dangling when the buffer is empty).
    pub fn as_ptr(&self) -> *const u8 {
        match &*self.data {
            Buffer::Owned(data) => with_host_data!(data, v => v.as_ptr().cast::<u8>()),
            Buffer::Foreign(f) => f.ptr,
        }
    }

    /// The elements, borrowed.
    pub fn host(&self) -> HostSlice<'_> {
        self.data.view()
    }

    /// The owned host data, or `None` for a foreign buffer.
    pub(crate) fn owned_host(&self) -> Option<&HostData> {
        match &*self.data {
            Buffer::Owned(data) => Some(data),
            Buffer::Foreign(_) => None,
        }
    }

    /// The host data, without a copy when this is the only handle to an owned buffer (a foreign
    /// buffer is copied).
    pub fn into_host(self) -> HostData {
        self.try_into_host()
            .unwrap_or_else(|shared| shared.host().to_owned())
    }

    /// The owned host data without a copy when this is the only handle; otherwise (shared, or
    /// foreign) the handle back.
    pub(crate) fn try_into_host(mut self) -> std::result::Result<HostData, CpuStorage> {
        match Arc::get_mut(&mut self.data) {
            // The emptied handle is then dropped with nothing left to recycle.
            Some(Buffer::Owned(data)) => Ok(std::mem::replace(data, HostData::U8(Vec::new()))),
            _ => Err(self),
        }
    }

    /// The elements as a typed slice, or a dtype error naming `op`.
    pub fn typed<T: Element>(&self, op: &'static str) -> Result<&[T]> {
        T::slice_of_view(self.host()).ok_or(Error::DTypeMismatch {
            op,
            lhs: T::DTYPE,
            rhs: self.dtype(),
        })
    }

    /// Checks that every offset `layout` reaches lies inside this buffer.
    pub fn check_layout(&self, op: &'static str, layout: &Layout) -> Result<()> {
        let numel = layout.numel();
        if numel == 0 {
            return Ok(());
        }
        // Every kernel reads its inputs through views like this one and writes outputs no larger than
        // them (ops whose outputs grow check their size where it is known), so refusing views beyond
        // the allocation limit here keeps a broadcast view from becoming a huge buffer. A view with
        // no more elements than its buffer (all but broadcasts) is as large as memory already held.
        if numel > self.len() {
            nabla_core::check_allocation(op, layout.shape(), self.dtype())?;
        }
        if layout.min_offset() < 0 || layout.max_offset() >= self.len() as isize {
            return Err(Error::invalid(
                op,
                format!(
                    "view {layout:?} reaches outside a buffer of {} elements",
                    self.len()
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn into_host_keeps_the_data_and_caches_nothing() {
        let n = 98_765;
        let storage = CpuStorage::from_vec(vec![3.5f64; n]);
        let host = storage.clone().into_host(); // shared: a copy
        assert_eq!(host.len(), n);
        let owned = storage.into_host(); // the only handle: moved out, not recycled
        assert_eq!(owned.get(n - 1), Some(nabla_core::Scalar::from(3.5f64)));
        assert!(crate::host_pool::take::<f64>(n).is_none());
    }

    use crate::CpuBackend;
    use nabla_core::{
        Backend, BinaryOp, ExtensionOp, FusedKernel, FusedOp, FusedStep, HostAllocator, HostView,
        OutputSpec, ReduceOp, UnaryOp,
    };
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Holds a vector (like a NumPy array) and records when it is dropped.
    struct Owner {
        _data: Vec<f32>,
        dropped: Arc<AtomicBool>,
    }

    impl Drop for Owner {
        fn drop(&mut self) {
            assert!(!self.dropped.swap(true, Ordering::SeqCst), "dropped twice");
        }
    }

    /// A foreign buffer over `values`, and the flag its owner sets when dropped.
    fn foreign(values: Vec<f32>) -> (CpuStorage, Arc<AtomicBool>) {
        let dropped = Arc::new(AtomicBool::new(false));
        let (ptr, len) = (values.as_ptr().cast::<u8>(), values.len());
        let owner = Owner {
            _data: values,
            dropped: dropped.clone(),
        };
        // SAFETY: the vector's heap memory does not move when the vector moves into the owner, which
        // keeps it alive, and nothing writes to it.
        let s = unsafe { CpuStorage::from_foreign(DType::F32, ptr, len, Box::new(owner)) }.unwrap();
        assert_eq!(s.as_ptr(), ptr);
        (s, dropped)
    }

    /// Doubles its one input.
    #[derive(Debug, PartialEq, Eq, Hash)]
    struct Double;

    impl ExtensionOp for Double {
        fn name(&self) -> &str {
            "test.double"
        }
        fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
            Ok(OutputSpec {
                dtype: inputs[0].0,
                shape: inputs[0].1.to_vec(),
            })
        }
        fn host_kernel(&self, inputs: &[HostView<'_>], _: &dyn HostAllocator) -> Result<HostData> {
            let x = f32::slice_of(inputs[0].data).expect("f32");
            Ok(HostData::F32(x.iter().map(|v| 2.0 * v).collect()))
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    #[test]
    fn foreign_buffers_are_read_in_place() {
        let cpu = CpuBackend::new();
        let values: Vec<f32> = (0..6).map(|i| i as f32 - 2.5).collect();
        let (x, dropped) = foreign(values.clone());
        assert!(x.is_foreign() && !CpuStorage::from_vec(values.clone()).is_foreign());
        assert_eq!((x.dtype(), x.len(), x.is_empty()), (DType::F32, 6, false));
        assert_eq!(x.host(), HostSlice::F32(&values));
        assert_eq!(
            x.typed::<f32>("test").unwrap().as_ptr().cast::<u8>(),
            x.as_ptr()
        );
        assert!(x.typed::<f64>("test").is_err());
        assert!(format!("{x:?}").contains("foreign"));

        let l = Layout::contiguous([2, 3]);
        let exp = cpu.unary(UnaryOp::Exp, &x, &l).unwrap();
        let want: Vec<f32> = values.iter().map(|v| v.exp()).collect();
        assert_eq!(exp.host(), HostSlice::F32(&want));
        let sum = cpu.binary(BinaryOp::Add, &x, &l, &exp, &l).unwrap();
        let want: Vec<f32> = values.iter().map(|v| v + v.exp()).collect();
        assert_eq!(sum.host(), HostSlice::F32(&want));
        let rows = cpu.reduce(ReduceOp::Sum, &x, &l, &[1]).unwrap();
        assert_eq!(rows.host(), HostSlice::F32(&[-4.5, 4.5]));
        // A transposed view, read back and through `read`.
        let t = l.permute(&[1, 0]).unwrap();
        let read = cpu.read(&x, &t).unwrap();
        assert_eq!(read, HostData::F32(vec![-2.5, 0.5, -1.5, 1.5, -0.5, 2.5]));
        assert_eq!(cpu.read(&x, &l).unwrap(), HostData::F32(values.clone()));
        let mm = cpu.matmul(&x, &l, &x, &t).unwrap();
        assert_eq!(mm.host(), HostSlice::F32(&[8.75, -4.75, -4.75, 8.75]));
        // Extension ops get an owned copy.
        let op: Arc<dyn ExtensionOp> = Arc::new(Double);
        let doubled = cpu.extension(&op, &[(&x, &l)]).unwrap();
        let want: Vec<f32> = values.iter().map(|v| 2.0 * v).collect();
        assert_eq!(doubled.host(), HostSlice::F32(&want));

        // A fused kernel never writes into a foreign buffer, even as the only handle.
        let kernel = FusedKernel::new(vec![
            FusedStep::new(FusedOp::Input(0), DType::F32),
            FusedStep::new(FusedOp::Unary(UnaryOp::Neg, 0), DType::F32),
        ])
        .unwrap();
        let (only, only_dropped) = foreign(values.clone());
        let flat = Layout::contiguous([6]);
        let neg = cpu
            .fused(&kernel, vec![(only, &flat)], &[6], Some(0))
            .unwrap();
        let want: Vec<f32> = values.iter().map(|v| -v).collect();
        assert_eq!(neg.host(), HostSlice::F32(&want));
        assert!(!neg.is_foreign());
        assert!(only_dropped.load(Ordering::SeqCst));

        // Results are owned buffers; the owner lives exactly as long as the handles.
        assert!(!exp.is_foreign() && !sum.is_foreign());
        let y = x.clone();
        assert_eq!(x, y);
        assert_ne!(x, exp);
        drop(x);
        assert!(!dropped.load(Ordering::SeqCst));
        let moved = std::thread::spawn(move || y.host().to_f64_vec())
            .join()
            .unwrap();
        assert_eq!(moved[5], 2.5);
        assert!(dropped.load(Ordering::SeqCst));
    }

    #[test]
    fn foreign_buffers_are_never_moved_out() {
        let (x, dropped) = foreign(vec![1.0, 2.0, 3.0]);
        let x = x.try_into_host().unwrap_err();
        assert!(!dropped.load(Ordering::SeqCst));
        assert_eq!(x.clone().into_host(), HostData::F32(vec![1.0, 2.0, 3.0]));
        // `into_host` copies, then drops the last handle and with it the owner.
        assert_eq!(x.into_host(), HostData::F32(vec![1.0, 2.0, 3.0]));
        assert!(dropped.load(Ordering::SeqCst));
    }

    #[test]
    fn foreign_pointers_are_checked() {
        let values = vec![0.0f64; 4];
        let base = values.as_ptr().cast::<u8>();
        let make = |dtype, ptr, len| {
            // SAFETY: only called with valid memory inside `values`, or with arguments that are refused.
            unsafe { CpuStorage::from_foreign(dtype, ptr, len, Box::new(())) }
        };
        assert!(make(DType::F32, std::ptr::null(), 1).is_err());
        assert!(make(DType::F64, base.wrapping_add(4), 2).is_err());
        assert!(make(DType::C64, base.wrapping_add(2), 1).is_err());
        assert!(make(DType::F32, base, usize::MAX / 2).is_err());
        // `u8` has no alignment; `f32` needs 4 bytes.
        let bytes = make(DType::U8, base.wrapping_add(3), 5).unwrap();
        assert_eq!(bytes.host(), HostSlice::U8(&[0; 5]));
        let halves = make(DType::F32, base.wrapping_add(4), 3).unwrap();
        assert_eq!(halves.host(), HostSlice::F32(&[0.0; 3]));
        // Zero length takes any pointer, null included, and reads nothing.
        for ptr in [std::ptr::null(), base.wrapping_add(1)] {
            let empty = make(DType::C128, ptr, 0).unwrap();
            assert!(empty.is_empty() && empty.is_foreign());
            assert!(!empty.as_ptr().is_null());
            assert!(
                (empty.as_ptr() as usize)
                    .is_multiple_of(std::mem::align_of::<nabla_core::num_complex::Complex64>())
            );
            assert_eq!(empty.host(), HostSlice::C128(&[]));
            assert_eq!(empty.clone().into_host(), HostData::C128(Vec::new()));
            let cpu = CpuBackend::new();
            let l = Layout::contiguous([0]);
            let e = cpu.unary(UnaryOp::Neg, &empty, &l).unwrap();
            assert_eq!((e.dtype(), e.len()), (DType::C128, 0));
        }
        drop(values);
    }
}
