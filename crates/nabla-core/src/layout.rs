//! Strided layouts: how a view's logical indices map onto a flat buffer.
//!
//! Every movement that can be expressed as metadata (permute, broadcast, slice with any non-zero step,
//! reverse, squeeze, unsqueeze, compatible reshape) is a [`Layout`] transformation and costs no copy.

use crate::{Error, Result, Shape};
use smallvec::{SmallVec, smallvec};

/// Dimensions kept inline up to rank 4, so that making, cloning and viewing the tensors of most
/// programs allocates nothing for their layout.
type Dims = SmallVec<[usize; 4]>;
/// Strides, inline like [`Dims`].
type Strides = SmallVec<[isize; 4]>;

/// Row-major strides of `dims`, with size-0 and size-1 dimensions counted as size 1 (saturating at
/// `isize::MAX`, see [`crate::contiguous_strides`]).
fn contiguous_strides(dims: &[usize]) -> Strides {
    let mut strides: Strides = smallvec![0isize; dims.len()];
    crate::shape::fill_contiguous_strides(dims, &mut strides);
    strides
}

/// Shape, strides (in elements, possibly zero or negative) and the offset of element `[0, 0, ...]`.
///
/// ```
/// use nabla_core::Layout;
/// let l = Layout::contiguous([2, 3]);
/// let t = l.permute(&[1, 0]).unwrap();
/// assert_eq!(t.shape(), &[3, 2]);
/// assert_eq!(t.strides(), &[1, 3]);
/// assert!(!t.is_contiguous());
/// // Offsets in row-major order of the view:
/// assert_eq!(t.offsets().collect::<Vec<_>>(), vec![0, 3, 1, 4, 2, 5]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Dims,
    strides: Strides,
    offset: usize,
}

impl Layout {
    /// A row-major layout starting at offset 0.
    pub fn contiguous(shape: impl Into<Shape>) -> Self {
        Layout::row_major(shape.into().dims())
    }

    /// A row-major layout of `dims` starting at offset 0; allocates nothing up to rank 4.
    pub fn row_major(dims: &[usize]) -> Self {
        Layout {
            shape: Dims::from_slice(dims),
            strides: contiguous_strides(dims),
            offset: 0,
        }
    }

    /// A layout from raw parts. The caller guarantees every reachable offset is inside its buffer;
    /// [`Layout::max_offset`] and [`Layout::min_offset`] help check that.
    pub fn from_parts(shape: Vec<usize>, strides: Vec<isize>, offset: usize) -> Result<Self> {
        if shape.len() != strides.len() {
            return Err(Error::invalid(
                "layout",
                format!("shape {shape:?} and strides {strides:?} have different ranks"),
            ));
        }
        let l = Layout {
            shape: Dims::from_vec(shape),
            strides: Strides::from_vec(strides),
            offset,
        };
        if l.numel() > 0 && l.min_offset() < 0 {
            return Err(Error::invalid(
                "layout",
                format!("{l:?} reaches a negative offset"),
            ));
        }
        Ok(l)
    }

    /// The logical shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Strides in elements, one per dimension.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Offset of the first logical element in the buffer.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of logical elements.
    pub fn numel(&self) -> usize {
        crate::shape::saturating_numel(&self.shape)
    }

