//! Traced programs agree with eager execution for every differentiable primitive: each case is one
//! function body instantiated for `CpuBackend` and for `TracingBackend`; its value, the gradients of
//! `sum(f(xs) * w)` and the forward-mode `jvp_n` are computed eagerly and by a traced program (compiled
//! with every pass, and with none), run twice on different inputs and compared in f64. Mismatches of
//! a group are collected and reported together.

// The seeded-input helpers of the reverse-rule tests; not every one is used here.
#[allow(dead_code)]
use crate::support;

use nabla_core::{Backend, DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{AdContext, GraphCompiler, GraphExecutor, Tensor, TracingBackend};
use support::{
    Dom, MATMUL_SHAPES, STD, T, binary_cases, conv_cases, idx, out_hw, rand, randn, unary_cases,
    vals,
};

/// Relative tolerance (against the largest magnitude of the eager tensor) of traced vs eager.
const REL: f64 = 1e-12;

/// One case's function on one backend.
type Fun<B> = Box<dyn Fn(&[Tensor<B>]) -> Result<Tensor<B>>>;

/// An input of a case.
#[derive(Clone, Debug)]
enum In {
    /// A differentiable f64 input on a domain.
    F(Vec<usize>, Dom),
    /// An i64 index input with values in `0..bound`.
    I(Vec<usize>, i64),
    /// A bool input.
    B(Vec<usize>),
}

impl In {
    fn shape(&self) -> &[usize] {
        match self {
            In::F(s, _) | In::I(s, _) | In::B(s) => s,
        }
    }

    fn dtype(&self) -> DType {
        match self {
            In::F(..) => DType::F64,
            In::I(..) => DType::I64,
            In::B(_) => DType::Bool,
        }
    }

    fn is_float(&self) -> bool {
        matches!(self, In::F(..))
    }

    /// Seeded random values of this input.
    fn sample(&self, seed: u64) -> T {
        match self {
            In::F(s, dom) => rand(s, seed, *dom),
            In::I(s, bound) => {
                let v: Vec<i64> = vals(&rand(s, seed, Dom::In(0.0, *bound as f64)))
                    .iter()
                    .map(|u| (u.floor() as i64).min(bound - 1))
                    .collect();
                idx(&v, s)
            }
            In::B(s) => randn(s, seed).gt(0.0).unwrap(),
        }
    }
}

fn fl(shape: &[usize], dom: Dom) -> In {
    In::F(shape.to_vec(), dom)
}

fn fs(shape: &[usize]) -> In {
    fl(shape, STD)
}

fn ix(shape: &[usize], bound: i64) -> In {
    In::I(shape.to_vec(), bound)
}

/// A named case: its inputs and its function on both backends (one body, two instantiations).
struct Case {
    name: String,
    ins: Vec<In>,
    cpu: Fun<CpuBackend>,
    tr: Fun<TracingBackend>,
}

/// `case!(cases, name, [inputs], |x| body)` pushes a case whose body is compiled for both backends.
macro_rules! case {
    ($v:ident, $name:expr, [$($i:expr),* $(,)?], |$x:ident| $body:expr) => {
        $v.push(Case {
            name: $name.to_string(),
            ins: vec![$($i),*],
            cpu: Box::new(move |$x: &[Tensor<CpuBackend>]| $body),
            tr: Box::new(move |$x: &[Tensor<TracingBackend>]| $body),
        })
    };
}

/// `[f(xs), grads of sum(f(xs) * w) w.r.t. the float inputs.., jvp_n(f(xs), float inputs, vs)]`.
fn derivs<B: Backend>(
    f: &Fun<B>,
    xs: &[Tensor<B>],
    ins: &[In],
    w: &Tensor<B>,
    vs: &[Tensor<B>],
) -> Result<Vec<Tensor<B>>> {
    let ad = AdContext::new();
    let y = f(xs)?;
    let float: Vec<&Tensor<B>> = xs
        .iter()
        .zip(ins)
        .filter(|(_, i)| i.is_float())
        .map(|(x, _)| x)
        .collect();
    let loss = y.mul(w)?.sum_all()?;
    let mut out = vec![y.clone()];
    out.extend(ad.grads(&loss, &float)?);
    out.push(ad.jvp_n(&y, &float, &vs.iter().collect::<Vec<_>>())?);
    Ok(out)
}

/// The eager results on CPU inputs (the float ones made variables).
fn eager(c: &Case, xs: &[T], w: &T, vs: &[T]) -> Result<Vec<T>> {
    let vars = xs
        .iter()
        .zip(&c.ins)
        .enumerate()
        .map(|(i, (x, inp))| match inp.is_float() {
            true => Tensor::var(format!("x{i}"), x.clone()),
            false => Ok(x.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    derivs(&c.cpu, &vars, &c.ins, w, vs)
}

/// The same results traced: placeholders for the inputs, then one per tangent; `w` a constant.
fn traced(c: &Case, w: &T) -> Result<Vec<Tensor<TracingBackend>>> {
    let tb = TracingBackend::new();
    let ps = c
        .ins
        .iter()
        .map(|i| tb.placeholder(i.shape().to_vec(), i.dtype()))
        .collect::<Result<Vec<_>>>()?;
    let vs = c
        .ins
        .iter()
        .filter(|i| i.is_float())
        .map(|i| tb.placeholder(i.shape().to_vec(), DType::F64))
        .collect::<Result<Vec<_>>>()?;
    let wt = Tensor::from_vec(vals(w), w.shape().to_vec(), &tb)?;
    derivs(&c.tr, &ps, &c.ins, &wt, &vs)
}

/// Why `got` differs from `want` by more than `rel` of the largest magnitude of `want` (`rel = 0`:
/// bit for bit, NaNs matching NaNs), or `None`.
fn mismatch(got: &T, want: &T, rel: f64) -> Option<String> {
    if got.shape() != want.shape() || got.dtype() != want.dtype() {
        return Some(format!(
            "{:?} {} vs eager {:?} {}",
            got.shape(),
            got.dtype(),
            want.shape(),
            want.dtype()
        ));
    }
    let (g, w) = (vals(got), vals(want));
    let scale = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut worst: Option<(f64, usize)> = None;
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let same = a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let d = (a - b).abs();
        if !same
            && (d.is_nan() || d > rel * scale)
            && worst.is_none_or(|(m, _)| d.is_nan() || d > m)
        {
            worst = Some((d, i));
        }
    }
    worst.map(|(d, i)| {
        format!(
            "max |diff| {d:e} at element {i}: {} vs {} (scale {scale:e})",
            g[i], w[i]
        )
    })
}

/// Counts of comparisons: all of them, and those not bit for bit equal (but within tolerance).
#[derive(Default)]
struct Stats {
    compared: usize,
    inexact: Vec<String>,
}

/// Runs every check of one case, appending failures.
fn check_case(n: usize, c: &Case, fails: &mut Vec<String>, stats: &mut Stats) {
    let name = &c.name;
    let seed = 7919 * (n as u64 + 1);
    let sets: Vec<Vec<T>> = (0..2u64)
        .map(|r| {
            let s = seed + 1000 * r;
            c.ins.iter().zip(s..).map(|(i, s)| i.sample(s)).collect()
        })
        .collect();
    let tans: Vec<Vec<T>> = (0..2u64)
        .map(|r| {
            let floats = c.ins.iter().filter(|i| i.is_float());
            floats
                .zip(seed + 500 + 1000 * r..)
                .map(|(i, s)| randn(i.shape(), s))
                .collect()
        })
        .collect();
    let y0 = match (c.cpu)(&sets[0]) {
        Ok(y) => y,
        Err(e) => return fails.push(format!("{name}: eager f failed: {e}")),
    };
    let w = randn(y0.shape(), seed + 77);
    let mut want = Vec::new();
    for r in 0..2 {
        match eager(c, &sets[r], &w, &tans[r]) {
            Ok(o) => want.push(o),
            Err(e) => return fails.push(format!("{name}: eager derivatives failed: {e}")),
        }
    }
    let outs = match traced(c, &w) {
        Ok(o) => o,
        Err(e) => return fails.push(format!("{name}: tracing failed: {e}")),
    };
    let mut labels = vec!["value".to_string()];
    labels.extend(
        (0..c.ins.len())
            .filter(|&i| c.ins[i].is_float())
            .map(|i| format!("grad x{i}")),
    );
    labels.push("jvp".into());
    let cpu = CpuBackend::new();
    let mut runs: Vec<Vec<Vec<T>>> = Vec::new();
    for (pipeline, compiler) in [
        ("all passes", GraphCompiler::new()),
        ("no passes", GraphCompiler::new().only(&[])),
    ] {
        let program = match compiler.compile(&outs) {
            Ok(p) => p,
            Err(e) => return fails.push(format!("{name}: compile ({pipeline}) failed: {e}")),
        };
        let exec = GraphExecutor::new(&cpu);
        let mut per_set = Vec::new();
        for r in 0..2 {
            let inputs: Vec<T> = sets[r].iter().chain(&tans[r]).cloned().collect();
            let got = match exec.run(&program, &inputs) {
                Ok(g) => g,
                Err(e) => {
                    return fails.push(format!("{name}: run {r} ({pipeline}) failed: {e}"));
                }
            };
            if got.len() != labels.len() {
                return fails.push(format!(
                    "{name}: {} outputs instead of {}",
                    got.len(),
                    labels.len()
                ));
            }
            for ((g, e), label) in got.iter().zip(&want[r]).zip(&labels) {
                stats.compared += 1;
                let at = format!("{name}: {label}, inputs {r}, {pipeline}");
                if let Some(m) = mismatch(g, e, REL) {
                    fails.push(format!("{at}: traced vs eager: {m}"));
                } else if let Some(m) = mismatch(g, e, 0.0) {
                    stats.inexact.push(format!("{at}: {m}"));
                }
            }
            per_set.push(got);
        }
        runs.push(per_set);
    }
    // Each run computes fresh results: where eager differs on the second inputs (not for `imag`, zero
    // everywhere), so does the program.
    let same = |a: &[T], b: &[T]| a.iter().zip(b).all(|(a, b)| mismatch(a, b, 0.0).is_none());
    if same(&runs[0][0], &runs[0][1]) && !same(&want[0], &want[1]) {
        fails.push(format!(
            "{name}: the second run repeats the first run's results"
        ));
    }
    // The passes change nothing: bit for bit the same results with and without them.
    for (r, (all, none)) in runs[0].iter().zip(&runs[1]).enumerate() {
        for ((a, b), label) in all.iter().zip(none).zip(&labels) {
            if let Some(m) = mismatch(a, b, 0.0) {
                fails.push(format!(
                    "{name}: {label}, inputs {r}: all passes vs no passes: {m}"
                ));
            }
        }
    }
}

/// Checks every case, prints a summary and panics with the full list of failures.
fn run_all(group: &str, cases: Vec<Case>) {
    let (mut fails, mut stats) = (Vec::new(), Stats::default());
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "{group}: case names are unique");
    for (n, c) in cases.iter().enumerate() {
        check_case(n, c, &mut fails, &mut stats);
    }
    println!(
        "{group}: {} cases, {} comparisons, {} within tolerance but not bit for bit, {} failures",
        cases.len(),
        stats.compared,
        stats.inexact.len(),
        fails.len()
    );
    for m in &stats.inexact {
        println!("  inexact: {m}");
    }
    assert!(
        fails.is_empty(),
        "{group}: {} failures:\n{}",
        fails.len(),
        fails.join("\n")
    );
}

fn elementwise_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (op, dom) in unary_cases() {
        case!(v, op.name(), [fl(&[2, 3], dom)], |x| x[0].unary(op));
    }
    let shapes: [(&[usize], &[usize]); 3] =
        [(&[2, 3], &[2, 3]), (&[2, 1, 3], &[4, 3]), (&[3], &[2, 1])];
    for (op, da, db) in binary_cases() {
        for (sa, sb) in shapes {
            let name = format!("{} {sa:?} with {sb:?}", op.name());
            case!(v, name, [fl(sa, da), fl(sb, db)], |x| x[0]
                .binary(op, &x[1]));
        }
    }
    let cond = In::B(vec![2, 3]);
    case!(v, "where bool input", [cond, fs(&[2, 3]), fs(&[3])], |x| {
        x[0].where_(&x[1], &x[2])
    });
    case!(v, "where computed cond", [fs(&[2, 3]), fs(&[2, 1])], |x| {
        x[0].gt(&x[1])?.where_(&x[0], 0.5)
    });
    case!(v, "clamp", [fs(&[2, 3])], |x| x[0].clamp(-0.5, 0.5));
    case!(v, "cast f64-f32-f64", [fs(&[2, 3])], |x| {
        x[0].cast(DType::F32)?.exp()?.cast(DType::F64)
    });
    case!(v, "contiguous copy", [fs(&[2, 3])], |x| x[0]
        .t()?
        .contiguous());
    v
}

fn reduction_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let configs: [(&[isize], bool); 3] = [(&[1], false), (&[0, 2], true), (&[], false)];
    let s: &[usize] = &[2, 3, 4];
    for (ax, keep) in configs {
        let tag = format!("{ax:?} keepdims {keep}");
        case!(v, format!("sum {tag}"), [fs(s)], |x| x[0].sum(ax, keep));
        case!(v, format!("mean {tag}"), [fs(s)], |x| x[0].mean(ax, keep));
        case!(v, format!("max {tag}"), [fs(s)], |x| x[0].max(ax, keep));
        case!(v, format!("min {tag}"), [fs(s)], |x| x[0].min(ax, keep));
        let away = fl(s, Dom::Away(0.5, 1.5));
        case!(v, format!("prod {tag}"), [away], |x| x[0].prod(ax, keep));
        case!(v, format!("logsumexp {tag}"), [fs(s)], |x| x[0]
            .logsumexp(ax, keep));
    }
    case!(v, "sum_all", [fs(&[3, 4])], |x| x[0].sum_all());
    case!(v, "mean_all", [fs(&[3, 4])], |x| x[0].mean_all());
    case!(v, "max_all", [fs(&[3, 4])], |x| x[0].max_all());
    case!(v, "min_all", [fs(&[3, 4])], |x| x[0].min_all());
    case!(v, "cumsum 0", [fs(&[3, 4])], |x| x[0].cumsum(0));
    case!(v, "cumsum -1", [fs(&[3, 4])], |x| x[0].cumsum(-1));
    case!(v, "variance", [fs(&[3, 4])], |x| x[0].variance(
        &[1],
        false,
        1
    ));
    case!(v, "std_dev", [fs(&[3, 4])], |x| x[0].std_dev(&[0], true, 0));
    v
}

