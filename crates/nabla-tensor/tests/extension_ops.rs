//! Extension ops of a user family: rules bound at recording reach every transform, any number of
//! inputs is saved for the rules, and op identity (name + parameters) drives CSE.

use nabla_core::{
    Backend, DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Primitive,
    Result, UnaryOp,
};
use nabla_cpu::CpuBackend;
use nabla_tensor::{
    AdContext, ExtensionFamily, ExtensionRules, GraphCompiler, Pass, RuleArgs, Tensor, TraceOp,
    TracingBackend, grad_n, hessian, jvp_n,
};
use std::sync::Arc;

const NAME: &str = "demo.weighted_squares";
const INPUTS: usize = 12;

/// `y = scale · Σᵢ (i + 1) xᵢ²` over any number of f64 tensors of one shape.
#[derive(Debug, PartialEq, Eq, Hash)]
struct WeightedSquares {
    scale: i64,
}

impl ExtensionOp for WeightedSquares {
    fn name(&self) -> &str {
        NAME
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (_, shape) = inputs[0];
        if inputs.iter().any(|&(d, s)| d != DType::F64 || s != shape) {
            return Err(Error::invalid(NAME, "expects f64 tensors of one shape"));
        }
        Ok(OutputSpec {
            dtype: DType::F64,
            shape: shape.to_vec(),
        })
    }

    fn host_kernel(&self, inputs: &[HostView<'_>], _alloc: &dyn HostAllocator) -> Result<HostData> {
        let mut out = vec![0.0; inputs[0].data.len()];
        for (i, view) in inputs.iter().enumerate() {
            let HostData::F64(x) = view.data else {
                return Err(Error::invalid(NAME, "expects f64"));
            };
            for (o, v) in out.iter_mut().zip(x) {
                *o += self.scale as f64 * (i + 1) as f64 * v * v;
            }
        }
        Ok(HostData::F64(out))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `∂y/∂xᵢ = 2 · scale · (i + 1) · xᵢ`, read from the saved input `i` (inputs past the eighth included).
fn local_derivative<B: Backend>(args: &RuleArgs<'_, B>, i: usize) -> Result<Tensor<B>> {
    let scale = args
        .op
        .as_any()
        .downcast_ref::<WeightedSquares>()
        .expect("the family's own op")
        .scale;
    args.inputs[i].mul(2.0 * scale as f64 * (i + 1) as f64)
}

struct Demo;

impl ExtensionFamily for Demo {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse(NAME, |args, g, needs| {
                (0..args.inputs.len())
                    .map(|i| {
                        needs[i]
                            .then(|| local_derivative(args, i)?.mul(g))
                            .transpose()
                    })
                    .collect()
            })
            .forward(NAME, |args, tangents| {
                let mut sum: Option<Tensor<B>> = None;
                for (i, t) in tangents.iter().enumerate() {
                    if let Some(t) = t {
                        let term = local_derivative(args, i)?.mul(t)?;
                        sum = Some(match sum {
                            Some(s) => s.add(&term)?,
                            None => term,
                        });
                    }
                }
                Ok(sum)
            })
    }
}

fn weighted_squares<B: Backend>(xs: &[Tensor<B>], scale: i64) -> Result<Tensor<B>> {
    let refs: Vec<&Tensor<B>> = xs.iter().collect();
    Tensor::apply_family_op::<Demo>(Arc::new(WeightedSquares { scale }), &refs)
}

fn inputs(cpu: &CpuBackend) -> Vec<Tensor<CpuBackend>> {
    (0..INPUTS)
        .map(|i| Tensor::from_vec(vec![0.5 + i as f64, -1.0 - 0.25 * i as f64], [2], cpu).unwrap())
        .collect()
}

#[test]
fn an_extension_op_with_twelve_inputs_differentiates_in_every_mode() {
    let cpu = CpuBackend::new();
    let xs = inputs(&cpu);
    let want: Vec<Vec<f64>> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let x = x.to_vec::<f64>().unwrap();
            x.iter().map(|v| 6.0 * (i + 1) as f64 * v).collect()
        })
        .collect();

