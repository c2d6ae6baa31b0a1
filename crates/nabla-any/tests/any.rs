//! The run-time backend: the conformance suite through `AnyBackend::Cpu`, differentiable moves between
//! devices (CPU and wgpu both ways, when an adapter exists: with `CI=true` a missing adapter fails), and
//! mixing devices in one op is an error.

use nabla_any::AnyBackend;
use nabla_backend_tests::{Capabilities, conformance_suite};
use nabla_core::{Backend, DType};
use nabla_tensor::{Tensor, hessian};

conformance_suite!(mod any_cpu, make = AnyBackend::cpu, caps = Capabilities::all());

/// The wgpu device, or `None` (with a message) where no adapter exists; CI must have one.
fn gpu() -> Option<AnyBackend> {
    match AnyBackend::from_name("wgpu") {
        Ok(gpu) => Some(gpu),
        Err(e) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("skipping the wgpu half of this test: {e}");
            None
        }
        Err(e) => panic!("CI=true but no wgpu adapter: {e}"),
    }
}

fn values(t: &Tensor<AnyBackend>) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// `sum(sin(x) * x)` computed on `device` from `x` wherever it lives, and its gradient there.
fn check_round_trip(home: &AnyBackend, away: &AnyBackend) {
    let data = vec![0.5f32, -1.0, 2.0];
    let x = Tensor::var("x", Tensor::from_vec(data.clone(), [3], home).unwrap()).unwrap();
    let moved = x.to_backend(away).unwrap();
    assert_eq!(device(&moved), away.device());
    let y = moved.sin().unwrap().mul(&moved).unwrap();
    // Back home for the reduction: the gradient crosses both moves.
    let loss = y.to_backend(home).unwrap().sum_all().unwrap();
    let g = loss.backward().unwrap();
    let got = values(g.get(&x).unwrap());
    assert_eq!(device(g.get(&x).unwrap()), home.device());
    for (gi, xi) in got.iter().zip(&data) {
        let want = xi.sin() + xi * xi.cos();
        assert!((gi - want).abs() < 1e-5, "{gi} vs {want}");
    }
}

fn device(t: &Tensor<AnyBackend>) -> nabla_core::Device {
    t.backend().device()
}

#[test]
fn gradients_cross_device_moves_both_ways() {
    let cpu = AnyBackend::cpu();
    check_round_trip(&cpu, &AnyBackend::cpu());
    if let Some(gpu) = gpu() {
        check_round_trip(&cpu, &gpu);
        check_round_trip(&gpu, &cpu);
    }
}

#[test]
fn second_derivatives_cross_a_move() {
    let cpu = AnyBackend::cpu();
    let away = gpu().unwrap_or_else(AnyBackend::cpu);
    let x = Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu).unwrap();
    // d²/dx² of sum(x³) computed on the other device is diag(6x), back on the CPU.
    let h = hessian(|x: &Tensor<AnyBackend>| {
        x.to_backend(&away)?.pow(3.0)?.sum_all()?.to_backend(&cpu)
    })(&x)
    .unwrap();
    assert_eq!(h.to_vec::<f32>().unwrap(), vec![6.0, 0.0, 0.0, 12.0]);
}

#[test]
fn mixing_devices_in_one_op_is_an_error() {
    let Some(gpu) = gpu() else { return };
    let cpu = AnyBackend::cpu();
    let a = Tensor::ones([2], DType::F32, &cpu).unwrap();
    let b = Tensor::ones([2], DType::F32, &gpu).unwrap();
    let err = a.add(&b).unwrap_err().to_string();
    assert!(err.contains("cpu") && err.contains("wgpu"), "{err}");
}