fn linalg_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (sa, sb) in MATMUL_SHAPES {
        let name = format!("matmul {sa:?} @ {sb:?}");
        case!(v, name, [fs(sa), fs(sb)], |x| x[0].matmul(&x[1]));
    }
    case!(
        v,
        "matmul of a transposed view",
        [fs(&[2, 3]), fs(&[4, 3])],
        |x| { x[0].matmul(&x[1].t()?) }
    );
    for (prm, xs, ws) in conv_cases() {
        let (oh, ow) = out_hw(&prm, &xs, &ws);
        let gs = [xs[0], ws[0], oh, ow];
        let tag = format!("{xs:?} {ws:?} {prm:?}");
        case!(v, format!("conv2d {tag}"), [fs(&xs), fs(&ws)], |x| {
            x[0].conv2d(&x[1], &prm)
        });
        case!(
            v,
            format!("conv2d_input_grad {tag}"),
            [fs(&gs), fs(&ws)],
            |x| { x[0].conv2d_input_grad(&x[1], (xs[2], xs[3]), &prm) }
        );
        case!(
            v,
            format!("conv2d_weight_grad {tag}"),
            [fs(&xs), fs(&gs)],
            |x| { x[0].conv2d_weight_grad(&x[1], (ws[2], ws[3]), &prm) }
        );
    }
    v
}

