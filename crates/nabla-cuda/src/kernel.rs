//! Kernels: CUDA C compiled at run time with NVRTC for the device's architecture and cached by their
//! text, their arguments (device addresses, sizes, and views passed by value), and launching them on
//! the backend's stream.

use crate::{CudaBackend, cuda_error, driver_error};
use cudarc::driver::{CudaFunction, DeviceRepr, LaunchConfig, PushKernelArg};
use nabla_core::{Error, Layout, Result};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The most dimensions a view passed to a kernel may have after merging (see [`Views::new`]).
pub(crate) const MAX_RANK: usize = 12;

/// Threads per block of the elementwise kernels.
pub(crate) const BLOCK: u32 = 256;

/// What every kernel starts with: the by-value argument structs (matching [`ShapeArg`],
/// [`ViewArg`] and [`ConstsArg`], sized by [`MAX_RANK`] and [`MAX_CONSTS`]), the grid-stride loop
/// and the helper library of [`crate::source::prelude`].
pub(crate) fn preamble() -> &'static str {
    static PREAMBLE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREAMBLE.get_or_init(|| {
        format!(
            "struct Shape {{ long long rank; long long d[{MAX_RANK}]; }};
struct View {{ long long off; long long s[{MAX_RANK}]; }};
struct Consts {{ unsigned long long b[{MAX_CONSTS}]; }};
#define GRID_LOOP(i, n) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; \\
    i < (long long)(n); i += (long long)gridDim.x * blockDim.x)
{}",
            crate::source::prelude()
        )
    })
}

/// The most constants a fused kernel receives as arguments (see [`ConstsArg`]); further ones are
/// compiled in as literals.
pub(crate) const MAX_CONSTS: usize = 16;

/// A fused kernel's constants, as the bits of each value in its dtype: passed by value, so that a
/// kernel whose constants change from call to call (an optimizer's bias corrections, a scale) is
/// compiled once.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConstsArg {
    pub(crate) bits: [u64; MAX_CONSTS],
}

// SAFETY: plain `repr(C)` data matching `struct Consts` of the preamble.
unsafe impl DeviceRepr for ConstsArg {}

/// The dimensions of the index space a kernel walks (row-major), as the kernel receives them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ShapeArg {
    rank: i64,
    dims: [i64; MAX_RANK],
}

// SAFETY: plain `repr(C)` data matching `struct Shape` of the preamble.
unsafe impl DeviceRepr for ShapeArg {}

/// Where an operand's elements are: the offset of element 0 and a stride per dimension of the index
/// space (0 for a broadcast dimension, negative for a flipped one).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ViewArg {
    offset: i64,
    strides: [i64; MAX_RANK],
}

// SAFETY: plain `repr(C)` data matching `struct View` of the preamble.
unsafe impl DeviceRepr for ViewArg {}

impl ViewArg {
    /// Moves the view's first element by `by` elements.
    pub(crate) fn shift(&mut self, by: i64) {
        self.offset += by;
    }
}

/// One index space and the views of several operands over it, with the dimensions merged where every
/// view allows it (so most kernels walk one or two dimensions).
pub(crate) struct Views {
    pub(crate) shape: ShapeArg,
    pub(crate) views: Vec<ViewArg>,
    /// Per view: `true` when its elements are `offset + i` for index `i` (no coordinate walk needed).
    pub(crate) dense: Vec<bool>,
    /// `true` when every offset a view reaches, and the element count, fit an `int` (the loop
    /// counter itself is always a `long long`, so stepping past the end cannot overflow).
    pub(crate) small: bool,
}

impl Views {
    /// The index space of `layouts` (which share one shape), or an error naming `op` when the views
    /// still have more than [`MAX_RANK`] dimensions after merging.
    pub(crate) fn new(op: &'static str, layouts: &[&Layout]) -> Result<Views> {
        let numel = layouts[0].numel();
        let (dims, strides) = Layout::coalesce(layouts);
        if dims.len() > MAX_RANK {
            return Err(Error::invalid(
                op,
                format!(
                    "the CUDA backend's kernels walk at most {MAX_RANK} dimensions, and these views of \
                     shape {:?} need {} after merging; make the tensor contiguous first",
                    layouts[0].shape(),
                    dims.len()
                ),
            ));
        }
        let mut shape = ShapeArg {
            rank: dims.len() as i64,
            ..Default::default()
        };
        for (k, &d) in dims.iter().enumerate() {
            shape.dims[k] = d as i64;
        }
        let mut small = numel < i32::MAX as usize;
        let mut views = Vec::with_capacity(layouts.len());
        let mut dense = Vec::with_capacity(layouts.len());
        for (l, s) in layouts.iter().zip(&strides) {
            let mut v = ViewArg {
                offset: l.offset() as i64,
                ..Default::default()
            };
            for (k, &st) in s.iter().enumerate() {
                v.strides[k] = st as i64;
            }
            let contiguous = s.is_empty() || (s.len() == 1 && s[0] == 1);
            dense.push(contiguous);
            small &= l.max_offset() < i32::MAX as isize && l.min_offset() >= 0;
            views.push(v);
        }
        Ok(Views {
            shape,
            views,
            dense,
            small,
        })
    }

    /// The merged rank of the index space.
    pub(crate) fn rank(&self) -> i64 {
        self.shape.rank
    }

    /// The C type of indices and offsets: `int` when everything fits, else `long long`.
    pub(crate) fn index_ty(&self) -> &'static str {
        if self.small { "int" } else { "long long" }
    }
}

