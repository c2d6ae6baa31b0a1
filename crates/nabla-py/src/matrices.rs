//! Triangles, diagonals and index selection of tensors, as PyTorch spells them: `tril`, `triu`,
//! `diagonal`, `trace`, `diag_embed`, `index_select` (methods; `nabla_rs` has them as functions too).

use crate::convert::to_value;
use crate::error::IntoPyResult;
use crate::map_pair;
use crate::map_value;
use crate::tensor::{PyTensor, compute};
use crate::value::pair;
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    /// The lower triangle of each matrix `[..., m, n]`: entries on and below diagonal `diagonal`,
    /// zeros elsewhere (`torch.tril`).
    #[pyo3(signature = (diagonal = 0))]
    fn tril(&self, py: Python<'_>, diagonal: isize) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.tril(diagonal)))
    }

    /// The upper triangle of each matrix `[..., m, n]`: entries on and above diagonal `diagonal`,
    /// zeros elsewhere (`torch.triu`).
    #[pyo3(signature = (diagonal = 0))]
    fn triu(&self, py: Python<'_>, diagonal: isize) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.triu(diagonal)))
    }

    /// Diagonal `offset` of the matrices spanned by axes `dim1` and `dim2`, appended as the last axis
    /// (`torch.diagonal`).
    #[pyo3(signature = (offset = 0, dim1 = 0, dim2 = 1))]
    fn diagonal(
        &self,
        py: Python<'_>,
        offset: isize,
        dim1: isize,
        dim2: isize,
    ) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(
            py,
            move || map_value!(&v, t => t.diagonal(offset, dim1, dim2)),
        )
    }

    /// The sum of the main diagonal of each matrix `[..., m, n]` (`torch.trace` for 2-D input).
    fn trace(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.trace()))
    }

    /// Matrices with the last axis on diagonal `offset` and zeros elsewhere (`torch.diag_embed`).
    #[pyo3(signature = (offset = 0))]
    fn diag_embed(&self, py: Python<'_>, offset: isize) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.diag_embed(offset)))
    }

    /// The entries of axis `dim` at the 1-D integer `index` (`torch.index_select`).
    fn index_select(
        &self,
        py: Python<'_>,
        dim: isize,
        index: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let p = pair(&self.value, &to_value(index, None)?).py()?;
        compute(py, move || map_pair!(p, a, b => a.index_select(dim, &b)))
    }
}
