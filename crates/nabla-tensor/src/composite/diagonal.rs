//! Diagonals and triangles of (batches of) matrices: `diagonal` (a strided view, no copy for
//! contiguous input), `trace`, `tril`, `triu` and `diag_embed`, as `torch` names them.

use crate::Tensor;
use nabla_core::{Backend, DType, Error, Result, check_allocation, checked_numel, normalize_axis};

/// The length of diagonal `offset` of an `rows x cols` matrix (0 when it lies outside).
fn diagonal_len(rows: usize, cols: usize, offset: isize) -> usize {
    let k = offset.unsigned_abs();
    if offset >= 0 {
        rows.min(cols.saturating_sub(k))
    } else {
        rows.saturating_sub(k).min(cols)
    }
}

impl<B: Backend> Tensor<B> {
    /// The diagonal `offset` (0 the main one, positive above it, negative below) of the matrices
    /// spanned by axes `axis1` and `axis2`, as a new last axis (`torch.diagonal`): the two axes are
    /// removed and the diagonal, of length `min(rows, cols − offset)` (`min(rows + offset, cols)`
    /// below), is appended. For a contiguous input the result is a strided view of it.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec((0..12).map(f64::from).collect(), [3, 4], &CpuBackend::new())?;
    /// assert_eq!(x.diagonal(0, 0, 1)?.to_vec::<f64>()?, vec![0.0, 5.0, 10.0]);
    /// assert_eq!(x.diagonal(1, 0, 1)?.to_vec::<f64>()?, vec![1.0, 6.0, 11.0]);
    /// assert_eq!(x.diagonal(-1, 0, 1)?.to_vec::<f64>()?, vec![4.0, 9.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn diagonal(&self, offset: isize, axis1: isize, axis2: isize) -> Result<Self> {
        const OP: &str = "diagonal";
        let rank = self.rank();
        let (a, b) = (
            normalize_axis(OP, axis1, rank)?,
            normalize_axis(OP, axis2, rank)?,
        );
        if a == b {
            return Err(Error::invalid(
                OP,
                format!(
                    "axis1 and axis2 must differ, both are {a} (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let mut perm: Vec<isize> = (0..rank)
            .filter(|&d| d != a && d != b)
            .map(|d| d as isize)
            .collect();
        perm.extend([a as isize, b as isize]);
        let moved = self.permute(&perm)?;
        let (rows, cols) = (self.shape()[a], self.shape()[b]);
        let len = diagonal_len(rows, cols, offset);
        let mut flat_shape = moved.shape()[..rank - 2].to_vec();
        // Other axes may be empty, so the matrix alone may overflow.
        flat_shape.push(checked_numel(OP, &[rows, cols])?);
        let flat = moved.contiguous()?.reshape(flat_shape)?;
        if len == 0 {
            return flat.narrow(-1, 0, 0);
        }
        // Entry (i, i + offset) of a row-major rows x cols matrix sits at offset + i (cols + 1).
        let start = if offset >= 0 {
            offset.unsigned_abs()
        } else {
            offset.unsigned_abs() * cols
        };
        let step = cols + 1;
        let end = start + (len - 1) * step + 1;
        flat.slice(-1, Some(start as isize), Some(end as isize), step as isize)
    }

    /// The sum of the main diagonal of each matrix `[..., m, n]` (batched; `torch.trace` for 2-D
    /// input), of shape `[...]`.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec((0..9).map(f64::from).collect(), [3, 3], &CpuBackend::new())?;
    /// assert_eq!(x.trace()?.item::<f64>()?, 12.0);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn trace(&self) -> Result<Self> {
        self.check_matrices("trace")?;
        self.diagonal(0, -2, -1)?.sum(&[-1], false)
    }

    /// Fails unless `self` has at least two dimensions.
    fn check_matrices(&self, op: &'static str) -> Result<()> {
        if self.rank() < 2 {
            return Err(Error::invalid(
                op,
                format!(
                    "expects matrices of shape [..., m, n], got {:?}",
                    self.shape()
                ),
            ));
        }
        Ok(())
    }

    /// `self` where `keep(row, col)` holds for the entry of the last two axes, zero elsewhere.
    fn keep_entries(&self, op: &'static str, keep: impl Fn(isize, isize) -> bool) -> Result<Self> {
        self.check_matrices(op)?;
        let r = self.rank();
        let (m, n) = (self.shape()[r - 2], self.shape()[r - 1]);
        let mut mask = Vec::with_capacity(check_allocation(op, &[m, n], DType::Bool)?);
        for i in 0..m as isize {
            mask.extend((0..n as isize).map(|j| keep(i, j)));
        }
        let mask = Tensor::from_vec(mask, [m, n], self.backend())?;
        mask.where_(self, 0)
    }

    /// The lower triangle of each matrix `[..., m, n]`: entries on and below diagonal `k` (0 the main
    /// one, negative below it), zeros elsewhere (`torch.tril`). Non-finite entries outside the triangle
    /// become 0, not NaN.
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], [2, 2], &CpuBackend::new())?;
    /// assert_eq!(x.tril(0)?.to_vec::<f64>()?, vec![1.0, 0.0, 3.0, 4.0]);
    /// assert_eq!(x.triu(1)?.to_vec::<f64>()?, vec![0.0, 2.0, 0.0, 0.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn tril(&self, k: isize) -> Result<Self> {
        self.keep_entries("tril", |i, j| j <= i + k)
    }

    /// The upper triangle of each matrix `[..., m, n]`: entries on and above diagonal `k`, zeros
    /// elsewhere (`torch.triu`).
    pub fn triu(&self, k: isize) -> Result<Self> {
        self.keep_entries("triu", |i, j| j >= i + k)
    }

    /// Square matrices `[..., n + |offset|, n + |offset|]` holding the last axis of `self` `[..., n]`
    /// on diagonal `offset`, zeros elsewhere (`torch.diag_embed` over the last two axes).
    ///
    /// ```
    /// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
    /// let v = Tensor::from_vec(vec![1.0f64, 2.0], [2], &CpuBackend::new())?;
    /// assert_eq!(v.diag_embed(0)?.to_vec::<f64>()?, vec![1.0, 0.0, 0.0, 2.0]);
    /// let up = v.diag_embed(1)?;
    /// assert_eq!(up.shape(), &[3, 3]);
    /// assert_eq!(up.to_vec::<f64>()?, vec![0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0]);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn diag_embed(&self, offset: isize) -> Result<Self> {
        if self.rank() == 0 {
            return Err(Error::invalid(
                "diag_embed",
                "expects vectors of shape [..., n], got a scalar",
            ));
        }
        let n = self.shape()[self.rank() - 1];
        let mut shape = self.shape().to_vec();
        shape.push(n);
        let square = self
            .unsqueeze(-2)?
            .broadcast_to(shape)?
            .keep_entries("diag_embed", |i, j| i == j)?;
        let k = offset.unsigned_abs();
        let mut pads = vec![(0, 0); square.rank()];
        let r = square.rank();
        // Above the diagonal: k leading columns and k trailing rows; below: the other way round.
        if offset >= 0 {
            (pads[r - 2], pads[r - 1]) = ((0, k), (k, 0));
        } else {
            (pads[r - 2], pads[r - 1]) = ((k, 0), (0, k));
        }
        square.pad(&pads, 0)
    }
}
