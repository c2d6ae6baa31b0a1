//! Batched matrix products: cuBLAS for the float types (`float16` and `bfloat16`, and autocast's
//! rounded `float32` operands, on the tensor cores with `float32` accumulation), a kernel for the
//! integers (wrapping, as on the CPU).
//!
//! cuBLAS is column-major: the row-major product `C = A B` is computed as `Cᵀ = Bᵀ Aᵀ`, and each
//! operand is passed as it lies in memory (a row-major view is the transpose of a column-major one),
//! so transposed views need no copy. Views whose batch dimensions do not merge into one stride, or
//! whose matrices have no unit stride, are copied to row-major first.

use crate::CudaBackend;
use crate::kernel::Arg;
use crate::source::{compute_ty, load, storage_ty, store};
use crate::storage::{CudaStorage, check_dtype};
use cudarc::cublas::sys::{
    cublasComputeType_t as Compute, cublasGemmAlgo_t, cublasOperation_t as Op, cudaDataType as Ty,
};
use nabla_core::{DType, Error, Layout, Precision, Result, Scalar};

/// One operand of a batched product as it lies in memory: a `rows x cols` row-major matrix per batch
/// entry, with its element strides.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operand {
    pub(crate) ptr: u64,
    /// Offset of the first element, in elements.
    pub(crate) offset: i64,
    pub(crate) batch_stride: i64,
    pub(crate) row_stride: i64,
    pub(crate) col_stride: i64,
}

impl Operand {
    /// How cuBLAS reads this row-major `rows x cols` matrix: `(transpose, leading dimension)` of its
    /// column-major image, or `None` when neither stride is a unit one.
    fn cublas(&self, rows: usize, cols: usize) -> Option<(bool, i64)> {
        let (rows, cols) = (rows as i64, cols as i64);
        // Row-major (unit column stride): its column-major image is the transpose, untransposed.
        if cols == 1 || self.col_stride == 1 {
            let ld = if rows == 1 {
                cols.max(1)
            } else {
                self.row_stride
            };
            if ld >= cols.max(1) {
                return Some((false, ld));
            }
        }
        if rows == 1 || self.row_stride == 1 {
            let ld = if cols == 1 {
                rows.max(1)
            } else {
                self.col_stride
            };
            if ld >= rows.max(1) {
                return Some((true, ld));
            }
        }
        None
    }
}

/// The dimensions of a batched product.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub(crate) batch: usize,
    pub(crate) m: usize,
    pub(crate) k: usize,
    pub(crate) n: usize,
}

/// The single batch stride of `layout`'s batch dimensions (all but the last two), or `None` when
/// they do not merge into one.
fn batch_stride(layout: &Layout) -> Option<i64> {
    let r = layout.rank();
    let batch = Layout::from_parts(
        layout.shape()[..r - 2].to_vec(),
        layout.strides()[..r - 2].to_vec(),
        0,
    )
    .ok()?;
    let (dims, strides) = Layout::coalesce(&[&batch]);
    match dims.len() {
        0 => Some(0),
        1 => Some(strides[0][0] as i64),
        _ => None,
    }
}

/// The operand of `s` seen through `layout`, when its batch dimensions merge.
fn operand(s: &CudaStorage, layout: &Layout) -> Option<Operand> {
    let r = layout.rank();
    Some(Operand {
        ptr: s.block.ptr,
        offset: layout.offset() as i64,
        batch_stride: batch_stride(layout)?,
        row_stride: layout.strides()[r - 2] as i64,
        col_stride: layout.strides()[r - 1] as i64,
    })
}

fn cublas_error(op: &str, e: impl std::fmt::Debug) -> Error {
    crate::cuda_error(format!("{op}: cuBLAS failed: {e:?}"))
}

/// A size as cuBLAS's `int`, or an error naming the op.
fn int(op: &'static str, v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        Error::invalid(
            op,
            format!("a dimension or stride of {v} is beyond what cuBLAS takes (2^31 - 1)"),
        )
    })
}

