//! `GraphCompiler` passes, one at a time and as a pipeline: each test has a graph where the pass must
//! fire (node counts or printed IR) or must not, and checks that the original and compiled programs give
//! the same outputs on random inputs, with fresh results on a second run.

use nabla_core::{Backend, DType, Generator, HostData, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GraphCompiler, GraphExecutor, Pass, Program, Tensor, TracingBackend};

use crate::compiler_support;

use compiler_support::{check_equivalent, inputs};

/// A compiler running `passes` (folding on the CPU, where the programs run).
fn only(passes: &[Pass]) -> GraphCompiler {
    GraphCompiler::for_backend(&CpuBackend::new()).only(passes)
}

fn ops(program: &Program) -> Vec<String> {
    program.nodes().iter().map(|n| n.op.to_string()).collect()
}

type Traced = Tensor<TracingBackend>;

fn simplify_dce() -> GraphCompiler {
    only(&[Pass::Simplify, Pass::DeadCode])
}

#[test]
fn simplify_removes_exact_identities() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3], DType::F64)?;
    let neg_zero = Tensor::full([2, 3], -0.0, DType::F64, &tb)?;
    let ones = Tensor::ones([2, 3], DType::F64, &tb)?;
    let y = x.mul(1.0)?.div(&ones)?.sub(0.0)?;
    let y = (y + &neg_zero)?.exp()?;
    let z = (&neg_zero + ones.mul(&x)?)?;
    let program = tb.program(&[&y, &z])?;
    let compiled = simplify_dce().compile(&program)?;
    assert_eq!(
        compiled.to_string(),
        "%0: f64[2,3] = input 0\n%1: f64[2,3] = exp %0\ninputs: %0\noutputs: %1, %0\n"
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn simplify_fires_for_integer_zero_of_either_sign() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([5], DType::I64)?;
    let zero = Tensor::zeros([5], DType::I64, &tb)?;
    let y = ((&zero + &x)? - &zero)?.add(0)?.div(1)?.abs()?;
    let program = tb.program(&[&y])?;
    let compiled = simplify_dce().compile(&program)?;
    assert_eq!(ops(&compiled), ["input 0", "abs"]);
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn simplify_keeps_inexact_and_non_identity_ops() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([4], DType::F64)?;
    let zeros = Tensor::zeros([4], DType::F64, &tb)?;
    let almost_ones = Tensor::from_vec(vec![1.0, 1.0, 0.5, 1.0], [4], &tb)?;
    let outs = [
        x.mul(2.0)?,                                  // not an identity
        (&x + &zeros)?,                               // -0.0 + 0.0 is +0.0: not exact
        (&zeros + &x)?,                               // idem
        x.sub(-0.0)?,                                 // x - (-0.0) = x + 0.0: idem
        (&x * &almost_ones)?,                         // not all ones
        Tensor::ones([4], DType::F64, &tb)?.div(&x)?, // 1 / x
    ];
    let program = tb.program(&outs.iter().collect::<Vec<_>>())?;
    let compiled = simplify_dce().compile(&program)?;
    assert_eq!(compiled.to_string(), program.to_string());
    check_equivalent(&program, &compiled, 0.0);
    // Signed zeros survive: -0.0 + 0.0 is +0.0 in both programs.
    let cpu = CpuBackend::new();
    let input = [Tensor::from_vec(vec![-0.0f64, 0.0, -1.0, 1.0], [4], &cpu)?];
    let got = GraphExecutor::new(&cpu).run(&compiled, &input)?;
    assert!(got[1].to_vec::<f64>()?[0].is_sign_positive());
    Ok(())
}

