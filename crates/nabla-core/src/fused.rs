//! Fused elementwise kernels: one expression over several inputs, evaluated in a single pass.
//!
//! A [`FusedKernel`] is a straight-line list of [`FusedStep`]s (inputs, constants and the elementwise
//! primitives), each with its dtype; the last step is the result. Graph compilers build them from chains
//! of elementwise ops, and [`crate::Backend::fused`] runs them: the default implementation calls the
//! backend's own primitive kernels step by step ([`FusedKernel::evaluate_by_ops`]), so every backend
//! runs every kernel correctly, while a backend with a native fused kernel (the CPU backend's blocked,
//! cache-resident loop) avoids writing the intermediates to memory.

use crate::{
    Backend, BinaryOp, CompareOp, DType, Error, HostLoop, Layout, Result, Scalar, UnaryOp,
};
use std::fmt;

/// What one step of a [`FusedKernel`] computes. Operands are indices of earlier steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FusedOp {
    /// Input number `k` of the kernel (seen through the view the caller passes for it).
    Input(usize),
    /// A constant, converted to the step's dtype as [`crate::Backend::full`] converts it.
    Constant(Scalar),
    /// Elementwise unary op.
    Unary(UnaryOp, usize),
    /// Elementwise binary op on two steps of one dtype.
    Binary(BinaryOp, usize, usize),
    /// Comparison of two steps of one dtype (bool result).
    Compare(CompareOp, usize, usize),
    /// `cond ? on_true : on_false`, with a bool condition.
    Select(usize, usize, usize),
    /// Conversion to a dtype (NumPy `astype` semantics).
    Cast(DType, usize),
}

impl FusedOp {
    /// The steps this op reads, in argument order.
    pub fn operands(&self) -> impl Iterator<Item = usize> + use<> {
        let (ops, n) = match *self {
            FusedOp::Input(_) | FusedOp::Constant(_) => ([0; 3], 0),
            FusedOp::Unary(_, a) | FusedOp::Cast(_, a) => ([a, 0, 0], 1),
            FusedOp::Binary(_, a, b) | FusedOp::Compare(_, a, b) => ([a, b, 0], 2),
            FusedOp::Select(c, t, f) => ([c, t, f], 3),
        };
        ops.into_iter().take(n)
    }
}

/// One step of a [`FusedKernel`]: an op and the dtype of its result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FusedStep {
    /// What the step computes.
    pub op: FusedOp,
    /// Dtype of the step's values.
    pub dtype: DType,
}

impl FusedStep {
    /// A step computing `op` with values of `dtype`.
    pub fn new(op: FusedOp, dtype: DType) -> Self {
        FusedStep { op, dtype }
    }
}

/// An elementwise expression over `n` inputs of one shape, as a list of steps whose last one is the
/// result. Built with [`FusedKernel::new`], which checks it; run with [`crate::Backend::fused`].
///
/// Its [`Display`](fmt::Display) is the expression, with `in0, in1, ...` for the inputs and a
/// `tN = ...;` binding for every intermediate read more than once.
///
/// ```
/// use nabla_core::{BinaryOp, DType, FusedKernel, FusedOp, FusedStep, Scalar, UnaryOp};
/// let f32_step = |op| FusedStep::new(op, DType::F32);
/// let kernel = FusedKernel::new(vec![
///     f32_step(FusedOp::Input(0)),
///     f32_step(FusedOp::Unary(UnaryOp::Exp, 0)),
///     f32_step(FusedOp::Input(1)),
///     f32_step(FusedOp::Binary(BinaryOp::Mul, 1, 2)),
///     f32_step(FusedOp::Constant(Scalar::F64(1.0))),
///     f32_step(FusedOp::Binary(BinaryOp::Add, 3, 4)),
/// ])?;
/// assert_eq!(kernel.to_string(), "exp(in0) * in1 + 1");
/// assert_eq!(kernel.num_inputs(), 2);
/// // Steps may only read earlier steps, with matching dtypes.
/// assert!(FusedKernel::new(vec![f32_step(FusedOp::Unary(UnaryOp::Exp, 0))]).is_err());
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct FusedKernel {
    steps: Vec<FusedStep>,
    inputs: Vec<DType>,
    outputs: Vec<usize>,
    host_loop: Option<HostLoop>,
}

