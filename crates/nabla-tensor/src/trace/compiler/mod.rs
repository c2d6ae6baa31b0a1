//! [`GraphCompiler`]: optimisation passes over a traced [`Program`].
//!
//! Every pass maps a valid program to a valid program computing the same outputs (same values, shapes,
//! dtypes and output views) from the same inputs, in the same placeholder order.

mod cse;
mod dce;
mod fold;
mod fusion;
mod reassociate;
mod reuse;
mod simplify;

use super::backend::TracingBackend;
use super::graph::{GraphBuilder, Node, Program, TraceOperand, ValueId, ValueInfo};
use crate::Tensor;
use nabla_core::{Backend, Error, Result};
use std::fmt;
use std::time::{Duration, Instant};

/// One optimisation pass of a [`GraphCompiler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    /// Algebraic simplification: `x * 1`, `x / 1`, exact additive identities and `-(-x)` become `x`,
    /// and readers of a copy read its source through the composed view when that view is expressible
    /// with strides.
    Simplify,
    /// Evaluates nodes whose inputs are all constants at compile time, on the backend given to
    /// [`GraphCompiler::fold_on`] (skipped without one).
    ConstantFolding,
    /// Merges nodes computing the same op on the same operands.
    CommonSubexpressions,
    /// Merges matrix products that share a factor across a sum (`a @ x + b @ x` becomes
    /// `(a + b) @ x`). It changes the order of additions, so it is off unless asked for
    /// ([`GraphCompiler::with`]); see [`Pass::DEFAULT`].
    Reassociate,
    /// Drops nodes no output depends on (placeholders are always kept).
    DeadCode,
    /// Fuses chains of elementwise nodes into one node.
    Fusion,
    /// Plans which buffers can be reused once their last reader has run.
    BufferReuse,
}

impl Pass {
    /// Every pass, in pipeline order.
    pub const ALL: [Pass; 7] = [
        Pass::Simplify,
        Pass::ConstantFolding,
        Pass::CommonSubexpressions,
        Pass::Reassociate,
        Pass::DeadCode,
        Pass::Fusion,
        Pass::BufferReuse,
    ];

    /// The passes a new [`GraphCompiler`] runs: every pass that keeps the program's results bit for
    /// bit, that is all but [`Pass::Reassociate`].
    pub const DEFAULT: [Pass; 6] = [
        Pass::Simplify,
        Pass::ConstantFolding,
        Pass::CommonSubexpressions,
        Pass::DeadCode,
        Pass::Fusion,
        Pass::BufferReuse,
    ];

    /// Short name of the pass (`simplify`, `constant-folding`, `cse`, `reassociate`, `dce`, `fusion`,
    /// `buffer-reuse`).
    pub fn name(self) -> &'static str {
        match self {
            Pass::Simplify => "simplify",
            Pass::ConstantFolding => "constant-folding",
            Pass::CommonSubexpressions => "cse",
            Pass::Reassociate => "reassociate",
            Pass::DeadCode => "dce",
            Pass::Fusion => "fusion",
            Pass::BufferReuse => "buffer-reuse",
        }
    }
}

impl fmt::Display for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one pass did during [`GraphCompiler::compile_with_report`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassReport {
    /// The pass.
    pub pass: Pass,
    /// Number of nodes before the pass.
    pub nodes_before: usize,
    /// Number of nodes after the pass.
    pub nodes_after: usize,
    /// Wall-clock time the pass took.
    pub time: Duration,
}

/// Per-pass node counts and timings of one compilation; printable, one line per pass run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompileReport {
    /// The passes in the order they ran (simplification, folding and CSE may run several times).
    pub passes: Vec<PassReport>,
    /// Total wall-clock compile time, snapshotting the program included.
    pub total: Duration,
}

impl CompileReport {
    /// Node count of the program before the first pass (`None` when no pass ran).
    pub fn nodes_before(&self) -> Option<usize> {
        self.passes.first().map(|p| p.nodes_before)
    }

    /// Node count of the compiled program (`None` when no pass ran).
    pub fn nodes_after(&self) -> Option<usize> {
        self.passes.last().map(|p| p.nodes_after)
    }
}

