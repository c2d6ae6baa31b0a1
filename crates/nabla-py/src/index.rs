//! NumPy indexing: `t[1, ::2, None, ...]` as views, and integer-array and boolean-mask (advanced)
//! indexing as gathers that gradients flow through. Tensors are immutable: `__setitem__` is refused.

use crate::convert::to_value;
use crate::error::IntoPyResult;
use crate::tensor::{PyTensor, compute};
use crate::value::{Group, Value, unify};
use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::{Indexer, Tensor};
use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PySlice, PyTuple};

/// One entry of an index key.
enum Item {
    /// A basic index (int, slice, `None`), already in nabla's terms.
    Basic(Indexer),
    /// `start:stop:step`, resolved against its axis.
    Slice(Option<isize>, Option<isize>, isize),
    /// `...`, expanded once the key's length is known.
    Ellipsis,
    /// An integer array (advanced index of one axis).
    Array(Value),
    /// A boolean mask over as many axes as it has dimensions.
    Mask(Value),
}

fn parse_item(obj: &Bound<'_, PyAny>, advanced_ints: bool) -> PyResult<Item> {
    if obj.is_none() {
        return Ok(Item::Basic(Indexer::NewAxis));
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(Item::Ellipsis);
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        let get = |name: &str| -> PyResult<Option<isize>> {
            let v = s.getattr(name)?;
            if v.is_none() {
                Ok(None)
            } else {
                v.extract().map(Some)
            }
        };
        let step = get("step")?.unwrap_or(1);
        if step == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "slice step cannot be zero",
            ));
        }
        return Ok(Item::Slice(get("start")?, get("stop")?, step));
    }
    if !obj.is_instance_of::<pyo3::types::PyBool>()
        && let Ok(i) = obj.extract::<isize>()
        && !obj.is_instance_of::<PyTensor>()
    {
        return Ok(if advanced_ints {
            Item::Array(to_value(obj, Some(DType::I64))?)
        } else {
            Item::Basic(Indexer::Select(i))
        });
    }
    let v = to_value(obj, None)?;
    match v.dtype() {
        DType::Bool => Ok(Item::Mask(v)),
        other if other.is_int() => Ok(Item::Array(v)),
        other => Err(PyIndexError::new_err(format!(
            "tensors used as indices must be integer or bool, got {other}"
        ))),
    }
}

/// NumPy's `start:stop:step` on an axis of `n` as a nabla range. Positive steps map directly; a
/// negative step is resolved as Python's `slice.indices` does, since nabla names a reversed
/// range by its low and high ends.
fn numpy_slice(start: Option<isize>, stop: Option<isize>, step: isize, n: usize) -> Indexer {
    if step > 0 {
        return Indexer::Range {
            start,
            end: stop,
            step,
        };
    }
    let n = n as isize;
    let clamp = |v: isize| if v < 0 { (v + n).max(-1) } else { v.min(n - 1) };
    let first = start.map_or(n - 1, clamp);
    let last_excluded = stop.map_or(-1, clamp);
    // Walks first, first+step, ... while above `last_excluded`.
    let low = last_excluded + 1;
    Indexer::Range {
        start: Some(low),
        end: Some((first + 1).max(low)),
        step,
    }
}

fn parse_key(key: &Bound<'_, PyAny>) -> PyResult<Vec<Item>> {
    let entries: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let advanced = entries.iter().any(|e| {
        !(e.is_none()
            || e.is_instance_of::<PyEllipsis>()
            || e.is_instance_of::<PySlice>()
            || (e.extract::<isize>().is_ok() && !e.is_instance_of::<PyTensor>()))
    });
    entries.iter().map(|e| parse_item(e, advanced)).collect()
}

/// The source axis the next entry after the expanded `items` indexes.
fn source_axis(items: &[Item]) -> usize {
    items
        .iter()
        .filter(|i| !matches!(i, Item::Basic(Indexer::NewAxis)))
        .count()
}

