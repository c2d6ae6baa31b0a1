//! 2-D convolution and its two gradients as implicit GEMMs, and max pooling.
//!
//! Each convolution is one run of the GEMM template of `matmul.rs` whose operand loaders index the
//! input, weights or output gradient as im2col matrices on the fly (nothing is materialised), per
//! image and group:
//!
//! - forward: `y[n, g] (COG x OH*OW) = w[g] (COG x CG*KH*KW) @ im2col(x[n, g]) (CG*KH*KW x OH*OW)`;
//! - input gradient: `dx[n, g] (CG x H*W) = w[g]^T (CG x COG*KH*KW) @ B (COG*KH*KW x H*W)`, where `B`
//!   reads the output gradient at the position each tap came from (zero where none did);
//! - weight gradient: `dw[g] (COG x CG*KH*KW) = dy[g] (COG x N*OH*OW) @ im2col(x[g])^T`, its long
//!   `k` split into chunks summed by separate workgroups (then added up) so that small weights still
//!   spread over the device.
//!
//! Operands are read through their strides; results come out contiguous in NCHW / OIHW order.

use crate::WgpuBackend;
use crate::kernel::{Params, view_expr};
use crate::matmul::{Operands, operand_rounding};
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{self, load, store};
use nabla_core::{Conv2dParams, DType, Error, Layout, Pool2dParams, ReduceOp, Result};

/// Shapes of one convolution: `[n, c, h, w]` input, `[co, cg, kh, kw]` weights, `[oh, ow]` output.
struct Geometry {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    co: usize,
    cg: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
}

/// WGSL `let` bindings of every geometry and parameter value (stored from word 4 on, after the GEMM's
/// `[GM, GN, GK, batch start]`); `KC` is the `k` chunk of a split weight gradient.
const NAMES: [&str; 19] = [
    "N", "C", "H", "W", "CO", "CG", "KH", "KW", "OH", "OW", "SH", "SW", "PH", "PW", "DH", "DW",
    "COG", "G", "KC",
];

/// Terms of `k` a workgroup of the weight gradient sums at least (when the split is needed).
const K_CHUNK: usize = 512;
/// The most chunks a weight gradient's `k` is split into.
const MAX_SPLITS: usize = 32;

impl Geometry {
    fn new(
        op: &'static str,
        input: &[usize],
        weight: &[usize],
        p: &Conv2dParams,
    ) -> Result<Geometry> {
        if input.len() != 4 || weight.len() != 4 || p.groups == 0 {
            return Err(Error::shapes(op, input, weight));
        }
        let (n, c, h, w) = (input[0], input[1], input[2], input[3]);
        let (co, cg, kh, kw) = (weight[0], weight[1], weight[2], weight[3]);
        if c % p.groups != 0 || co % p.groups != 0 || cg * p.groups != c {
            return Err(Error::shapes(op, input, weight).with_hint(format!(
                "{} groups need input channels = weight channels x groups, output channels divisible",
                p.groups
            )));
        }
        let (oh, ow) = p.output_size((h, w), (kh, kw)).ok_or_else(|| {
            Error::invalid(
                op,
                format!("kernel {weight:?} does not fit input {input:?} with {p:?}"),
            )
        })?;
        Ok(Geometry {
            n,
            c,
            h,
            w,
            co,
            cg,
            kh,
            kw,
            oh,
            ow,
        })
    }

    /// Parameters `[0, 0, 0, 0, geometry.., k_chunk]` (the GEMM fills the first four).
    fn params(&self, p: &Conv2dParams, k_chunk: usize) -> Params {
        let g = [
            self.n,
            self.c,
            self.h,
            self.w,
            self.co,
            self.cg,
            self.kh,
            self.kw,
            self.oh,
            self.ow,
            p.stride.0,
            p.stride.1,
            p.padding.0,
            p.padding.1,
            p.dilation.0,
            p.dilation.1,
            self.co / p.groups,
            p.groups,
            k_chunk,
        ];
        let mut words = vec![0; 4];
        words.extend(g.iter().map(|&v| v as u32));
        Params { words }
    }
}

/// `let` statements naming the geometry (as `i32`). Every value but the batch size `N` and the chunk
/// `KC` is written into the shader as a literal, so that the compiler turns the loaders' divisions
/// into multiplications (a pipeline per layer shape, not per batch size).
fn names(words: &[u32]) -> String {
    NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| match *n {
            "N" | "KC" => format!("let {n} = i32(prm[{}u]);\n", i + 4),
            _ => format!("let {n} = {}i;\n", words[i + 4] as i32),
        })
        .collect()
}

