//! Concatenation, gathers and scatter-adds.
//!
//! Gathers and scatter-adds check their indices on the device: a thread that meets an index outside
//! `-n..n` skips its element and raises a flag, which is read back (waiting for the kernel); a raised
//! flag becomes the CPU's error, naming the first bad index in row-major order, rather than a read or
//! write out of bounds. Scatter-adds add with
//! atomics (float sums therefore land in an order that varies from run to run, within rounding).

use crate::CudaBackend;
use crate::elementwise::{check_in_bounds, same_dtype};
use crate::kernel::{Arg, Views, walk_with};
use crate::source::storage_ty;
use crate::storage::CudaStorage;
use nabla_core::{DType, Error, Layout, Result};

/// The atomic addition of `v` (a compute value of `dtype`) at `p`, as a CUDA C statement.
fn atomic_add(dtype: DType, p: &str, v: &str) -> Result<String> {
    Ok(match dtype {
        DType::F32 => format!("atomicAdd({p}, {v});"),
        DType::F64 => format!("atomicAdd({p}, {v});"),
        DType::I32 | DType::U32 => {
            format!("atomicAdd((unsigned int*)({p}), (unsigned int)({v}));")
        }
        DType::I64 | DType::U64 => {
            format!("atomicAdd((unsigned long long*)({p}), (unsigned long long)({v}));")
        }
        DType::I8 | DType::U8 => format!("atomic_add_narrow({p}, (unsigned int)({v}), 1);"),
        DType::I16 | DType::U16 => format!("atomic_add_narrow({p}, (unsigned int)({v}), 2);"),
        d => return Err(Error::dtype("scatter_add", d)),
    })
}

/// An atomic add on a 1- or 2-byte integer through a compare-and-swap of its aligned 32-bit word.
const NARROW_ATOMIC: &str = "
static __device__ void atomic_add_narrow(void* p, unsigned int v, int bytes) {
    unsigned long long a = (unsigned long long)p;
    unsigned int* w = (unsigned int*)(a & ~3ull);
    unsigned int shift = (unsigned int)(a & 3ull) * 8u;
    unsigned int mask = (bytes == 1 ? 0xffu : 0xffffu) << shift;
    unsigned int old = *w, assumed;
    do {
        assumed = old;
        unsigned int cur = (assumed & mask) >> shift;
        unsigned int next = (assumed & ~mask) | (((cur + v) << shift) & mask);
        old = atomicCAS(w, assumed, next);
    } while (assumed != old);
}
";

/// The statement normalising index `j` (read from `idx`) against `len`, raising the flag `err[0]`
/// for an out-of-range one and skipping the element.
const INDEX_CHECK: &str = "long long j = idx[o0];
if (j < 0) j += len;
if (j < 0 || j >= len) {
    err[0] = 1;
    continue;
}
";

/// The views of an indexed op: `index`'s view, then each other operand seen over `index`'s shape
/// with the stride of `axis` set to 0 (the kernel adds `j * stride` itself).
fn along(op: &'static str, shape: &[usize], axis: usize, layout: &Layout) -> Result<Layout> {
    let mut strides = layout.strides().to_vec();
    strides[axis] = 0;
    Layout::from_parts(shape.to_vec(), strides, layout.offset())
        .map_err(|_| Error::invalid(op, "an operand view that does not fit its buffer"))
}

/// Checks the shapes of an indexed op: `index` is `I64` of `x`'s rank, and equal to `other` except on
/// `axis` (`other` is the data for a gather, the destination for a scatter-add).
fn check_indexed(
    op: &'static str,
    other: &Layout,
    axis: usize,
    index: (&CudaStorage, &Layout),
) -> Result<()> {
    if index.0.dtype != DType::I64 {
        return Err(Error::dtype(op, index.0.dtype).with_hint("indices must be int64"));
    }
    crate::elementwise::check_axes(op, other.rank(), &[axis])?;
    let ok = index.1.rank() == other.rank()
        && index
            .1
            .shape()
            .iter()
            .zip(other.shape())
            .enumerate()
            .all(|(a, (i, o))| a == axis || i == o);
    if !ok {
        return Err(Error::shapes(op, other.shape(), index.1.shape()));
    }
    check_in_bounds(op, index.0, index.1)
}