impl fmt::Display for CompileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.passes {
            writeln!(
                f,
                "{:<16} {:>6} -> {:<6} nodes {:>10.3?}",
                p.pass.name(),
                p.nodes_before,
                p.nodes_after,
                p.time
            )?;
        }
        writeln!(f, "total {:.3?}", self.total)
    }
}

/// Something a [`GraphCompiler`] can compile: a [`Program`], or traced tensors whose program is
/// snapshotted with [`TracingBackend::program`] (every tensor must come from the same tracing backend).
pub trait IntoProgram {
    /// The program computing `self`.
    fn into_program(self) -> Result<Program>;
}

impl IntoProgram for Program {
    fn into_program(self) -> Result<Program> {
        Ok(self)
    }
}

impl IntoProgram for &Program {
    fn into_program(self) -> Result<Program> {
        Ok(self.clone())
    }
}

impl IntoProgram for &Tensor<TracingBackend> {
    fn into_program(self) -> Result<Program> {
        self.backend().program(&[self])
    }
}

impl IntoProgram for &[&Tensor<TracingBackend>] {
    fn into_program(self) -> Result<Program> {
        let first = self.first().ok_or_else(|| {
            Error::invalid("GraphCompiler::compile", "no output tensor was given")
        })?;
        first.backend().program(self)
    }
}

impl IntoProgram for &[Tensor<TracingBackend>] {
    fn into_program(self) -> Result<Program> {
        self.iter().collect::<Vec<_>>().as_slice().into_program()
    }
}

impl IntoProgram for &Vec<Tensor<TracingBackend>> {
    fn into_program(self) -> Result<Program> {
        self.as_slice().into_program()
    }
}

impl<const N: usize> IntoProgram for &[&Tensor<TracingBackend>; N] {
    fn into_program(self) -> Result<Program> {
        self.as_slice().into_program()
    }
}

impl<const N: usize> IntoProgram for &[Tensor<TracingBackend>; N] {
    fn into_program(self) -> Result<Program> {
        self.as_slice().into_program()
    }
}

/// Rounds of simplification, folding and CSE at most.
const MAX_ROUNDS: usize = 4;

/// Optimises traced [`Program`]s with a fixed pipeline of [`Pass`]es: simplification, constant
/// folding and common-subexpression elimination (repeated, at most four rounds, while folding or CSE
/// changed something and simplification then still finds work), dead-code elimination, elementwise
/// fusion and buffer-reuse planning. Each pass can be switched off ([`GraphCompiler::without`]) or the
/// pipeline restricted ([`GraphCompiler::only`]); [`GraphCompiler::compile_with_report`] tells what each
/// pass did. [`GraphCompiler::with`] adds the opt-in [`Pass::Reassociate`] (after CSE), which merges
/// matrix products sharing a factor across a sum.
///
/// Compiled programs compute the same outputs as the original (bit for bit on the CPU backend: the
/// default passes never reassociate arithmetic; with [`Pass::Reassociate`], up to rounding), keep the
/// placeholders in order and the outputs' views.
///
/// Constant folding evaluates constant subgraphs on a backend the caller gives: compile with
/// [`GraphCompiler::for_backend`] (or add [`GraphCompiler::fold_on`]) naming the backend that will run
/// the program, so folded values carry that backend's arithmetic. [`GraphCompiler::new`] has no
/// evaluator and leaves constants to run time.
///
/// ```
/// use nabla_tensor::{GraphCompiler, GraphExecutor, Pass, Tensor, TracingBackend};
/// use nabla_cpu::CpuBackend;
/// use nabla_core::DType;
/// let tb = TracingBackend::new();
/// let x = tb.placeholder([2, 3], DType::F64)?;
/// let two = (Tensor::ones([2, 3], DType::F64, &tb)? * 2.0)?; // constant: folded
/// let y = ((x.exp()? * &two)? + x.exp()?)?.neg()?.neg()?; // exp computed once, neg(neg(.)) dropped
/// let cpu = CpuBackend::new();
/// let (program, report) = GraphCompiler::for_backend(&cpu)
///     .without(Pass::Fusion)
///     .compile_with_report(&y)?;
/// println!("{report}{program}");
/// assert_eq!(program.nodes().len(), 5); // input, exp, full 2, mul, add
/// let xs = [Tensor::from_vec(vec![0.0f64, 1.0, 2.0, 3.0, 4.0, 5.0], [2, 3], &cpu)?];
/// let got = GraphExecutor::new(&cpu).run(&program, &xs)?;
/// let want = ((xs[0].exp()? * 2.0)? + xs[0].exp()?)?;
/// assert_eq!(got[0].to_vec::<f64>()?, want.to_vec::<f64>()?);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone)]
pub struct GraphCompiler {
    enabled: Vec<Pass>,
    evaluator: Option<fold::Evaluator>,
}