impl CudaBackend {
    pub(crate) fn matmul_impl(
        &self,
        a: (&CudaStorage, &Layout),
        b: (&CudaStorage, &Layout),
        precision: Precision,
    ) -> Result<CudaStorage> {
        let dims = check_dims(a.1, b.1)?;
        let dtype = crate::elementwise::same_dtype("matmul", a.0, b.0)?;
        precision.check_operand("matmul", dtype)?;
        crate::elementwise::check_in_bounds("matmul", a.0, a.1)?;
        crate::elementwise::check_in_bounds("matmul", b.0, b.1)?;
        let mut out_shape = a.1.shape()[..a.1.rank() - 2].to_vec();
        out_shape.extend([dims.m, dims.n]);
        let out_dtype = dtype;
        let numel = nabla_core::checked_numel("matmul", &out_shape)?;
        if numel == 0 || dims.k == 0 {
            return self.full_impl(numel, Scalar::F64(0.0), out_dtype);
        }
        // Operands rounded for autocast go to their half type, row-major.
        let (a, b, in_dtype) = match precision.rounding() {
            Some(half) => {
                let ra = self.cast_impl(a.0, a.1, half)?;
                let rb = self.cast_impl(b.0, b.1, half)?;
                (
                    (ra, Layout::row_major(a.1.shape())),
                    (rb, Layout::row_major(b.1.shape())),
                    half,
                )
            }
            None => (
                (a.0.clone(), a.1.clone()),
                (b.0.clone(), b.1.clone()),
                dtype,
            ),
        };
        let out = self.alloc("matmul", out_dtype, numel)?;
        let c = Operand {
            ptr: out.block.ptr,
            offset: 0,
            batch_stride: (dims.m * dims.n) as i64,
            row_stride: dims.n as i64,
            col_stride: 1,
        };
        let (oa, ob, copies) = self.operands(&a, &b, dims)?;
        self.gemm("matmul", (in_dtype, out_dtype), oa, ob, c, dims)?;
        // Held until the product is queued: every later reuse of their blocks is queued after it.
        drop((a, b, copies));
        Ok(out)
    }

    /// Operands cuBLAS can read for `a` and `b`, copying a view to row-major where it must; the
    /// copies come back too, to be held until the product is queued (a block returned to the cache
    /// earlier could be handed to, and overwritten by, a kernel queued before the product).
    fn operands(
        &self,
        a: &(CudaStorage, Layout),
        b: &(CudaStorage, Layout),
        dims: Dims,
    ) -> Result<(Operand, Operand, Vec<CudaStorage>)> {
        let mut copies = Vec::new();
        let mut fit = |s: &CudaStorage, l: &Layout, rows: usize, cols: usize| -> Result<Operand> {
            if let Some(op) = operand(s, l).filter(|op| op.cublas(rows, cols).is_some()) {
                return Ok(op);
            }
            let dense = self.cast_impl(s, l, s.dtype)?;
            let op = operand(&dense, &Layout::row_major(l.shape())).ok_or_else(|| {
                Error::invalid("matmul", "a row-major operand without one batch stride")
            })?;
            copies.push(dense);
            Ok(op)
        };
        let oa = fit(&a.0, &a.1, dims.m, dims.k)?;
        let ob = fit(&b.0, &b.1, dims.k, dims.n)?;
        Ok((oa, ob, copies))
    }