impl CudaBackend {
    pub(crate) fn concat_impl(
        &self,
        parts: &[(&CudaStorage, &Layout)],
        axis: usize,
    ) -> Result<CudaStorage> {
        let Some(&(first, first_layout)) = parts.first() else {
            return Err(Error::invalid("concat", "needs at least one tensor"));
        };
        let rank = first_layout.rank();
        crate::elementwise::check_axes("concat", rank, &[axis])?;
        let mut shape = first_layout.shape().to_vec();
        shape[axis] = 0;
        for (s, l) in parts {
            same_dtype("concat", first, s)?;
            let agrees = l.rank() == rank
                && l.shape()
                    .iter()
                    .zip(first_layout.shape())
                    .enumerate()
                    .all(|(a, (x, y))| a == axis || x == y);
            if !agrees {
                return Err(Error::shapes("concat", first_layout.shape(), l.shape()));
            }
            shape[axis] += l.shape()[axis];
        }
        let numel = nabla_core::checked_numel("concat", &shape)?;
        let out = self.alloc("concat", first.dtype, numel)?;
        let out_strides = Layout::row_major(&shape).strides().to_vec();
        let mut start = 0usize;
        for (s, l) in parts {
            let len = l.shape()[axis];
            if l.numel() > 0 {
                let dst = Layout::from_parts(
                    l.shape().to_vec(),
                    out_strides.clone(),
                    start * out_strides[axis] as usize,
                )?;
                self.copy_into("concat", (s, l), (&out, &dst))?;
            }
            start += len;
        }
        Ok(out)
    }

    /// A zeroed (flag, index) pair for the index checks.
    fn error_flag(&self, op: &'static str) -> Result<CudaStorage> {
        self.full_impl(2, nabla_core::Scalar::I64(0), DType::I64)
            .map_err(|e| match e {
                Error::InvalidArgument { message, .. } => Error::invalid(op, message),
                other => other,
            })
    }

    /// Waits for the kernel; when it met an index outside `-size..size`, the CPU's error naming the
    /// first such index in row-major order (found on the host, from `index`).
    fn check_flag(
        &self,
        op: &'static str,
        flag: &CudaStorage,
        index: (&CudaStorage, &Layout),
        size: usize,
    ) -> Result<()> {
        let words = self.read_impl(flag, &Layout::contiguous([2]))?;
        if !matches!(words, nabla_core::HostData::I64(ref w) if w[0] != 0) {
            return Ok(());
        }
        let bad = match self.read_impl(index.0, index.1)? {
            nabla_core::HostData::I64(v) => v
                .into_iter()
                .find(|&i| i < -(size as i64) || i >= size as i64),
            _ => None,
        };
        Err(Error::IndexOutOfBounds {
            op,
            index: bad.unwrap_or(i64::MAX),
            size,
        })
    }

    pub(crate) fn gather_impl(
        &self,
        x: (&CudaStorage, &Layout),
        axis: usize,
        index: (&CudaStorage, &Layout),
    ) -> Result<CudaStorage> {
        check_indexed("gather", x.1, axis, index)?;
        check_in_bounds("gather", x.0, x.1)?;
        crate::storage::check_dtype("gather", x.0.dtype)?;
        let shape = index.1.shape().to_vec();
        let numel = shape.iter().product::<usize>();
        let out = self.alloc("gather", x.0.dtype, numel)?;
        let len = x.1.shape()[axis];
        if numel == 0 {
            return Ok(out);
        }
        let flag = self.error_flag("gather")?;
        let xv = along("gather", &shape, axis, x.1)?;
        let views = Views::new("gather", &[index.1, &xv])?;
        let src = render_gather(storage_ty(x.0.dtype), &views);
        self.launch_elements(
            "gather",
            &src,
            numel,
            &[
                Arg::Shape(views.shape),
                Arg::I64(numel as i64),
                Arg::I64(len as i64),
                Arg::I64(x.1.strides()[axis] as i64),
                Arg::View(views.views[0]),
                Arg::Ptr(index.0.block.ptr),
                Arg::View(views.views[1]),
                Arg::Ptr(x.0.block.ptr),
                Arg::Ptr(out.block.ptr),
                Arg::Ptr(flag.block.ptr),
            ],
        )?;
        self.check_flag("gather", &flag, index, len)?;
        Ok(out)
    }