/// Checks that both operands are F32 (the precision of the product does not change that).
fn check_f32(op: &'static str, a: &WgpuStorage, b: &WgpuStorage) -> Result<()> {
    check_dtype(op, a.dtype())?;
    if a.dtype() != DType::F32 || b.dtype() != DType::F32 {
        return Err(wgsl::unsupported_op(op, a.dtype())
            .with_hint("the wgpu backend convolves float32 tensors"));
    }
    Ok(())
}

/// One convolution GEMM: the operand loaders `a` and `b` see the geometry names, the batch index
/// split by `setup`, and `LOAD0(..)` / `LOAD1(..)` standing for loads from the first and second operand at
/// four coordinates.
struct ConvGemm<'a> {
    op: &'static str,
    setup: &'a str,
    a: &'a str,
    b: &'a str,
    /// `(batch, m, n, k)` of the GEMM.
    dims: (usize, usize, usize, usize),
    k_chunk: usize,
}

impl WgpuBackend {
    /// Runs `c` over the operands `(x, lx)` and `(y, ly)` into a new contiguous buffer.
    fn conv_gemm(
        &self,
        c: &ConvGemm<'_>,
        g: &Geometry,
        p: &Conv2dParams,
        (x, lx): (&WgpuStorage, &Layout),
        (y, ly): (&WgpuStorage, &Layout),
    ) -> Result<WgpuStorage> {
        let (batch, m, n, k) = c.dims;
        let len = batch * m * n;
        if k == 0 || len == 0 {
            return self.full_impl(len, nabla_core::Scalar::F64(0.0), DType::F32);
        }
        let out = self.out(c.op, DType::F32, len)?;
        let mut params = g.params(p, c.k_chunk);
        let px = params.view(lx);
        let py = params.view(ly);
        let expand = |s: &str| {
            let s = replace_loads(s, "LOAD0(", "in0", px);
            replace_loads(&s, "LOAD1(", "in1", py)
        };
        let ops = Operands {
            setup: names(&params.words) + c.setup,
            a: expand(c.a) + &operand_rounding("va", p.precision),
            b: expand(c.b) + &operand_rounding("vb", p.precision),
        };
        self.gemm(c.op, DType::F32, &ops, params, &[x, y], &out, c.dims)?;
        Ok(out)
    }

    pub(crate) fn conv2d_impl(
        &self,
        x: (&WgpuStorage, &Layout),
        w: (&WgpuStorage, &Layout),
        p: &Conv2dParams,
    ) -> Result<WgpuStorage> {
        const OP: &str = "conv2d";
        check_f32(OP, x.0, w.0)?;
        let g = Geometry::new(OP, x.1.shape(), w.1.shape(), p)?;
        let taps = "let ci = i32(gk) / (KH * KW); let kr = i32(gk) % (KH * KW);\n\
                    let kh = kr / KW; let kw = kr % KW;\n";
        let c = ConvGemm {
            op: OP,
            setup: "let kb = 0u; let ke = GK; let n = i32(b) / G; let g = i32(b) % G;\n",
            a: &format!("{taps}va = LOAD1(g * COG + i32(gi), ci, kh, kw);"),
            b: &format!(
                "{taps}let ih = (i32(gj) / OW) * SH + kh * DH - PH;\n\
                 let iw = (i32(gj) % OW) * SW + kw * DW - PW;\n\
                 if (ih >= 0i && ih < H && iw >= 0i && iw < W) {{ vb = LOAD0(n, g * CG + ci, ih, iw); }}"
            ),
            dims: (
                g.n * p.groups,
                g.co / p.groups,
                g.oh * g.ow,
                g.cg * g.kh * g.kw,
            ),
            k_chunk: 0,
        };
        self.conv_gemm(&c, &g, p, x, w)
    }

