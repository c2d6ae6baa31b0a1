//! `Checkpointed` modules and `Sequential::checkpoint_each`: the same gradients bit for bit as the
//! plain chain (dropout masks and batch-norm statistics included), and a lower peak memory.

use nabla_core::{DType, Generator, MemoryTracked, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::activation::Tanh;
use nabla_nn::{BatchNorm1d, Dropout, Forward, Linear, Module, Sequential};
use nabla_tensor::Tensor;

fn chain<B: nabla_core::Backend>(width: usize, depth: usize, backend: &B) -> Result<Sequential<B>> {
    let mut rng = Generator::new(4);
    let mut model = Sequential::new();
    for _ in 0..depth {
        let block = Sequential::new()
            .push(Linear::new(
                width,
                4 * width,
                true,
                DType::F64,
                &mut rng,
                backend,
            )?)
            .push(Tanh)
            .push(Dropout::new(0.25, &mut rng)?)
            .push(Linear::new(
                4 * width,
                width,
                true,
                DType::F64,
                &mut rng,
                backend,
            )?)
            .push(BatchNorm1d::new(
                width,
                1e-5,
                Some(0.1),
                true,
                true,
                DType::F64,
                backend,
            )?)
            .push(Tanh);
        model = model.push(block);
    }
    Ok(model)
}

/// Every parameter's gradient and every buffer after one step, and the output of a second forward
/// (which shows the dropout generators advanced alike).
fn step(model: &Sequential<CpuBackend>, x: &Tensor<CpuBackend>) -> Result<Vec<Vec<f64>>> {
    let grads = model.forward(x)?.square()?.sum_all()?.backward()?;
    let mut out = Vec::new();
    for p in model.parameters() {
        let g = p.grad(&grads).expect("every parameter gets a gradient");
        out.push(g.to_vec::<f64>()?);
    }
    for (_, b) in model.named_buffers() {
        out.push(b.data().cast(DType::F64)?.to_vec::<f64>()?);
    }
    out.push(model.forward(x)?.to_vec::<f64>()?);
    Ok(out)
}

#[test]
fn checkpointed_blocks_match_the_plain_chain_bit_for_bit() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = Tensor::from_vec(
        (0..48).map(|i| (i as f64 / 7.0).sin()).collect(),
        [6, 8],
        &cpu,
    )?;
    let plain = step(&chain(8, 3, &cpu)?, &x)?;
    let checkpointed = chain(8, 3, &cpu)?.checkpoint_each();
    assert_eq!(checkpointed.named_parameters()[0].0, "0.0.weight");
    assert_eq!(step(&checkpointed, &x)?, plain);
    Ok(())
}

#[test]
fn checkpoint_each_cuts_the_peak_memory_of_a_deep_chain() -> Result<()> {
    let peak = |checkpointed: bool| -> Result<usize> {
        let mem = MemoryTracked::new(CpuBackend::new());
        let model = chain(32, 16, &mem)?;
        let model = if checkpointed {
            model.checkpoint_each()
        } else {
            model
        };
        let x = Tensor::ones([1024, 32], DType::F64, &mem)?;
        mem.reset_peak();
        let grads = model.forward(&x)?.square()?.sum_all()?.backward()?;
        assert!(model.parameters().iter().all(|p| p.grad(&grads).is_some()));
        drop(grads);
        Ok(mem.stats().peak_bytes)
    };
    let (plain, checkpointed) = (peak(false)?, peak(true)?);
    assert!(
        checkpointed * 10 <= plain * 4,
        "checkpointed peak {checkpointed} vs plain {plain}"
    );
    Ok(())
}

#[test]
fn a_rerun_keeps_the_first_runs_training_mode_and_rejects_replaced_weights() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = Tensor::from_vec(
        (0..48).map(|i| (i as f64 / 5.0).cos()).collect(),
        [6, 8],
        &cpu,
    )?;
    let plain = chain(8, 2, &cpu)?;
    let want = plain.forward(&x)?.square()?.sum_all()?.backward()?;
    let mut model = chain(8, 2, &cpu)?.checkpoint_each();
    let loss = model.forward(&x)?.square()?.sum_all()?;
    // Evaluation in between (no dropout, running statistics) must not change this step's gradients.
    model.set_training(false);
    model.forward(&x)?;
    let got = loss.backward()?;
    for (p, q) in model.parameters().iter().zip(plain.parameters()) {
        assert_eq!(
            p.grad(&got).map(|g| g.to_vec::<f64>()).transpose()?,
            q.grad(&want).map(|g| g.to_vec::<f64>()).transpose()?
        );
    }
    model.set_training(true);
    let loss = model.forward(&x)?.square()?.sum_all()?;
    let first = &model.parameters()[0];
    first.set(first.data().mul(0.5)?)?;
    let err = loss.backward().unwrap_err().to_string();
    assert!(
        err.contains("replaced between its forward pass and backward"),
        "{err}"
    );
    Ok(())
}