    pub(crate) fn scatter_add_impl(
        &self,
        dst: (&CudaStorage, &Layout),
        axis: usize,
        index: (&CudaStorage, &Layout),
        src: (&CudaStorage, &Layout),
    ) -> Result<CudaStorage> {
        check_indexed("scatter_add", dst.1, axis, index)?;
        same_dtype("scatter_add", dst.0, src.0)?;
        if src.1.shape() != index.1.shape() {
            return Err(Error::shapes("scatter_add", index.1.shape(), src.1.shape()));
        }
        check_in_bounds("scatter_add", dst.0, dst.1)?;
        check_in_bounds("scatter_add", src.0, src.1)?;
        let dtype = dst.0.dtype;
        atomic_add(dtype, "", "")?;
        let out = self.cast_impl(dst.0, dst.1, dtype)?;
        let shape = index.1.shape().to_vec();
        let numel = shape.iter().product::<usize>();
        if numel == 0 {
            return Ok(out);
        }
        let out_layout = Layout::row_major(dst.1.shape());
        let len = dst.1.shape()[axis];
        let flag = self.error_flag("scatter_add")?;
        let ov = along("scatter_add", &shape, axis, &out_layout)?;
        let views = Views::new("scatter_add", &[index.1, src.1, &ov])?;
        let code = render_scatter_add(dtype, &views)?;
        self.launch_elements(
            "scatter_add",
            &code,
            numel,
            &[
                Arg::Shape(views.shape),
                Arg::I64(numel as i64),
                Arg::I64(len as i64),
                Arg::I64(out_layout.strides()[axis] as i64),
                Arg::View(views.views[0]),
                Arg::Ptr(index.0.block.ptr),
                Arg::View(views.views[1]),
                Arg::Ptr(src.0.block.ptr),
                Arg::View(views.views[2]),
                Arg::Ptr(out.block.ptr),
                Arg::Ptr(flag.block.ptr),
            ],
        )?;
        self.check_flag("scatter_add", &flag, index, len)?;
        Ok(out)
    }
}

/// [`walk_with`] with 64-bit offsets over element `i` (indexed kernels add `j * stride` to them).
fn walk_long(views: &Views, names: &[&str]) -> String {
    walk_with("long long", ("sh", "o"), views, names, "i")
}

/// The gather kernel over the index's views (`vi`, `vx`).
pub(crate) fn render_gather(t: &str, views: &Views) -> String {
    format!(
        "extern \"C\" __global__ void k(Shape sh, long long n, long long len, long long stride, \
             View vi, const long long* __restrict__ idx, View vx, const {t}* __restrict__ x, \
             {t}* __restrict__ out, long long* err) {{\n\
             GRID_LOOP(i, n) {{\n{walk}{INDEX_CHECK}\
             out[i] = x[o1 + j * stride];\n}}\n}}\n",
        walk = walk_long(views, &["vi", "vx"]),
    )
}

/// The scatter-add kernel over the index's views (`vi`, `vs`, `vo`).
pub(crate) fn render_scatter_add(dtype: DType, views: &Views) -> Result<String> {
    let add = atomic_add(dtype, "out + o2 + j * stride", "v")?;
    let t = storage_ty(dtype);
    Ok(format!(
        "{NARROW_ATOMIC}extern \"C\" __global__ void k(Shape sh, long long n, long long len, \
             long long stride, View vi, const long long* __restrict__ idx, View vs, \
             const {t}* __restrict__ src, View vo, {t}* out, long long* err) {{\n\
             GRID_LOOP(i, n) {{\n{walk}{INDEX_CHECK}\
             {t} v = src[o1];\n{add}\n}}\n}}\n",
        walk = walk_long(views, &["vi", "vs", "vo"]),
    ))
}