#[test]
fn simplify_cancels_double_negation_and_composes_copied_views() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3], DType::F64)?;
    let v = tb.placeholder([3], DType::F64)?;
    let a = x.neg()?.neg()?.exp()?;
    let b = x.t()?.contiguous()?.t()?.sin()?; // double transpose
    let c = v.broadcast_to([2, 3])?.contiguous()?; // broadcast of a broadcast
    let c = c.broadcast_to([4, 2, 3])?.cos()?;
    let d = x.narrow(1, 1, 2)?.contiguous()?.t()?.tanh()?; // slice, then transpose
    let program = tb.program(&[&a, &b, &c, &d])?;
    assert_eq!(ops(&program).iter().filter(|o| *o == "copy").count(), 3);
    let compiled = simplify_dce().compile(&program)?;
    let text = compiled.to_string();
    assert_eq!(
        ops(&compiled),
        ["input 0", "input 1", "exp", "sin", "cos", "tanh"]
    );
    assert!(
        text.contains("exp %0\n") && text.contains("sin %0\n"),
        "{text}"
    );
    assert!(text.contains("cos %1[view 4x2x3 strides(0,0,1)]"), "{text}");
    assert!(
        text.contains("tanh %0[view 2x2 strides(1,3) offset 1]"),
        "{text}"
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn simplify_keeps_copies_whose_view_does_not_compose() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3], DType::F64)?;
    let flat = x.t()?.reshape([6])?.exp()?; // a flat view of a transposed copy
    let materialised = x.t()?.contiguous()?; // an output that must stay contiguous
    let program = tb.program(&[&flat, &materialised])?;
    let compiled = simplify_dce().compile(&program)?;
    assert_eq!(compiled.to_string(), program.to_string());
    check_equivalent(&program, &compiled, 0.0);
    let cpu = CpuBackend::new();
    let out = GraphExecutor::new(&cpu).run(&compiled, &inputs(&program, &cpu, 3))?;
    assert!(out[1].is_contiguous());
    Ok(())
}