impl fmt::Debug for GraphCompiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphCompiler")
            .field("enabled", &self.enabled)
            .field(
                "folds_on",
                &self.evaluator.as_ref().map(|e| e.device.clone()),
            )
            .finish()
    }
}

impl Default for GraphCompiler {
    fn default() -> Self {
        GraphCompiler {
            enabled: Pass::DEFAULT.to_vec(),
            evaluator: None,
        }
    }
}

impl GraphCompiler {
    /// A compiler running every pass but constant folding, which needs a backend to evaluate on
    /// ([`GraphCompiler::fold_on`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// A compiler running every pass, folding constants on `backend` (the backend the program will
    /// run on, so folded values are what it would compute).
    pub fn for_backend<B: Backend>(backend: &B) -> Self {
        Self::new().fold_on(backend)
    }

    /// The same compiler, evaluating constant subgraphs on `backend` in its folding pass.
    pub fn fold_on<B: Backend>(mut self, backend: &B) -> Self {
        self.evaluator = Some(fold::Evaluator::on(backend));
        self
    }

    /// The same compiler with `pass` added to its pipeline (in pipeline order), for the opt-in
    /// [`Pass::Reassociate`] above all.
    ///
    /// ```
    /// use nabla_tensor::{GraphCompiler, Pass, Tensor, TracingBackend};
    /// use nabla_core::DType;
    /// let tb = TracingBackend::new();
    /// let (a, b, x) = (tb.placeholder([4, 4], DType::F64)?, tb.placeholder([4, 4], DType::F64)?,
    ///                  tb.placeholder([4, 4], DType::F64)?);
    /// let y = (a.matmul(&x)? + b.matmul(&x)?)?;
    /// let count = |p: &nabla_tensor::Program| {
    ///     p.nodes().iter().filter(|n| format!("{:?}", n.op).contains("Matmul")).count()
    /// };
    /// assert_eq!(count(&GraphCompiler::new().compile(&y)?), 2);
    /// // (a + b) @ x: one product.
    /// assert_eq!(count(&GraphCompiler::new().with(Pass::Reassociate).compile(&y)?), 1);
    /// # Ok::<(), nabla_core::Error>(())
    /// ```
    pub fn with(mut self, pass: Pass) -> Self {
        if !self.enabled.contains(&pass) {
            self.enabled.push(pass);
        }
        self
    }

    /// The same compiler without `pass`.
    pub fn without(mut self, pass: Pass) -> Self {
        self.enabled.retain(|&p| p != pass);
        self
    }

    /// The same compiler running only `passes` (still in pipeline order, whatever their order here).
    pub fn only(mut self, passes: &[Pass]) -> Self {
        self.enabled.retain(|p| passes.contains(p));
        self
    }

    /// `true` when `pass` is part of the pipeline (constant folding only with an evaluator).
    pub fn runs(&self, pass: Pass) -> bool {
        self.enabled.contains(&pass) && (pass != Pass::ConstantFolding || self.evaluator.is_some())
    }

    /// Compiles `what` (a [`Program`] or traced output tensors; see [`IntoProgram`]).
    pub fn compile(&self, what: impl IntoProgram) -> Result<Program> {
        Ok(self.compile_with_report(what)?.0)
    }

