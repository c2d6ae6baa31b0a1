//! Class-index losses in traced programs: `cross_entropy` and `nll_loss` with integer targets trace,
//! compile and run (targets as constants captured by the trace, or as program inputs), under `grad`
//! and `vmap` too, and agree with eager values and gradients.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::loss::{CrossEntropyOptions, NllLossOptions, Reduction, cross_entropy, nll_loss};
use nabla_tensor::{
    GraphCompiler, GraphExecutor, Tensor, TracedTensor, TracingBackend, grad, vmap,
};

type T = Tensor<CpuBackend>;

fn logits(cpu: &CpuBackend) -> T {
    let v: Vec<f64> = (0..4 * 5)
        .map(|i| ((i * 13 % 7) as f64 - 3.0) / 2.0)
        .collect();
    Tensor::from_vec(v, [4, 5], cpu).unwrap()
}

fn targets<B: nabla_core::Backend>(backend: &B) -> Tensor<B> {
    Tensor::from_vec(vec![1i64, 4, -100, 0], [4], backend).unwrap()
}

fn close(a: &T, b: &T, what: &str) {
    let (a, b) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() < 1e-12 * (1.0 + y.abs()),
            "{what}: {x} vs {y}"
        );
    }
}

fn options<B: nabla_core::Backend>() -> CrossEntropyOptions<B> {
    CrossEntropyOptions {
        label_smoothing: 0.1,
        ..Default::default()
    }
}

#[test]
fn cross_entropy_with_class_indices_traces_compiles_and_differentiates() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = Tensor::var("x", logits(&cpu))?;
    let eager = cross_entropy(&x, &targets(&cpu), &options())?;
    let eager_grad = eager.grad(&x)?;
    let eager_nll = nll_loss(
        &x.log_softmax(-1)?,
        &targets(&cpu),
        &NllLossOptions::default(),
    )?;

    let tb = TracingBackend::new();
    let px = tb.placeholder([4, 5], DType::F64)?;
    // Targets as a constant captured by the trace, and as a program input.
    let pt = tb.placeholder([4], DType::I64)?;
    let constant = cross_entropy(&px, &targets(&tb), &options())?;
    let as_input = cross_entropy(&px, &pt, &options())?;
    let nll = nll_loss(&px.log_softmax(-1)?, &pt, &NllLossOptions::default())?;
    let g = constant.grad(&px)?;
    let program = tb.program(&[&constant, &as_input, &nll, &g])?;
    let compiled = GraphCompiler::new().compile(&program)?;
    for p in [&program, &compiled] {
        let run = GraphExecutor::new(&cpu).run(p, &[logits(&cpu), targets(&cpu)])?;
        close(&run[0], &eager, "constant targets");
        close(&run[1], &eager, "targets as input");
        close(&run[2], &eager_nll, "nll_loss");
        close(&run[3], &eager_grad, "gradient");
    }
    // An out-of-range class in a program input is an error when the program runs.
    let bad = Tensor::from_vec(vec![1i64, 9, 0, 0], [4], &cpu)?;
    assert!(
        GraphExecutor::new(&cpu)
            .run(&compiled, &[logits(&cpu), bad])
            .is_err()
    );
    Ok(())
}

#[test]
fn per_example_gradients_of_cross_entropy_under_vmap() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = logits(&cpu);
    let t = Tensor::from_vec(vec![1i64, 4, 2, 0], [4], &cpu)?;
    let per_example = vmap(|v: &[TracedTensor]| {
        let target = v[1].clone();
        grad(move |row: &TracedTensor| {
            let opts = CrossEntropyOptions {
                reduction: Reduction::Sum,
                ..Default::default()
            };
            cross_entropy(&row.unsqueeze(0)?, &target.unsqueeze(0)?, &opts)
        })(&v[0])
    })
    .call1(&[&x, &t])?;
    for b in 0..4 {
        let row = Tensor::var("row", x.select_index(0, b)?)?;
        let loss = cross_entropy(
            &row.unsqueeze(0)?,
            &t.narrow(0, b as usize, 1)?,
            &CrossEntropyOptions::default(),
        )?;
        close(
            &per_example.select_index(0, b)?,
            &loss.grad(&row)?,
            "vmap(grad(cross_entropy))",
        );
    }
    Ok(())
}