#[test]
fn dce_removes_what_simplification_left_dead_and_keeps_placeholders() -> Result<()> {
    let tb = TracingBackend::new();
    let _unused = tb.placeholder([7], DType::F32)?;
    let x = tb.placeholder([3, 2], DType::F32)?;
    let y = x.t()?.contiguous()?.t()?.mul(1.0)?.exp()?;
    let program = tb.program(&[&y])?;
    let simplified = only(&[Pass::Simplify]).compile(&program)?;
    assert_eq!(
        simplified.nodes().len(),
        program.nodes().len(),
        "dead nodes stay"
    );
    let compiled = simplify_dce().compile(&program)?;
    assert_eq!(
        compiled.to_string(),
        "%0: f32[7] = input 0\n%1: f32[3,2] = input 1\n%2: f32[3,2] = exp %1\n\
         inputs: %0, %1\noutputs: %2\n"
    );
    check_equivalent(&program, &simplified, 0.0);
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn dce_keeps_a_live_program_unchanged() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([3, 4], DType::F64)?;
    let (values, positions) = x.sort(1, true)?;
    let y = (values.exp()? + positions.cast(DType::F64)?)?;
    let program = tb.program(&[&y.t()?])?;
    let compiled = only(&[Pass::DeadCode]).compile(&program)?;
    assert_eq!(compiled.to_string(), program.to_string());
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn cse_merges_identical_nodes_constants_and_draws() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3], DType::F64)?;
    let c = || Tensor::from_vec(vec![1.0, -0.0, f64::NAN], [3], &tb);
    let draw = || Tensor::rand([2, 3], DType::F64, &mut Generator::new(9), &tb);
    let y = ((x.exp()? + x.exp()?)? * x.mul(2.0)?.mul(2.0)?)?;
    let y = ((y + c()?)?.maximum(c()?)? * draw()?)?.minimum(draw()?)?;
    let program = tb.program(&[&y])?;
    let compiled = only(&[Pass::CommonSubexpressions]).compile(&program)?;
    // One exp, one `full 2`, one constant and one draw instead of two each.
    assert_eq!(
        program.nodes().len() - compiled.nodes().len(),
        4,
        "{compiled}"
    );
    let count = |name: &str| {
        ops(&compiled)
            .iter()
            .filter(|o| o.starts_with(name))
            .count()
    };
    assert_eq!(
        (
            count("exp"),
            count("full"),
            count("constant"),
            count("random")
        ),
        (1, 1, 1, 1)
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn cse_keeps_nodes_that_differ() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([3, 3], DType::F64)?;
    let a = x.exp()?;
    let b = x.t()?.exp()?; // same op and value, another layout
    let signed = [0.0, -0.0].map(|z| Tensor::from_vec(vec![z; 3], [3], &tb));
    let ones = [
        Tensor::ones([3], DType::F64, &tb)?,
        Tensor::ones([3, 3], DType::F64, &tb)?,
    ];
    let draws = [1, 2].map(|s| Tensor::rand([3], DType::F64, &mut Generator::new(s), &tb));
    let y = (((a + b)? + &ones[0])? * &ones[1])?;
    let y = ((y + signed[0].clone()?)? - signed[1].clone()?)?;
    let y = ((y + draws[0].clone()?)? * draws[1].clone()?)?;
    let program = tb.program(&[&y])?;
    let compiled = only(&[Pass::CommonSubexpressions]).compile(&program)?;
    assert_eq!(compiled.to_string(), program.to_string());
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn cse_reads_a_product_of_transposes_as_the_transpose_of_a_product() -> Result<()> {
    let tb = TracingBackend::new();
    let (x, v) = (
        tb.placeholder([5, 7], DType::F64)?,
        tb.placeholder([6, 7], DType::F64)?,
    );
    // `x vᵀ` and `v xᵀ` (the Hessian-vector product of sum(tanh(X Xᵀ)) has both), read both ways.
    let y = (x.matmul(&v.t()?)?.exp()? + v.matmul(&x.t()?)?.t()?.sin()?)?;
    let (p, q) = (
        tb.placeholder([3, 4, 5], DType::F32)?,
        tb.placeholder([3, 6, 5], DType::F32)?,
    );
    let pq = p.matmul(&q.transpose(1, 2)?)?;
    let qp = q.matmul(&p.transpose(1, 2)?)?;
    let z = pq.add(&qp.transpose(1, 2)?)?;
    // Not twins: a broadcast batch, and the same operands in the same order transposed only once.
    let (r, s) = (
        tb.placeholder([4, 5], DType::F32)?,
        tb.placeholder([2, 6, 5], DType::F32)?,
    );
    let w = r
        .matmul(&s.transpose(1, 2)?)?
        .sum_all()?
        .add(&s.matmul(&r.t()?)?.sum_all()?)?;
    let u = x.matmul(&x.t()?)?.add(&x.matmul(&x.t()?)?.t()?)?;
    let program = tb.program(&[&y, &z, &w, &u])?;
    let compiled = GraphCompiler::for_backend(&CpuBackend::new()).compile(&program)?;
    let products = |p: &Program| ops(p).iter().filter(|o| o.starts_with("matmul")).count();
    assert_eq!(
        (products(&program), products(&compiled)),
        (8, 5),
        "{compiled}"
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

/// The CPU kernel sums each element of a matrix product in one order of the contracted axis, so
/// `a bᵀ` and `(b aᵀ)ᵀ` agree bit for bit, which the transposed-product CSE relies on: shapes from
/// one element to blocked and threaded products, with remainders on every side.
#[test]
fn a_product_and_the_transpose_of_its_swapped_product_agree_bit_for_bit() -> Result<()> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(3);
    let shapes = [
        (1, 1, 1),
        (7, 13, 5),
        (64, 300, 17),
        (129, 65, 257),
        (1, 1000, 3),
        (33, 1, 44),
        (1000, 64, 8),
        (300, 300, 300),
    ];
    for (m, k, n) in shapes {
        for dtype in [DType::F32, DType::F64] {
            let a = Tensor::randn([m, k], dtype, &mut rng, &cpu)?;
            let b = Tensor::randn([n, k], dtype, &mut rng, &cpu)?;
            let direct = a.matmul(&b.t()?)?.cast(DType::F64)?.to_vec::<f64>()?;
            let swapped = b.matmul(&a.t()?)?.t()?.contiguous()?.cast(DType::F64)?;
            let swapped = swapped.to_vec::<f64>()?;
            let differ = direct
                .iter()
                .zip(&swapped)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count();
            assert_eq!(differ, 0, "{m}x{k}x{n} {dtype:?}");
        }
    }
    Ok(())
}

#[test]
fn fold_evaluates_constant_subgraphs() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3], DType::F64)?;
    let c = Tensor::from_vec(vec![0.5, 1.0, 2.0, -1.0, 0.0, 3.0], [2, 3], &tb)?;
    let c = c.exp()?.sum(&[0], true)?; // [1, 3]
    let six = Tensor::full([2, 3], 2.0, DType::F64, &tb)?.mul(3.0)?;
    let (top, _) = six.topk(2, 0, true)?; // a two-output node on constants
    let y = ((&x * &c)? + &six)?.matmul(&top.t()?)?;
    let program = tb.program(&[&y])?;
    let compiled = only(&[Pass::ConstantFolding, Pass::DeadCode]).compile(&program)?;
    let want = [
        "input 0",
        "constant f64x3",
        "full 6",
        "full 6",
        "mul",
        "add",
        "matmul",
    ];
    assert_eq!(ops(&compiled), want, "{compiled}");
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn folding_evaluates_on_the_backend_the_caller_names() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([4], DType::F32)?;
    let c = Tensor::arange(0.0, 4.0, 1.0, DType::F32, &tb)?.exp()?;
    let program = tb.program(&[&(&x + &c)?])?;
    let tracked = nabla_core::MemoryTracked::new(CpuBackend::new());
    let compiled = GraphCompiler::for_backend(&tracked)
        .only(&[Pass::ConstantFolding, Pass::DeadCode])
        .compile(&program)?;
    assert!(
        tracked.stats().allocations > 0,
        "the fold ran on the given backend"
    );
    assert!(
        ops(&compiled).contains(&"constant f32x4".to_string()),
        "{compiled}"
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn fold_leaves_placeholder_dependent_large_and_lone_constants() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([300, 300], DType::F32)?;
    let big = Tensor::full([300, 300], 0.5, DType::F32, &tb)?.exp()?; // 90000 > 65536 elements
    let y = ((x.exp()? * &big)? + Tensor::ones([300, 300], DType::F32, &tb)?)?;
    let program = tb.program(&[&y])?;
    let compiled = only(&[Pass::ConstantFolding, Pass::DeadCode]).compile(&program)?;
    assert_eq!(compiled.to_string(), program.to_string());
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn fold_leaves_a_failing_evaluation_for_run_time() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([3], DType::F64)?;
    let table = Tensor::from_vec(vec![1.0, 2.0, 3.0], [3], &tb)?;
    let index = Tensor::from_vec(vec![0i64, 7, 1], [3], &tb)?; // 7 is out of range
    let y = (table.gather(0, &index)? + &x)?;
    let program = tb.program(&[&y])?;
    let compiled = GraphCompiler::for_backend(&CpuBackend::new()).compile(&program)?;
    assert!(
        ops(&compiled).iter().any(|o| o == "gather axis=0"),
        "{compiled}"
    );
    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);
    assert!(exec.run(&program, &inputs(&program, &cpu, 1)).is_err());
    assert!(exec.run(&compiled, &inputs(&program, &cpu, 1)).is_err());
    Ok(())
}

