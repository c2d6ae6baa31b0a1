//! 2-D convolution as patch extraction (im2col) followed by batched matrix products on cuBLAS: for each
//! group, `out[n] = W_g · cols[n, g]` with `W_g` the group's `[C_out / groups, C_in / groups · KH · KW]`
//! weights and `cols[n, g]` the `[C_in / groups · KH · KW, H_out · W_out]` patches of image `n`.
//! Autocast's rounded precisions extract the patches straight into the half type, so the products run
//! on the tensor cores. The gradients are the provided methods of [`nabla_core::Backend`], which are
//! convolutions themselves.

use crate::CudaBackend;
use crate::kernel::Arg;
use crate::matmul::{Dims, Operand};
use crate::source::{compute_ty, load, storage_ty, store};
use crate::storage::CudaStorage;
use nabla_core::{Conv2dParams, DType, Error, Layout, Result, Scalar};

impl CudaBackend {
    pub(crate) fn conv2d_impl(
        &self,
        x: (&CudaStorage, &Layout),
        w: (&CudaStorage, &Layout),
        params: &Conv2dParams,
    ) -> Result<CudaStorage> {
        const OP: &str = "conv2d";
        let dtype = crate::elementwise::same_dtype(OP, x.0, w.0)?;
        params.precision.check_operand(OP, dtype)?;
        crate::elementwise::check_in_bounds(OP, x.0, x.1)?;
        crate::elementwise::check_in_bounds(OP, w.0, w.1)?;
        let (xs, ws) = (x.1.shape(), w.1.shape());
        if xs.len() != 4 || ws.len() != 4 {
            return Err(Error::shapes(OP, xs, ws));
        }
        let (n, c, h, wd) = (xs[0], xs[1], xs[2], xs[3]);
        let (co, cg, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
        let g = params.groups;
        if g == 0 || c % g != 0 || co % g != 0 || cg != c / g {
            return Err(Error::invalid(
                OP,
                format!("input of shape {xs:?} and weights of shape {ws:?} do not fit groups={g}"),
            ));
        }
        let (ho, wo) = params
            .checked_output_size(OP, (h, wd), (kh, kw))?
            .ok_or_else(|| {
                Error::invalid(
                    OP,
                    format!("a {kh}x{kw} kernel does not fit a {h}x{wd} input with {params}"),
                )
            })?;
        let out_len = nabla_core::check_allocation(OP, &[n, co, ho, wo], dtype)?;
        let (k, p, cog) = (cg * kh * kw, ho * wo, co / g);
        if out_len == 0 || k == 0 {
            return self.full_impl(out_len, Scalar::F64(0.0), dtype);
        }
        let col_dtype = params.precision.rounding().unwrap_or(dtype);
        let cols_len = nabla_core::check_allocation(OP, &[n, g, k, p], col_dtype)?;
        let cols = self.alloc(OP, col_dtype, cols_len)?;
        self.im2col(x, &cols, (n, c, h, wd), (g, cg, kh, kw), (ho, wo), params)?;
        let weights = self.cast_impl(w.0, w.1, col_dtype)?;
        let out = self.alloc(OP, dtype, out_len)?;
        for group in 0..g {
            let a = Operand {
                ptr: weights.block.ptr,
                offset: (group * cog * k) as i64,
                batch_stride: 0,
                row_stride: k as i64,
                col_stride: 1,
            };
            let b = Operand {
                ptr: cols.block.ptr,
                offset: (group * k * p) as i64,
                batch_stride: (g * k * p) as i64,
                row_stride: p as i64,
                col_stride: 1,
            };
            let cc = Operand {
                ptr: out.block.ptr,
                offset: (group * cog * p) as i64,
                batch_stride: (co * p) as i64,
                row_stride: p as i64,
                col_stride: 1,
            };
            let dims = Dims {
                batch: n,
                m: cog,
                k,
                n: p,
            };
            self.gemm(OP, (col_dtype, dtype), a, b, cc, dims)?;
        }
        drop((cols, weights));
        Ok(out)
    }

    /// Writes the patches of `x` into `cols` (`[N, G, C_g · KH · KW, H_out · W_out]`, converted to the
    /// dtype of `cols`), zeros where a tap falls in the padding.
    #[allow(clippy::too_many_arguments)]
    fn im2col(
        &self,
        x: (&CudaStorage, &Layout),
        cols: &CudaStorage,
        (n, _c, h, w): (usize, usize, usize, usize),
        (g, cg, kh, kw): (usize, usize, usize, usize),
        (ho, wo): (usize, usize),
        params: &Conv2dParams,
    ) -> Result<()> {
        let src = render_im2col(x.0.dtype, cols.dtype)?;
        let s = x.1.strides();
        let total = n * g * cg * kh * kw * ho * wo;
        let i = |v: usize| Arg::I64(v as i64);
        self.launch_elements(
            "conv2d",
            &src,
            total,
            &[
                i(total),
                i(g),
                i(cg),
                i(kh),
                i(kw),
                i(ho),
                i(wo),
                i(h),
                i(w),
                i(params.stride.0),
                i(params.stride.1),
                i(params.padding.0),
                i(params.padding.1),
                i(params.dilation.0),
                i(params.dilation.1),
                i(x.1.offset()),
                Arg::I64(s[0] as i64),
                Arg::I64(s[1] as i64),
                Arg::I64(s[2] as i64),
                Arg::I64(s[3] as i64),
                Arg::Ptr(x.0.block.ptr),
                Arg::Ptr(cols.block.ptr),
            ],
        )
    }
}

/// The patch-extraction kernel from `from` to `to`.
pub(crate) fn render_im2col(from: DType, to: DType) -> Result<String> {
    let value = crate::source::cast(from, to, &load(from, "x", "off"))?;
    let zero = crate::source::literal(Scalar::F64(0.0), to)?;
    Ok(format!(
        "extern \"C\" __global__ void k(long long total, long long G, long long CG, long long KH, \
             long long KW, long long HO, long long WO, long long H, long long W, long long sh, \
             long long sw, long long ph, long long pw, long long dh, long long dw, long long xo, \
             long long s0, long long s1, long long s2, long long s3, const {ti}* __restrict__ x, \
             {to_}* __restrict__ cols) {{\n\
             long long P = HO * WO, K = CG * KH * KW;\n\
             GRID_LOOP(e, total) {{\n\
             long long p = e % P, kk = (e / P) % K, grp = (e / (P * K)) % G, img = e / (P * K * G);\n\
             long long ch = grp * CG + kk / (KH * KW), r = kk % (KH * KW);\n\
             long long ih = (p / WO) * sh - ph + (r / KW) * dh, iw = (p % WO) * sw - pw + (r % KW) * dw;\n\
             {ct} v = {zero};\n\
             if (ih >= 0 && ih < H && iw >= 0 && iw < W) {{ long long off = xo + img * s0 + ch * s1 + ih * s2 + iw * s3; v = {value}; }}\n\
             cols[e] = {st};\n}}\n}}\n",
        ti = storage_ty(from),
        to_ = storage_ty(to),
        ct = compute_ty(to),
        st = store(to, "v"),
    ))
}
