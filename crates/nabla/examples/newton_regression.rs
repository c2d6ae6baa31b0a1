//! Logistic regression solved by Newton's method: exact Hessians from automatic differentiation.
//!
//! ```sh
//! cargo run --release -p nabla --example newton_regression
//! ```
//!
//! Gradient descent on a well-conditioned problem gains a constant factor per step. Newton's method
//! solves the local quadratic model exactly, `w <- w - H(w)^-1 g(w)`, and near the optimum the error
//! squares at every step (quadratic convergence): the printed gradient norm falls from 3e-4 to 1e-6,
//! 1e-11 and 2e-17 in the last steps. Here the gradient `g` comes from `nabla::grad`, the Hessian `H` from
//! `nabla::hessian` (forward-mode derivatives of the reverse-mode gradient), and the step from
//! `nabla::linalg::solve`; `nabla::hvp` checks one Hessian-vector product against `H v`.

use nabla::CompareOp;
use nabla::linalg::solve;
use nabla::prelude::*;

/// Number of examples and of features (the last feature is a constant 1: the intercept).
const N: usize = 400;
const D: usize = 6;
/// A small L2 penalty keeps the problem strictly convex even if the classes happen to separate.
const L2: f64 = 1e-3;

/// Synthetic data: standard normal features and labels drawn from a logistic model with known weights.
fn make_data(cpu: &CpuBackend) -> Result<(CpuTensor, CpuTensor)> {
    let mut rng = Generator::new(3);
    let features = Tensor::randn([N, D - 1], DType::F64, &mut rng, cpu)?;
    let x = Tensor::cat(&[&features, &Tensor::ones([N, 1], DType::F64, cpu)?], 1)?;
    let true_w = Tensor::from_vec(vec![1.5f64, -2.0, 0.5, 0.0, 1.0, -0.3], [D], cpu)?;
    let p = x.matmul(&true_w)?.sigmoid()?; // P(y = 1 | x)
    let u = Tensor::rand([N], DType::F64, &mut rng, cpu)?;
    let y = u.compare(CompareOp::Lt, &p)?.cast(DType::F64)?; // y = 1 with probability p
    Ok((x, y))
}

/// Mean logistic loss `mean(softplus(x.w) - y x.w) + L2/2 |w|^2`.
fn loss(w: &CpuTensor, x: &CpuTensor, y: &CpuTensor) -> Result<CpuTensor> {
    let z = x.matmul(w)?;
    let nll = z.softplus()?.sub(&z.mul(y)?)?.mean_all()?;
    nll.add(&w.square()?.sum_all()?.mul(L2 / 2.0)?)
}

fn main() -> Result<()> {
    let cpu = CpuBackend::new();
    let (x, y) = make_data(&cpu)?;
    let f = |w: &CpuTensor| loss(w, &x, &y);
    let mut w = Tensor::zeros([D], DType::F64, &cpu)?;

    // Check once that the Hessian-vector product (forward over reverse, no Hessian built) is H v.
    let v = Tensor::randn([D], DType::F64, &mut Generator::new(4), &cpu)?;
    let hv = hvp(f, &w, &v)?;
    let h_times_v = hessian(f)(&w)?.matmul(&v)?;
    let gap = hv.sub(&h_times_v)?.abs()?.max_all()?.item::<f64>()?;
    println!("hvp(f, w, v) vs hessian(f)(w) @ v: max difference {gap:.1e}");

    println!("step        loss    |gradient|");
    for step in 0..=8 {
        let g = grad(f)(&w)?; // [D]
        let g_norm = g.square()?.sum_all()?.sqrt()?.item::<f64>()?;
        println!("{step:4} {:11.8} {g_norm:13.3e}", f(&w)?.item::<f64>()?);
        if g_norm < 1e-14 {
            println!("converged: the gradient vanishes to machine precision");
            break;
        }
        let h = hessian(f)(&w)?; // [D, D]
        // Newton step: solve H d = g (as a one-column system) and move to w - d.
        let d = solve(&h, &g.reshape([D, 1])?)?.reshape([D])?;
        w = w.sub(&d)?;
    }
    println!("fitted weights: {:.3?}", w.to_vec::<f64>()?);
    println!("true weights:   [1.5, -2.0, 0.5, 0.0, 1.0, -0.3]");
    Ok(())
}
