//! `vmap` composed with the other transforms, against JAX (`scripts/gen_jax_vmap.py`,
//! `fixtures/jax_vmap.json`) and against loops: nested `vmap`, per-example gradients `vmap(grad)`,
//! `grad(vmap)`, Jacobians by `vmap(vjp)`, Hessians of and under `vmap`, in/out axes; strided views of
//! the traced program; traced `vmap`; errors.

use crate::vmap::assert_close;
use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GraphExecutor, Tensor, TracedTensor, TracingBackend, grad, hessian, vjp, vmap};
use serde_json::Value;

type T = Tensor<CpuBackend>;

fn fixture(name: &str) -> Value {
    let text = include_str!("fixtures/jax_vmap.json");
    let doc: Value = serde_json::from_str(text).expect("valid fixture JSON");
    doc["cases"][name].clone()
}

fn tensor(v: &Value) -> Result<T> {
    Ok(crate::support::fixture_array(v))
}

fn inputs(case: &Value) -> Result<Vec<T>> {
    case["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(tensor)
        .collect()
}

fn check(got: &T, case: &Value, what: &str) -> Result<()> {
    assert_close(got, &tensor(&case["output"])?, what);
    Ok(())
}

#[test]
fn nested_vmap_matches_jax() -> Result<()> {
    let case = fixture("nested");
    let x = inputs(&case)?;
    let inner = |t: &[TracedTensor]| {
        vmap(|u: &[TracedTensor]| u[0].matmul(&u[1])?.tanh())
            .in_axes(&[None, Some(0)])
            .call1(&[&t[0], &t[1]])
    };
    let out = vmap(inner)
        .in_axes(&[Some(0), None])
        .call1(&[&x[0], &x[1]])?;
    check(&out, &case, "nested vmap")
}

fn loss<B: nabla_core::Backend>(w: &Tensor<B>, x: &Tensor<B>, y: &Tensor<B>) -> Result<Tensor<B>> {
    x.mul(w)?.sum_all()?.tanh()?.sub(y)?.square()
}

#[test]
fn per_example_gradients_match_jax_and_a_loop() -> Result<()> {
    let case = fixture("per_example");
    let x = inputs(&case)?;
    let per_example =
        vmap(|t: &[TracedTensor]| grad(|w: &TracedTensor| loss(w, &t[1], &t[2]))(&t[0]))
            .in_axes(&[None, Some(0), Some(0)])
            .call1(&[&x[0], &x[1], &x[2]])?;
    check(&per_example, &case, "vmap(grad)")?;
    for b in 0..6 {
        let (xb, yb) = (x[1].select_index(0, b)?, x[2].select_index(0, b)?);
        let g = grad(|w: &T| loss(w, &xb, &yb))(&x[0])?;
        assert_close(&per_example.select_index(0, b)?, &g, "vmap(grad) vs loop");
    }
    Ok(())
}

#[test]
fn the_gradient_of_a_vmap_matches_jax() -> Result<()> {
    let case = fixture("grad_of_vmap");
    let x = inputs(&case)?;
    let xs = x[1].clone();
    let g = grad(|w: &T| {
        vmap(|t: &[TracedTensor]| t[0].matmul(&t[1])?.sin())
            .in_axes(&[Some(0), None])
            .call1(&[&xs, w])?
            .sum_all()
    })(&x[0])?;
    check(&g, &case, "grad(vmap)")
}

#[test]
fn a_jacobian_by_vmap_of_vjp_matches_jax() -> Result<()> {
    let case = fixture("jacrev");
    let x = inputs(&case)?;
    let eye = Tensor::eye(3, DType::F64, &CpuBackend::new())?;
    let f = |x: &TracedTensor| x.mul(x.sin()?.cumsum(0)?);
    let jac = vmap(|t: &[TracedTensor]| Ok(vjp(f, &t[1], &t[0])?.1))
        .in_axes(&[Some(0), None])
        .call1(&[&eye, &x[0]])?;
    check(&jac, &case, "vmap(vjp)")
}

fn gh<B: nabla_core::Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    x.exp()?.mul(x.select_index(0, 0)?)?.sum_all()
}

#[test]
fn hessians_under_and_of_vmap_match_jax() -> Result<()> {
    let case = fixture("vmap_hessian");
    let x = inputs(&case)?;
    let per_row = vmap(|t: &[TracedTensor]| hessian(gh)(&t[0])).call1(&[&x[0]])?;
    check(&per_row, &case, "vmap(hessian)")?;
    let case = fixture("hessian_of_vmap");
    let whole =
        hessian(|x: &T| vmap(|t: &[TracedTensor]| gh(&t[0])).call1(&[x])?.sum_all())(&x[0])?;
    check(&whole, &case, "hessian(vmap)")
}

#[test]
fn in_and_out_axes_match_jax() -> Result<()> {
    let case = fixture("axes");
    let x = inputs(&case)?;
    let out = vmap(|t: &[TracedTensor]| t[0].mul(&t[1])?.softmax(-1))
        .in_axes(&[Some(1), None])
        .out_axes(&[Some(1)])
        .call1(&[&x[0], &x[1]])?;
    check(&out, &case, "in_axes=(1, None), out_axes=1")
}