    pub(crate) fn conv2d_input_grad_impl(
        &self,
        dy: (&WgpuStorage, &Layout),
        w: (&WgpuStorage, &Layout),
        input_hw: (usize, usize),
        p: &Conv2dParams,
    ) -> Result<WgpuStorage> {
        const OP: &str = "conv2d_input_grad";
        check_f32(OP, dy.0, w.0)?;
        let ds = dy.1.shape();
        let ws = w.1.shape();
        if ds.len() != 4 || ws.len() != 4 || p.groups == 0 {
            return Err(Error::shapes(OP, ds, ws));
        }
        let input = [ds[0], ws[1] * p.groups, input_hw.0, input_hw.1];
        let g = Geometry::new(OP, &input, ws, p)?;
        if ds != [g.n, g.co, g.oh, g.ow] {
            return Err(Error::shapes(OP, ds, &[g.n, g.co, g.oh, g.ow]));
        }
        let taps = "let col = i32(gk) / (KH * KW); let kr = i32(gk) % (KH * KW);\n\
                    let kh = kr / KW; let kw = kr % KW;\n";
        let c = ConvGemm {
            op: OP,
            setup: "let kb = 0u; let ke = GK; let n = i32(b) / G; let g = i32(b) % G;\n",
            a: &format!("{taps}va = LOAD1(g * COG + col, i32(gi), kh, kw);"),
            b: &format!(
                "{taps}let th = i32(gj) / W + PH - kh * DH;\nlet tw = i32(gj) % W + PW - kw * DW;\n\
                 if (th >= 0i && tw >= 0i && th % SH == 0i && tw % SW == 0i \
                 && th / SH < OH && tw / SW < OW) {{ vb = LOAD0(n, g * COG + col, th / SH, tw / SW); }}"
            ),
            dims: (
                g.n * p.groups,
                g.cg,
                g.h * g.w,
                (g.co / p.groups) * g.kh * g.kw,
            ),
            k_chunk: 0,
        };
        self.conv_gemm(&c, &g, p, dy, w)
    }

    pub(crate) fn conv2d_weight_grad_impl(
        &self,
        x: (&WgpuStorage, &Layout),
        dy: (&WgpuStorage, &Layout),
        kernel_hw: (usize, usize),
        p: &Conv2dParams,
    ) -> Result<WgpuStorage> {
        const OP: &str = "conv2d_weight_grad";
        check_f32(OP, x.0, dy.0)?;
        let xs = x.1.shape();
        let ds = dy.1.shape();
        if xs.len() != 4 || ds.len() != 4 || p.groups == 0 {
            return Err(Error::shapes(OP, xs, ds));
        }
        let weight = [ds[1], xs[1] / p.groups, kernel_hw.0, kernel_hw.1];
        let g = Geometry::new(OP, xs, &weight, p)?;
        if ds != [g.n, g.co, g.oh, g.ow] {
            return Err(Error::shapes(OP, ds, &[g.n, g.co, g.oh, g.ow]));
        }
        // Split the long sum over images and positions into chunks (multiples of the GEMM's k step).
        let k = g.n * g.oh * g.ow;
        let splits = k.div_ceil(K_CHUNK).clamp(1, MAX_SPLITS);
        let chunk = k.div_ceil(splits).div_ceil(16) * 16;
        let splits = k.div_ceil(chunk.max(1)).max(1);
        let len = g.co * g.cg * g.kh * g.kw;
        let c = ConvGemm {
            op: OP,
            setup: "let g = i32(b) % G; let kb = (b / u32(G)) * u32(KC);\n\
                    let ke = min(kb + u32(KC), GK);\n",
            a: "let n = i32(gk) / (OH * OW); let q = i32(gk) % (OH * OW);\n\
                va = LOAD1(n, g * COG + i32(gi), q / OW, q % OW);",
            b: "let n = i32(gk) / (OH * OW); let q = i32(gk) % (OH * OW);\n\
                let ci = i32(gj) / (KH * KW); let kr = i32(gj) % (KH * KW);\n\
                let ih = (q / OW) * SH + (kr / KW) * DH - PH;\n\
                let iw = (q % OW) * SW + (kr % KW) * DW - PW;\n\
                if (ih >= 0i && ih < H && iw >= 0i && iw < W) { vb = LOAD0(n, g * CG + ci, ih, iw); }",
            dims: (splits * p.groups, g.co / p.groups, g.cg * g.kh * g.kw, k),
            k_chunk: chunk,
        };
        let partial = self.conv_gemm(&c, &g, p, x, dy)?;
        if splits == 1 {
            return Ok(partial);
        }
        self.reduce_impl(
            ReduceOp::Sum,
            &partial,
            &Layout::contiguous([splits, len]),
            &[0],
        )
    }

