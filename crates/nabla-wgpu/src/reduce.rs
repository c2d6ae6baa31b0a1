//! Reductions over any axes (the fold template: workgroup tree reductions for long folds), arg-max/min
//! and cumulative sums (one invocation per lane, in order, so sums match a sequential CPU scan).

use crate::WgpuBackend;
use crate::kernel::{Fold, Params, view_expr};
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{self, load, store, ty};
use nabla_core::{ArgReduceOp, BinaryOp, DType, Error, Layout, ReduceOp, Result};

/// The axes of a rank-`rank` tensor with `last` moved to the end (kept axes first, in order).
pub(crate) fn axes_last(rank: usize, last: &[usize]) -> Vec<usize> {
    (0..rank)
        .filter(|a| !last.contains(a))
        .chain(last.iter().copied())
        .collect()
}

/// Fails unless every axis is in range.
pub(crate) fn check_axes(op: &'static str, layout: &Layout, axes: &[usize]) -> Result<()> {
    for &a in axes {
        if a >= layout.rank() {
            return Err(Error::InvalidAxis {
                op,
                axis: a as isize,
                rank: layout.rank(),
            });
        }
    }
    Ok(())
}

/// Bool folds run on 0/1 words.
fn fold_dtype(d: DType) -> DType {
    if d == DType::Bool { DType::U8 } else { d }
}

/// The identity of `op` for the compute type of `d`.
fn identity(op: ReduceOp, d: DType) -> String {
    let bool_ = d == DType::Bool;
    match (op, fold_dtype(d)) {
        (ReduceOp::Sum, d) => wgsl::zero(d).into(),
        (ReduceOp::Prod, DType::I64) => "vec2<u32>(1u, 0u)".into(),
        (ReduceOp::Prod, d) => format!("{}(1)", ty(d)),
        (ReduceOp::Max, DType::F32) => "bitcast<f32>(0xff800000u)".into(),
        (ReduceOp::Min, DType::F32) => "bitcast<f32>(0x7f800000u)".into(),
        (ReduceOp::Max, DType::I32) => "(-2147483647i - 1i)".into(),
        (ReduceOp::Min, DType::I32) => "2147483647i".into(),
        (ReduceOp::Max, DType::I64) => "vec2<u32>(0u, 0x80000000u)".into(),
        (ReduceOp::Min, DType::I64) => "vec2<u32>(0xffffffffu, 0x7fffffffu)".into(),
        (ReduceOp::Max, _) => "0u".into(),
        (ReduceOp::Min, _) => if bool_ { "1u" } else { "255u" }.into(),
    }
}

fn combine(op: ReduceOp, d: DType, a: &str, b: &str) -> String {
    let bop = match op {
        ReduceOp::Sum => BinaryOp::Add,
        ReduceOp::Prod => BinaryOp::Mul,
        ReduceOp::Max => BinaryOp::Maximum,
        ReduceOp::Min => BinaryOp::Minimum,
    };
    // Every (op, fold dtype) pair reaching here is supported by `binary_expr`.
    wgsl::binary_expr(bop, fold_dtype(d), a, b).unwrap_or_default()
}