/// Two kernels are equal when they compute the same steps with the same results (an attached host
/// loop computes the same function, so it is not compared).
impl PartialEq for FusedKernel {
    fn eq(&self, other: &Self) -> bool {
        self.steps == other.steps && self.inputs == other.inputs && self.outputs == other.outputs
    }
}

const OP: &str = "fused";

impl FusedKernel {
    /// A kernel computing `steps` (see [`FusedKernel::validate`] for the rules they must follow).
    pub fn new(steps: Vec<FusedStep>) -> Result<Self> {
        let last = steps.len().saturating_sub(1);
        Self::with_outputs(steps, vec![last])
    }

    /// A kernel computing several results in one pass: `outputs` lists the steps whose values are
    /// returned, in order (any steps, each at most once). Run it with [`crate::Backend::fused_many`];
    /// an optimizer updating a parameter and its moments in one loop is the typical use.
    ///
    /// ```
    /// use nabla_core::{BinaryOp, DType, FusedKernel, FusedOp, FusedStep};
    /// let f32_step = |op| FusedStep::new(op, DType::F32);
    /// // (in0 + in1, in0 * (in0 + in1))
    /// let kernel = FusedKernel::with_outputs(
    ///     vec![
    ///         f32_step(FusedOp::Input(0)),
    ///         f32_step(FusedOp::Input(1)),
    ///         f32_step(FusedOp::Binary(BinaryOp::Add, 0, 1)),
    ///         f32_step(FusedOp::Binary(BinaryOp::Mul, 0, 2)),
    ///     ],
    ///     vec![2, 3],
    /// )?;
    /// assert_eq!(kernel.outputs(), [2, 3]);
    /// assert_eq!(kernel.to_string(), "t2 = in0 + in1; (t2, in0 * t2)");
    /// assert!(FusedKernel::with_outputs(kernel.steps().to_vec(), vec![3, 3]).is_err());
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn with_outputs(steps: Vec<FusedStep>, outputs: Vec<usize>) -> Result<Self> {
        let mut kernel = FusedKernel {
            steps,
            inputs: Vec::new(),
            outputs,
            host_loop: None,
        };
        kernel.inputs = kernel.validate()?;
        if kernel.outputs.is_empty() {
            return Err(Error::invalid(
                OP,
                "a fused kernel needs at least one output",
            ));
        }
        for (j, &o) in kernel.outputs.iter().enumerate() {
            if o >= kernel.steps.len() {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "output {j} is step {o}, but the kernel has {} steps",
                        kernel.steps.len()
                    ),
                ));
            }
            if kernel.outputs[..j].contains(&o) {
                return Err(Error::invalid(
                    OP,
                    format!("step {o} is listed as an output twice"),
                ));
            }
        }
        Ok(kernel)
    }

    /// The hand-written host loop attached to the kernel, if any ([`FusedKernel::with_host_loop`]).
    pub fn host_loop(&self) -> Option<&HostLoop> {
        self.host_loop.as_ref()
    }

    /// Attaches the description of a host loop computing exactly what the steps compute (see
    /// [`HostLoop`]), which host backends may run instead of interpreting the steps. The caller
    /// vouches for the agreement; the steps stay the reference every other backend runs. An error
    /// when the loop's updates do not name one distinct input per result.
    pub fn with_host_loop(mut self, host_loop: HostLoop) -> Result<Self> {
        let updates = host_loop.updates();
        let distinct = updates
            .iter()
            .enumerate()
            .all(|(j, k)| *k < self.num_inputs() && !updates[..j].contains(k));
        if updates.len() != self.outputs.len() || !distinct {
            return Err(Error::invalid(
                OP,
                format!(
                    "host loop {host_loop:?} updates inputs {updates:?}, but the kernel has {} inputs \
                     and {} results",
                    self.num_inputs(),
                    self.outputs.len()
                ),
            ));
        }
        self.host_loop = Some(host_loop);
        Ok(self)
    }

    /// The steps; a kernel built with [`FusedKernel::new`] returns the last one.
    pub fn steps(&self) -> &[FusedStep] {
        &self.steps
    }

    /// The steps whose values the kernel returns, in order (the last step for [`FusedKernel::new`]).
    pub fn outputs(&self) -> &[usize] {
        &self.outputs
    }

    /// Dtype of each result, in order.
    pub fn output_dtypes(&self) -> Vec<DType> {
        self.outputs.iter().map(|&o| self.steps[o].dtype).collect()
    }

    /// Number of inputs (one more than the largest input index).
    pub fn num_inputs(&self) -> usize {
        self.inputs.len()
    }

    /// Dtype of each input.
    pub fn input_dtypes(&self) -> &[DType] {
        &self.inputs
    }

    /// Dtype of the (first) result.
    pub fn output_dtype(&self) -> DType {
        self.steps[self.outputs[0]].dtype
    }

    /// Checks the rules every kernel follows and returns the dtype of each input: there is at least one
    /// step; steps read only earlier steps; inputs `0..n` are each read (by steps of one dtype); each op
    /// supports its operands' dtype (as [`UnaryOp::output_dtype`], [`BinaryOp::supports`] and
    /// [`CompareOp::supports`] say) and the step's dtype is the op's result dtype (bool for comparisons,
    /// the branches' dtype for a select whose condition is bool, the target for a cast).
    pub fn validate(&self) -> Result<Vec<DType>> {
        if self.steps.is_empty() {
            return Err(Error::invalid(OP, "a fused kernel needs at least one step"));
        }
        let mut inputs: Vec<Option<DType>> = Vec::new();
        for (i, step) in self.steps.iter().enumerate() {
            let bad = |what: String| Error::invalid(OP, format!("step {i} ({step:?}): {what}"));
            let mut dt = Vec::with_capacity(3);
            for a in step.op.operands() {
                if a >= i {
                    return Err(bad(format!("reads step {a}, which is not an earlier step")));
                }
                dt.push(self.steps[a].dtype);
            }
            let expected = match step.op {
                FusedOp::Input(k) => {
                    if inputs.len() <= k {
                        inputs.resize(k + 1, None);
                    }
                    match inputs[k] {
                        Some(d) if d != step.dtype => {
                            return Err(bad(format!("input {k} was already read as {d}")));
                        }
                        _ => inputs[k] = Some(step.dtype),
                    }
                    Some(step.dtype)
                }
                FusedOp::Constant(_) => Some(step.dtype),
                FusedOp::Unary(op, _) => op.output_dtype(dt[0]),
                FusedOp::Binary(op, _, _) => {
                    (dt[0] == dt[1] && op.supports(dt[0])).then_some(dt[0])
                }
                FusedOp::Compare(op, _, _) => {
                    (dt[0] == dt[1] && op.supports(dt[0])).then_some(DType::Bool)
                }
                FusedOp::Select(..) => (dt[0] == DType::Bool && dt[1] == dt[2]).then_some(dt[1]),
                FusedOp::Cast(to, _) => Some(to),
            };
            if expected != Some(step.dtype) {
                return Err(bad(format!(
                    "operands of dtypes {dt:?} give {expected:?}, not {}",
                    step.dtype
                )));
            }
        }
        inputs
            .into_iter()
            .enumerate()
            .map(|(k, d)| d.ok_or_else(|| Error::invalid(OP, format!("input {k} is never read"))))
            .collect()
    }

    /// Checks a call: one `(dtype, view shape)` per input, matching the kernel's input dtypes, every view
    /// of the output `shape`.
    pub fn check_call(&self, inputs: &[(DType, &[usize])], shape: &[usize]) -> Result<()> {
        if inputs.len() != self.inputs.len() {
            return Err(Error::invalid(
                OP,
                format!(
                    "the kernel `{self}` has {} inputs but {} were given",
                    self.inputs.len(),
                    inputs.len()
                ),
            ));
        }
        for (k, ((dtype, s), &want)) in inputs.iter().zip(&self.inputs).enumerate() {
            if *dtype != want {
                return Err(Error::DTypeMismatch {
                    op: OP,
                    lhs: want,
                    rhs: *dtype,
                });
            }
            if *s != shape {
                return Err(Error::shapes(OP, s, shape).with_hint(format!(
                    "every input of a fused kernel is viewed with the output's shape (input {k})"
                )));
            }
        }
        Ok(())
    }

    /// Index of the last step reading each step (`None` for steps no later step reads).
    pub fn last_readers(&self) -> Vec<Option<usize>> {
        let mut last = vec![None; self.steps.len()];
        for (i, step) in self.steps.iter().enumerate() {
            for a in step.op.operands() {
                last[a] = Some(i);
            }
        }
        last
    }

    /// Evaluates the kernel with `backend`'s primitive kernels, one step at a time (each intermediate is
    /// a buffer, released after its last reader; constants are one-element buffers seen through a
    /// broadcast view). This is the default [`crate::Backend::fused`], correct on every backend.
    pub fn evaluate_by_ops<B: Backend>(
        &self,
        backend: &B,
        inputs: &[(&B::Storage, &Layout)],
        shape: &[usize],
    ) -> Result<B::Storage> {
        self.check_single_output()?;
        let mut out = self.evaluate_outputs_by_ops(backend, inputs, shape)?;
        out.pop().ok_or_else(|| Error::invalid(OP, "no result"))
    }

    /// Checks the `donate` list of a [`crate::Backend::fused_many`] call with `inputs` inputs: empty, or
    /// one entry per result, each naming an input below `inputs`, no input named twice.
    pub fn check_donations(&self, donate: &[Option<usize>], inputs: usize) -> Result<()> {
        let results = self.outputs.len();
        if !donate.is_empty() && donate.len() != results {
            return Err(Error::invalid(
                OP,
                format!(
                    "{} donations were given for a kernel with {results} results",
                    donate.len()
                ),
            ));
        }
        for (j, d) in donate.iter().enumerate() {
            if let Some(k) = *d
                && (k >= inputs || donate[..j].contains(&Some(k)))
            {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "cannot donate input {k} of {inputs} to result {j} (out of range, or \
                         donated twice)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An error unless the kernel has exactly one result (what [`crate::Backend::fused`] returns).
    pub fn check_single_output(&self) -> Result<()> {
        if self.outputs.len() == 1 {
            Ok(())
        } else {
            Err(Error::invalid(
                OP,
                format!(
                    "the kernel `{self}` has {} results; run it with Backend::fused_many",
                    self.outputs.len()
                ),
            ))
        }
    }

    /// Every result of the kernel, evaluated as [`FusedKernel::evaluate_by_ops`] does (the default
    /// [`crate::Backend::fused_many`]).
    pub fn evaluate_outputs_by_ops<B: Backend>(
        &self,
        backend: &B,
        inputs: &[(&B::Storage, &Layout)],
        shape: &[usize],
    ) -> Result<Vec<B::Storage>> {
        let metas: Vec<(DType, &[usize])> = inputs
            .iter()
            .map(|(s, l)| (backend.storage_dtype(s), l.shape()))
            .collect();
        self.check_call(&metas, shape)?;
        let dense = Layout::contiguous(shape);
        let last = self.last_readers();
        let mut vals: Vec<Option<(B::Storage, Layout)>> = vec![None; self.steps.len()];
        for (i, step) in self.steps.iter().enumerate() {
            let get = |a: usize| -> Result<(&B::Storage, &Layout)> {
                let v = vals[a].as_ref().ok_or_else(|| {
                    Error::invalid(OP, format!("step {a} was released before step {i}"))
                })?;
                Ok((&v.0, &v.1))
            };
            let value = match step.op {
                FusedOp::Input(k) => (inputs[k].0.clone(), inputs[k].1.clone()),
                FusedOp::Constant(c) => {
                    let scalar = Layout::contiguous(Vec::new()).broadcast_to(shape)?;
                    (backend.full(1, c, step.dtype)?, scalar)
                }
                FusedOp::Unary(op, a) => {
                    let (x, l) = get(a)?;
                    (backend.unary(op, x, l)?, dense.clone())
                }
                FusedOp::Binary(op, a, b) => {
                    let ((x, lx), (y, ly)) = (get(a)?, get(b)?);
                    (backend.binary(op, x, lx, y, ly)?, dense.clone())
                }
                FusedOp::Compare(op, a, b) => {
                    let ((x, lx), (y, ly)) = (get(a)?, get(b)?);
                    (backend.compare(op, x, lx, y, ly)?, dense.clone())
                }
                FusedOp::Select(c, t, f) => {
                    let ((c, lc), (t, lt), (f, lf)) = (get(c)?, get(t)?, get(f)?);
                    (backend.select(c, lc, t, lt, f, lf)?, dense.clone())
                }
                FusedOp::Cast(to, a) => {
                    let (x, l) = get(a)?;
                    (backend.cast(x, l, to)?, dense.clone())
                }
            };
            vals[i] = Some(value);
            for a in step.op.operands() {
                if last[a] == Some(i) && !self.outputs.contains(&a) {
                    vals[a] = None;
                }
            }
        }
        let n: usize = shape.iter().product();
        self.outputs
            .iter()
            .map(|&o| {
                let (s, l) = vals[o]
                    .take()
                    .ok_or_else(|| Error::invalid(OP, format!("result step {o} is missing")))?;
                if l.contiguous_range() == Some(0..n) && backend.storage_len(&s) == n {
                    Ok(s)
                } else {
                    backend.copy(&s, &l)
                }
            })
            .collect()
    }
}

/// Binding strength of an expression's top operator, for parenthesising.
fn precedence(op: &FusedOp) -> u8 {
    match op {
        FusedOp::Compare(..) => 1,
        FusedOp::Binary(BinaryOp::Add | BinaryOp::Sub, ..) => 2,
        FusedOp::Binary(BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem, ..) => 3,
        FusedOp::Unary(UnaryOp::Neg, _) => 4,
        _ => 5,
    }
}

fn infix(op: &FusedOp) -> Option<&'static str> {
    Some(match op {
        FusedOp::Binary(BinaryOp::Add, ..) => "+",
        FusedOp::Binary(BinaryOp::Sub, ..) => "-",
        FusedOp::Binary(BinaryOp::Mul, ..) => "*",
        FusedOp::Binary(BinaryOp::Div, ..) => "/",
        FusedOp::Binary(BinaryOp::Rem, ..) => "%",
        FusedOp::Compare(CompareOp::Eq, ..) => "==",
        FusedOp::Compare(CompareOp::Ne, ..) => "!=",
        FusedOp::Compare(CompareOp::Lt, ..) => "<",
        FusedOp::Compare(CompareOp::Le, ..) => "<=",
        FusedOp::Compare(CompareOp::Gt, ..) => ">",
        FusedOp::Compare(CompareOp::Ge, ..) => ">=",
        _ => return None,
    })
}

impl FusedKernel {
    /// Writes step `i` as an expression; `named[j]` is set for steps printed as a `tj` binding.
    fn write_expr(&self, f: &mut fmt::Formatter<'_>, i: usize, named: &[bool]) -> fmt::Result {
        let op = &self.steps[i].op;
        // An operand, parenthesised when it binds less tightly than `min`.
        let arg = |f: &mut fmt::Formatter<'_>, a: usize, min: u8| -> fmt::Result {
            if named[a] {
                return write!(f, "t{a}");
            }
            if precedence(&self.steps[a].op) < min {
                write!(f, "(")?;
                self.write_expr(f, a, named)?;
                write!(f, ")")
            } else {
                self.write_expr(f, a, named)
            }
        };
        let p = precedence(op);
        if let (Some(sym), FusedOp::Binary(_, a, b) | FusedOp::Compare(_, a, b)) = (infix(op), op) {
            arg(f, *a, p)?;
            write!(f, " {sym} ")?;
            return arg(f, *b, p + 1);
        }
        match *op {
            FusedOp::Input(k) => write!(f, "in{k}"),
            FusedOp::Constant(c) => write!(f, "{c}"),
            FusedOp::Unary(UnaryOp::Neg, a) => {
                write!(f, "-")?;
                arg(f, a, p + 1)
            }
            FusedOp::Unary(u, a) => {
                write!(f, "{}(", u.name())?;
                arg(f, a, 0)?;
                write!(f, ")")
            }
            FusedOp::Cast(to, a) => {
                write!(f, "{}(", to.name())?;
                arg(f, a, 0)?;
                write!(f, ")")
            }
            FusedOp::Binary(b, x, y) => {
                write!(f, "{}(", b.name())?;
                arg(f, x, 0)?;
                write!(f, ", ")?;
                arg(f, y, 0)?;
                write!(f, ")")
            }
            FusedOp::Select(c, t, e) => {
                write!(f, "where(")?;
                arg(f, c, 0)?;
                write!(f, ", ")?;
                arg(f, t, 0)?;
                write!(f, ", ")?;
                arg(f, e, 0)?;
                write!(f, ")")
            }
            FusedOp::Compare(..) => unreachable!("comparisons are infix"),
        }
    }
}