#[test]
fn pipeline_simplifies_what_folding_and_cse_expose() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3], DType::F64)?;
    let one = Tensor::full([2, 3], 0.5, DType::F64, &tb)?.mul(2.0)?; // folds to `full 1`
    let y = (x.mul(&one)?.exp()? * x.exp()?)?.neg()?; // x * 1 only visible after folding
    let program = tb.program(&[&y])?;
    let compiler = GraphCompiler::for_backend(&CpuBackend::new())
        .without(Pass::Fusion)
        .without(Pass::BufferReuse);
    let (compiled, report) = compiler.compile_with_report(&program)?;
    assert_eq!(
        ops(&compiled),
        ["input 0", "exp", "mul", "neg"],
        "{report}{compiled}"
    );
    let simplified = report
        .passes
        .iter()
        .filter(|p| p.pass == Pass::Simplify)
        .count();
    assert!(simplified >= 2, "simplification runs again after folding");
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

fn mlp_loss<B: Backend>(p: &[Tensor<B>]) -> Result<Tensor<B>> {
    let (x, w1, b1, w2) = (&p[0], &p[1], &p[2], &p[3]);
    let hidden = (x.matmul(w1)? + b1)?.tanh()?;
    let logp = hidden.matmul(w2)?.log_softmax(-1)?;
    (logp.mul(1.0)? + logp.exp()?.t()?.contiguous()?.t()?)?
        .neg()?
        .neg()?
        .mean_all()
}

