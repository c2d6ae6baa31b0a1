//! Behaviour of the eager autodiff engine itself: tracking, accumulation, errors, higher order, freeing.

use nabla_core::{DType, Error};
use nabla_cpu::CpuBackend;
use nabla_tensor::{BackwardOptions, Tensor, grad, grad_n, no_grad, value_and_grad, vjp};

type T = Tensor<CpuBackend>;

fn t(v: &[f64], shape: &[usize]) -> T {
    Tensor::from_slice(v, shape.to_vec(), &CpuBackend::new()).unwrap()
}

fn var(name: &str, v: &[f64], shape: &[usize]) -> T {
    Tensor::var(name, t(v, shape)).unwrap()
}

fn vals(x: &T) -> Vec<f64> {
    x.to_vec::<f64>().unwrap()
}

#[test]
fn reused_variables_and_shared_subexpressions_accumulate() {
    let x = var("x", &[1.0, 2.0, 3.0], &[3]);
    let h = x.mul(&x).unwrap(); // x^2, used twice below
    let y = h.add(&h).unwrap().add(&x).unwrap().sum_all().unwrap(); // 2x^2 + x
    let g = y.backward().unwrap();
    assert_eq!(vals(g.get(&x).unwrap()), vec![5.0, 9.0, 13.0]);
    assert_eq!(vals(g.by_name("x").unwrap()), vec![5.0, 9.0, 13.0]);
    assert_eq!(g.len(), 1);
}

