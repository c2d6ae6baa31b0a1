//! The cast kernel: a strided view converted element by element with [`CastFrom`] (NumPy `astype`
//! semantics, defined once in `nabla-core`).

use crate::CpuStorage;
use crate::strided::map1;
use nabla_core::{CastFrom, Element, Layout};

/// Casts a view of `S` elements to a new contiguous buffer of `D`.
pub(super) fn cast_view<S: Element, D: CastFrom>(x: &[S], l: &Layout) -> CpuStorage {
    CpuStorage::from_vec(map1(x, l, |v: S| D::cast_from(v.to_scalar())))
}
