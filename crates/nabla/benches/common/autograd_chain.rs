//! The per-op overhead workload of the eager tape: a chain of `ops` additions of a 4-element f32 tensor,
//! `y = x; y = y + x` repeated, then `y.sum()` and its backward. Shared by the criterion bench
//! `autograd_overhead` and the example `bench_autograd` (which `scripts/bench_autograd.py` compares with
//! PyTorch eager).

use nabla::prelude::*;
use nabla_tensor::Gradients;

/// Elements of the chained tensor: small enough that only per-op overhead is measured.
pub const LEN: usize = 4;

/// The default chain length of the issue.
pub const OPS: usize = 10_000;

/// The input `[0.5, -1.0, 1.5, 2.0]` as f32; a variable named `x` when `tracked`.
pub fn input(cpu: &CpuBackend, tracked: bool) -> Result<CpuTensor> {
    let x = Tensor::from_vec(vec![0.5f32, -1.0, 1.5, 2.0], [LEN], cpu)?;
    if tracked { Tensor::var("x", x) } else { Ok(x) }
}

/// `x + x + ... + x` (`ops` additions) and its sum: the forward pass.
pub fn forward(x: &CpuTensor, ops: usize) -> Result<CpuTensor> {
    let mut y = x.clone();
    for _ in 0..ops {
        y = y.add(x)?;
    }
    y.sum_all()
}

/// The forward pass, then the reverse pass from its sum.
pub fn forward_backward(x: &CpuTensor, ops: usize) -> Result<Gradients<CpuBackend>> {
    forward(x, ops)?.backward()
}

/// Checks the gradient (every element is `ops + 1`) so that a benchmark never times a wrong answer.
pub fn check(x: &CpuTensor, ops: usize) -> Result<()> {
    let g = forward_backward(x, ops)?;
    let got = g
        .get(x)
        .ok_or_else(|| Error::invalid("bench_autograd", "no gradient for x"))?
        .to_vec::<f32>()?;
    let want = vec![(ops + 1) as f32; LEN];
    if got != want {
        return Err(Error::invalid(
            "bench_autograd",
            format!("gradient {got:?}, expected {want:?}"),
        ));
    }
    Ok(())
}