/// A boolean mask must have the shape of the axes it indexes, from `axis` on (NumPy's rule, which
/// lets a mask axis of size 0 stand for any axis: it selects nothing); a shorter or longer mask is
/// an error rather than a partial selection. A 0-d mask (a Python
/// `bool`) is only taken as the whole index (see `__getitem__`).
fn check_mask(mask: &Value, shape: &[usize], axis: usize) -> PyResult<()> {
    let dims = mask.shape();
    if dims.is_empty() {
        return Err(PyIndexError::new_err(
            "a boolean scalar is only supported as the whole index (t[True] or t[False])",
        ));
    }
    for (k, &d) in dims.iter().enumerate() {
        let n = shape.get(axis + k).copied().unwrap_or(0);
        // An empty mask axis selects nothing whatever the axis' size, as NumPy allows.
        if d != n && d != 0 {
            return Err(PyIndexError::new_err(format!(
                "boolean index did not match the indexed tensor along axis {}: the axis has size \
                 {n}, the mask {d}",
                axis + k
            )));
        }
    }
    Ok(())
}

/// Replaces `...` by full slices and masks by their integer coordinates, checking each mask's shape
/// against the axes of `shape` it indexes.
fn expand(items: Vec<Item>, shape: &[usize]) -> PyResult<Vec<Item>> {
    let rank = shape.len();
    let consumed: usize = items
        .iter()
        .map(|i| match i {
            Item::Basic(Indexer::NewAxis) | Item::Ellipsis => 0,
            Item::Basic(_) | Item::Slice(..) | Item::Array(_) => 1,
            Item::Mask(m) => m.shape().len(),
        })
        .sum();
    if items.iter().filter(|i| matches!(i, Item::Ellipsis)).count() > 1 {
        return Err(PyIndexError::new_err(
            "an index can only have a single ellipsis",
        ));
    }
    if consumed > rank {
        return Err(PyIndexError::new_err(format!(
            "too many indices: {consumed} for a tensor with {rank} dimensions"
        )));
    }
    let mut out = Vec::new();
    let mut seen_ellipsis = false;
    for item in items {
        match item {
            Item::Ellipsis => {
                seen_ellipsis = true;
                out.extend((0..rank - consumed).map(|_| Item::Basic(Indexer::Full)));
            }
            Item::Mask(m) => {
                check_mask(&m, shape, source_axis(&out))?;
                out.extend(mask_coordinates(&m)?.into_iter().map(Item::Array))
            }
            other => out.push(other),
        }
    }
    if !seen_ellipsis {
        out.extend((0..rank - consumed).map(|_| Item::Basic(Indexer::Full)));
    }
    Ok(out)
}

/// The coordinates of a mask's true elements, one int64 array per mask dimension (`nonzero`);
/// eager only, since the count is data.
fn mask_coordinates(mask: &Value) -> PyResult<Vec<Value>> {
    let m = mask.eager("boolean mask index").py()?;
    let flags = m.to_vec::<bool>().py()?;
    let shape = m.shape().to_vec();
    let mut coords: Vec<Vec<i64>> = vec![Vec::new(); shape.len()];
    for (flat, _) in flags.iter().enumerate().filter(|(_, f)| **f) {
        let mut rest = flat;
        for (axis, &d) in shape.iter().enumerate().rev() {
            coords[axis].push((rest % d) as i64);
            rest /= d;
        }
    }
    coords
        .into_iter()
        .map(|c| {
            let n = c.len();
            Tensor::from_vec(c, [n], m.backend()).map(Value::Eager).py()
        })
        .collect()
}

/// The value of `key` when it is a boolean scalar (a Python `bool` or a 0-d bool tensor), the
/// whole index.
fn boolean_scalar(key: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    if key.is_instance_of::<pyo3::types::PyBool>() {
        return key.extract().map(Some);
    }
    if let Ok(t) = key.cast::<PyTensor>() {
        let v = &t.borrow().value;
        if v.dtype() == DType::Bool && v.shape().is_empty() {
            let flag = v
                .eager("boolean scalar index")
                .py()?
                .to_vec::<bool>()
                .py()?;
            return Ok(flag.first().copied());
        }
    }
    Ok(None)
}