    /// `true` if the view is row-major and dense (its elements are `offset..offset + numel` in order).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() <= 1 {
            return true;
        }
        let mut expected = 1isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 {
                if s != expected {
                    return false;
                }
                expected *= d as isize;
            }
        }
        true
    }

    /// If the view is contiguous, the buffer range it covers (`0..0` for an empty view).
    pub fn contiguous_range(&self) -> Option<std::ops::Range<usize>> {
        if self.numel() == 0 {
            return Some(0..0);
        }
        self.is_contiguous()
            .then(|| self.offset..self.offset + self.numel())
    }

    /// The smallest offset any element reaches (as a signed number; meaningless for empty views).
    pub fn min_offset(&self) -> isize {
        let mut o = self.offset as isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            if d > 0 && s < 0 {
                o += s * (d as isize - 1);
            }
        }
        o
    }

    /// The largest offset any element reaches (meaningless for empty views).
    pub fn max_offset(&self) -> isize {
        let mut o = self.offset as isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            if d > 0 && s > 0 {
                o += s * (d as isize - 1);
            }
        }
        o
    }

    /// The buffer offset of the element at a multi-index (no bounds check beyond a debug assertion).
    pub fn offset_of(&self, index: &[usize]) -> usize {
        debug_assert_eq!(index.len(), self.rank());
        let mut o = self.offset as isize;
        for (&i, &s) in index.iter().zip(&self.strides) {
            o += i as isize * s;
        }
        o as usize
    }

    /// Iterates the buffer offsets of all elements in row-major order of the view.
    pub fn offsets(&self) -> Offsets<'_> {
        Offsets {
            layout: self,
            index: vec![0; self.rank()],
            next: self.offset as isize,
            remaining: self.numel(),
        }
    }

    /// Reorders dimensions: output dimension `i` is input dimension `perm[i]`.
    pub fn permute(&self, perm: &[usize]) -> Result<Layout> {
        let r = self.rank();
        let mut seen = vec![false; r];
        if perm.len() != r
            || perm
                .iter()
                .any(|&p| p >= r || std::mem::replace(&mut seen[p], true))
        {
            return Err(Error::invalid(
                "permute",
                format!(
                    "{perm:?} is not a permutation of the {r} axes of shape {:?}",
                    self.shape
                ),
            ));
        }
        Ok(Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        })
    }

    /// Swaps two (already normalised) axes.
    pub fn transpose(&self, a: usize, b: usize) -> Result<Layout> {
        let mut perm: Vec<usize> = (0..self.rank()).collect();
        if a >= self.rank() || b >= self.rank() {
            return Err(Error::InvalidAxis {
                op: "transpose",
                axis: a.max(b) as isize,
                rank: self.rank(),
            });
        }
        perm.swap(a, b);
        self.permute(&perm)
    }

    /// Broadcasts to `shape` by prepending dimensions and giving size-1 dimensions stride 0.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        crate::checked_numel("broadcast_to", shape)?;
        let r = shape.len();
        if r < self.rank() {
            return Err(Error::shapes("broadcast_to", &self.shape, shape)
                .with_hint("the target has fewer dimensions than the source"));
        }
        let lead = r - self.rank();
        let mut strides: Strides = smallvec![0isize; r];
        for i in 0..self.rank() {
            let (d, t) = (self.shape[i], shape[lead + i]);
            strides[lead + i] =
                if d == t {
                    self.strides[i]
                } else if d == 1 {
                    0
                } else {
                    return Err(Error::shapes("broadcast_to", &self.shape, shape).with_hint(
                        format!("source dimension {i} has size {d}, which is neither 1 nor {t}"),
                    ));
                };
        }
        Ok(Layout {
            shape: Dims::from_slice(shape),
            strides,
            offset: self.offset,
        })
    }

    /// Selects `len` elements of `axis` starting at `start` and moving by `step` (non-zero, may be
    /// negative). Indices must already be resolved: every selected index lies in `0..shape[axis]`.
    pub fn slice(&self, axis: usize, start: usize, len: usize, step: isize) -> Result<Layout> {
        if axis >= self.rank() {
            return Err(Error::InvalidAxis {
                op: "slice",
                axis: axis as isize,
                rank: self.rank(),
            });
        }
        let d = self.shape[axis];
        let last = start as isize + step * (len as isize - 1);
        if step == 0 || (len > 0 && (start >= d || last < 0 || last >= d as isize)) {
            return Err(Error::invalid(
                "slice",
                format!(
                    "start {start}, length {len}, step {step} do not fit axis {axis} of size {d}"
                ),
            ));
        }
        let mut out = self.clone();
        if len > 0 {
            out.offset = (self.offset as isize + start as isize * self.strides[axis]) as usize;
        }
        out.shape[axis] = len;
        out.strides[axis] = self.strides[axis] * step;
        Ok(out)
    }

    /// Reverses the order of elements along `axis`.
    pub fn flip(&self, axis: usize) -> Result<Layout> {
        let d = self.shape.get(axis).copied().ok_or(Error::InvalidAxis {
            op: "flip",
            axis: axis as isize,
            rank: self.rank(),
        })?;
        if d == 0 {
            return Ok(self.clone());
        }
        self.slice(axis, d - 1, d, -1)
    }

    /// Inserts a dimension of size 1 at `axis` (`0..=rank`).
    pub fn unsqueeze(&self, axis: usize) -> Result<Layout> {
        if axis > self.rank() {
            return Err(Error::InvalidAxis {
                op: "unsqueeze",
                axis: axis as isize,
                rank: self.rank() + 1,
            });
        }
        let mut out = self.clone();
        let stride = if axis < self.rank() {
            self.strides[axis] * self.shape[axis] as isize
        } else {
            1
        };
        out.shape.insert(axis, 1);
        out.strides.insert(axis, stride);
        Ok(out)
    }

    /// Removes dimension `axis`, which must have size 1.
    pub fn squeeze(&self, axis: usize) -> Result<Layout> {
        match self.shape.get(axis) {
            None => Err(Error::InvalidAxis {
                op: "squeeze",
                axis: axis as isize,
                rank: self.rank(),
            }),
            Some(&d) if d != 1 => Err(Error::invalid(
                "squeeze",
                format!("axis {axis} of shape {:?} has size {d}, not 1", self.shape),
            )),
            Some(_) => {
                let mut out = self.clone();
                out.shape.remove(axis);
                out.strides.remove(axis);
                Ok(out)
            }
        }
    }

    /// A view with a new shape of the same element count, if one exists without copying
    /// (NumPy's no-copy reshape rule); `None` when the data must be copied first.
    pub fn reshape(&self, shape: &[usize]) -> Option<Layout> {
        if crate::shape::saturating_numel(shape) != self.numel() {
            return None;
        }
        if self.is_contiguous() {
            return Some(Layout {
                shape: Dims::from_slice(shape),
                strides: contiguous_strides(shape),
                offset: self.offset,
            });
        }
        if self.numel() == 0 {
            return Some(Layout::contiguous(shape.to_vec()));
        }
        // Drop size-1 dims of the source; they constrain nothing.
        let (od, os): (Vec<usize>, Vec<isize>) = self
            .shape
            .iter()
            .zip(&self.strides)
            .filter(|(d, _)| **d != 1)
            .map(|(d, s)| (*d, *s))
            .unzip();
        // NumPy's no-copy reshape: group old and new dims into runs of equal element count; each run of
        // old dims must be mutually contiguous, and the new dims of the run take strides from it.
        let nd = shape;
        let mut new_strides: Strides = smallvec![1isize; nd.len()];
        let (mut oi, mut oj, mut ni, mut nj) = (0usize, 1usize, 0usize, 1usize);
        while ni < nd.len() && oi < od.len() {
            let (mut np, mut op) = (nd[ni], od[oi]);
            while np != op {
                if np < op {
                    np *= *nd.get(nj)?;
                    nj += 1;
                } else {
                    op *= *od.get(oj)?;
                    oj += 1;
                }
            }
            for k in oi..oj - 1 {
                if os[k] != os[k + 1] * od[k + 1] as isize {
                    return None;
                }
            }
            new_strides[nj - 1] = os[oj - 1];
            for k in (ni + 1..nj).rev() {
                new_strides[k - 1] = new_strides[k] * nd[k] as isize;
            }
            ni = nj;
            nj += 1;
            oi = oj;
            oj += 1;
        }
        Some(Layout {
            shape: Dims::from_slice(shape),
            strides: new_strides,
            offset: self.offset,
        })
    }

    /// Merges adjacent dimensions that can be walked as one (a stride of `s * d` followed by `s`), drops
    /// size-1 dimensions, and returns the simplified `(shape, strides)` of every layout together. All
    /// layouts must share one shape. Kernels walk the result instead of the original rank.
    pub fn coalesce(layouts: &[&Layout]) -> (Vec<usize>, Vec<Vec<isize>>) {
        let shape = layouts[0].shape();
        let mut dims: Vec<usize> = Vec::with_capacity(shape.len());
        let mut strides: Vec<Vec<isize>> = vec![Vec::with_capacity(shape.len()); layouts.len()];
        for (axis, &d) in shape.iter().enumerate() {
            if d == 1 {
                continue;
            }
            let mergeable = !dims.is_empty()
                && layouts.iter().enumerate().all(|(k, l)| {
                    let prev = *strides[k].last().unwrap();
                    prev == l.strides[axis] * d as isize
                });
            if mergeable {
                *dims.last_mut().unwrap() *= d;
                for (k, l) in layouts.iter().enumerate() {
                    *strides[k].last_mut().unwrap() = l.strides[axis];
                }
            } else {
                dims.push(d);
                for (k, l) in layouts.iter().enumerate() {
                    strides[k].push(l.strides[axis]);
                }
            }
        }
        (dims, strides)
    }
}

