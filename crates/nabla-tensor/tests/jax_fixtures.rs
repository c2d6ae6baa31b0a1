//! First and second derivatives checked against JAX on committed reference values.
//!
//! `tests/fixtures/jax_autodiff.json` was written by `scripts/gen_jax_fixtures.py` (the script documents
//! the format; rerun it to regenerate). Each expression `g` is evaluated by JAX in float64 on fixed random
//! inputs; the fixture holds `g`'s output, the scalar `f = sum(g * weight)`, the gradient of `f` with
//! respect to every input and, for most expressions, a Hessian-vector product of `f`.
//!
//! Here every expression name maps to a closure computing `g` with nabla's tensor ops. The test computes
//! the value and gradients with [`value_and_grad_n`] and the Hessian-vector product with nested
//! [`grad_n`] (the gradient of `<grad f, v>`), and compares everything to JAX within a relative 1e-9.
//! The relative error of an entry is measured against `max(|expected|, 1e-3 * max |expected array|)`, so
//! that entries which cancel to nearly zero are judged at the scale of their array (summation order
//! differs between XLA and nabla). A fixture name without a closure here, or a closure without a fixture
//! entry, fails the test.

use nabla_core::{Conv2dParams, DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{AdContext, Tensor, grad_n, value_and_grad_n};
use serde_json::Value;
use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

type T = Tensor<CpuBackend>;
/// `g(inputs, aux)`: inputs are the differentiated float64 tensors, aux the integer constants.
type Expr = fn(&[T], &[T]) -> Result<T>;

/// Relative tolerance against JAX.
const REL: f64 = 1e-9;

/// Parts of expressions where nabla's derivative rule is known to disagree with JAX: the expression
/// name, the part (`"grad"` or `"hvp"`, every other part is still checked) and the disagreement. These
/// are rule issues for `src/rules/`. They are reported but do not fail the test; one that starts
/// matching fails it, so that the list stays honest.
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

fn e(name: &'static str, f: Expr) -> (&'static str, Expr) {
    (name, f)
}

fn conv(
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    groups: usize,
) -> Conv2dParams {
    Conv2dParams {
        stride,
        padding,
        dilation,
        groups,
        precision: Default::default(),
    }
}

/// The nabla counterpart of every fixture expression (see `scripts/gen_jax_fixtures.py`).
fn expressions() -> Vec<(&'static str, Expr)> {
    vec![
        // Unary math.
        e("exp", |x, _| x[0].exp()),
        e("log", |x, _| x[0].log()),
        e("log1p", |x, _| x[0].log1p()),
        e("expm1", |x, _| x[0].expm1()),
        e("sqrt", |x, _| x[0].sqrt()),
        e("rsqrt", |x, _| x[0].rsqrt()),
        e("sin", |x, _| x[0].sin()),
        e("cos", |x, _| x[0].cos()),
        e("tan", |x, _| x[0].tan()),
        e("asin", |x, _| x[0].asin()),
        e("acos", |x, _| x[0].acos()),
        e("atan", |x, _| x[0].atan()),
        e("sinh", |x, _| x[0].sinh()),
        e("cosh", |x, _| x[0].cosh()),
        e("tanh", |x, _| x[0].tanh()),
        e("sigmoid", |x, _| x[0].sigmoid()),
        e("erf", |x, _| x[0].erf()),
        e("abs", |x, _| x[0].abs()),
        e("square", |x, _| x[0].square()),
        e("reciprocal", |x, _| x[0].recip()),
        e("neg", |x, _| x[0].neg()),
        e("abs_at_zero", |x, _| x[0].abs()),
        // Binary math with broadcasting.
        e("add_bcast", |x, _| x[0].add(&x[1])?.sin()),
        e("sub_bcast", |x, _| x[0].sub(&x[1])?.square()),
        e("mul_bcast", |x, _| x[0].mul(&x[1])),
        e("div_bcast", |x, _| x[0].div(&x[1])),
        e("pow_bcast", |x, _| x[0].pow(&x[1])),
        e("pow_scalar_exponent", |x, _| x[0].pow(2.5)),
        e("pow_at_zero", |x, _| x[0].pow(&x[1])),
        e("maximum_ties", |x, _| x[0].maximum(&x[1])),
        e("minimum_ties", |x, _| x[0].minimum(&x[1])),
        e("maximum_bcast", |x, _| x[0].maximum(&x[1])?.mul(&x[0])),
        e("minimum_bcast", |x, _| x[0].minimum(&x[1])?.mul(&x[1])),
        e("clamp_ties", |x, _| x[0].clamp(0.0, 1.0)),
        e("atan2_bcast", |x, _| x[0].atan2(&x[1])),
        e("remainder", |x, _| x[0].rem(&x[1])),
        e("where", |x, _| {
            x[0].gt(0.2)?.where_(x[0].mul(&x[1])?, x[1].sin()?)
        }),
        // Reductions.
        e("sum_axis", |x, _| x[0].sum(&[1], false)?.sin()),
        e("sum_keepdims", |x, _| x[0].mul(x[0].sum(&[0, 2], true)?)),
        e("prod_axis", |x, _| x[0].prod(&[-1], false)),
        e("prod_with_zeros", |x, _| x[0].prod(&[1], false)),
        e("max_axis_ties", |x, _| {
            x[0].max(&[1], false)?.mul(x[0].sum(&[1], false)?)
        }),
        e("max_all_ties", |x, _| x[0].max_all()?.mul(&x[0])),
        e("min_axis", |x, _| x[0].min(&[0], false)),
        e("min_keepdims_ties", |x, _| x[0].sub(x[0].min(&[1], true)?)),
        e("mean_axes", |x, _| x[0].mean(&[0, 2], false)?.square()),
        e("cumsum_axis1", |x, _| x[0].cumsum(1)?.sin()),
        e("cumsum_axis0", |x, _| x[0].cumsum(0)?.mul(&x[0])),
        // Matrix products.
        e("matmul_2d", |x, _| x[0].matmul(&x[1])),
        e("matmul_batch_bcast", |x, _| x[0].matmul(&x[1])),
        e("matmul_vec_mat", |x, _| x[0].matmul(&x[1])),
        e("matmul_mat_vec", |x, _| x[0].matmul(&x[1])),
        e("matmul_vec_vec", |x, _| x[0].matmul(&x[1])),
        e("matmul_batch_vec", |x, _| x[0].matmul(&x[1])),
        e("matmul_vec_batch", |x, _| x[0].matmul(&x[1])),
        // Movement.
        e("permute", |x, _| x[0].permute(&[2, 0, 1])?.sin()),
        e("transpose_matmul", |x, _| {
            x[0].transpose(0, 1)?.matmul(&x[0])
        }),
        e("reshape", |x, _| {
            x[0].reshape([3, 4])?.mul(x[0].reshape([4, 3])?.t()?)
        }),
        e("slice_negative_steps", |x, _| {
            x[0].slice(0, None, None, -1)?
                .slice(1, Some(1), None, 2)?
                .square()
        }),
        e("slice_range_negative", |x, _| {
            x[0].slice(0, Some(4), Some(0), -2)?
                .slice(1, Some(-1), Some(0), -1)?
                .exp()
        }),
        e("flip", |x, _| x[0].flip(&[0, 2])?.mul(&x[0])),
        e("pad_zero", |x, _| x[0].pad(&[(1, 0), (2, 1)], 0.0)?.sin()),
        e("pad_value", |x, _| {
            x[0].pad(&[(0, 2), (1, 1)], 0.5)?.square()
        }),
        e("concatenate", |x, _| {
            Tensor::cat(&[&x[0], &x[1].square()?], 1)
        }),
        e("concatenate_axis0", |x, _| {
            Tensor::cat(&[&x[0], &x[1], &x[2]], 0)?.tanh()
        }),
        // Indexing.
        e("gather", |x, a| x[0].gather(1, &a[0])?.square()),
        e("gather_axis0", |x, a| x[0].gather(0, &a[0])?.sin()),
        e("index_select", |x, a| x[0].index_select(0, &a[0])?.exp()),
        e("index_select_axis1", |x, a| {
            x[0].index_select(1, &a[0])?.mul(2.0)
        }),
        e("scatter_add", |x, a| {
            x[0].scatter_add(0, &a[0], &x[1])?.square()
        }),
        e("scatter_add_axis1", |x, a| {
            x[0].scatter_add(1, &a[0], &x[1].square()?)?.sin()
        }),
        e("sort", |x, _| x[0].sort(-1, false)?.0.mul(&x[0])),
        e("sort_axis0_descending", |x, _| x[0].sort(0, true)?.0.sin()),
        e("sort_ties", |x, _| Ok(x[0].sort(1, false)?.0)),
        e("topk", |x, _| x[0].topk(2, -1, true)?.0.square()),
        e("topk_ties", |x, _| Ok(x[0].topk(3, -1, true)?.0)),
        // Convolution.
        e("conv2d", |x, _| {
            x[0].conv2d(&x[1], &Conv2dParams::default())
        }),
        e("conv2d_stride_pad_dilation", |x, _| {
            x[0].conv2d(&x[1], &conv((2, 1), (1, 2), (2, 1), 1))
        }),
        e("conv2d_groups", |x, _| {
            x[0].conv2d(&x[1], &conv((2, 2), (1, 1), (1, 1), 2))?.tanh()
        }),
        // Casts.
        e("cast_f64_f32_f64", |x, _| {
            x[0].sin()?.cast(DType::F32)?.cast(DType::F64)
        }),
        // Composites.
        e("softmax", |x, _| x[0].softmax(-1)),
        e("softmax_axis0", |x, _| x[0].softmax(0)),
        e("log_softmax", |x, _| x[0].log_softmax(-1)),
        e("log_softmax_axis0", |x, _| x[0].log_softmax(0)),
        e("logsumexp_axes", |x, _| x[0].logsumexp(&[0, 2], false)),
        e("logsumexp_keepdims", |x, _| {
            x[0].logsumexp(&[1], true)?.mul(&x[0])
        }),
        e("logsumexp_all", |x, _| x[0].logsumexp(&[], false)),
        e("relu", |x, _| x[0].relu()),
        e("leaky_relu", |x, _| x[0].leaky_relu(0.1)),
        e("gelu", |x, _| x[0].gelu()),
        e("gelu_tanh", |x, _| x[0].gelu_tanh()),
        e("silu", |x, _| x[0].silu()),
        e("softplus", |x, _| x[0].softplus()),
        e("elu", |x, _| x[0].elu(1.5)),
        e("layer_norm", |x, _| x[0].layer_norm(&[-1], 1e-5)),
        e("layer_norm_2axes", |x, _| x[0].layer_norm(&[-2, -1], 1e-3)),
        e("variance", |x, _| x[0].variance(&[1], false, 0)),
        e("variance_ddof1_all", |x, _| x[0].variance(&[], false, 1)),
        e("variance_keepdims", |x, _| {
            x[0].mul(x[0].variance(&[0], true, 1)?)
        }),
        e("std_dev", |x, _| x[0].std_dev(&[0], false, 1)),
        e("std_dev_all", |x, _| x[0].std_dev(&[], false, 0)),
        e("normalize_l2", |x, _| x[0].normalize(2.0, -1, 1e-12)),
        e("normalize_l1_axis0", |x, _| x[0].normalize(1.0, 0, 1e-12)),
        e("normalize_l3", |x, _| x[0].normalize(3.0, 1, 1e-12)),
        e("normalize_linf", |x, _| {
            x[0].normalize(f64::INFINITY, 1, 1e-12)
        }),
        e("normalize_tiny_norm", |x, _| x[0].normalize(2.0, 1, 1e-12)),
        // Small models.
        e("mlp", |x, _| {
            x[0].matmul(&x[1])?.add(&x[2])?.tanh()?.matmul(&x[3])
        }),
        e("cross_entropy", |x, a| {
            let picked = x[0].log_softmax(-1)?.gather(1, &a[0].unsqueeze(1)?)?;
            picked.squeeze(1)?.neg()
        }),
        e("attention", |x, _| {
            let scores = x[0].matmul(&x[1].transpose(-1, -2)?)?.div(2.0)?;
            scores.softmax(-1)?.matmul(&x[2])
        }),
        e("gelu_layer_norm_chain", |x, _| {
            let h = x[0].matmul(&x[1])?.layer_norm(&[-1], 1e-5)?.gelu()?;
            h.square()?.sum(&[0], false)
        }),
    ]
}

// ------------------------------------------------------------------------------------------------------
// Fixture decoding
// ------------------------------------------------------------------------------------------------------

struct Array {
    shape: Vec<usize>,
    data: Vec<f64>,
}

struct Hvp {
    v: Vec<Vec<f64>>,
    out: Vec<Vec<f64>>,
}

struct Case {
    name: String,
    inputs: Vec<Array>,
    aux: Vec<(Vec<usize>, Vec<i64>)>,
    weight: Array,
    output: Array,
    value: f64,
    grads: Vec<Vec<f64>>,
    hvp: Option<Hvp>,
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array of numbers")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn shape(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("a shape")
        .iter()
        .map(|d| d.as_u64().expect("a dimension") as usize)
        .collect()
}

fn array(v: &Value) -> Array {
    Array {
        shape: shape(&v["shape"]),
        data: floats(&v["data"]),
    }
}

fn float_lists(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().expect("a list").iter().map(floats).collect()
}

fn load() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/jax_autodiff.json"
    );
    let text = std::fs::read_to_string(path).expect("reading the JAX fixture");
    let json: Value = serde_json::from_str(&text).expect("parsing the JAX fixture");
    json["expressions"]
        .as_array()
        .expect("an expression list")
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().expect("a name").to_string(),
            inputs: c["inputs"].as_array().unwrap().iter().map(array).collect(),
            aux: c["aux"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    assert_eq!(a["dtype"], "int64");
                    let data = a["data"].as_array().unwrap();
                    (
                        shape(&a["shape"]),
                        data.iter().map(|d| d.as_i64().unwrap()).collect(),
                    )
                })
                .collect(),
            weight: array(&c["weight"]),
            output: array(&c["output"]),
            value: c["value"].as_f64().expect("a value"),
            grads: float_lists(&c["grads"]),
            hvp: c.get("hvp").map(|h| Hvp {
                v: float_lists(&h["v"]),
                out: float_lists(&h["out"]),
            }),
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------------
// Checking
// ------------------------------------------------------------------------------------------------------