/// `t[key]` on a tensor of either kind.
fn index<B: Backend>(
    t: &Tensor<B>,
    basic: Vec<Indexer>,
    arrays: Vec<(usize, Tensor<B>)>,
) -> Result<Tensor<B>> {
    let viewed = t.i(basic)?;
    if arrays.is_empty() {
        return Ok(viewed);
    }
    gather_advanced(&viewed, arrays)
}

/// NumPy's advanced indexing of `t` by integer arrays at result axes `positions` (broadcast together):
/// the indexed axes are flattened into one, gathered by the linear index, and the broadcast index
/// shape takes their place (at the first indexed axis when they are adjacent, in front otherwise).
fn gather_advanced<B: Backend>(
    t: &Tensor<B>,
    arrays: Vec<(usize, Tensor<B>)>,
) -> Result<Tensor<B>> {
    let rank = t.rank();
    let axes: Vec<usize> = arrays.iter().map(|(a, _)| *a).collect();
    let adjacent = axes.windows(2).all(|w| w[1] == w[0] + 1);
    let rest: Vec<usize> = (0..rank).filter(|a| !axes.contains(a)).collect();
    let perm: Vec<isize> = axes.iter().chain(&rest).map(|&a| a as isize).collect();
    let moved = t.permute(&perm)?;
    let adv_dims: Vec<usize> = axes.iter().map(|&a| t.shape()[a]).collect();
    let rest_dims: Vec<usize> = rest.iter().map(|&a| t.shape()[a]).collect();
    let flat_len: usize = adv_dims.iter().product();
    let mut flat_shape = vec![flat_len];
    flat_shape.extend(&rest_dims);
    let flat = moved.reshape(flat_shape.as_slice())?;
    let refs: Vec<&Tensor<B>> = arrays.iter().map(|(_, i)| i).collect();
    let index_shape = broadcast_shapes(&refs)?;
    let mut linear: Option<Tensor<B>> = None;
    let mut stride = 1i64;
    for ((_, idx), &d) in arrays.iter().zip(&adv_dims).rev() {
        let idx = idx.cast(DType::I64)?.broadcast_to(index_shape.clone())?;
        let wrapped = idx.lt(0i64)?.where_(idx.add(d as i64)?, &idx)?;
        let term = wrapped.mul(stride)?;
        linear = Some(match linear {
            Some(l) => l.add(&term)?,
            None => term,
        });
        stride *= d as i64;
    }
    let linear = linear.ok_or_else(|| Error::invalid("index", "no index arrays"))?;
    let picked = flat.index_select(0, &linear.flatten_all()?)?;
    let mut out_shape = index_shape.clone();
    out_shape.extend(&rest_dims);
    let out = picked.reshape(out_shape.as_slice())?;
    if !adjacent || axes[0] == 0 {
        return Ok(out);
    }
    // Adjacent indexed axes: the index dimensions go where the first indexed axis was.
    let k = index_shape.len();
    let first = axes[0];
    let mut order: Vec<isize> = (k..k + first).map(|a| a as isize).collect();
    order.extend((0..k).map(|a| a as isize));
    order.extend((k + first..out.rank()).map(|a| a as isize));
    out.permute(&order)
}

fn broadcast_shapes<B: Backend>(ts: &[&Tensor<B>]) -> Result<Vec<usize>> {
    let rank = ts.iter().map(|t| t.rank()).max().unwrap_or(0);
    let mut shape = vec![1usize; rank];
    for t in ts {
        for (i, &d) in t.shape().iter().enumerate() {
            let slot = &mut shape[rank - t.rank() + i];
            if *slot == 1 {
                *slot = d;
            } else if d != 1 && d != *slot {
                return Err(Error::ShapeMismatch {
                    op: "index",
                    lhs: shape.clone(),
                    rhs: t.shape().to_vec(),
                    hint: Some("index arrays must broadcast together".into()),
                });
            }
        }
    }
    Ok(shape)
}

/// Checks eager index arrays against their axes (a wrong index could otherwise alias another
/// element of the flattened axes).
fn check_bounds(t_shape: &[usize], arrays: &[(usize, Value)]) -> PyResult<()> {
    for (axis, idx) in arrays {
        let Value::Eager(i) = idx else { continue };
        let d = t_shape[*axis] as i64;
        for v in i.cast(DType::I64).py()?.to_vec::<i64>().py()? {
            if v >= d || v < -d {
                return Err(PyIndexError::new_err(format!(
                    "index {v} is out of bounds for axis {axis} with size {d}"
                )));
            }
        }
    }
    Ok(())
}