/// Iterator over buffer offsets of a [`Layout`] in row-major order; see [`Layout::offsets`].
pub struct Offsets<'a> {
    layout: &'a Layout,
    index: Vec<usize>,
    next: isize,
    remaining: usize,
}

impl Iterator for Offsets<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let current = self.next as usize;
        let l = self.layout;
        for ax in (0..l.rank()).rev() {
            self.index[ax] += 1;
            self.next += l.strides[ax];
            if self.index[ax] < l.shape[ax] {
                break;
            }
            self.next -= l.strides[ax] * l.shape[ax] as isize;
            self.index[ax] = 0;
        }
        Some(current)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Offsets<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn materialize(l: &Layout) -> Vec<usize> {
        l.offsets().collect()
    }

    #[test]
    fn slice_with_negative_step() {
        let l = Layout::contiguous([5]);
        let s = l.slice(0, 4, 3, -2).unwrap();
        assert_eq!(materialize(&s), vec![4, 2, 0]);
        assert_eq!(materialize(&l.flip(0).unwrap()), vec![4, 3, 2, 1, 0]);
        assert!(l.slice(0, 4, 3, 2).is_err());
    }

    #[test]
    fn broadcast_and_squeeze() {
        let l = Layout::contiguous([3, 1]);
        let b = l.broadcast_to(&[2, 3, 4]).unwrap();
        assert_eq!(b.strides(), &[0, 1, 0]);
        assert_eq!(materialize(&b).len(), 24);
        assert!(l.broadcast_to(&[3, 2, 5]).is_err());
        assert_eq!(l.squeeze(1).unwrap().shape(), &[3]);
        assert!(l.squeeze(0).is_err());
        assert_eq!(l.unsqueeze(0).unwrap().shape(), &[1, 3, 1]);
    }

    #[test]
    fn coalesce_merges_contiguous_dims() {
        let l = Layout::contiguous([2, 3, 4]);
        let (d, s) = Layout::coalesce(&[&l]);
        assert_eq!(d, vec![24]);
        assert_eq!(s, vec![vec![1]]);
        let t = l.permute(&[1, 0, 2]).unwrap();
        let (d, _) = Layout::coalesce(&[&t]);
        assert_eq!(d, vec![3, 2, 4]);
    }

    #[test]
    fn reshape_of_transpose_needs_copy() {
        let t = Layout::contiguous([2, 3]).permute(&[1, 0]).unwrap();
        assert!(t.reshape(&[6]).is_none());
        assert_eq!(
            materialize(&t.reshape(&[3, 2, 1]).unwrap()),
            materialize(&t)
        );
        assert_eq!(
            materialize(&t.reshape(&[3, 1, 2]).unwrap()),
            materialize(&t)
        );
    }

    fn arb_view() -> impl Strategy<Value = Layout> {
        (prop::collection::vec(1usize..4, 0..4), any::<u64>()).prop_map(|(dims, seed)| {
            let mut l = Layout::contiguous(dims.clone());
            let mut s = seed;
            for (ax, &d) in dims.iter().enumerate() {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                match (s >> 33) % 4 {
                    0 => l = l.flip(ax).unwrap(),
                    1 if d > 1 => l = l.slice(ax, 1, d - 1, 1).unwrap(),
                    _ => {}
                }
            }
            if l.rank() >= 2 {
                l = l.transpose(0, l.rank() - 1).unwrap();
            }
            l
        })
    }

    proptest! {
        #[test]
        fn reshape_views_keep_order(l in arb_view(), split in 0usize..3) {
            let before = materialize(&l);
            let n = l.numel();
            let mut target = vec![n];
            if split > 0 && n % 2 == 0 { target = vec![2, n / 2]; }
            if split > 1 { target.insert(0, 1); }
            if let Some(r) = l.reshape(&target) {
                prop_assert_eq!(materialize(&r), before.clone());
            }
            // Reshape to the same shape is always a view.
            let same = l.reshape(l.shape()).unwrap();
            prop_assert_eq!(materialize(&same), before);
        }

        #[test]
        fn coalesce_preserves_offsets(l in arb_view()) {
            let (d, s) = Layout::coalesce(&[&l]);
            let c = Layout::from_parts(d, s[0].clone(), l.offset()).unwrap();
            prop_assert_eq!(materialize(&c), materialize(&l));
        }
    }
}
