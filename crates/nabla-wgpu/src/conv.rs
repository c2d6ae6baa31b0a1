//! Direct 2-D convolution, its two gradients and max pooling.
//!
//! The convolutions are folds (see [`crate::kernel::Fold`]): each output element sums its taps, one
//! invocation per output when there are few taps and a workgroup tree reduction when there are many
//! (the weight gradient sums over the whole batch and image). Operands are read through their strides.

use crate::WgpuBackend;
use crate::kernel::{Fold, Params, view_expr};
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{self, load, store};
use nabla_core::{Conv2dParams, DType, Error, Layout, Pool2dParams, Result};

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

/// WGSL `let` bindings of every geometry and parameter value (stored from word 2 on).
const NAMES: [&str; 17] = [
    "N", "C", "H", "W", "CO", "CG", "KH", "KW", "OH", "OW", "SH", "SW", "PH", "PW", "DH", "DW",
    "COG",
];

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

    /// Parameters `[outer, inner, geometry..]`.
    fn params(&self, outer: usize, inner: usize, p: &Conv2dParams) -> Params {
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
            self.co / p.groups.max(1),
        ];
        let mut words = vec![outer as u32, inner as u32];
        words.extend(g.iter().map(|&v| v as u32));
        Params { words }
    }
}

/// `let` statements naming the geometry (as `i32`).
fn names() -> String {
    NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| format!("let {n} = i32(prm[{}u]);\n", i + 2))
        .collect()
}

/// Splits `v` into coordinates named `out` along sizes `dims` (last fastest).
fn split(v: &str, out: &[&str], dims: &[&str]) -> String {
    let mut s = format!("var r_{v} = i32({v});\n");
    for (o, d) in out.iter().zip(dims).rev() {
        s += &format!("let {o} = r_{v} % {d};\nr_{v} = r_{v} / {d};\n");
    }
    s
}

fn check_f32(op: &'static str, a: &WgpuStorage, b: &WgpuStorage) -> Result<()> {
    check_dtype(op, a.dtype())?;
    if a.dtype() != DType::F32 || b.dtype() != DType::F32 {
        return Err(wgsl::unsupported_op(op, a.dtype())
            .with_hint("the wgpu backend convolves float32 tensors"));
    }
    Ok(())
}

fn sum(a: &str, b: &str) -> String {
    format!("{a} + {b}")
}

impl WgpuBackend {
    /// Runs the fold `term` (which sees the geometry names, `o` and `k`) over `outer x inner`.
    #[allow(clippy::too_many_arguments)]
    fn conv_fold(
        &self,
        op: &'static str,
        g: &Geometry,
        p: &Conv2dParams,
        (a, la): (&WgpuStorage, &Layout),
        (b, lb): (&WgpuStorage, &Layout),
        out_len: usize,
        inner: usize,
        term: impl Fn(&str, &str) -> String,
    ) -> Result<WgpuStorage> {
        let out = self.out(op, DType::F32, out_len)?;
        if out_len == 0 {
            return Ok(out);
        }
        let mut params = g.params(out_len, inner, p);
        let pa = params.view(la);
        let pb = params.view(lb);
        let f = Fold {
            ty: "f32",
            identity: "0.0".into(),
            combine: &sum,
            term: names() + &term(&coords_load("in0", pa), &coords_load("in1", pb)),
            store: store(DType::F32, "out0", "o", "res"),
        };
        self.fold(op, &params, &[a, b], &[&out], &f)?;
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
        let out_len = g.n * g.co * g.oh * g.ow;
        self.conv_fold(OP, &g, p, x, w, out_len, g.cg * g.kh * g.kw, |xa, wa| {
            split("o", &["n", "co", "oh", "ow"], &["N", "CO", "OH", "OW"])
                + &split("k", &["ci", "kh", "kw"], &["CG", "KH", "KW"])
                + "let c = (co / COG) * CG + ci;\nlet ih = oh * SH + kh * DH - PH;\n\
                   let iw = ow * SW + kw * DW - PW;\nvar term = 0.0;\n\
                   if (ih >= 0i && ih < H && iw >= 0i && iw < W) {\n"
                + &format!(
                    "term = {} * {};\n}}",
                    xa.replace("COORDS", "n, c, ih, iw"),
                    wa.replace("COORDS", "co, ci, kh, kw")
                )
        })
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
        if ds.len() != 4 || ws.len() != 4 {
            return Err(Error::shapes(OP, ds, ws));
        }
        let input = [ds[0], ws[1] * p.groups, input_hw.0, input_hw.1];
        let g = Geometry::new(OP, &input, ws, p)?;
        if ds != [g.n, g.co, g.oh, g.ow] {
            return Err(Error::shapes(OP, ds, &[g.n, g.co, g.oh, g.ow]));
        }
        let out_len = g.n * g.c * g.h * g.w;
        let inner = (g.co / p.groups) * g.kh * g.kw;
        self.conv_fold(OP, &g, p, dy, w, out_len, inner, |da, wa| {
            split("o", &["n", "c", "ih", "iw"], &["N", "C", "H", "W"])
                + &split("k", &["col", "kh", "kw"], &["COG", "KH", "KW"])
                + "let co = (c / CG) * COG + col;\nlet ci = c % CG;\n\
                   let th = ih + PH - kh * DH;\nlet tw = iw + PW - kw * DW;\nvar term = 0.0;\n\
                   if (th >= 0i && tw >= 0i && th % SH == 0i && tw % SW == 0i \
                   && th / SH < OH && tw / SW < OW) {\nlet oh = th / SH;\nlet ow = tw / SW;\n"
                + &format!(
                    "term = {} * {};\n}}",
                    da.replace("COORDS", "n, co, oh, ow"),
                    wa.replace("COORDS", "co, ci, kh, kw")
                )
        })
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
        let out_len = g.co * g.cg * g.kh * g.kw;
        self.conv_fold(OP, &g, p, x, dy, out_len, g.n * g.oh * g.ow, |xa, da| {
            split("o", &["co", "ci", "kh", "kw"], &["CO", "CG", "KH", "KW"])
                + &split("k", &["n", "oh", "ow"], &["N", "OH", "OW"])
                + "let c = (co / COG) * CG + ci;\nlet ih = oh * SH + kh * DH - PH;\n\
                   let iw = ow * SW + kw * DW - PW;\nvar term = 0.0;\n\
                   if (ih >= 0i && ih < H && iw >= 0i && iw < W) {\n"
                + &format!(
                    "term = {} * {};\n}}",
                    xa.replace("COORDS", "n, c, ih, iw"),
                    da.replace("COORDS", "n, co, oh, ow")
                )
        })
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

/// A load from `buf` through the rank-4 view descriptor at `p`, with `COORDS` standing for the four
/// coordinate names (substituted by the caller).
fn coords_load(buf: &str, p: usize) -> String {
    let off = format!(
        "u32(bitcast<i32>(prm[{}u]) + dot(vec4<i32>(COORDS), vec4<i32>(bitcast<i32>(prm[{}u]), \
         bitcast<i32>(prm[{}u]), bitcast<i32>(prm[{}u]), bitcast<i32>(prm[{}u]))))",
        p + 1,
        p + 6,
        p + 7,
        p + 8,
        p + 9
    );
    load(DType::F32, buf, &off)
}