fn movement_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let s: &[usize] = &[2, 3, 4];
    case!(v, "reshape", [fs(s)], |x| x[0].reshape([4usize, 6]));
    case!(v, "reshape of a permuted view", [fs(s)], |x| {
        x[0].permute(&[2, 0, 1])?.reshape([4usize, 6])
    });
    case!(v, "permute", [fs(s)], |x| x[0].permute(&[2, 0, 1]));
    case!(v, "transpose", [fs(s)], |x| x[0].transpose(0, 2));
    case!(v, "t", [fs(&[3, 4])], |x| x[0].t());
    case!(v, "unsqueeze", [fs(&[3, 4])], |x| x[0].unsqueeze(1));
    case!(v, "squeeze", [fs(&[3, 1, 4])], |x| x[0].squeeze(1));
    case!(v, "broadcast_to", [fs(&[3, 1])], |x| x[0]
        .broadcast_to([2usize, 3, 4]));
    case!(v, "slice step 2", [fs(s)], |x| x[0].slice(
        1,
        Some(0),
        None,
        2
    ));
    case!(v, "slice step -1", [fs(s)], |x| x[0]
        .slice(0, None, None, -1));
    case!(v, "slice negative bounds", [fs(s)], |x| {
        x[0].slice(2, Some(-3), Some(-1), 1)
    });
    case!(v, "narrow", [fs(s)], |x| x[0].narrow(2, 1, 2));
    case!(v, "select_index", [fs(s)], |x| x[0].select_index(1, -1));
    case!(v, "flip", [fs(s)], |x| x[0].flip(&[0, 2]));
    case!(v, "pad", [fs(s)], |x| x[0]
        .pad(&[(1, 0), (0, 2), (2, 1)], 0.5));
    case!(v, "cat", [fs(&[2, 1, 4]), fs(s), fs(&[2, 2, 4])], |x| {
        Tensor::cat(&[&x[0], &x[1], &x[2]], 1)
    });
    case!(v, "stack axis 0", [fs(&[2, 3]), fs(&[2, 3])], |x| {
        Tensor::stack(&[&x[0], &x[1]], 0)
    });
    case!(v, "stack axis 2", [fs(&[2, 3]), fs(&[2, 3])], |x| {
        Tensor::stack(&[&x[0], &x[1]], 2)
    });
    case!(v, "chunk", [fs(s)], |x| x[0].chunk(2, 2)?.remove(1).exp());
    v
}

