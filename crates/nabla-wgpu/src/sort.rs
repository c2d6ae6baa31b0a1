//! Stable sort and top-k along an axis: a bitonic network over the positions of every lane.
//!
//! The lane (the sorted axis, moved last and made contiguous) is padded to a power of two `P`; a
//! scratch array holds `P` positions per lane, and each compare-exchange stage is one dispatch over all
//! lanes, so lanes of any length are handled (`log2(P) * (log2(P) + 1) / 2` dispatches). Positions
//! compare by value and then by position, which makes the network's result the stable order; padding
//! sorts last. NaN sorts after every number (before, when descending).

use crate::WgpuBackend;
use crate::kernel::{Params, view_expr};
use crate::reduce::{axes_last, check_axes};
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{self, load, store};
use nabla_core::{DType, Error, Layout, Result};

/// The `before(x, y, base)` function: does position `x` sort before position `y` in the lane at `base`?
fn before_fn(d: DType, descending: bool) -> Result<String> {
    let lt = |a: &str, b: &str| -> Result<String> {
        Ok(match d {
            DType::F32 | DType::F16 => format!("sortlt_f({a}, {b})"),
            DType::I64 => format!("i64_lt({a}, {b})"),
            DType::I32 | DType::U8 | DType::Bool => format!("({a} < {b})"),
            other => return Err(wgsl::unsupported_op("sort", other)),
        })
    };
    let (xy, yx) = if descending {
        (lt("vy", "vx")?, lt("vx", "vy")?)
    } else {
        (lt("vx", "vy")?, lt("vy", "vx")?)
    };
    let ld = if d == DType::Bool { DType::U8 } else { d };
    Ok(format!(
        "fn before(x: u32, y: u32, base: u32) -> bool {{\n\
         if (x >= prm[4]) {{ return false; }}\nif (y >= prm[4]) {{ return true; }}\n\
         let vx = {};\nlet vy = {};\nif ({xy}) {{ return true; }}\nif ({yx}) {{ return false; }}\n\
         return x < y;\n}}\n",
        load(ld, "in0", "base + x"),
        load(ld, "in0", "base + y"),
    ))
}

impl WgpuBackend {
    /// Sorts every lane along `axis` and keeps the first `k` entries (`k = n` for a full sort).
    pub(crate) fn sort_impl(
        &self,
        op: &'static str,
        x: &WgpuStorage,
        layout: &Layout,
        axis: usize,
        k: usize,
        descending: bool,
    ) -> Result<(WgpuStorage, WgpuStorage)> {
        let d = x.dtype();
        check_dtype(op, d)?;
        check_axes(op, layout, &[axis])?;
        let n = layout.shape()[axis];
        if k > n {
            return Err(Error::invalid(
                op,
                format!(
                    "k = {k} is larger than the size {n} of axis {axis} of shape {:?}",
                    layout.shape()
                ),
            ));
        }
        let before = before_fn(d, descending)?;
        let mut out_shape = layout.shape().to_vec();
        out_shape[axis] = k;
        let total: usize = out_shape.iter().product();
        let values = self.out(op, d, total)?;
        let positions = self.out(op, DType::I64, total)?;
        if total == 0 {
            return Ok((values, positions));
        }
        let rows = total / k;
        let perm = axes_last(layout.rank(), &[axis]);
        let lanes = self.copy_impl(x, &layout.permute(&perm)?)?;
        let p2 = n.next_power_of_two();
        let scratch = self.out(op, DType::I32, rows * p2)?;
        let init = Params::new(&[(rows * p2) as u32, p2 as u32]);
        self.map(op, &init, &[], &[&scratch], "out0[i] = i % prm[1];")?;
        let stage = "let half = prm[1] / 2u;\nlet row = i / half;\nlet t = i % half;\n\
                     let j = prm[3];\nlet a = (t / j) * 2u * j + t % j;\nlet b = a + j;\n\
                     let base = row * prm[1];\nlet ia = out0[base + a];\nlet ib = out0[base + b];\n\
                     let lane = row * prm[4];\n\
                     let swap = select(before(ia, ib, lane), before(ib, ia, lane), (a & prm[2]) == 0u);\n\
                     if (swap) { out0[base + a] = ib; out0[base + b] = ia; }";
        let mut block = 2;
        while block <= p2 {
            let mut j = block / 2;
            while j >= 1 {
                let params = Params::new(&[
                    (rows * p2 / 2) as u32,
                    p2 as u32,
                    block as u32,
                    j as u32,
                    n as u32,
                ]);
                self.map_with(op, &params, &[&lanes], &[&scratch], &before, stage)?;
                j /= 2;
            }
            block *= 2;
        }
        let out_view = Layout::row_major(&out_shape).permute(&perm)?;
        let mut params = Params::new(&[total as u32, k as u32, p2 as u32, n as u32]);
        let q = params.view(&out_view);
        let o = view_expr(&out_view, q, "i");
        let body = format!(
            "let row = i / prm[1];\nlet src = in1[row * prm[2] + i % prm[1]];\nlet o = {o};\n{}\n{}",
            store(d, "out0", "o", &load(d, "in0", "row * prm[3] + src")),
            store(DType::I64, "out1", "o", "vec2<u32>(src, 0u)")
        );
        self.map(
            op,
            &params,
            &[&lanes, &scratch],
            &[&values, &positions],
            &body,
        )?;
        Ok((values, positions.with_bounds(0, n as i64 - 1)))
    }
}
