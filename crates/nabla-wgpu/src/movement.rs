//! Movement and indexing kernels from the map template: pad, concat, gather, index_select, scatter_add
//! and one_hot, one invocation per output element.
//!
//! Index tensors are `i64` (two words); kernels read the low word after a range check. The check is free
//! when the index buffer's bounds are known (uploads, and positions written by argmax, sort, topk and
//! max_pool2d); otherwise a small kernel flags out-of-range values and the op waits for that flag.
//! `scatter_add` is deterministic and needs no atomics: each destination element walks the index lane
//! that can reach it and adds its sources in order (cost: destination size times lane length).

use crate::WgpuBackend;
use crate::kernel::{Params, at, check_len, coords, unravel, view_expr};
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{self, load, store};
use nabla_core::{BinaryOp, DType, Error, HostData, Layout, Result, Scalar};

/// The normalised position (as `i32`) from an index value `v` for an axis of size `n`.
fn resolve(v: &str, n: &str) -> String {
    format!(
        "clamp(select(bitcast<i32>({v}.x), bitcast<i32>({v}.x) + i32({n}), bitcast<i32>({v}.y) < 0i), 0i, max(i32({n}) - 1i, 0i))"
    )
}

fn check_index_dtype(op: &'static str, index: &WgpuStorage) -> Result<()> {
    if index.dtype() != DType::I64 {
        return Err(Error::dtype(op, index.dtype()).with_hint("indices must be int64"));
    }
    Ok(())
}

impl WgpuBackend {
    /// Fails unless every index of the view lies in `lo..hi`.
    fn check_index_range(
        &self,
        op: &'static str,
        index: &WgpuStorage,
        layout: &Layout,
        (lo, hi): (i64, i64),
        size: usize,
    ) -> Result<()> {
        check_index_dtype(op, index)?;
        if layout.numel() == 0 {
            return Ok(());
        }
        if let Some((a, b)) = index.bounds()
            && lo <= a
            && b < hi
        {
            return Ok(());
        }
        let flag = self.full_impl(1, Scalar::I64(0), DType::I32)?;
        let mut params = Params::new(&[layout.numel() as u32]);
        let p = params.view(layout);
        let bounds = params.words.len();
        for v in [lo, hi] {
            params.push(v as u64 as u32);
            params.push(((v as u64) >> 32) as u32);
        }
        let body = format!(
            "let v = {};\nif (i64_lt(v, {}) || !i64_lt(v, {})) {{ out0[0] = 1u; }}",
            load(DType::I64, "in0", &view_expr(layout, p, "i")),
            wgsl::param(DType::I64, bounds),
            wgsl::param(DType::I64, bounds + 2),
        );
        self.map(op, &params, &[index], &[&flag], &body)?;
        if self.ctx.read_words(flag.buffer(), 0, 1)?[0] == 0 {
            return Ok(());
        }
        let HostData::I64(values) = nabla_core::Backend::read(self, index, layout)? else {
            return Err(Error::dtype(op, index.dtype()));
        };
        let bad = values
            .into_iter()
            .find(|v| !(lo..hi).contains(v))
            .unwrap_or(hi);
        Err(Error::IndexOutOfBounds {
            op,
            index: bad,
            size,
        })
    }

    /// Checks signed indices (`-n..n`) for an axis of size `n`.
    fn check_signed(
        &self,
        op: &'static str,
        index: &WgpuStorage,
        layout: &Layout,
        n: usize,
    ) -> Result<()> {
        self.check_index_range(op, index, layout, (-(n as i64), n as i64), n)
    }

    pub(crate) fn pad_impl(
        &self,
        x: &WgpuStorage,
        layout: &Layout,
        pads: &[(usize, usize)],
        value: Scalar,
    ) -> Result<WgpuStorage> {
        const OP: &str = "pad";
        let d = x.dtype();
        check_dtype(OP, d)?;
        let r = layout.rank();
        if pads.len() != r {
            return Err(Error::invalid(
                OP,
                format!(
                    "{} pads for a tensor of shape {:?}",
                    pads.len(),
                    layout.shape()
                ),
            ));
        }
        let shape: Vec<usize> = layout
            .shape()
            .iter()
            .zip(pads)
            .map(|(&s, &(a, b))| s + a + b)
            .collect();
        let n: usize = shape.iter().product();
        check_len(OP, n)?;
        let out = self.out(OP, d, n)?;
        if n == 0 {
            return Ok(out);
        }
        let mut params = Params::new(&[n as u32]);
        let p = params.view(layout);
        let q = params.words.len();
        shape.iter().for_each(|&s| {
            params.push(s as u32);
        });
        let pb = params.words.len();
        pads.iter().for_each(|&(a, _)| {
            params.push(a as u32);
        });
        let pv = params.words.len();
        params.words.extend(wgsl::scalar_words(value, d)?);
        let mut body = unravel(q, r, "i") + "var inside = true;\n";
        for k in 0..r {
            body += &format!(
                "let s{k} = i32(c{k}) - i32(prm[{}u]);\ninside = inside && s{k} >= 0i && s{k} < i32(prm[{}u]);\n",
                pb + k,
                p + 2 + k
            );
        }
        let src: Vec<String> = (0..r).map(|k| format!("s{k}")).collect();
        body += &format!(
            "if (inside) {{ {} }} else {{ {} }}",
            store(d, "out0", "i", &load(d, "in0", &at(p, r, &src))),
            store(d, "out0", "i", &wgsl::param(d, pv))
        );
        self.map(OP, &params, &[x], &[&out], &body)?;
        Ok(out)
    }

