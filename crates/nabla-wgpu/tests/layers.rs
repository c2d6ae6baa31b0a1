//! Layers, initialisers, losses and transforms that compute tables or read values in `f64` on the
//! host work on wgpu, which holds no `f64`, and give the CPU's results.

mod common;

use common::assert_close;
use nabla_core::{Backend, DType, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::loss::{Reduction, binary_cross_entropy};
use nabla_nn::optim::{GradMap, clip_grad_norm};
use nabla_nn::{
    AdaptiveAvgPool2d, AvgPool2d, Embedding, Forward, Param, SinusoidalPositionalEmbedding, init,
};
use nabla_tensor::{Tensor, jacrev};

/// Every result of `f` on `backend`, for one seed.
fn results<B: Backend>(backend: &B) -> Result<Vec<Tensor<B>>> {
    let mut rng = Generator::new(3);
    let x = Tensor::randn([2, 3, 5, 5], DType::F32, &mut rng, backend)?;
    let adaptive = AdaptiveAvgPool2d::new((2, 3))?.forward(&x)?;
    let avg = AvgPool2d::new((2, 2), None, (1, 1), false, false, None)?.forward(&x)?;
    let trunc = init::trunc_normal([4, 5], 0.0, 1.0, (-2.0, 2.0), DType::F32, &mut rng, backend)?;
    let ortho = init::orthogonal([3, 6], 1.0, DType::F32, &mut rng, backend)?;
    let embedding = Embedding::new(5, 4, Some(1), DType::F32, &mut rng, backend)?;
    let ids = Tensor::from_vec(vec![1i64, 3, 0, 1], [4], backend)?;
    let embedded = embedding.forward(&ids)?;
    let positions = SinusoidalPositionalEmbedding::new(7, 6, true, DType::F32, backend)?
        .forward(&Tensor::zeros([2, 7, 6], DType::F32, backend)?)?;
    let v = Tensor::from_vec(vec![0.5f32, -1.0, 2.0], [3], backend)?;
    let jacobian = jacrev(|x: &Tensor<B>| x.square()?.mul(x))(&v)?;
    let p = Tensor::from_vec(vec![0.2f32, 0.7, 0.9], [3], backend)?;
    let t = Tensor::from_vec(vec![0.0f32, 1.0, 1.0], [3], backend)?;
    let bce = binary_cross_entropy(&p, &t, None, Reduction::Mean)?;
    let w = Param::new(v.zeros_like()?)?;
    let mut grads = GradMap::new();
    grads.insert(
        w.id(),
        Tensor::from_vec(vec![3.0f32, 4.0, 12.0], [3], backend)?,
    );
    let total = clip_grad_norm(&mut grads, 1.0, 2.0)?;
    let clipped = grads.get(w.id()).cloned().expect("the gradient stays");
    let total = Tensor::from_vec(vec![total as f32], [1], backend)?;
    Ok(vec![
        adaptive, avg, trunc, ortho, embedded, positions, jacobian, bce, clipped, total,
    ])
}

#[test]
fn host_computed_tables_and_draws_work_without_f64() {
    let Some(gpu) = common::gpu() else { return };
    let on_gpu = results(gpu).expect("every layer runs on wgpu");
    let on_cpu = results(&CpuBackend::new()).unwrap();
    let names = [
        "AdaptiveAvgPool2d",
        "AvgPool2d",
        "trunc_normal",
        "orthogonal",
        "Embedding",
        "SinusoidalPositionalEmbedding",
        "jacrev",
        "binary_cross_entropy",
        "clip_grad_norm",
        "total norm",
    ];
    for ((name, g), c) in names.iter().zip(&on_gpu).zip(&on_cpu) {
        assert_eq!(g.shape(), c.shape(), "{name}");
        assert_eq!(g.dtype(), DType::F32, "{name}");
        assert_close(name, &g.to_host().unwrap(), &c.to_host().unwrap(), 1e-5);
    }
}
