//! Batched matrix products from one GEMM template: a `16R x 16R` output tile per workgroup of 16 x 16
//! invocations, staged through workgroup memory in steps of 16 along `k`, each invocation accumulating
//! an `R x R` block in registers (`R` = 4, 2 or 1, picked from the product's size so that small
//! products waste little of a tile). How the operands are read is a parameter of the template
//! ([`Operands`]): the matrix product reads strided views (transposed and broadcast views need no
//! copy), and the convolutions read their inputs as implicit im2col matrices (see `conv.rs`).
//! The batch goes in the grid's z dimension. `float32`, `int32`, `int64` and `uint8` (integers wrap,
//! as on the CPU).

use crate::WgpuBackend;
use crate::kernel::Params;
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{self, load, store, ty};
use nabla_core::{DType, Error, Layout, Precision, Result};

const OP: &str = "matmul";

/// How a GEMM reads its operands, as WGSL. Parameter words 0..4 are `[GM, GN, GK, batch start]`;
/// the rest belong to the operands.
pub(crate) struct Operands {
    /// Statements run once per invocation, seeing `b` (the batch index) and `GM`, `GN`, `GK`; they
    /// must define `kb` and `ke`, the range of `k` the workgroup sums (the same for the whole
    /// workgroup).
    pub setup: String,
    /// Statements assigning `va` = A[`gi`, `gk`] (run only for `gi < GM`, `kb <= gk < ke`).
    pub a: String,
    /// Statements assigning `vb` = B[`gk`, `gj`] (run only for `gj < GN`, `kb <= gk < ke`).
    pub b: String,
}

/// The register block `R` for a `m x n` product: 4 when both sides fill a 64-wide tile, 2 for 32,
/// else 1.
pub(crate) fn block(m: usize, n: usize) -> usize {
    match m.min(n) {
        64.. => 4,
        32.. => 2,
        _ => 1,
    }
}

/// The GEMM shader for element type `d`, register block `r` and operands `ops` with `n_in` inputs.
/// The product of batch `b` is stored contiguously at `out0[(b * GM + i) * GN + j]`.
pub(crate) fn gemm_shader(d: DType, r: usize, ops: &Operands, n_in: usize) -> String {
    let t = ty(d);
    let z = wgsl::zero(d);
    let tile = 16 * r;
    let (mut decl, mut fma, mut fetch, mut write) =
        (String::new(), String::new(), String::new(), String::new());
    for q in 0..r {
        fetch += &format!("let a{q} = As[(ty * {r}u + {q}u) * 16u + kk];\n");
        fetch += &format!("let b{q} = Bs[kk * {tile}u + tx + {q}u * 16u];\n");
        for c in 0..r {
            decl += &format!("var c{q}{c}: {t} = {z};\n");
            fma += &if d == DType::I64 {
                format!("c{q}{c} = i64_add(c{q}{c}, i64_mul(a{q}, b{c}));\n")
            } else {
                format!("c{q}{c} = c{q}{c} + a{q} * b{c};\n")
            };
            write += &format!(
                "{{ let gi = row0 + ty * {r}u + {q}u; let gj = col0 + tx + {c}u * 16u;\n\
                 if (gi < GM && gj < GN) {{ {} }} }}\n",
                store(d, "out0", "(b * GM + gi) * GN + gj", &format!("c{q}{c}"))
            );
        }
    }
    format!(
        "{head}
var<workgroup> As: array<{t}, {size}>;
var<workgroup> Bs: array<{t}, {size}>;
var<workgroup> krange: vec2<u32>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
    let GM = prm[0]; let GN = prm[1]; let GK = prm[2];
    let b = wid.z + prm[3];
{setup}
    if (lid == 0u) {{ krange = vec2<u32>(kb, ke); }}
    let krng = workgroupUniformLoad(&krange);
    let tx = lid % 16u; let ty = lid / 16u;
    let row0 = wid.y * {tile}u; let col0 = wid.x * {tile}u;
{decl}
    for (var t = krng.x; t < krng.y; t = t + 16u) {{
        for (var e = 0u; e < {r}u; e = e + 1u) {{
            let idx = lid + e * 256u;
            {{
                let gi = row0 + idx / 16u; let gk = t + idx % 16u;
                var va = {z};
                if (gi < GM && gk < krng.y) {{
{a}
                }}
                As[idx] = va;
            }}
            {{
                let gk = t + idx / {tile}u; let gj = col0 + idx % {tile}u;
                var vb = {z};
                if (gk < krng.y && gj < GN) {{
{b}
                }}
                Bs[idx] = vb;
            }}
        }}
        workgroupBarrier();
        for (var kk = 0u; kk < 16u; kk = kk + 1u) {{
{fetch}{fma}        }}
        workgroupBarrier();
    }}
{write}}}
",
        head = wgsl::header(n_in, 1),
        size = tile * 16,
        setup = ops.setup,
        a = ops.a,
        b = ops.b,
    )
}