/// Transposes, strided and negative-step slices, broadcasts of the traced
/// program, and strides that do not nest, are read correctly from batched buffers, and their gradients
/// flow back.
#[test]
fn strided_views_batch_and_differentiate_like_a_loop() -> Result<()> {
    let cpu = CpuBackend::new();
    let data: Vec<f64> = (0..60)
        .map(|i| ((i * 13 % 17) as f64 - 8.0) / 7.0)
        .collect();
    let xs = Tensor::from_vec(data, [5, 3, 4], &cpu)?;
    fn views<B: nabla_core::Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
        let t = x.t()?.matmul(x)?.sum_all()?; // a transposed operand
        let stepped = x.slice(1, Some(3), None, -2)?.slice(0, Some(0), None, 2)?;
        let narrow = x.narrow(1, 1, 2)?.exp()?.sum_all()?;
        let wide = x.select_index(0, 1)?.unsqueeze(0)?.broadcast_to([3, 4])?;
        let flipped = x.flip(&[0, 1])?.mul(&wide)?.sum_all()?;
        // Strides 4 and 3 do not nest (4 is not a multiple of 3): read by the gather fallback.
        let odd = x.slice(1, None, None, 3)?.cos()?.sum_all()?;
        let sq = stepped.square()?.sum_all()?;
        t.add(&sq)?.add(&narrow)?.add(&flipped)?.add(&odd)
    }
    let batched = vmap(|t: &[TracedTensor]| views(&t[0])).call1(&[&xs])?;
    let grads = vmap(|t: &[TracedTensor]| grad(views)(&t[0])).call1(&[&xs])?;
    let outer = grad(|x: &T| {
        vmap(|t: &[TracedTensor]| views(&t[0]))
            .call1(&[x])?
            .sum_all()
    })(&xs)?;
    for b in 0..5 {
        let x = xs.select_index(0, b)?;
        assert_close(&batched.select_index(0, b)?, &views(&x)?, "views");
        let g = grad(views)(&x)?;
        assert_close(&grads.select_index(0, b)?, &g, "vmap(grad(views))");
        assert_close(&outer.select_index(0, b)?, &g, "grad(vmap(views))");
    }
    Ok(())
}

#[test]
fn vmap_inside_a_traced_program_runs_like_eager() -> Result<()> {
    let cpu = CpuBackend::new();
    let xs = Tensor::from_vec((0..12).map(|i| i as f32 / 5.0).collect(), [4, 3], &cpu)?;
    let w = Tensor::from_vec(vec![0.5f32, -1.0, 2.0], [3], &cpu)?;
    let f = |t: &[TracedTensor]| grad(|w: &TracedTensor| t[1].mul(w)?.sum_all()?.sin())(&t[0]);
    let eager = vmap(f).in_axes(&[None, Some(0)]).call1(&[&w, &xs])?;
    let tb = TracingBackend::new();
    let (pw, px) = (
        tb.placeholder([3], DType::F32)?,
        tb.placeholder([4, 3], DType::F32)?,
    );
    let traced = vmap(f).in_axes(&[None, Some(0)]).call1(&[&pw, &px])?;
    let program = tb.program(&[&traced])?;
    let out = GraphExecutor::new(&cpu).run(&program, &[w, xs])?;
    assert_close(&out[0], &eager, "traced vmap");
    Ok(())
}

#[test]
fn bad_axes_and_sizes_are_errors_naming_vmap() -> Result<()> {
    let cpu = CpuBackend::new();
    let a = Tensor::ones([3, 2], DType::F32, &cpu)?;
    let b = Tensor::ones([4, 2], DType::F32, &cpu)?;
    let f = |t: &[TracedTensor]| t[0].add(&t[1]);
    let sizes = vmap(f).call(&[&a, &b]).unwrap_err().to_string();
    assert!(
        sizes.contains("vmap") && sizes.contains('3') && sizes.contains('4'),
        "{sizes}"
    );
    let none = vmap(f).in_axes(&[None, None]).call(&[&a, &a]).unwrap_err();
    assert!(none.to_string().contains("at least one"), "{none}");
    let range = vmap(f)
        .in_axes(&[Some(2), None])
        .call(&[&a, &a])
        .unwrap_err();
    assert!(range.to_string().contains("in_axes[0]"), "{range}");
    let count = vmap(f).in_axes(&[Some(0)]).call(&[&a, &a]).unwrap_err();
    assert!(
        count.to_string().contains("1 entries for 2 inputs"),
        "{count}"
    );
    let g = |t: &[TracedTensor]| t[0].exp();
    let shared = vmap(g).out_axes(&[None]).call(&[&a]).unwrap_err();
    assert!(
        shared.to_string().contains("out_axes[0] is None"),
        "{shared}"
    );
    // A function that reads a value cannot be traced: an error, not a silent per-example branch.
    let reads = vmap(|t: &[TracedTensor]| {
        let v = t[0].sum_all()?.item::<f32>()?;
        t[0].mul(f64::from(v))
    })
    .call(&[&a]);
    assert!(reads.is_err());
    Ok(())
}

#[test]
fn an_empty_batch_gives_empty_outputs_of_the_traced_shapes() -> Result<()> {
    let cpu = CpuBackend::new();
    let images = Tensor::zeros([0, 1, 2, 6, 6], DType::F32, &cpu)?;
    let w = Tensor::ones([3, 2, 3, 3], DType::F32, &cpu)?;
    let conv = nabla_core::Conv2dParams::default();
    let out = vmap(|t: &[TracedTensor]| t[0].conv2d(&t[1], &conv)?.relu())
        .in_axes(&[Some(0), None])
        .out_axes(&[Some(-1)])
        .call1(&[&images, &w])?;
    assert_eq!(out.shape(), &[1, 3, 4, 4, 0]);
    Ok(())
}