    pub(crate) fn max_pool2d_impl(
        &self,
        x: &WgpuStorage,
        layout: &Layout,
        p: &Pool2dParams,
    ) -> Result<(WgpuStorage, WgpuStorage)> {
        const OP: &str = "max_pool2d";
        let d = x.dtype();
        check_dtype(OP, d)?;
        let shape = layout.shape();
        let r = shape.len();
        if r < 2 {
            return Err(Error::invalid(
                OP,
                format!("needs at least 2 dimensions, got shape {shape:?}"),
            ));
        }
        let (h, w) = (shape[r - 2], shape[r - 1]);
        let (oh, ow) = p.output_size((h, w)).ok_or_else(|| {
            Error::invalid(
                OP,
                format!("{p:?} does not fit an input of shape {shape:?}"),
            )
        })?;
        let beats = match d {
            DType::F32 => "gt_f(v, best)",
            DType::I32 | DType::U8 => "(v > best)",
            DType::I64 => "i64_lt(best, v)",
            other => return Err(wgsl::unsupported_op(OP, other)),
        };
        let planes: usize = shape[..r - 2].iter().product();
        let total = planes * oh * ow;
        let values = self.out(OP, d, total)?;
        let positions = self.out(OP, DType::I64, total)?;
        if total == 0 {
            return Ok((values, positions));
        }
        let dims = [
            total,
            h,
            w,
            oh,
            ow,
            p.kernel.0,
            p.kernel.1,
            p.stride.0,
            p.stride.1,
            p.padding.0,
            p.padding.1,
            p.dilation.0,
            p.dilation.1,
        ];
        let mut params = Params::new(&dims.map(|v| v as u32));
        let q = params.view(layout);
        let body = format!(
            "let H = i32(prm[1]); let W = i32(prm[2]); let OH = prm[3]; let OW = prm[4];\n\
             let ow = i32(i % OW); let oh = i32((i / OW) % OH); let plane = i / (OW * OH);\n\
             var found = false; var best = {}; var bi = 0u;\n\
             for (var kh = 0i; kh < i32(prm[5]); kh = kh + 1i) {{\n\
             let ih = oh * i32(prm[7]) + kh * i32(prm[11]) - i32(prm[9]);\n\
             if (ih < 0i || ih >= H) {{ continue; }}\n\
             for (var kw = 0i; kw < i32(prm[6]); kw = kw + 1i) {{\n\
             let iw = ow * i32(prm[8]) + kw * i32(prm[12]) - i32(prm[10]);\n\
             if (iw < 0i || iw >= W) {{ continue; }}\n\
             let at = u32(ih * W + iw);\nlet v = {};\n\
             if (!found || {beats}) {{ best = v; bi = at; found = true; }}\n}}\n}}\n{}\n{}",
            wgsl::zero(d),
            load(d, "in0", &view_expr(layout, q, "(plane * u32(H * W) + at)")),
            store(d, "out0", "i", "best"),
            store(DType::I64, "out1", "i", "vec2<u32>(bi, 0u)")
        );
        self.map(OP, &params, &[x], &[&values, &positions], &body)?;
        Ok((values, positions.with_bounds(0, (h * w) as i64 - 1)))
    }
}

/// `s` with every `name(a, b, c, d)` replaced by a load from `buf` at those four coordinates through
/// the rank-4 view descriptor at parameter word `p`.
fn replace_loads(s: &str, name: &str, buf: &str, p: usize) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find(name) {
        out += &rest[..at];
        let args = &rest[at + name.len()..];
        // The arguments end at the parenthesis that closes `name(`.
        let mut depth = 1;
        let end = args
            .char_indices()
            .find_map(|(i, ch)| {
                depth += match ch {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                (depth == 0).then_some(i)
            })
            .unwrap_or(args.len());
        let off = format!(
            "u32(bitcast<i32>(prm[{}u]) + dot(vec4<i32>({}), vec4<i32>(bitcast<i32>(prm[{}u]), \
             bitcast<i32>(prm[{}u]), bitcast<i32>(prm[{}u]), bitcast<i32>(prm[{}u]))))",
            p + 1,
            &args[..end],
            p + 6,
            p + 7,
            p + 8,
            p + 9
        );
        out += &load(DType::F32, buf, &off);
        rest = &args[(end + 1).min(args.len())..];
    }
    out + rest
}
