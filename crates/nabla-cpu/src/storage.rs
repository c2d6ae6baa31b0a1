//! CPU buffers: immutable, reference-counted host vectors.

use nabla_core::{DType, Element, Error, HostData, Layout, Result};
use std::sync::Arc;

/// A CPU buffer. Cloning shares the data; kernels never write into a buffer that another handle can
/// see (a fused kernel may reuse a donated buffer only while it holds the only handle).
#[derive(Clone, Debug)]
pub struct CpuStorage {
    data: Arc<HostData>,
}

/// The last handle to a buffer gives a large allocation to the buffer cache (`host_pool`).
impl Drop for CpuStorage {
    fn drop(&mut self) {
        if let Some(data) = Arc::get_mut(&mut self.data) {
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

impl CpuStorage {
    /// Wraps host data.
    pub fn new(data: HostData) -> Self {
        CpuStorage {
            data: Arc::new(data),
        }
    }

    /// Wraps a typed vector.
    pub fn from_vec<T: Element>(data: Vec<T>) -> Self {
        CpuStorage::new(T::into_host(data))
    }

    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// `true` if the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The underlying host data.
    pub fn host(&self) -> &HostData {
        &self.data
    }

    /// The host data, without a copy when this is the only handle.
    pub fn into_host(self) -> HostData {
        self.try_into_host()
            .unwrap_or_else(|shared| shared.host().clone())
    }

    /// The host data without a copy when this is the only handle; otherwise the handle back.
    pub(crate) fn try_into_host(mut self) -> std::result::Result<HostData, CpuStorage> {
        match Arc::get_mut(&mut self.data) {
            // The emptied handle is then dropped with nothing left to recycle.
            Some(data) => Ok(std::mem::replace(data, HostData::U8(Vec::new()))),
            None => Err(self),
        }
    }

    /// The elements as a typed slice, or a dtype error naming `op`.
    pub fn typed<T: Element>(&self, op: &'static str) -> Result<&[T]> {
        T::slice_of(&self.data).ok_or(Error::DTypeMismatch {
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
}