    /// `C = A B` for `dims.batch` products, as cuBLAS (float types) or the integer kernel.
    pub(crate) fn gemm(
        &self,
        op: &'static str,
        (in_dtype, out_dtype): (DType, DType),
        a: Operand,
        b: Operand,
        c: Operand,
        dims: Dims,
    ) -> Result<()> {
        check_dtype(op, in_dtype)?;
        let (ty_in, ty_out, compute) = match (in_dtype, out_dtype) {
            (DType::F32, DType::F32) => (
                Ty::CUDA_R_32F,
                Ty::CUDA_R_32F,
                if self.allow_tf32() {
                    Compute::CUBLAS_COMPUTE_32F_FAST_TF32
                } else {
                    Compute::CUBLAS_COMPUTE_32F
                },
            ),
            (DType::F64, DType::F64) => {
                (Ty::CUDA_R_64F, Ty::CUDA_R_64F, Compute::CUBLAS_COMPUTE_64F)
            }
            (DType::BF16, o) => (Ty::CUDA_R_16BF, out_ty(op, o)?, Compute::CUBLAS_COMPUTE_32F),
            (DType::F16, o) => (Ty::CUDA_R_16F, out_ty(op, o)?, Compute::CUBLAS_COMPUTE_32F),
            (d, o) if d.is_int() && d == o => return self.gemm_int(op, d, a, b, c, dims),
            (d, _) => return Err(Error::dtype(op, d)),
        };
        let (ta, lda) = a
            .cublas(dims.m, dims.k)
            .ok_or_else(|| Error::invalid(op, "left operand without a unit stride"))?;
        let (tb, ldb) = b
            .cublas(dims.k, dims.n)
            .ok_or_else(|| Error::invalid(op, "right operand without a unit stride"))?;
        let trans = |t: bool| if t { Op::CUBLAS_OP_T } else { Op::CUBLAS_OP_N };
        let (es_in, es_out) = (
            in_dtype.size_in_bytes() as u64,
            out_dtype.size_in_bytes() as u64,
        );
        let (one32, zero32, one64, zero64) = (1f32, 0f32, 1f64, 0f64);
        let (alpha, beta): (*const std::ffi::c_void, *const std::ffi::c_void) =
            if compute == Compute::CUBLAS_COMPUTE_64F {
                (
                    (&one64 as *const f64).cast(),
                    (&zero64 as *const f64).cast(),
                )
            } else {
                (
                    (&one32 as *const f32).cast(),
                    (&zero32 as *const f32).cast(),
                )
            };
        let blas = self.inner.blas.lock().unwrap_or_else(|e| e.into_inner());
        self.timed(op, std::time::Duration::ZERO, || {
            // SAFETY: the operands' views were checked against their buffers by the caller; cuBLAS reads
            // `B` then `A` (the transposed product) and writes `C`, a buffer of `batch * m * n` elements.
            unsafe {
                cudarc::cublas::result::gemm_strided_batched_ex(
                    *blas.handle(),
                    trans(tb),
                    trans(ta),
                    int(op, dims.n as i64)?,
                    int(op, dims.m as i64)?,
                    int(op, dims.k as i64)?,
                    alpha,
                    (b.ptr + b.offset as u64 * es_in) as *const std::ffi::c_void,
                    ty_in,
                    int(op, ldb)?,
                    b.batch_stride,
                    (a.ptr + a.offset as u64 * es_in) as *const std::ffi::c_void,
                    ty_in,
                    int(op, lda)?,
                    a.batch_stride,
                    beta,
                    (c.ptr + c.offset as u64 * es_out) as *mut std::ffi::c_void,
                    ty_out,
                    int(op, c.row_stride)?,
                    c.batch_stride,
                    int(op, dims.batch as i64)?,
                    compute,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .map_err(|e| cublas_error(op, e))
        })
    }

    /// The integer product: one thread per result element, wrapping arithmetic.
    fn gemm_int(
        &self,
        op: &'static str,
        dtype: DType,
        a: Operand,
        b: Operand,
        c: Operand,
        dims: Dims,
    ) -> Result<()> {
        let src = render_gemm_int(dtype);
        let total = dims.batch * dims.m * dims.n;
        let args = [
            Arg::I64(total as i64),
            Arg::I64(dims.m as i64),
            Arg::I64(dims.n as i64),
            Arg::I64(dims.k as i64),
            Arg::Ptr(a.ptr),
            Arg::I64(a.offset),
            Arg::I64(a.batch_stride),
            Arg::I64(a.row_stride),
            Arg::I64(a.col_stride),
            Arg::Ptr(b.ptr),
            Arg::I64(b.offset),
            Arg::I64(b.batch_stride),
            Arg::I64(b.row_stride),
            Arg::I64(b.col_stride),
            Arg::Ptr(c.ptr),
            Arg::I64(c.offset),
            Arg::I64(c.batch_stride),
            Arg::I64(c.row_stride),
        ];
        self.launch_elements(op, &src, total, &args)
    }
}

fn out_ty(op: &'static str, dtype: DType) -> Result<Ty> {
    Ok(match dtype {
        DType::F32 => Ty::CUDA_R_32F,
        DType::BF16 => Ty::CUDA_R_16BF,
        DType::F16 => Ty::CUDA_R_16F,
        d => return Err(Error::dtype(op, d)),
    })
}

/// The dimensions of `a @ b` (`[..., m, k] @ [..., k, n]` with equal batch dimensions).
fn check_dims(a: &Layout, b: &Layout) -> Result<Dims> {
    let (ra, rb) = (a.rank(), b.rank());
    if ra < 2
        || ra != rb
        || a.shape()[..ra - 2] != b.shape()[..rb - 2]
        || a.shape()[ra - 1] != b.shape()[rb - 2]
    {
        return Err(Error::shapes("matmul", a.shape(), b.shape()));
    }
    Ok(Dims {
        batch: a.shape()[..ra - 2].iter().product(),
        m: a.shape()[ra - 2],
        k: a.shape()[ra - 1],
        n: b.shape()[rb - 1],
    })
}

/// The integer product kernel of `dtype`.
pub(crate) fn render_gemm_int(dtype: DType) -> String {
    let t = storage_ty(dtype);
    let w = crate::source::wide_unsigned(dtype);
    format!(
        "extern \"C\" __global__ void k(long long total, long long m, long long n, long long kk, \
             const {t}* A, long long ao, long long ab, long long ar, long long ac, \
             const {t}* B, long long bo, long long bb, long long br, long long bc, \
             {t}* C, long long co, long long cb, long long cr) {{\n\
             GRID_LOOP(i, total) {{\n\
             long long col = i % n, row = (i / n) % m, bt = i / (m * n);\n\
             {w} acc = 0;\n\
             for (long long p = 0; p < kk; ++p) acc += ({w})({la}) * ({w})({lb});\n\
             C[co + bt * cb + row * cr + col] = {st};\n}}\n}}\n",
        la = load(dtype, "A", "ao + bt * ab + row * ar + p * ac"),
        lb = load(dtype, "B", "bo + bt * bb + p * br + col * bc"),
        st = store(dtype, &format!("({})acc", compute_ty(dtype))),
    )
}