fn indexing_cases() -> Vec<Case> {
    let mut v = Vec::new();
    case!(
        v,
        "gather index input",
        [fs(&[3, 4]), ix(&[3, 5], 4)],
        |x| { x[0].gather(1, &x[1]) }
    );
    case!(v, "gather constant index", [fs(&[3, 4])], |x| {
        let i = Tensor::from_vec(vec![2i64, 0, 1, 1, 0, 0, 2, 1], [2, 4], x[0].backend())?;
        x[0].gather(0, &i)
    });
    case!(
        v,
        "index_select index input",
        [fs(&[3, 4]), ix(&[5], 3)],
        |x| { x[0].index_select(0, &x[1]) }
    );
    case!(v, "index_select constant index", [fs(&[3, 4])], |x| {
        let i = Tensor::from_vec(vec![1i64, 3, 3], [3], x[0].backend())?;
        x[0].index_select(1, &i)
    });
    case!(
        v,
        "scatter_add index input",
        [fs(&[3, 4]), ix(&[2, 4], 3), fs(&[2, 4])],
        |x| { x[0].scatter_add(0, &x[1], &x[2]) }
    );
    case!(
        v,
        "scatter_add constant index",
        [fs(&[3, 4]), fs(&[3, 2])],
        |x| {
            let i = Tensor::from_vec(vec![3i64, 3, 0, 1, 2, 0], [3, 2], x[0].backend())?;
            x[0].scatter_add(1, &i, &x[1])
        }
    );
    case!(
        v,
        "index_add index input",
        [fs(&[3, 4]), ix(&[5], 3), fs(&[5, 4])],
        |x| { x[0].index_add(0, &x[1], &x[2]) }
    );
    case!(v, "sort values", [fs(&[3, 4])], |x| Ok(x[0]
        .sort(1, true)?
        .0));
    case!(v, "topk values", [fs(&[3, 4])], |x| Ok(x[0]
        .topk(2, 0, false)?
        .0));
    v
}

