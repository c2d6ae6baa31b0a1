//! Stable sorting along an axis, by rank: each element counts the elements of its lane that come
//! before it (a smaller key, or an equal key at a lower position) and lands at that rank. The order is
//! the CPU's: each value maps to an unsigned key whose integer order is the value order (`-0.0` equal
//! to `0.0`, NaN after every number), descending is the exact reverse with ties still in their
//! original order. Work per lane grows with the square of its length, which suits the short and
//! medium lanes of sorting and top-k in models.

use crate::CudaBackend;
use crate::kernel::{Arg, Views, walk_with};
use crate::source::storage_ty;
use crate::storage::CudaStorage;
use nabla_core::{DType, Error, Layout, Result};

/// The body of `skey`, the sort key (an `unsigned long long`) of a stored value `v` of `dtype`.
fn key_body(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::F32 => {
            "if (v != v) return 0xffffffffull; unsigned int b = __float_as_uint(v + 0.0f); \
             return (b & 0x80000000u) ? (unsigned long long)(~b) : (unsigned long long)(b | 0x80000000u);"
        }
        DType::F64 => {
            "if (v != v) return 0xffffffffffffffffull; \
             unsigned long long b = (unsigned long long)__double_as_longlong(v + 0.0); \
             return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);"
        }
        DType::I8 => "return (unsigned long long)(unsigned char)((unsigned char)v ^ 0x80u);",
        DType::I16 => "return (unsigned long long)(unsigned short)((unsigned short)v ^ 0x8000u);",
        DType::I32 => "return (unsigned long long)((unsigned int)v ^ 0x80000000u);",
        DType::I64 => "return (unsigned long long)v ^ 0x8000000000000000ull;",
        DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::Bool => {
            "return (unsigned long long)v;"
        }
        d => return Err(Error::dtype("sort", d)),
    })
}

impl CudaBackend {
    pub(crate) fn sort_impl(
        &self,
        x: &CudaStorage,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(CudaStorage, CudaStorage)> {
        let dtype = x.dtype;
        crate::elementwise::check_axes("sort", layout.rank(), &[axis])?;
        crate::elementwise::check_in_bounds("sort", x, layout)?;
        key_body(dtype)?;
        let n = layout.numel();
        let values = self.alloc("sort", dtype, n)?;
        let indices = self.alloc("sort", DType::I64, n)?;
        if n == 0 {
            return Ok((values, indices));
        }
        let len = layout.shape()[axis];
        let out_layout = Layout::row_major(layout.shape());
        let (lanes_in, _, _) = crate::reduce::split(layout, &[axis])?;
        let (lanes_out, _, _) = crate::reduce::split(&out_layout, &[axis])?;
        let views = Views::new("sort", &[&lanes_in, &lanes_out])?;
        let src = render_sort(dtype, descending, &views)?;
        self.launch_elements(
            "sort",
            &src,
            n,
            &[
                Arg::Shape(views.shape),
                Arg::View(views.views[0]),
                Arg::View(views.views[1]),
                Arg::I64(n as i64),
                Arg::I64(len as i64),
                Arg::I64(layout.strides()[axis] as i64),
                Arg::I64(out_layout.strides()[axis] as i64),
                Arg::Ptr(x.block.ptr),
                Arg::Ptr(values.block.ptr),
                Arg::Ptr(indices.block.ptr),
            ],
        )?;
        Ok((values, indices))
    }
}

/// The sort kernel of `dtype`.
pub(crate) fn render_sort(dtype: DType, descending: bool, views: &Views) -> Result<String> {
    let key = key_body(dtype)?;
    let walk = walk_with("long long", ("sh", "o"), views, &["vx", "vo"], "lane");
    let before = if descending { ">" } else { "<" };
    let t = storage_ty(dtype);
    Ok(format!(
        "static __device__ unsigned long long skey({t} v) {{ {key} }}\n\
             extern \"C\" __global__ void k(Shape sh, View vx, View vo, long long n, long long len, \
             long long sx, long long so, const {t}* __restrict__ x, {t}* __restrict__ vals, \
             long long* __restrict__ idx) {{\n\
             GRID_LOOP(e, n) {{\n\
             long long lane = e / len, i = e % len;\n{walk}\
             {t} v = x[o0 + i * sx];\n\
             unsigned long long ki = skey(v);\n\
             long long rank = 0;\n\
             for (long long j = 0; j < len; ++j) {{ {t} w = x[o0 + j * sx]; unsigned long long kj = skey(w); \
             rank += (kj {before} ki) || (kj == ki && j < i); }}\n\
             vals[o1 + rank * so] = v;\n\
             idx[o1 + rank * so] = i;\n}}\n}}\n"
    ))
}
