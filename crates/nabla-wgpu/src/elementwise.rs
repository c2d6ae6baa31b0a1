//! Elementwise kernels (fill, copy, unary, binary, compare, select, cast) from the map template: each
//! reads its inputs through strided or broadcast views and writes a contiguous result.

use crate::WgpuBackend;
use crate::kernel::{Params, check_len, view_expr};
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{self, load, store};
use nabla_core::{BinaryOp, CompareOp, DType, Error, Layout, Result, Scalar, UnaryOp};

/// The shared shape of equal-shape operands, or a shape error.
fn same_shape(op: &'static str, layouts: &[&Layout]) -> Result<usize> {
    let first = layouts[0];
    for l in &layouts[1..] {
        if l.shape() != first.shape() {
            return Err(Error::shapes(op, first.shape(), l.shape()));
        }
    }
    check_len(op, first.numel())?;
    Ok(first.numel())
}

/// The dtype shared by two operands, or a dtype error.
fn same_dtype(op: &'static str, a: &WgpuStorage, b: &WgpuStorage) -> Result<DType> {
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            lhs: a.dtype(),
            rhs: b.dtype(),
        });
    }
    check_dtype(op, a.dtype())?;
    Ok(a.dtype())
}

/// The parameter words of a map over `n` elements with the views of `inputs`, and the body lines
/// loading element `i` of input `k` into `x{k}`.
pub(crate) fn load_inputs<'a>(
    n: usize,
    inputs: impl Iterator<Item = (&'a WgpuStorage, &'a Layout)>,
) -> (Params, String) {
    let mut params = Params::new(&[n as u32]);
    let mut body = String::new();
    for (k, (s, l)) in inputs.enumerate() {
        let p = params.view(l);
        let off = view_expr(l, p, "i");
        body += &format!("let x{k} = {};\n", load(s.dtype(), &format!("in{k}"), &off));
    }
    (params, body)
}

impl WgpuBackend {
    /// Evaluates `expr` (over `x0`, `x1`, ... loaded from the inputs) into a new buffer of `out_dtype`.
    pub(crate) fn elementwise(
        &self,
        op: &'static str,
        inputs: &[(&WgpuStorage, &Layout)],
        out_dtype: DType,
        expr: &str,
    ) -> Result<WgpuStorage> {
        let layouts: Vec<&Layout> = inputs.iter().map(|(_, l)| *l).collect();
        let n = same_shape(op, &layouts)?;
        let out = self.out(op, out_dtype, n)?;
        if n == 0 {
            return Ok(out);
        }
        let (params, mut body) = load_inputs(n, inputs.iter().copied());
        body += &store(out_dtype, "out0", "i", expr);
        let storages: Vec<&WgpuStorage> = inputs.iter().map(|(s, _)| *s).collect();
        self.map(op, &params, &storages, &[&out], &body)?;
        Ok(out)
    }

    pub(crate) fn full_impl(&self, len: usize, value: Scalar, dtype: DType) -> Result<WgpuStorage> {
        let out = self.out("full", dtype, len)?;
        if len == 0 {
            return Ok(out);
        }
        let mut params = Params::new(&[len as u32]);
        let p = params.words.len();
        params.words.extend(wgsl::scalar_words(value, dtype)?);
        let body = store(dtype, "out0", "i", &wgsl::param(dtype, p));
        self.map("full", &params, &[], &[&out], &body)?;
        Ok(out)
    }

    pub(crate) fn copy_impl(&self, x: &WgpuStorage, layout: &Layout) -> Result<WgpuStorage> {
        check_dtype("copy", x.dtype())?;
        self.elementwise("copy", &[(x, layout)], x.dtype(), "x0")
    }

    pub(crate) fn unary_impl(
        &self,
        op: UnaryOp,
        x: &WgpuStorage,
        layout: &Layout,
    ) -> Result<WgpuStorage> {
        let dtype = x.dtype();
        check_dtype(op.name(), dtype)?;
        let out = op
            .output_dtype(dtype)
            .ok_or_else(|| wgsl::unsupported_op(op.name(), dtype))?;
        let expr = wgsl::unary_expr(op, dtype, "x0")?;
        self.elementwise(op.name(), &[(x, layout)], out, &expr)
    }

    pub(crate) fn binary_impl(
        &self,
        op: BinaryOp,
        a: (&WgpuStorage, &Layout),
        b: (&WgpuStorage, &Layout),
    ) -> Result<WgpuStorage> {
        let dtype = same_dtype(op.name(), a.0, b.0)?;
        let expr = wgsl::binary_expr(op, dtype, "x0", "x1")?;
        self.elementwise(op.name(), &[a, b], dtype, &expr)
    }

    pub(crate) fn compare_impl(
        &self,
        op: CompareOp,
        a: (&WgpuStorage, &Layout),
        b: (&WgpuStorage, &Layout),
    ) -> Result<WgpuStorage> {
        let dtype = same_dtype(op.name(), a.0, b.0)?;
        let expr = wgsl::compare_expr(op, dtype, "x0", "x1")?;
        self.elementwise(op.name(), &[a, b], DType::Bool, &expr)
    }

    pub(crate) fn select_impl(
        &self,
        cond: (&WgpuStorage, &Layout),
        t: (&WgpuStorage, &Layout),
        f: (&WgpuStorage, &Layout),
    ) -> Result<WgpuStorage> {
        if cond.0.dtype() != DType::Bool {
            return Err(
                Error::dtype("select", cond.0.dtype()).with_hint("the condition must be bool")
            );
        }
        let dtype = same_dtype("select", t.0, f.0)?;
        self.elementwise("select", &[cond, t, f], dtype, "select(x2, x1, x0)")
    }

    pub(crate) fn cast_impl(
        &self,
        x: &WgpuStorage,
        layout: &Layout,
        dtype: DType,
    ) -> Result<WgpuStorage> {
        check_dtype("cast", x.dtype())?;
        check_dtype("cast", dtype)?;
        let expr = wgsl::cast_expr(x.dtype(), dtype, "x0");
        self.elementwise("cast", &[(x, layout)], dtype, &expr)
    }
}