#[pymethods]
impl PyTensor {
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        if let Some(keep) = boolean_scalar(key)? {
            // NumPy: a boolean scalar adds an axis of length 1 (true) or 0 (false).
            let none = py.None().into_bound(py);
            let with_axis = self.__getitem__(py, &none)?;
            if keep {
                return Ok(with_axis);
            }
            let empty = pyo3::types::PySlice::new(py, 0, 0, 1);
            return with_axis.__getitem__(py, empty.as_any());
        }
        let items = expand(parse_key(key)?, self.value.shape())?;
        let mut basic = Vec::with_capacity(items.len());
        let mut arrays: Vec<(usize, Value)> = Vec::new();
        // Result axis of each entry after the basic indexing (selections remove theirs).
        let mut axis = 0usize;
        let mut src = 0usize;
        let mut src_of = Vec::new();
        for item in items {
            match item {
                Item::Basic(Indexer::Select(i)) => {
                    basic.push(Indexer::Select(i));
                    src += 1;
                }
                Item::Basic(Indexer::NewAxis) => {
                    basic.push(Indexer::NewAxis);
                    axis += 1;
                }
                Item::Slice(start, stop, step) => {
                    let n = self.value.shape().get(src).copied().unwrap_or(0);
                    basic.push(numpy_slice(start, stop, step, n));
                    axis += 1;
                    src += 1;
                }
                Item::Basic(ix) => {
                    basic.push(ix);
                    axis += 1;
                    src += 1;
                }
                Item::Array(v) => {
                    basic.push(Indexer::Full);
                    arrays.push((axis, v));
                    src_of.push(src);
                    axis += 1;
                    src += 1;
                }
                Item::Ellipsis | Item::Mask(_) => {
                    return Err(PyTypeError::new_err("internal: unexpanded index"));
                }
            }
        }
        let checked: Vec<(usize, Value)> = src_of
            .iter()
            .zip(&arrays)
            .map(|(s, (_, v))| (*s, v.clone()))
            .collect();
        check_bounds(self.value.shape(), &checked)?;
        let mut all = vec![self.value.clone()];
        all.extend(arrays.iter().map(|(_, v)| v.clone()));
        let positions: Vec<usize> = arrays.iter().map(|(a, _)| *a).collect();
        compute(py, move || match unify(&all)? {
            Group::Eager(mut ts) => {
                let t = ts.remove(0);
                index(&t, basic, positions.into_iter().zip(ts).collect()).map(Value::Eager)
            }
            Group::Traced(mut ts) => {
                let t = ts.remove(0);
                index(&t, basic, positions.into_iter().zip(ts).collect()).map(Value::Traced)
            }
        })
    }

    /// Makes this Python object stand for `other`'s value (the last step of `t[key] = value` and of
    /// the in-place methods, which build the updated tensor functionally). A leaf that requires
    /// gradients can only be written with gradient recording off (`no_grad`), as in PyTorch; it
    /// then stays a leaf and keeps its `.grad`.
    fn _rebind(&mut self, other: PyRef<'_, PyTensor>) -> PyResult<()> {
        if self.value.requires_grad() && self.is_leaf_var() {
            if nabla_tensor::is_grad_enabled() {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "a leaf tensor that requires grad cannot be written in place while gradients \
                     are recorded; write it inside `with nabla_rs.no_grad():`, or write a copy",
                ));
            }
            let fresh = other.value.eager("in-place write").py()?.detach();
            if fresh.shape() != self.value.shape() || fresh.dtype() != self.value.dtype() {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "an in-place write of shape {:?} and dtype {} into a leaf of shape {:?} and dtype {}",
                    fresh.shape(),
                    fresh.dtype(),
                    self.value.shape(),
                    self.value.dtype()
                )));
            }
            self.adopt(fresh.leaf().py()?);
            return Ok(());
        }
        *self = PyTensor::new(other.value.clone());
        Ok(())
    }
}