fn composite_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for axis in [-1, 0] {
        case!(v, format!("softmax {axis}"), [fs(&[3, 4])], |x| x[0]
            .softmax(axis));
        let name = format!("log_softmax {axis}");
        case!(v, name, [fs(&[3, 4])], |x| x[0].log_softmax(axis));
    }
    case!(v, "relu", [fl(&[3, 4], Dom::Away(0.2, 2.0))], |x| x[0]
        .relu());
    case!(v, "gelu", [fs(&[3, 4])], |x| x[0].gelu());
    case!(v, "silu", [fs(&[3, 4])], |x| x[0].silu());
    case!(v, "softplus", [fs(&[3, 4])], |x| x[0].softplus());
    case!(v, "layer_norm", [fs(&[3, 4])], |x| x[0]
        .layer_norm(&[-1], 1e-5));
    v
}

#[test]
fn elementwise_ops_traced_agree_with_eager() {
    run_all("elementwise", elementwise_cases());
}

#[test]
fn reductions_traced_agree_with_eager() {
    run_all("reductions", reduction_cases());
}

#[test]
fn matmul_and_conv_traced_agree_with_eager() {
    run_all("linalg", linalg_cases());
}

#[test]
fn movement_ops_traced_agree_with_eager() {
    run_all("movement", movement_cases());
}

