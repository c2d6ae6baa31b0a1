//! Elementwise kernels rendered to CUDA C from the fused-kernel description ([`FusedKernel`]) that the
//! CPU and wgpu backends consume: the single ops (fill, copy, unary, binary, compare, select, cast)
//! are one-step kernels of the same renderer, so every elementwise op has one definition here.
//!
//! A kernel reads each input through its view (strided, broadcast or flipped; dense views index
//! directly) and writes each result through the view of its output (row-major, or a slice of a
//! larger buffer for `concat`).

use crate::CudaBackend;
use crate::kernel::{Arg, ConstsArg, MAX_CONSTS, Views, walk};
use crate::source::{self, compute_ty, load, storage_ty, store};
use crate::storage::{CudaStorage, check_dtype};
use nabla_core::{
    BinaryOp, CompareOp, DType, Error, FusedKernel, FusedOp, FusedStep, Layout, Result, Scalar,
    UnaryOp,
};

/// An error when `layout` reaches outside `storage` (or their shapes disagree with `shape`).
pub(crate) fn check_view(
    op: &'static str,
    storage: &CudaStorage,
    layout: &Layout,
    shape: &[usize],
) -> Result<()> {
    if layout.shape() != shape {
        return Err(Error::shapes(op, shape, layout.shape()));
    }
    check_in_bounds(op, storage, layout)
}

/// An error naming `op` unless `axes` are distinct axes of a tensor of rank `rank`.
pub(crate) fn check_axes(op: &'static str, rank: usize, axes: &[usize]) -> Result<()> {
    for (i, &a) in axes.iter().enumerate() {
        if a >= rank || axes[..i].contains(&a) {
            return Err(Error::InvalidAxis {
                op,
                axis: a as isize,
                rank,
            });
        }
    }
    Ok(())
}

/// An error when a non-empty `layout` reaches outside `storage`.
pub(crate) fn check_in_bounds(
    op: &'static str,
    storage: &CudaStorage,
    layout: &Layout,
) -> Result<()> {
    if layout.numel() > 0
        && (layout.max_offset() < 0 || layout.max_offset() as usize >= storage.len)
    {
        return Err(Error::invalid(
            op,
            format!(
                "a view reaching element {} of a buffer of {} elements",
                layout.max_offset(),
                storage.len
            ),
        ));
    }
    Ok(())
}

/// The first [`MAX_CONSTS`] constants of `kernel`, in step order, as `render` reads them.
fn constants(kernel: &FusedKernel) -> Result<ConstsArg> {
    let mut out = ConstsArg::default();
    let values = kernel.steps().iter().filter_map(|s| match s.op {
        FusedOp::Constant(c) => Some((c, s.dtype)),
        _ => None,
    });
    for (slot, (c, dtype)) in out.bits.iter_mut().zip(values) {
        *slot = source::constant_bits(c, dtype)?;
    }
    Ok(out)
}