/// WGSL statements that round the loaded f32 operand `v` to bf16 or f16 (to nearest, ties to even;
/// infinities and NaNs kept; past f16's range to infinity, below its normal range to its subnormal
/// steps of `2^-24`) for a rounding [`Precision`], or nothing for [`Precision::Full`]. Integer
/// arithmetic on the bits (and exact power-of-two scaling), so no shader compiler can fold it away.
pub(crate) fn operand_rounding(v: &str, precision: Precision) -> String {
    match precision {
        Precision::Full => String::new(),
        Precision::F16 => format!(
            "\n{{ let bits = bitcast<u32>({v});\n\
             let mag = bits & 0x7fffffffu;\n\
             let near = (mag + 0xfffu + ((mag >> 13u) & 1u)) & 0xffffe000u;\n\
             let normal = select(near, 0x7f800000u, near >= 0x47800000u);\n\
             let tiny = bitcast<u32>(round(bitcast<f32>(mag) * 16777216.0) * 5.9604644775390625e-8);\n\
             let nan = select(0u, 0x00400000u, (mag & 0x007fffffu) != 0u);\n\
             let finite = select(normal, tiny, mag < 0x38800000u);\n\
             let r = select(finite, (mag & 0xffffe000u) | nan, (mag & 0x7f800000u) == 0x7f800000u);\n\
             {v} = bitcast<f32>((bits & 0x80000000u) | r); }}"
        ),
        Precision::Bf16 => format!(
            "\n{{ let bits = bitcast<u32>({v});\n\
             let special = (bits & 0x7f800000u) == 0x7f800000u;\n\
             let nan = select(0u, 0x00400000u, (bits & 0x007fffffu) != 0u);\n\
             let near = (bits + 0x7fffu + ((bits >> 16u) & 1u)) & 0xffff0000u;\n\
             {v} = bitcast<f32>(select(near, (bits & 0xffff0000u) | nan, special)); }}"
        ),
    }
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
    /// Runs a GEMM of `batch` products of `m x n` (words 0..3 of `params` are set here) into `out`,
    /// splitting the batch over several dispatches where it exceeds the grid.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gemm(
        &self,
        op: &'static str,
        d: DType,
        ops: &Operands,
        mut params: Params,
        inputs: &[&WgpuStorage],
        out: &WgpuStorage,
        (batch, m, n, k): (usize, usize, usize, usize),
    ) -> Result<()> {
        let r = block(m, n);
        let shader = gemm_shader(d, r, ops, inputs.len());
        let max = self.ctx.max_groups as usize;
        let (gx, gy) = (n.div_ceil(16 * r), m.div_ceil(16 * r));
        if gx > max || gy > max {
            return Err(Error::invalid(
                op,
                format!("a [{m}, {n}] product exceeds the adapter's dispatch grid"),
            ));
        }
        if params.words.len() < 4 {
            params.words.resize(4, 0);
        }
        params.words[..3].copy_from_slice(&[m as u32, n as u32, k as u32]);
        let mut start = 0;
        while start < batch {
            let count = (batch - start).min(max);
            params.words[3] = start as u32;
            let groups = (gx as u32, gy as u32, count as u32);
            self.launch(op, &shader, &params, inputs, &[out], groups)?;
            start += count;
        }
        Ok(())
    }

    /// The matrix product at `precision`: [`Precision::Bf16`] and [`Precision::F16`] (F32 operands
    /// only) round each operand element as it is loaded and sum in f32.
    pub(crate) fn matmul_impl(
        &self,
        (a, la): (&WgpuStorage, &Layout),
        (b, lb): (&WgpuStorage, &Layout),
        precision: Precision,
    ) -> Result<WgpuStorage> {
        let d = a.dtype();
        check_dtype(OP, d)?;
        precision.check_operand("matmul_rounded", d)?;
        precision.check_operand("matmul_rounded", b.dtype())?;
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
        let mut params = Params::new(&[0, 0, 0, 0]);
        for s in [sa[ra - 2], sa[ra - 1], sb[rb - 2], sb[rb - 1]] {
            params.push_i(s);
        }
        let (pa_at, pb_at) = (params.push(0), params.push(0));
        params.words[pa_at] = params.view(&batch_view(la)?) as u32;
        params.words[pb_at] = params.view(&batch_view(lb)?) as u32;
        let ops = Operands {
            setup: "let kb = 0u; let ke = GK;\n\
                    let abase = bitcast<i32>(view_off(prm[8], b));\n\
                    let bbase = bitcast<i32>(view_off(prm[9], b));\n\
                    let sam = bitcast<i32>(prm[4]); let sak = bitcast<i32>(prm[5]);\n\
                    let sbk = bitcast<i32>(prm[6]); let sbn = bitcast<i32>(prm[7]);"
                .into(),
            a: format!(
                "va = {};{}",
                load(d, "in0", "u32(abase + i32(gi) * sam + i32(gk) * sak)"),
                operand_rounding("va", precision)
            ),
            b: format!(
                "vb = {};{}",
                load(d, "in1", "u32(bbase + i32(gk) * sbk + i32(gj) * sbn)"),
                operand_rounding("vb", precision)
            ),
        };
        self.gemm(OP, d, &ops, params, &[a, b], &out, (batch, m, n, k))?;
        Ok(out)
    }
}