impl fmt::Display for FusedKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Readers of each step, a result counting as one.
        let mut readers = vec![0usize; self.steps.len()];
        for step in &self.steps {
            for a in step.op.operands() {
                readers[a] += 1;
            }
        }
        for &o in &self.outputs {
            readers[o] += 1;
        }
        // Shared intermediates get a binding, and so do deep ones, which keeps printing shallow; a
        // single result is printed as the expression itself.
        let last = match self.outputs[..] {
            [o] => o,
            _ => usize::MAX,
        };
        let mut named = vec![false; self.steps.len()];
        let mut depth = vec![0usize; self.steps.len()];
        for (i, step) in self.steps.iter().enumerate() {
            let leaf = matches!(step.op, FusedOp::Input(_) | FusedOp::Constant(_));
            depth[i] = 1 + step
                .op
                .operands()
                .map(|a| if named[a] { 0 } else { depth[a] })
                .max()
                .unwrap_or(0);
            if !leaf && i != last && (readers[i] > 1 || depth[i] >= 32) {
                write!(f, "t{i} = ")?;
                self.write_expr(f, i, &named)?;
                write!(f, "; ")?;
                named[i] = true;
            }
        }
        if last != usize::MAX {
            return self.write_expr(f, last, &named);
        }
        write!(f, "(")?;
        for (j, &o) in self.outputs.iter().enumerate() {
            if j > 0 {
                write!(f, ", ")?;
            }
            if named[o] {
                write!(f, "t{o}")?;
            } else {
                self.write_expr(f, o, &named)?;
            }
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FusedOp::*;

    fn s(op: FusedOp, dtype: DType) -> FusedStep {
        FusedStep::new(op, dtype)
    }

    #[test]
    fn validation_checks_references_and_dtypes() {
        let f = DType::F32;
        let ok = |steps: Vec<FusedStep>| FusedKernel::new(steps).is_ok();
        assert!(!ok(vec![]));
        assert!(!ok(vec![s(Input(0), f), s(Binary(BinaryOp::Add, 0, 1), f)]));
        assert!(!ok(vec![s(Input(1), f)]), "input 0 is never read");
        assert!(!ok(vec![s(Input(0), f), s(Input(0), DType::F64)]));
        assert!(!ok(vec![
            s(Input(0), f),
            s(Compare(CompareOp::Lt, 0, 0), f)
        ]));
        assert!(!ok(vec![s(Input(0), f), s(Select(0, 0, 0), f)]));
        assert!(!ok(vec![
            s(Input(0), DType::I64),
            s(Unary(UnaryOp::Exp, 0), DType::I64)
        ]));
        assert!(!ok(vec![
            s(Input(0), DType::Bool),
            s(Binary(BinaryOp::Sub, 0, 0), DType::Bool)
        ]));
        let k = FusedKernel::new(vec![
            s(Input(0), DType::C64),
            s(Unary(UnaryOp::Abs, 0), f),
            s(Input(1), DType::Bool),
            s(Cast(f, 2), f),
            s(Binary(BinaryOp::Maximum, 1, 3), f),
        ])
        .unwrap();
        assert_eq!(k.input_dtypes(), [DType::C64, DType::Bool]);
        assert_eq!(k.output_dtype(), f);
        assert_eq!(k.to_string(), "maximum(abs(in0), float32(in1))");
        assert!(
            k.check_call(&[(DType::C64, &[2]), (DType::Bool, &[2])], &[2])
                .is_ok()
        );
        assert!(
            k.check_call(&[(DType::C64, &[2]), (DType::Bool, &[3])], &[2])
                .is_err()
        );
        assert!(k.check_call(&[(DType::C64, &[2])], &[2]).is_err());
    }

    #[test]
    fn display_parenthesises_and_names_shared_steps() {
        let f = DType::F64;
        let k = FusedKernel::new(vec![
            s(Input(0), f),
            s(Input(1), f),
            s(Binary(BinaryOp::Sub, 0, 1), f),
            s(Binary(BinaryOp::Mul, 2, 2), f),
            s(Binary(BinaryOp::Sub, 0, 2), f),
            s(Unary(UnaryOp::Neg, 4), f),
            s(Binary(BinaryOp::Div, 3, 5), f),
            s(Compare(CompareOp::Ge, 6, 0), DType::Bool),
            s(Select(7, 6, 1), f),
        ])
        .unwrap();
        assert_eq!(
            k.to_string(),
            "t2 = in0 - in1; t6 = t2 * t2 / -(in0 - t2); where(t6 >= in0, t6, in1)"
        );
        // Long chains print as bindings every few dozen steps instead of one deep expression.
        let mut steps = vec![s(Input(0), f)];
        for i in 0..100 {
            steps.push(s(Unary(UnaryOp::Sin, i), f));
        }
        let text = FusedKernel::new(steps).unwrap().to_string();
        assert_eq!(text.matches("; ").count(), 3, "{text}");
    }
}
