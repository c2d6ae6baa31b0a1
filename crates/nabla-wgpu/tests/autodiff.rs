//! Eager autodiff on `Tensor<WgpuBackend>` gives the CPU's gradients.

mod common;

use nabla_core::{Backend, Conv2dParams, DType, Pool2dParams, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::Tensor;

/// A small CNN-then-MLP loss: conv, max pool, matmul, tanh, log-softmax and a gathered NLL.
fn loss<B: Backend>(params: &[Tensor<B>], x: &Tensor<B>, labels: &Tensor<B>) -> Result<Tensor<B>> {
    let (k, w1, b1, w2) = (&params[0], &params[1], &params[2], &params[3]);
    let conv = Conv2dParams {
        padding: (1, 1),
        ..Default::default()
    };
    let h = x.conv2d(k, &conv)?.relu()?;
    let (h, _) = h.max_pool2d(&Pool2dParams::square(2))?;
    let h = h.reshape([4, 48])?;
    let h = h.matmul(w1)?.add(b1)?.tanh()?;
    let logp = h.matmul(w2)?.log_softmax(-1)?;
    logp.gather(1, labels)?.mean(&[0, 1], false)?.mul(-1.0)
}

#[test]
fn mlp_gradients_match_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let cpu = CpuBackend::new();
    let host = |n: usize, seed: u64, shape: Vec<usize>| -> Tensor<CpuBackend> {
        Tensor::from_host(common::random(DType::F32, n, seed), shape, &cpu).unwrap()
    };
    let shapes = [vec![3, 1, 3, 3], vec![48, 10], vec![10], vec![10, 3]];
    let cpu_params: Vec<Tensor<CpuBackend>> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let t = host(s.iter().product(), i as u64 + 1, s.clone());
            Tensor::var(format!("p{i}"), t.mul(0.3).unwrap()).unwrap()
        })
        .collect();
    let x = host(4 * 64, 9, vec![4, 1, 8, 8]);
    let labels = Tensor::from_vec(vec![0i64, 2, 1, 2], [4, 1], &cpu).unwrap();
    let gpu_params: Vec<Tensor<nabla_wgpu::WgpuBackend>> = cpu_params
        .iter()
        .enumerate()
        .map(|(i, p)| Tensor::var(format!("p{i}"), p.detach().to_backend(gpu).unwrap()).unwrap())
        .collect();
    let gx = x.to_backend(gpu).unwrap();
    let glabels = labels.to_backend(gpu).unwrap();

    let lc = loss(&cpu_params, &x, &labels).unwrap();
    let lg = loss(&gpu_params, &gx, &glabels).unwrap();
    let (vc, vg) = (lc.item::<f32>().unwrap(), lg.item::<f32>().unwrap());
    assert!(
        (vc - vg).abs() < 1e-5 * (1.0 + vc.abs()),
        "loss: cpu {vc} vs wgpu {vg}"
    );
    let (gc, gg) = (lc.backward().unwrap(), lg.backward().unwrap());
    for (pc, pg) in cpu_params.iter().zip(&gpu_params) {
        let a = gc.get(pc).unwrap().to_vec::<f32>().unwrap();
        let b = gg.get(pg).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                (x - y).abs() <= 1e-5 * (1.0 + x.abs()),
                "gradient element {i}: cpu {x} vs wgpu {y}"
            );
        }
    }
}

#[test]
fn tensors_of_two_devices_do_not_mix() -> Result<()> {
    let Some(first) = common::gpu() else {
        return Ok(());
    };
    let second = nabla_wgpu::WgpuBackend::new()?;
    assert_ne!(first.device(), second.device());
    let a = Tensor::from_vec(vec![1.0f32, 2.0], [2], first)?;
    let b = Tensor::from_vec(vec![3.0f32, 4.0], [2], &second)?;
    let err = a
        .add(&b)
        .expect_err("tensors of two devices must not combine");
    let msg = err.to_string();
    assert!(
        msg.contains(&first.device().to_string()) && msg.contains(&second.device().to_string()),
        "{msg}"
    );
    // Moving one to the other's device makes them compatible.
    let moved = b.to_backend(first)?;
    assert_eq!(a.add(&moved)?.to_vec::<f32>()?, vec![4.0, 6.0]);
    Ok(())
}