/// The CUDA C kernel `k` computing `kernel` over `views` (inputs first, then outputs).
pub(crate) fn render(kernel: &FusedKernel, views: &Views) -> Result<String> {
    let n_in = kernel.num_inputs();
    let outputs = kernel.outputs();
    let ty = views.index_ty();
    let mut params = vec![
        "Shape sh".to_string(),
        "long long n".to_string(),
        "Consts cs".to_string(),
    ];
    let mut names = Vec::new();
    for (k, &dtype) in kernel.input_dtypes().iter().enumerate() {
        check_dtype("fused", dtype)?;
        params.push(format!("View v{k}"));
        params.push(format!("const {}* __restrict__ in{k}", storage_ty(dtype)));
        names.push(format!("v{k}"));
    }
    for (m, &step) in outputs.iter().enumerate() {
        let dtype = kernel.steps()[step].dtype;
        check_dtype("fused", dtype)?;
        params.push(format!("View w{m}"));
        params.push(format!("{}* __restrict__ out{m}", storage_ty(dtype)));
        names.push(format!("w{m}"));
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut body = walk(views, &names, &format!("(({ty})i)"));
    let mut consts = 0;
    for (j, step) in kernel.steps().iter().enumerate() {
        let dtype = |k: usize| kernel.steps()[k].dtype;
        let x = |k: usize| format!("x{k}");
        let expr = match step.op {
            FusedOp::Input(k) => load(step.dtype, &format!("in{k}"), &format!("o{k}")),
            FusedOp::Constant(_) if consts < MAX_CONSTS => {
                consts += 1;
                source::constant_arg(step.dtype, consts - 1)
            }
            FusedOp::Constant(c) => source::literal(c, step.dtype)?,
            FusedOp::Unary(op, a) => source::unary(op, dtype(a), &x(a))?,
            FusedOp::Binary(op, a, b) => source::binary(op, dtype(a), &x(a), &x(b))?,
            FusedOp::Compare(op, a, b) => source::compare(op, dtype(a), &x(a), &x(b))?,
            FusedOp::Select(c, t, f) => format!("(x{c} ? x{t} : x{f})"),
            FusedOp::Cast(to, a) => source::cast(dtype(a), to, &x(a))?,
        };
        body += &format!("{} x{j} = {expr};\n", compute_ty(step.dtype));
    }
    for (m, &step) in outputs.iter().enumerate() {
        let dtype = kernel.steps()[step].dtype;
        body += &format!(
            "out{m}[o{}] = {};\n",
            n_in + m,
            store(dtype, &format!("x{step}"))
        );
    }
    Ok(format!(
        "extern \"C\" __global__ void k({}) {{\n  GRID_LOOP(i, n) {{\n{body}  }}\n}}\n",
        params.join(", ")
    ))
}

impl CudaBackend {
    /// Runs `kernel` over `shape`, reading `inputs` and writing each result through the given output
    /// buffer and view (`outputs` has one entry per kernel result, of its dtype).
    pub(crate) fn map_into(
        &self,
        op: &'static str,
        kernel: &FusedKernel,
        inputs: &[(&CudaStorage, &Layout)],
        outputs: &[(&CudaStorage, &Layout)],
        shape: &[usize],
    ) -> Result<()> {
        if inputs.len() != kernel.num_inputs() || outputs.len() != kernel.outputs().len() {
            return Err(Error::invalid(
                op,
                format!(
                    "a kernel of {} inputs and {} results given {} inputs and {} outputs",
                    kernel.num_inputs(),
                    kernel.outputs().len(),
                    inputs.len(),
                    outputs.len()
                ),
            ));
        }
        for ((s, l), &dtype) in inputs.iter().zip(kernel.input_dtypes()) {
            if s.dtype != dtype {
                return Err(Error::DTypeMismatch {
                    op,
                    lhs: dtype,
                    rhs: s.dtype,
                });
            }
            check_view(op, s, l, shape)?;
        }
        for (s, l) in outputs {
            check_view(op, s, l, shape)?;
        }
        let layouts: Vec<&Layout> = inputs.iter().chain(outputs).map(|(_, l)| *l).collect();
        let numel = nabla_core::checked_numel(op, shape)?;
        if numel == 0 {
            return Ok(());
        }
        let views = Views::new(op, &layouts)?;
        let src = render(kernel, &views)?;
        let mut args = vec![
            Arg::Shape(views.shape),
            Arg::I64(numel as i64),
            Arg::Consts(constants(kernel)?),
        ];
        for ((s, _), v) in inputs.iter().chain(outputs).zip(&views.views) {
            args.push(Arg::View(*v));
            args.push(Arg::Ptr(s.block.ptr));
        }
        self.launch_elements(op, &src, numel, &args)
    }

    /// Runs `kernel` over `shape` into new row-major buffers, one per result.
    pub(crate) fn map_new(
        &self,
        op: &'static str,
        kernel: &FusedKernel,
        inputs: &[(&CudaStorage, &Layout)],
        shape: &[usize],
    ) -> Result<Vec<CudaStorage>> {
        let numel = nabla_core::checked_numel(op, shape)?;
        let outs = kernel
            .outputs()
            .iter()
            .map(|&s| self.alloc(op, kernel.steps()[s].dtype, numel))
            .collect::<Result<Vec<_>>>()?;
        let row_major = Layout::row_major(shape);
        let out_refs: Vec<(&CudaStorage, &Layout)> = outs.iter().map(|s| (s, &row_major)).collect();
        self.map_into(op, kernel, inputs, &out_refs, shape)?;
        Ok(outs)
    }

    /// One result of a one-step kernel over equal-shape inputs.
    fn map_one(
        &self,
        op: &'static str,
        steps: Vec<FusedStep>,
        inputs: &[(&CudaStorage, &Layout)],
    ) -> Result<CudaStorage> {
        let kernel = FusedKernel::new(steps)?;
        let shape = inputs[0].1.shape().to_vec();
        Ok(self.map_new(op, &kernel, inputs, &shape)?.remove(0))
    }

    /// `step` (a binary op or comparison of inputs 0 and 1) over two operands of one dtype, or an
    /// error when the op is not `supported` for it.
    fn map_pair(
        &self,
        op: &'static str,
        supported: bool,
        step: FusedStep,
        a: (&CudaStorage, &Layout),
        b: (&CudaStorage, &Layout),
    ) -> Result<CudaStorage> {
        if !supported {
            return Err(Error::dtype(op, a.0.dtype));
        }
        let input = |k| FusedStep::new(FusedOp::Input(k), a.0.dtype);
        self.map_one(op, vec![input(0), input(1), step], &[a, b])
    }

    pub(crate) fn full_impl(&self, len: usize, value: Scalar, dtype: DType) -> Result<CudaStorage> {
        check_dtype("full", dtype)?;
        let kernel = FusedKernel::new(vec![FusedStep::new(FusedOp::Constant(value), dtype)])?;
        Ok(self.map_new("full", &kernel, &[], &[len])?.remove(0))
    }

    pub(crate) fn unary_impl(
        &self,
        op: UnaryOp,
        x: &CudaStorage,
        layout: &Layout,
    ) -> Result<CudaStorage> {
        let out = op
            .output_dtype(x.dtype)
            .ok_or_else(|| Error::dtype(op.name(), x.dtype))?;
        check_dtype(op.name(), x.dtype)?;
        let steps = vec![
            FusedStep::new(FusedOp::Input(0), x.dtype),
            FusedStep::new(FusedOp::Unary(op, 0), out),
        ];
        self.map_one(op.name(), steps, &[(x, layout)])
    }

    pub(crate) fn binary_impl(
        &self,
        op: BinaryOp,
        a: (&CudaStorage, &Layout),
        b: (&CudaStorage, &Layout),
    ) -> Result<CudaStorage> {
        let dtype = same_dtype(op.name(), a.0, b.0)?;
        let step = FusedStep::new(FusedOp::Binary(op, 0, 1), dtype);
        self.map_pair(op.name(), op.supports(dtype), step, a, b)
    }

    pub(crate) fn compare_impl(
        &self,
        op: CompareOp,
        a: (&CudaStorage, &Layout),
        b: (&CudaStorage, &Layout),
    ) -> Result<CudaStorage> {
        let dtype = same_dtype(op.name(), a.0, b.0)?;
        let step = FusedStep::new(FusedOp::Compare(op, 0, 1), DType::Bool);
        self.map_pair(op.name(), op.supports(dtype), step, a, b)
    }

    pub(crate) fn select_impl(
        &self,
        cond: (&CudaStorage, &Layout),
        t: (&CudaStorage, &Layout),
        f: (&CudaStorage, &Layout),
    ) -> Result<CudaStorage> {
        if cond.0.dtype != DType::Bool {
            return Err(
                Error::dtype("select", cond.0.dtype).with_hint("the condition must be bool")
            );
        }
        let dtype = same_dtype("select", t.0, f.0)?;
        let steps = vec![
            FusedStep::new(FusedOp::Input(0), DType::Bool),
            FusedStep::new(FusedOp::Input(1), dtype),
            FusedStep::new(FusedOp::Input(2), dtype),
            FusedStep::new(FusedOp::Select(0, 1, 2), dtype),
        ];
        self.map_one("select", steps, &[cond, t, f])
    }

    pub(crate) fn cast_impl(
        &self,
        x: &CudaStorage,
        layout: &Layout,
        dtype: DType,
    ) -> Result<CudaStorage> {
        check_dtype("cast", x.dtype)?;
        check_dtype("cast", dtype)?;
        let mut steps = vec![FusedStep::new(FusedOp::Input(0), x.dtype)];
        if dtype != x.dtype {
            steps.push(FusedStep::new(FusedOp::Cast(dtype, 0), dtype));
        }
        self.map_one("cast", steps, &[(x, layout)])
    }

    /// Copies the view `src` into `dst` seen through `dst_layout` (of the same shape and dtype).
    pub(crate) fn copy_into(
        &self,
        op: &'static str,
        src: (&CudaStorage, &Layout),
        dst: (&CudaStorage, &Layout),
    ) -> Result<()> {
        let kernel = FusedKernel::new(vec![FusedStep::new(FusedOp::Input(0), src.0.dtype)])?;
        let shape = src.1.shape().to_vec();
        self.map_into(op, &kernel, &[src], &[dst], &shape)
    }

    /// `x` as a row-major buffer: the buffer itself when the view already is one, else a copy.
    pub(crate) fn contiguous(&self, x: &CudaStorage, layout: &Layout) -> Result<CudaStorage> {
        if layout.is_contiguous() && layout.offset() == 0 && layout.numel() == x.len {
            return Ok(x.clone());
        }
        self.cast_impl(x, layout, x.dtype)
    }
}

/// The dtype shared by two operands, or a dtype error.
pub(crate) fn same_dtype(op: &'static str, a: &CudaStorage, b: &CudaStorage) -> Result<DType> {
    if a.dtype != b.dtype {
        return Err(Error::DTypeMismatch {
            op,
            lhs: a.dtype,
            rhs: b.dtype,
        });
    }
    check_dtype(op, a.dtype)?;
    Ok(a.dtype)
}
