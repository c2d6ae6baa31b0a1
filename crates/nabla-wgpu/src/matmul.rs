//! Batched matrix products: a 64 x 64 output tile per workgroup, staged through workgroup memory in
//! steps of 16 along `k`, each invocation accumulating a 4 x 4 block. Operands are read through their
//! strides (transposed and broadcast views need no copy); the batch goes in the grid's z dimension.
//! `float32`, `int32`, `int64` and `uint8` (integers wrap, as on the CPU).

use crate::WgpuBackend;
use crate::kernel::Params;
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{self, load, store, ty};
use nabla_core::{DType, Error, Layout, Result};

const OP: &str = "matmul";
const TILE: usize = 64;

/// The shader for element type `d` (accumulators and the inner product unrolled into scalars).
fn shader(d: DType) -> String {
    let t = ty(d);
    let z = wgsl::zero(d);
    let la = load(d, "in0", "u32(abase + i32(gi) * sam + i32(gk) * sak)");
    let lb = load(d, "in1", "u32(bbase + i32(gk2) * sbk + i32(gj) * sbn)");
    let (mut decl, mut fma, mut fetch, mut write) =
        (String::new(), String::new(), String::new(), String::new());
    for q in 0..4 {
        fetch += &format!("let a{q} = As[(ty * 4u + {q}u) * 16u + kk];\n");
        fetch += &format!("let b{q} = Bs[kk * 64u + tx + {q}u * 16u];\n");
        for r in 0..4 {
            decl += &format!("var c{q}{r}: {t} = {z};\n");
            fma += &if d == DType::I64 {
                format!("c{q}{r} = i64_add(c{q}{r}, i64_mul(a{q}, b{r}));\n")
            } else {
                format!("c{q}{r} = c{q}{r} + a{q} * b{r};\n")
            };
            write += &format!(
                "{{ let gi = row0 + ty * 4u + {q}u; let gj = col0 + tx + {r}u * 16u;\n\
                 if (gi < M && gj < N) {{ {} }} }}\n",
                store(d, "out0", "(b * M + gi) * N + gj", &format!("c{q}{r}"))
            );
        }
    }
    format!(
        "{head}
var<workgroup> As: array<{t}, 1024>;
var<workgroup> Bs: array<{t}, 1024>;
var<workgroup> kdim: u32;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
    if (lid == 0u) {{ kdim = prm[2]; }}
    let K = workgroupUniformLoad(&kdim);
    let M = prm[0]; let N = prm[1];
    let b = wid.z + prm[3];
    let abase = bitcast<i32>(view_off(prm[8], b));
    let bbase = bitcast<i32>(view_off(prm[9], b));
    let sam = bitcast<i32>(prm[4]); let sak = bitcast<i32>(prm[5]);
    let sbk = bitcast<i32>(prm[6]); let sbn = bitcast<i32>(prm[7]);
    let tx = lid % 16u; let ty = lid / 16u;
    let row0 = wid.y * 64u; let col0 = wid.x * 64u;
{decl}
    for (var t = 0u; t < K; t = t + 16u) {{
        for (var e = 0u; e < 4u; e = e + 1u) {{
            let idx = lid + e * 256u;
            let gi = row0 + idx / 16u; let gk = t + idx % 16u;
            var va = {z};
            if (gi < M && gk < K) {{ va = {la}; }}
            As[idx] = va;
            let gk2 = t + idx / 64u; let gj = col0 + idx % 64u;
            var vb = {z};
            if (gk2 < K && gj < N) {{ vb = {lb}; }}
            Bs[idx] = vb;
        }}
        workgroupBarrier();
        for (var kk = 0u; kk < 16u; kk = kk + 1u) {{
{fetch}{fma}        }}
        workgroupBarrier();
    }}
{write}}}
",
        head = wgsl::header(2, 1)
    )
}

/// The batch part of a `[..., rows, cols]` view (its leading dimensions, strides and offset).
fn batch_view(l: &Layout) -> Result<Layout> {
    let r = l.rank() - 2;
    Layout::from_parts(
        l.shape()[..r].to_vec(),
        l.strides()[..r].to_vec(),
        l.offset(),
    )
}

impl WgpuBackend {
    pub(crate) fn matmul_impl(
        &self,
        (a, la): (&WgpuStorage, &Layout),
        (b, lb): (&WgpuStorage, &Layout),
    ) -> Result<WgpuStorage> {
        let d = a.dtype();
        check_dtype(OP, d)?;
        if b.dtype() != d {
            return Err(Error::DTypeMismatch {
                op: OP,
                lhs: d,
                rhs: b.dtype(),
            });
        }
        if !matches!(d, DType::F32 | DType::I32 | DType::I64 | DType::U8) {
            return Err(wgsl::unsupported_op(OP, d));
        }
        let (ra, rb) = (la.rank(), lb.rank());
        if ra < 2 || ra != rb || la.shape()[..ra - 2] != lb.shape()[..rb - 2] {
            return Err(Error::shapes(OP, la.shape(), lb.shape()));
        }
        let (m, k) = (la.shape()[ra - 2], la.shape()[ra - 1]);
        let (k2, n) = (lb.shape()[rb - 2], lb.shape()[rb - 1]);
        if k != k2 {
            return Err(Error::shapes(OP, la.shape(), lb.shape()));
        }
        let batch: usize = la.shape()[..ra - 2].iter().product();
        if k == 0 {
            // An empty inner dimension gives zeros (and nothing to read).
            return self.full_impl(batch * m * n, nabla_core::Scalar::I64(0), d);
        }
        let out = self.out(OP, d, batch * m * n)?;
        if batch * m * n == 0 {
            return Ok(out);
        }
        let (sa, sb) = (la.strides(), lb.strides());
        let shader = shader(d);
        let max = self.ctx.max_groups as usize;
        let (gx, gy) = (n.div_ceil(TILE), m.div_ceil(TILE));
        if gx > max || gy > max {
            return Err(Error::invalid(
                OP,
                format!("a [{m}, {n}] product exceeds the adapter's dispatch grid"),
            ));
        }
        let mut start = 0;
        while start < batch {
            let count = (batch - start).min(max);
            let mut params = Params::new(&[m as u32, n as u32, k as u32, start as u32]);
            for s in [sa[ra - 2], sa[ra - 1], sb[rb - 2], sb[rb - 1]] {
                params.push_i(s);
            }
            let (pa_at, pb_at) = (params.push(0), params.push(0));
            params.words[pa_at] = params.view(&batch_view(la)?) as u32;
            params.words[pb_at] = params.view(&batch_view(lb)?) as u32;
            self.launch(
                &shader,
                &params,
                &[a, b],
                &[&out],
                (gx as u32, gy as u32, count as u32),
            )?;
            start += count;
        }
        Ok(out)
    }
}