#[test]
fn pipeline_compiles_gradients_and_reports_every_pass() -> Result<()> {
    let tb = TracingBackend::new();
    let shapes: [&[usize]; 4] = [&[6, 4], &[4, 5], &[5], &[5, 3]];
    let ps = shapes
        .iter()
        .map(|s| tb.placeholder(s.to_vec(), DType::F64))
        .collect::<Result<Vec<_>>>()?;
    let mut outs = nabla_tensor::grad_n(mlp_loss)(&ps)?;
    outs.push(mlp_loss(&ps)?);
    let program = tb.program(&outs.iter().collect::<Vec<_>>())?;
    let cpu = CpuBackend::new();
    let (compiled, report) = GraphCompiler::for_backend(&cpu).compile_with_report(&outs)?;
    println!("{report}");
    assert_eq!(report.nodes_before(), Some(program.nodes().len()));
    assert_eq!(report.nodes_after(), Some(compiled.nodes().len()));
    assert!(compiled.nodes().len() < program.nodes().len());
    let text = report.to_string();
    for pass in Pass::DEFAULT {
        assert!(text.contains(&format!("{pass} ")), "{text}");
    }
    assert!(!text.contains("reassociate"), "opt-in only: {text}");
    check_equivalent(&program, &compiled, 1e-12);
    let without = GraphCompiler::for_backend(&cpu).without(Pass::ConstantFolding);
    assert!(!without.runs(Pass::ConstantFolding) && without.runs(Pass::Simplify));
    let (_, report) = without.compile_with_report(&program)?;
    assert!(!report.to_string().contains("constant-folding"));
    // Without a backend to evaluate on, nothing is folded.
    let unfolded = GraphCompiler::new();
    assert!(!unfolded.runs(Pass::ConstantFolding) && unfolded.runs(Pass::CommonSubexpressions));
    let (_, report) = unfolded.compile_with_report(&program)?;
    assert!(!report.to_string().contains("constant-folding"));
    Ok(())
}

#[test]
fn compile_accepts_programs_tensors_slices_and_vectors() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 2], DType::F32)?;
    let outs = vec![x.exp()?, x.t()?];
    let compiler = simplify_dce();
    let want = compiler
        .compile(tb.program(&[&outs[0], &outs[1]])?)?
        .to_string();
    assert_eq!(compiler.compile(&outs)?.to_string(), want);
    assert_eq!(compiler.compile(outs.as_slice())?.to_string(), want);
    assert_eq!(compiler.compile(&[&outs[0], &outs[1]])?.to_string(), want);
    let refs: Vec<&Traced> = outs.iter().collect();
    assert_eq!(compiler.compile(refs.as_slice())?.to_string(), want);
    assert_eq!(compiler.compile(&outs[0])?.nodes().len(), 2);
    let empty: &[&Traced] = &[];
    assert!(compiler.compile(empty).is_err());
    let other = Tensor::from_host(HostData::F32(vec![1.0; 4]), [2, 2], &TracingBackend::new())?;
    assert!(
        compiler.compile(&[&outs[0], &other]).is_err(),
        "tensors of two traces"
    );
    Ok(())
}