    pub(crate) fn concat_impl(
        &self,
        parts: &[(&WgpuStorage, &Layout)],
        axis: usize,
    ) -> Result<WgpuStorage> {
        const OP: &str = "concat";
        let Some(&(first, fl)) = parts.first() else {
            return Err(Error::invalid(OP, "no tensors to concatenate"));
        };
        let d = first.dtype();
        check_dtype(OP, d)?;
        let r = fl.rank();
        if axis >= r {
            return Err(Error::InvalidAxis {
                op: OP,
                axis: axis as isize,
                rank: r,
            });
        }
        let mut shape = fl.shape().to_vec();
        shape[axis] = 0;
        for (s, l) in parts {
            let same = l.rank() == r && (0..r).all(|k| k == axis || l.shape()[k] == fl.shape()[k]);
            if !same {
                return Err(Error::shapes(OP, fl.shape(), l.shape()));
            }
            if s.dtype() != d {
                return Err(Error::DTypeMismatch {
                    op: OP,
                    lhs: d,
                    rhs: s.dtype(),
                });
            }
            shape[axis] += l.shape()[axis];
        }
        let n: usize = shape.iter().product();
        check_len(OP, n)?;
        let out = self.out(OP, d, n)?;
        let mut start = 0;
        for (s, l) in parts {
            let len = l.numel();
            if len > 0 {
                let mut params = Params::new(&[len as u32]);
                let p = params.view(l);
                let q = params.words.len();
                shape.iter().for_each(|&s| {
                    params.push(s as u32);
                });
                let off = params.push(start as u32);
                let mut body = unravel(p + 2, r, "i") + "var o = 0u;\n";
                for k in 0..r {
                    let c = if k == axis {
                        format!("(c{k} + prm[{off}u])")
                    } else {
                        format!("c{k}")
                    };
                    body += &format!("o = o * prm[{}u] + {c};\n", q + k);
                }
                body += &store(d, "out0", "o", &load(d, "in0", &at(p, r, &coords(r))));
                self.map(OP, &params, &[s], &[&out], &body)?;
            }
            start += l.shape()[axis];
        }
        Ok(out)
    }

    pub(crate) fn gather_impl(
        &self,
        (x, lx): (&WgpuStorage, &Layout),
        axis: usize,
        (index, li): (&WgpuStorage, &Layout),
    ) -> Result<WgpuStorage> {
        const OP: &str = "gather";
        let d = x.dtype();
        check_dtype(OP, d)?;
        let r = lx.rank();
        let same = li.rank() == r
            && axis < r
            && (0..r).all(|k| k == axis || li.shape()[k] == lx.shape()[k]);
        if !same {
            return Err(Error::shapes(OP, lx.shape(), li.shape()));
        }
        let index_at = |pi: usize| at(pi, r, &coords(r));
        self.read_indexed(
            OP,
            (x, lx),
            axis,
            (index, li),
            li.shape().to_vec(),
            index_at,
        )
    }

    pub(crate) fn index_select_impl(
        &self,
        (x, lx): (&WgpuStorage, &Layout),
        axis: usize,
        (index, li): (&WgpuStorage, &Layout),
    ) -> Result<WgpuStorage> {
        const OP: &str = "index_select";
        let d = x.dtype();
        check_dtype(OP, d)?;
        let r = lx.rank();
        if axis >= r || li.rank() != 1 {
            return Err(Error::shapes(OP, lx.shape(), li.shape()));
        }
        let mut shape = lx.shape().to_vec();
        shape[axis] = li.numel();
        let index_at = |pi: usize| view_expr(li, pi, &format!("c{axis}"));
        self.read_indexed(OP, (x, lx), axis, (index, li), shape, index_at)
    }