    // backward through variables: every one of the twelve saved inputs is read by the rule.
    let vars: Vec<_> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| Tensor::var(format!("x{i}"), x.clone()).unwrap())
        .collect();
    let loss = weighted_squares(&vars, 3).unwrap().sum_all().unwrap();
    let grads = loss.backward().unwrap();
    for (i, v) in vars.iter().enumerate() {
        assert_eq!(
            grads.get(v).unwrap().to_vec::<f64>().unwrap(),
            want[i],
            "x{i}"
        );
    }

    // The functional gradient, and a JVP along ones (Σᵢ ∂y/∂xᵢ).
    let f = |xs: &[Tensor<CpuBackend>]| weighted_squares(xs, 3)?.sum_all();
    let g = grad_n(f)(&xs).unwrap();
    for (i, gi) in g.iter().enumerate() {
        assert_eq!(gi.to_vec::<f64>().unwrap(), want[i], "grad_n x{i}");
    }
    let ones: Vec<_> = xs.iter().map(|x| x.ones_like().unwrap()).collect();
    let (_, jv) = jvp_n(f, &xs, &ones).unwrap();
    let total: f64 = want.iter().flatten().sum();
    assert!((jv.item::<f64>().unwrap() - total).abs() < 1e-9);

    // Second order through the last input: d²/dx11² of 3·12·x11² summed is 72·I.
    let last = |x: &Tensor<CpuBackend>| {
        let mut all = xs[..INPUTS - 1].to_vec();
        all.push(x.clone());
        weighted_squares(&all, 3)?.sum_all()
    };
    let h = hessian(last)(&xs[INPUTS - 1]).unwrap();
    assert_eq!(
        h.to_vec2::<f64>().unwrap(),
        vec![vec![72.0, 0.0], vec![0.0, 72.0]]
    );
}

#[test]
fn a_context_override_replaces_the_bound_rule_and_a_bare_op_names_the_fix() {
    let cpu = CpuBackend::new();
    let xs: Vec<_> = inputs(&cpu)
        .into_iter()
        .map(|x| Tensor::var("x", x).unwrap())
        .collect();
    let y = weighted_squares(&xs, 1).unwrap().sum_all().unwrap();
    let doubled = AdContext::builder()
        .with_extension_rules(
            ExtensionRules::<CpuBackend>::new().reverse(NAME, |args, g, _| {
                (0..args.inputs.len())
                    .map(|i| Ok(Some(local_derivative(args, i)?.mul(g)?.mul(2.0)?)))
                    .collect()
            }),
        )
        .build();
    let plain = AdContext::new().grad(&y, &xs[9]).unwrap();
    let over = doubled.grad(&y, &xs[9]).unwrap();
    let twice: Vec<f64> = plain
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .map(|v| 2.0 * v)
        .collect();
    assert_eq!(over.to_vec::<f64>().unwrap(), twice);

    let refs: Vec<_> = xs.iter().collect();
    let bare = Tensor::apply_extension(Arc::new(WeightedSquares { scale: 1 }), &refs)
        .unwrap()
        .sum_all()
        .unwrap();
    let err = bare.backward().unwrap_err().to_string();
    assert!(
        err.contains(NAME) && err.contains("reverse-mode") && err.contains("apply_family_op"),
        "{err}"
    );
}

#[test]
fn op_identity_is_name_and_parameters_for_cse() {
    let tb = TracingBackend::new();
    let xs: Vec<_> = (0..3)
        .map(|_| tb.placeholder([2], DType::F64).unwrap())
        .collect();
    let a = weighted_squares(&xs, 2).unwrap();
    let b = weighted_squares(&xs, 2).unwrap();
    let c = weighted_squares(&xs, 5).unwrap();
    let out = a
        .add(&b)
        .unwrap()
        .add(&c)
        .unwrap()
        .unary(UnaryOp::Neg)
        .unwrap();
    let program = GraphCompiler::new()
        .only(&[Pass::CommonSubexpressions, Pass::DeadCode])
        .compile(&out)
        .unwrap();
    let calls: Vec<i64> = program
        .nodes()
        .iter()
        .filter_map(|n| match &n.op {
            TraceOp::Primitive(Primitive::Extension(call)) => Some(
                call.0
                    .as_any()
                    .downcast_ref::<WeightedSquares>()
                    .unwrap()
                    .scale,
            ),
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec![2, 5], "{program}");
    let same = WeightedSquares { scale: 2 };
    assert!(same.same_as(&WeightedSquares { scale: 2 }));
    assert!(!same.same_as(&WeightedSquares { scale: 5 }));
}