#[test]
fn broadcasting_is_undone_in_gradients() {
    let a = var("a", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = var("b", &[10.0, 20.0, 30.0], &[3]);
    let c = var("c", &[2.0], &[1, 1]);
    let y = a.mul(&b).unwrap().mul(&c).unwrap().sum_all().unwrap();
    let g = y.backward().unwrap();
    assert_eq!(g.get(&b).unwrap().shape(), &[3]);
    assert_eq!(vals(g.get(&b).unwrap()), vec![10.0, 14.0, 18.0]);
    assert_eq!(
        vals(g.get(&c).unwrap()),
        vec![1.0 * 10.0 + 2.0 * 20.0 + 3.0 * 30.0 + 4.0 * 10.0 + 5.0 * 20.0 + 6.0 * 30.0]
    );
    assert_eq!(g.get(&a).unwrap().shape(), &[2, 3]);
}

#[test]
fn constants_detach_and_no_grad_stop_tracking() {
    let x = var("x", &[1.0, 2.0], &[2]);
    let k = Tensor::constant(t(&[3.0, 4.0], &[2]));
    assert!(!k.requires_grad());
    assert!(x.requires_grad() && x.is_leaf());
    assert_eq!(x.var_name(), Some("x"));
    let y = x.mul(&k).unwrap();
    assert!(y.requires_grad() && !y.is_leaf());
    assert!(!y.detach().requires_grad());
    let z = no_grad(|| x.exp().unwrap());
    assert!(!z.requires_grad());
    let err = z.sum_all().unwrap().backward().unwrap_err();
    assert!(
        matches!(err, Error::Autodiff { op: "backward", .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("does not depend on any variable"),
        "{err}"
    );
}

#[test]
fn integer_and_bool_values_are_never_differentiated() {
    let cpu = CpuBackend::new();
    let n = Tensor::from_vec(vec![1i64, 2], [2], &cpu).unwrap();
    let err = Tensor::var("n", n.clone()).unwrap_err();
    assert!(
        err.to_string().contains("only floating-point and complex"),
        "{err}"
    );
    let err = grad(|x: &T| x.sum_all())(&n).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("grad: only floating-point and complex"),
        "{err}"
    );
    // Integer results of tracked values are not tracked.
    let x = var("x", &[1.0, 2.0], &[2]);
    assert!(!x.argmax(0, false).unwrap().requires_grad());
    assert!(!x.gt(1.0).unwrap().requires_grad());
    assert!(!x.cast(DType::I64).unwrap().requires_grad());
}

#[test]
fn backward_needs_a_scalar_or_a_seed() {
    let x = var("x", &[1.0, 2.0], &[2]);
    let y = x.square().unwrap();
    let err = y.backward().unwrap_err();
    assert!(err.to_string().contains("backward: the output has shape [2] but needs one element without a seed; use backward_with(seed)"), "{err}");
    let g = y.backward_with(&t(&[1.0, 10.0], &[2])).unwrap();
    assert_eq!(vals(g.get(&x).unwrap()), vec![2.0, 40.0]);
    let err = y.backward_with(&t(&[1.0], &[1])).unwrap_err();
    assert!(
        err.to_string()
            .contains("the seed must have the output's shape"),
        "{err}"
    );
}

#[test]
fn second_backward_needs_retain_graph() {
    let x = var("x", &[2.0], &[]);
    let y = x.exp().unwrap().mul(&x).unwrap();
    y.backward().unwrap();
    let err = y.backward().unwrap_err();
    assert!(err.to_string().contains("retain_graph"), "{err}");
    let y = x.exp().unwrap().mul(&x).unwrap();
    let opts = BackwardOptions {
        retain_graph: true,
        ..Default::default()
    };
    let a = y.backward_opts(None, opts).unwrap();
    let b = y.backward().unwrap();
    assert_eq!(vals(a.get(&x).unwrap()), vals(b.get(&x).unwrap()));
}

#[test]
fn gradients_of_gradients() {
    let x = var("x", &[0.5], &[]);
    let opts = BackwardOptions {
        create_graph: true,
        ..Default::default()
    };
    // y = sin(x) * x ; y' = cos x * x + sin x ; y'' = -sin x * x + 2 cos x
    let y = x.sin().unwrap().mul(&x).unwrap();
    let dy = y
        .backward_opts(None, opts)
        .unwrap()
        .get(&x)
        .unwrap()
        .clone();
    assert!(dy.requires_grad());
    let d2y = dy
        .backward_opts(None, opts)
        .unwrap()
        .get(&x)
        .unwrap()
        .clone();
    let d3y = d2y
        .backward()
        .unwrap()
        .get(&x)
        .unwrap()
        .item::<f64>()
        .unwrap();
    let x0: f64 = 0.5;
    assert!((dy.item::<f64>().unwrap() - (x0.cos() * x0 + x0.sin())).abs() < 1e-12);
    assert!((d2y.item::<f64>().unwrap() - (-x0.sin() * x0 + 2.0 * x0.cos())).abs() < 1e-12);
    assert!((d3y - (-x0.cos() * x0 - 3.0 * x0.sin())).abs() < 1e-12);
}

#[test]
fn functional_transforms_compose() {
    let x = t(&[0.3], &[]);
    let f = |x: &T| x.tanh()?.mul(x);
    let (v, g) = value_and_grad(f)(&x).unwrap();
    let x0: f64 = 0.3;
    assert!((v.item::<f64>().unwrap() - x0.tanh() * x0).abs() < 1e-15);
    let th = x0.tanh();
    assert!((g.item::<f64>().unwrap() - ((1.0 - th * th) * x0 + th)).abs() < 1e-12);
    assert!(!g.requires_grad());
    let h = grad(grad(f))(&x).unwrap().item::<f64>().unwrap();
    let want = 2.0 * (1.0 - th * th) - 2.0 * th * (1.0 - th * th) * x0;
    assert!((h - want).abs() < 1e-12, "{h} vs {want}");
    // Several inputs; an unused input gets zeros.
    let f2 = |v: &[T]| v[0].mul(&v[1])?.sum_all();
    let inputs = [t(&[1.0, 2.0], &[2]), t(&[3.0, 4.0], &[2]), t(&[5.0], &[1])];
    let gs = grad_n(f2)(&inputs).unwrap();
    assert_eq!(vals(&gs[0]), vec![3.0, 4.0]);
    assert_eq!(vals(&gs[1]), vec![1.0, 2.0]);
    assert_eq!(vals(&gs[2]), vec![0.0]);
    let err = grad_n(|v: &[T]| v[0].mul(&v[1]))(&inputs).unwrap_err();
    assert!(
        err.to_string().contains(
            "grad: the output has shape [2] but needs one element without a seed; use vjp"
        ),
        "{err}"
    );
    let (y, g) = vjp(
        |x: &T| x.exp(),
        &t(&[0.0, 1.0], &[2]),
        &t(&[2.0, 1.0], &[2]),
    )
    .unwrap();
    let close = |a: Vec<f64>, b: [f64; 2]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-14);
    assert!(close(vals(&y), [1.0, 1.0f64.exp()]));
    assert!(close(vals(&g), [2.0, 1.0f64.exp()]));
}

#[test]
fn a_million_op_chain_runs_backward_without_overflowing_the_stack() {
    let x = var("x", &[1.0], &[1]);
    let mut y = x.clone();
    for _ in 0..1_000_000 {
        y = y.add(&x).unwrap();
    }
    let g = y.sum_all().unwrap().backward().unwrap();
    assert_eq!(vals(g.get(&x).unwrap()), vec![1_000_001.0]);
    drop(y); // dropping the chain must not recurse either
}

#[test]
fn backward_each_hands_over_each_gradient_once_when_complete() {
    // x and w are each used several times (their gradients gather several contributions); z is a
    // variable the loss does not depend on.
    let x = var("x", &[1.0, -2.0, 3.0], &[3]);
    let w = var("w", &[0.5, 4.0, -1.0], &[3]);
    let z = var("z", &[7.0], &[1]);
    let loss = || {
        let xw = x.mul(&w).unwrap();
        xw.add(x.mul(&x).unwrap())
            .unwrap()
            .mul(&w)
            .unwrap()
            .sum_all()
            .unwrap()
    };
    let want = loss().backward().unwrap();
    let mut seen = Vec::new();
    loss()
        .backward_each(|id, grad| {
            seen.push((id, vals(&grad)));
            Ok(())
        })
        .unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for var in [&x, &w] {
        let id = var.var_id().unwrap();
        let got: Vec<_> = seen.iter().filter(|(i, _)| *i == id).collect();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, vals(want.get(var).unwrap()));
    }
    assert!(seen.iter().all(|(i, _)| Some(*i) != z.var_id()));
    assert_eq!(t(&[1.0], &[1]).var_id(), None);

    // The first error from the callback stops the pass and comes back.
    let mut calls = 0;
    let err = loss()
        .backward_each(|_, _| {
            calls += 1;
            Err(Error::invalid("callback", "stop here"))
        })
        .unwrap_err();
    assert_eq!((calls, err.to_string().contains("stop here")), (1, true));
    // As `backward`, it needs a one-element output.
    let err = x.mul(&w).unwrap().backward_each(|_, _| Ok(())).unwrap_err();
    assert!(err.to_string().contains("one element"), "{err}");
}