    /// Reads `x` at positions an `I64` index gives along `axis`: output element `i` (row-major in
    /// `shape`) reads `x` at its own coordinates `c0..` with coordinate `axis` replaced by the index
    /// value `index_at(pi)` (a WGSL expression given the index view's parameter offset `pi`).
    fn read_indexed(
        &self,
        op: &'static str,
        (x, lx): (&WgpuStorage, &Layout),
        axis: usize,
        (index, li): (&WgpuStorage, &Layout),
        shape: Vec<usize>,
        index_at: impl Fn(usize) -> String,
    ) -> Result<WgpuStorage> {
        let (d, r) = (x.dtype(), lx.rank());
        self.check_signed(op, index, li, lx.shape()[axis])?;
        let n: usize = shape.iter().product();
        check_len(op, n)?;
        let out = self.out(op, d, n)?;
        if n == 0 {
            return Ok(out);
        }
        let mut params = Params::new(&[n as u32]);
        let px = params.view(lx);
        let pi = params.view(li);
        let q = params.words.len();
        for &s in &shape {
            params.push(s as u32);
        }
        let mut body = unravel(q, r, "i");
        body += &format!(
            "let v = {};\nlet j = {};\n",
            load(DType::I64, "in1", &index_at(pi)),
            resolve("v", &format!("prm[{}u]", px + 2 + axis))
        );
        let mut cx = coords(r);
        cx[axis] = "j".into();
        body += &store(d, "out0", "i", &load(d, "in0", &at(px, r, &cx)));
        self.map(op, &params, &[x, index], &[&out], &body)?;
        Ok(out)
    }

    pub(crate) fn scatter_add_impl(
        &self,
        (dst, ld): (&WgpuStorage, &Layout),
        axis: usize,
        (index, li): (&WgpuStorage, &Layout),
        (src, ls): (&WgpuStorage, &Layout),
    ) -> Result<WgpuStorage> {
        const OP: &str = "scatter_add";
        let d = dst.dtype();
        check_dtype(OP, d)?;
        if d.is_bool() {
            return Err(Error::dtype(OP, d));
        }
        if src.dtype() != d {
            return Err(Error::DTypeMismatch {
                op: OP,
                lhs: d,
                rhs: src.dtype(),
            });
        }
        let r = ld.rank();
        let same = li.rank() == r
            && axis < r
            && li.shape() == ls.shape()
            && (0..r).all(|k| k == axis || li.shape()[k] == ld.shape()[k]);
        if !same {
            return Err(Error::shapes(OP, li.shape(), ld.shape()));
        }
        self.check_signed(OP, index, li, ld.shape()[axis])?;
        let add = wgsl::binary_expr(BinaryOp::Add, d, "acc", "sv")?;
        let n = ld.numel();
        let out = self.out(OP, d, n)?;
        if n == 0 {
            return Ok(out);
        }
        let mut params = Params::new(&[n as u32]);
        let pd = params.view(ld);
        let pi = params.view(li);
        let ps = params.view(ls);
        let mut body = unravel(pd + 2, r, "i");
        body += &format!("var acc = {};\n", load(d, "in0", &at(pd, r, &coords(r))));
        let mut cj = coords(r);
        cj[axis] = "j".into();
        body += &format!(
            "for (var j = 0u; j < prm[{}u]; j = j + 1u) {{\nlet v = {};\n\
             if (u32({}) == c{axis}) {{\nlet sv = {};\nacc = {add};\n}}\n}}\n{}",
            pi + 2 + axis,
            load(DType::I64, "in1", &at(pi, r, &cj)),
            resolve("v", &format!("prm[{}u]", pd + 2 + axis)),
            load(d, "in2", &at(ps, r, &cj)),
            store(d, "out0", "i", "acc")
        );
        self.map(OP, &params, &[dst, index, src], &[&out], &body)?;
        Ok(out)
    }

    pub(crate) fn one_hot_impl(
        &self,
        index: &WgpuStorage,
        layout: &Layout,
        classes: usize,
        dtype: DType,
    ) -> Result<WgpuStorage> {
        const OP: &str = "one_hot";
        check_dtype(OP, dtype)?;
        self.check_index_range(OP, index, layout, (0, classes as i64), classes)?;
        let n = layout.numel().saturating_mul(classes);
        check_len(OP, n)?;
        let out = self.out(OP, dtype, n)?;
        if n == 0 {
            return Ok(out);
        }
        let mut params = Params::new(&[n as u32, classes as u32]);
        let p = params.view(layout);
        let body = format!(
            "let e = i / prm[1];\nlet v = {};\nlet hit = v.x == i % prm[1] && v.y == 0u;\n{}",
            load(DType::I64, "in0", &view_expr(layout, p, "e")),
            store(
                dtype,
                "out0",
                "i",
                &wgsl::cast_expr(DType::Bool, dtype, "hit")
            )
        );
        self.map(OP, &params, &[index], &[&out], &body)?;
        Ok(out)
    }
}