    /// Compiles `what` and reports the node counts and time of every pass.
    pub fn compile_with_report(&self, what: impl IntoProgram) -> Result<(Program, CompileReport)> {
        let start = Instant::now();
        let mut program = what.into_program()?;
        let mut report = CompileReport::default();
        let mut step = |pass: Pass, f: &dyn Fn(&Program) -> Result<Program>, p: &mut Program| {
            let t = Instant::now();
            let next = f(p)?;
            let changed = next.nodes != p.nodes;
            report.passes.push(PassReport {
                pass,
                nodes_before: p.nodes.len(),
                nodes_after: next.nodes.len(),
                time: t.elapsed(),
            });
            *p = next;
            Ok::<bool, Error>(changed)
        };
        // Simplification, folding and CSE feed each other (folding exposes `x * 1`, simplification makes
        // operands equal): run them again while folding or CSE changed something and simplification
        // still finds work, a bounded number of times.
        for round in 0..MAX_ROUNDS {
            if self.runs(Pass::Simplify) {
                let changed = step(Pass::Simplify, &simplify::simplify, &mut program)?;
                if round > 0 && !changed {
                    break;
                }
            }
            let mut changed = false;
            if let Some(evaluator) = self
                .evaluator
                .as_ref()
                .filter(|_| self.runs(Pass::ConstantFolding))
            {
                let f = |p: &Program| fold::fold_constants(p, evaluator);
                changed |= step(Pass::ConstantFolding, &f, &mut program)?;
            }
            if self.runs(Pass::CommonSubexpressions) {
                let f = cse::eliminate_common_subexpressions;
                changed |= step(Pass::CommonSubexpressions, &f, &mut program)?;
            }
            if !changed || !self.runs(Pass::Simplify) {
                break;
            }
        }
        if self.runs(Pass::Reassociate) {
            step(
                Pass::Reassociate,
                &reassociate::merge_products,
                &mut program,
            )?;
        }
        if self.runs(Pass::DeadCode) {
            step(Pass::DeadCode, &dce::eliminate_dead_code, &mut program)?;
        }
        if self.runs(Pass::Fusion) {
            step(Pass::Fusion, &fusion::fuse_elementwise, &mut program)?;
        }
        if self.runs(Pass::BufferReuse) {
            step(Pass::BufferReuse, &reuse::plan_buffer_reuse, &mut program)?;
        }
        report.total = start.elapsed();
        Ok((program, report))
    }
}

/// Assembles a program from `nodes` numbered over `values` (the old numbering): keeps the values the
/// nodes produce, renumbers them densely in order of production, remaps every operand, the inputs and
/// the outputs, and recomputes `last_use`. Fails if an operand reads a value no earlier node produced.
pub(super) fn rebuild(
    values: &[ValueInfo],
    nodes: Vec<Node>,
    inputs: &[ValueId],
    outputs: Vec<TraceOperand>,
) -> Result<Program> {
    let mut renumber = vec![usize::MAX; values.len()];
    let mut new_values = Vec::new();
    let corrupt = |v: ValueId| {
        Error::invalid(
            "GraphCompiler",
            format!("a pass left %{v} read before it is produced (compiler bug)"),
        )
    };
    let map = |o: TraceOperand, renumber: &[usize]| match renumber.get(o.value) {
        Some(&v) if v != usize::MAX => Ok(TraceOperand {
            value: v,
            layout: o.layout,
        }),
        _ => Err(corrupt(o.value)),
    };
    let mut new_nodes = Vec::with_capacity(nodes.len());
    for node in nodes {
        let ins = node
            .inputs
            .into_iter()
            .map(|o| map(o, &renumber))
            .collect::<Result<Vec<_>>>()?;
        let outs = node
            .outputs
            .iter()
            .map(|&v| {
                renumber[v] = new_values.len();
                new_values.push(values[v].clone());
                renumber[v]
            })
            .collect();
        new_nodes.push(Node {
            op: node.op,
            inputs: ins,
            outputs: outs,
        });
    }
    let outputs = outputs
        .into_iter()
        .map(|o| map(o, &renumber))
        .collect::<Result<Vec<_>>>()?;
    let inputs = inputs
        .iter()
        .map(|&v| match renumber[v] {
            usize::MAX => Err(corrupt(v)),
            r => Ok(r),
        })
        .collect::<Result<Vec<_>>>()?;
    let mut last_use = vec![None; new_values.len()];
    for (i, node) in new_nodes.iter().enumerate() {
        for o in &node.inputs {
            last_use[o.value] = Some(i);
        }
    }
    for o in &outputs {
        last_use[o.value] = Some(usize::MAX);
    }
    // Start from an empty snapshot so that program fields other passes add get their fresh defaults.
    let mut program = GraphBuilder::default().snapshot(&[]);
    program.values = new_values;
    program.nodes = new_nodes;
    program.inputs = inputs;
    program.outputs = outputs;
    program.last_use = last_use;
    Ok(program)
}