impl WgpuBackend {
    pub(crate) fn reduce_impl(
        &self,
        op: ReduceOp,
        x: &WgpuStorage,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<WgpuStorage> {
        let d = x.dtype();
        check_dtype(op.name(), d)?;
        if !op.supports(d) {
            return Err(wgsl::unsupported_op(op.name(), d));
        }
        check_axes(op.name(), layout, axes)?;
        let shape = layout.shape();
        let inner: usize = axes.iter().map(|&a| shape[a]).product();
        let outer: usize = (0..shape.len())
            .filter(|a| !axes.contains(a))
            .map(|a| shape[a])
            .product();
        let out = self.out(op.name(), d, outer)?;
        if outer == 0 {
            return Ok(out);
        }
        if inner == 0 && matches!(op, ReduceOp::Max | ReduceOp::Min) {
            return Err(Error::invalid(
                op.name(),
                format!("cannot reduce an empty axis of shape {shape:?}"),
            ));
        }
        let view = layout.permute(&axes_last(shape.len(), axes))?;
        let mut params = Params::new(&[outer as u32, inner as u32]);
        let p = params.view(&view);
        let fd = fold_dtype(d);
        let comb = |a: &str, b: &str| combine(op, d, a, b);
        let f = Fold {
            ty: ty(fd),
            identity: identity(op, d),
            combine: &comb,
            term: format!(
                "let term = {};",
                load(fd, "in0", &view_expr(&view, p, "(o * prm[1] + k)"))
            ),
            store: store(fd, "out0", "o", "res"),
        };
        self.fold(op.name(), &params, &[x], &[&out], &f)?;
        Ok(out)
    }

    pub(crate) fn arg_reduce_impl(
        &self,
        op: ArgReduceOp,
        x: &WgpuStorage,
        layout: &Layout,
        axis: usize,
    ) -> Result<WgpuStorage> {
        let d = x.dtype();
        check_dtype(op.name(), d)?;
        check_axes(op.name(), layout, &[axis])?;
        let n = layout.shape()[axis];
        let outer = layout.numel() / n.max(1);
        let out = self.out(op.name(), DType::I64, if n == 0 { 0 } else { outer })?;
        if layout.numel() == 0 {
            if n == 0 && outer_of(layout, axis) > 0 {
                return Err(Error::invalid(
                    op.name(),
                    format!(
                        "cannot take {} over the empty axis {axis} of shape {:?}",
                        op.name(),
                        layout.shape()
                    ),
                ));
            }
            return Ok(out);
        }
        let fd = fold_dtype(d);
        let (a, b) = match op {
            ArgReduceOp::ArgMax => ("v", "best"),
            ArgReduceOp::ArgMin => ("best", "v"),
        };
        let better = match fd {
            DType::F32 | DType::F16 => match op {
                ArgReduceOp::ArgMax => "gt_f(v, best)".to_string(),
                ArgReduceOp::ArgMin => "lt_f(v, best)".to_string(),
            },
            DType::I64 => format!("i64_lt({b}, {a})"),
            DType::I32 | DType::U8 => format!("({a} > {b})"),
            other => return Err(wgsl::unsupported_op(op.name(), other)),
        };
        let view = layout.permute(&axes_last(layout.rank(), &[axis]))?;
        let mut params = Params::new(&[outer as u32, n as u32]);
        let p = params.view(&view);
        let ld = |i: &str| load(fd, "in0", &view_expr(&view, p, i));
        let body = format!(
            "let base = i * prm[1];\nvar best = {};\nvar bi = 0u;\n\
             for (var k = 1u; k < prm[1]; k = k + 1u) {{\nlet v = {};\n\
             if ({better}) {{ best = v; bi = k; }}\n}}\n{}",
            ld("base"),
            ld("(base + k)"),
            store(DType::I64, "out0", "i", "vec2<u32>(bi, 0u)")
        );
        self.map(op.name(), &params, &[x], &[&out], &body)?;
        Ok(out.with_bounds(0, n as i64 - 1))
    }

    pub(crate) fn cumsum_impl(
        &self,
        x: &WgpuStorage,
        layout: &Layout,
        axis: usize,
    ) -> Result<WgpuStorage> {
        const OP: &str = "cumsum";
        let d = x.dtype();
        check_dtype(OP, d)?;
        if d.is_bool() || d.is_half() {
            return Err(Error::dtype(OP, d));
        }
        check_axes(OP, layout, &[axis])?;
        let n = layout.shape()[axis];
        let out = self.out(OP, d, layout.numel())?;
        if layout.numel() == 0 {
            return Ok(out);
        }
        let perm = axes_last(layout.rank(), &[axis]);
        let view = layout.permute(&perm)?;
        let out_view = Layout::row_major(layout.shape()).permute(&perm)?;
        let mut params = Params::new(&[(layout.numel() / n) as u32, n as u32]);
        let p = params.view(&view);
        let q = params.view(&out_view);
        let body = format!(
            "var acc = {};\nfor (var k = 0u; k < prm[1]; k = k + 1u) {{\nlet j = i * prm[1] + k;\n\
             acc = {};\n{}\n}}",
            wgsl::zero(d),
            wgsl::binary_expr(
                BinaryOp::Add,
                d,
                "acc",
                &load(d, "in0", &view_expr(&view, p, "j"))
            )?,
            store(d, "out0", &view_expr(&out_view, q, "j"), "acc")
        );
        self.map(OP, &params, &[x], &[&out], &body)?;
        Ok(out)
    }
}

/// Number of lanes along `axis` (product of the other dimensions).
fn outer_of(layout: &Layout, axis: usize) -> usize {
    layout
        .shape()
        .iter()
        .enumerate()
        .filter(|&(a, _)| a != axis)
        .map(|(_, &d)| d)
        .product()
}