/// A kernel argument.
pub(crate) enum Arg {
    /// A device address.
    Ptr(u64),
    /// A 64-bit integer.
    I64(i64),
    /// An index space.
    Shape(ShapeArg),
    /// A view.
    View(ViewArg),
    /// A fused kernel's constants.
    Consts(ConstsArg),
}

/// Blocks for `n` elements at `BLOCK` threads with a grid-stride loop: enough to fill the device
/// several times over, never more than needed.
pub(crate) fn grid_for(n: usize, sms: u32) -> u32 {
    let needed = n.div_ceil(BLOCK as usize).max(1);
    needed.min(sms as usize * 16).max(1) as u32
}

impl CudaBackend {
    /// The compiled kernel `k` of `src` (the preamble is prepended), from the cache, or compiled now;
    /// with the time spent compiling.
    fn function(&self, op: &str, src: &str) -> Result<(CudaFunction, Duration)> {
        if let Some(f) = self.inner.lock_kernels().get(src) {
            return Ok((f.clone(), Duration::ZERO));
        }
        let t0 = Instant::now();
        self.inner.compiles.fetch_add(1, Ordering::Relaxed);
        let opts = cudarc::nvrtc::CompileOptions {
            arch: Some(self.inner.arch),
            options: vec!["--std=c++17".into()],
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(format!("{}{src}", preamble()), opts)
            .map_err(|e| {
                cuda_error(format!(
                    "{op}: NVRTC could not compile the kernel: {}",
                    compile_log(&e)
                ))
            })?;
        let module = self
            .inner
            .ctx
            .load_module(ptx)
            .map_err(|e| driver_error(&format!("{op}: loading its kernel"), e))?;
        let f = module
            .load_function("k")
            .map_err(|e| driver_error(&format!("{op}: finding its kernel"), e))?;
        self.inner.lock_kernels().insert(src.to_string(), f.clone());
        Ok((f, t0.elapsed()))
    }

    /// Launches kernel `k` of `src` with `grid` blocks of `block` threads and `args`, on the
    /// backend's stream (asynchronously).
    pub(crate) fn launch(
        &self,
        op: &'static str,
        src: &str,
        (grid, block): (u32, u32),
        args: &[Arg],
    ) -> Result<()> {
        let (f, compile) = self.function(op, src)?;
        let mut b = self.inner.stream.launch_builder(&f);
        for a in args {
            match a {
                Arg::Ptr(p) => b.arg(p),
                Arg::I64(v) => b.arg(v),
                Arg::Shape(s) => b.arg(s),
                Arg::View(v) => b.arg(v),
                Arg::Consts(c) => b.arg(c),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: every kernel of this crate takes exactly the arguments its caller passes, reads only
        // inside the views it is given (checked against the buffers by the callers) and writes only
        // into the buffers the caller allocated for it.
        self.timed(op, compile, || {
            unsafe { b.launch(cfg) }
                .map(|_| ())
                .map_err(|e| driver_error(&format!("launching {op}"), e))
        })
    }

    /// Launches kernel `k` of `src` over `n` elements with a grid-stride loop.
    pub(crate) fn launch_elements(
        &self,
        op: &'static str,
        src: &str,
        n: usize,
        args: &[Arg],
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.launch(op, src, (grid_for(n, self.inner.sms), BLOCK), args)
    }
}

/// The compiler's log of a failed compilation.
fn compile_log(e: &cudarc::nvrtc::CompileError) -> String {
    match e {
        cudarc::nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
        other => format!("{other:?}"),
    }
}

/// Statements computing `o{k}`, the offset of element `i` of the index space `sh` in view `k` (named
/// `names[k]` in the kernel): dense views take `off + i`, a strided view of one dimension
/// `off + i * s`, otherwise the walk over the dimensions (one division per dimension, shared by every
/// strided view). Offsets have the views' index type.
pub(crate) fn walk(views: &Views, names: &[&str], i: &str) -> String {
    walk_with(views.index_ty(), ("sh", "o"), views, names, i)
}

/// [`walk`] with offsets of C type `ty`, over the index space named `shape`, into variables
/// `{var}0`, `{var}1`, ... (indexed and reducing kernels, whose offsets grow past an `int`, use
/// `long long`).
pub(crate) fn walk_with(
    ty: &str,
    (shape, var): (&str, &str),
    views: &Views,
    names: &[&str],
    i: &str,
) -> String {
    let mut s = String::new();
    let mut strided = Vec::new();
    for (k, name) in names.iter().enumerate() {
        if views.dense[k] {
            s += &format!("{ty} {var}{k} = ({ty}){name}.off + {i};\n");
        } else if views.rank() == 1 {
            s += &format!("{ty} {var}{k} = ({ty}){name}.off + {i} * ({ty}){name}.s[0];\n");
        } else {
            s += &format!("{ty} {var}{k} = ({ty}){name}.off;\n");
            strided.push(k);
        }
    }
    if !strided.is_empty() {
        s += &format!(
            "{{ {ty} rem = {i};\n  for (int d = (int){shape}.rank - 1; d >= 0; --d) {{\n    \
             {ty} n = ({ty}){shape}.d[d]; {ty} c = rem % n; rem /= n;\n"
        );
        for k in strided {
            s += &format!("    {var}{k} += c * ({ty}){}.s[d];\n", names[k]);
        }
        s += "  }\n}\n";
    }
    s
}