#[test]
fn indexing_ops_traced_agree_with_eager() {
    run_all("indexing", indexing_cases());
}

#[test]
fn softmax_and_composites_traced_agree_with_eager() {
    run_all("composites", composite_cases());
}

#[test]
fn the_harness_reports_disagreements() {
    // A traced body off by 1e-9 relative fails everywhere; one off by 1e-15 is only inexact.
    for (eps, fails_expected) in [(1e-9, true), (1e-15, false)] {
        let c = Case {
            name: format!("exp off by {eps:e}"),
            ins: vec![fs(&[2, 3])],
            cpu: Box::new(|x: &[T]| x[0].exp()),
            tr: Box::new(move |x: &[Tensor<TracingBackend>]| x[0].exp()? * (1.0 + eps)),
        };
        let (mut fails, mut stats) = (Vec::new(), Stats::default());
        check_case(0, &c, &mut fails, &mut stats);
        assert_eq!(stats.compared, 12, "3 outputs, 2 input sets, 2 pipelines");
        if fails_expected {
            for label in ["value", "grad x0", "jvp"] {
                assert!(
                    fails.iter().any(|f| f.contains(label)),
                    "{label}: {fails:?}"
                );
            }
        } else {
            assert!(fails.is_empty() && !stats.inexact.is_empty(), "{fails:?}");
        }
    }
}