/// Compares `got` to `want` entry by entry; returns the number of values compared.
fn compare(
    what: &str,
    got: &T,
    want: &[f64],
    want_shape: &[usize],
    errors: &mut Vec<String>,
) -> usize {
    if got.shape() != want_shape {
        errors.push(format!(
            "{what}: shape {:?}, JAX has {want_shape:?}",
            got.shape()
        ));
        return 0;
    }
    let got = match got.cast(DType::F64).and_then(|t| t.to_vec::<f64>()) {
        Ok(v) => v,
        Err(err) => {
            errors.push(format!("{what}: reading back failed: {err}"));
            return 0;
        }
    };
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs())) * 1e-3;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs() / w.abs().max(scale);
        if !(g == w || err <= REL) {
            errors.push(format!(
                "{what}[{i}]: nabla {g:e}, JAX {w:e} (relative error {err:.1e})"
            ));
        }
    }
    want.len()
}

fn tensor(a: &Array, cpu: &CpuBackend) -> T {
    Tensor::from_slice(&a.data, a.shape.clone(), cpu).unwrap()
}

/// Runs one case; returns the number of values compared and the mismatches.
fn check(case: &Case, g: Expr, cpu: &CpuBackend) -> Result<(usize, Vec<String>)> {
    let inputs: Vec<T> = case.inputs.iter().map(|a| tensor(a, cpu)).collect();
    let aux: Vec<T> = case
        .aux
        .iter()
        .map(|(s, d)| Tensor::from_slice(d, s.clone(), cpu).unwrap())
        .collect();
    let weight = tensor(&case.weight, cpu);
    let f = |xs: &[T]| -> Result<T> { g(xs, &aux)?.mul(&weight)?.sum_all() };

    let mut errors = Vec::new();
    let mut n = 0;
    let out = g(&inputs, &aux)?;
    n += compare(
        "output",
        &out,
        &case.output.data,
        &case.output.shape,
        &mut errors,
    );
    let (value, grads) = value_and_grad_n(f)(&inputs)?;
    n += compare("value", &value, &[case.value], &[], &mut errors);
    for (i, (gr, want)) in grads.iter().zip(&case.grads).enumerate() {
        let what = format!("grad[{i}]");
        n += compare(&what, gr, want, &case.inputs[i].shape, &mut errors);
    }
    if let Some(h) = &case.hvp {
        let vs: Vec<T> =
            h.v.iter()
                .zip(&case.inputs)
                .map(|(v, x)| Tensor::from_slice(v, x.shape.clone(), cpu).unwrap())
                .collect();
        // d/dx <grad f(x), v>: a reverse pass over a recorded reverse pass.
        let directional = |xs: &[T]| -> Result<T> {
            let gs = grad_n(f)(xs)?;
            let mut total = Tensor::scalar(0.0, DType::F64, cpu)?;
            for (gi, vi) in gs.iter().zip(&vs) {
                total = total.add(gi.mul(vi)?.sum_all()?)?;
            }
            Ok(total)
        };
        let hv = grad_n(directional)(&inputs)?;
        for (i, (got, want)) in hv.iter().zip(&h.out).enumerate() {
            let what = format!("hvp[{i}]");
            n += compare(&what, got, want, &case.inputs[i].shape, &mut errors);
        }
        // The same product reverse over forward, as `AdContext::hvp` computes it: the gradient of
        // the recorded directional derivative (every forward rule, differentiated in reverse).
        let vars: Vec<T> = inputs
            .iter()
            .map(|x| Tensor::var("x", x.clone()))
            .collect::<Result<_>>()?;
        let y = f(&vars)?;
        let (xs, ts): (Vec<&T>, Vec<&T>) = (vars.iter().collect(), vs.iter().collect());
        let directional = AdContext::new().jvp_n(&y, &xs, &ts)?;
        let hv = AdContext::new().grads(&directional, &xs)?;
        for (i, (got, want)) in hv.iter().zip(&h.out).enumerate() {
            let what = format!("hvp reverse over forward[{i}]");
            n += compare(&what, got, want, &case.inputs[i].shape, &mut errors);
        }
    }
    Ok((n, errors))
}

#[test]
fn derivatives_match_jax() {
    let cpu = CpuBackend::new();
    let cases = load();
    let table = expressions();
    let known: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
    let in_fixture: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();

    let mut failures = Vec::new();
    let unmapped: Vec<&str> = cases
        .iter()
        .map(|c| c.name.as_str())
        .filter(|n| !known.contains(n))
        .collect();
    if !unmapped.is_empty() {
        failures.push(format!(
            "fixture expressions without a nabla closure in expressions(): {unmapped:?}"
        ));
    }
    let stale: Vec<&str> = known
        .iter()
        .copied()
        .filter(|n| !in_fixture.contains(n))
        .collect();
    if !stale.is_empty() {
        failures.push(format!(
            "closures without a fixture expression (regenerate the fixture?): {stale:?}"
        ));
    }

    let (mut compared, mut with_hvp, mut run) = (0usize, 0usize, 0usize);
    let mut known_reports = Vec::new();
    for case in &cases {
        let Some(&(_, g)) = table.iter().find(|(n, _)| *n == case.name) else {
            continue;
        };
        run += 1;
        with_hvp += usize::from(case.hvp.is_some());
        let result = catch_unwind(AssertUnwindSafe(|| check(case, g, &cpu)));
        let errors = match result {
            Ok(Ok((n, errors))) => {
                compared += n;
                errors
            }
            Ok(Err(err)) => vec![format!("error: {err}")],
            Err(panic) => vec![format!(
                "panicked: {}",
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )],
        };
        let known_failure = KNOWN_FAILURES.iter().find(|(n, _, _)| *n == case.name);
        let Some(&(_, part, why)) = known_failure else {
            if !errors.is_empty() {
                failures.push(format!("[{}]\n  {}", case.name, errors.join("\n  ")));
            }
            continue;
        };
        let (expected, unexpected): (Vec<String>, Vec<String>) =
            errors.into_iter().partition(|e| e.starts_with(part));
        if !unexpected.is_empty() {
            failures.push(format!("[{}]\n  {}", case.name, unexpected.join("\n  ")));
        }
        if expected.is_empty() {
            failures.push(format!(
                "[{}] {part} is listed in KNOWN_FAILURES but now matches JAX: remove it from the list",
                case.name
            ));
        } else {
            known_reports.push(format!(
                "[{}] known {part} failure: {why}\n  {}",
                case.name,
                expected.join("\n  ")
            ));
        }
    }
    for r in &known_reports {
        println!("{r}");
    }
    println!(
        "JAX fixtures: {run} expressions ({with_hvp} with Hessian-vector products), {compared} values \
         compared within {REL:e} relative, {} known failures",
        known_reports.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} JAX expressions disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(
        cases.len() >= 60,
        "the fixture should hold at least 60 expressions"
    );
}
