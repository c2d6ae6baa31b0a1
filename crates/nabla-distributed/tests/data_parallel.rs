//! `DataParallel` without MPI: in a world of one, and in a mirrored world of two ranks (the other
//! rank holding the same gradients, so that the averages equal them) it steps exactly as the
//! optimizer it wraps, whatever the buckets. Real two-rank jobs are tested under `mpirun` by
//! nabla-cli's `tests/distributed.rs`.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_distributed::{
    Communicator, DEFAULT_BUCKET_BYTES, DataParallel, HostBuffer, Pending, SingleProcess,
};
use nabla_nn::Param;
use nabla_nn::optim::{Adam, AdamConfig, Optimizer};
use nabla_tensor::Tensor;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Rank 0 of two ranks whose other rank always contributes what this one does: sums are doubled,
/// broadcasts return their input. Counts the all-reduces.
#[derive(Default)]
struct Mirror {
    reduces: AtomicUsize,
}

impl Communicator for Mirror {
    fn rank(&self) -> usize {
        0
    }
    fn world_size(&self) -> usize {
        2
    }
    fn local_rank(&self) -> usize {
        0
    }
    fn describe(&self) -> String {
        "a mirror".into()
    }
    fn all_reduce_sum(&self, buffer: HostBuffer) -> Result<Pending> {
        self.reduces.fetch_add(1, Ordering::Relaxed);
        let doubled = match buffer {
            HostBuffer::F32(v) => HostBuffer::F32(v.iter().map(|x| 2.0 * x).collect()),
            HostBuffer::F64(v) => HostBuffer::F64(v.iter().map(|x| 2.0 * x).collect()),
            HostBuffer::U64(v) => HostBuffer::U64(v.iter().map(|x| 2 * x).collect()),
        };
        Ok(Pending::ready("all_reduce", Ok(doubled)))
    }
    fn broadcast(&self, buffer: HostBuffer, _root: usize) -> Result<Pending> {
        Ok(Pending::ready("broadcast", Ok(buffer)))
    }
}

/// Three parameters of two dtypes and a loss using all of them.
fn params(cpu: &CpuBackend) -> Result<Vec<Param<CpuBackend>>> {
    Ok(vec![
        Param::new(Tensor::from_vec(
            vec![0.5f32, -1.0, 2.0, 0.25],
            [2, 2],
            cpu,
        )?)?,
        Param::new(Tensor::from_vec(vec![1.5f64, -0.5], [2], cpu)?)?,
        Param::new(Tensor::from_vec(vec![0.1f32, 0.2], [2], cpu)?)?,
    ])
}

fn loss(p: &[Param<CpuBackend>]) -> Result<Tensor<CpuBackend>> {
    let a = p[0].value().square()?.sum_all()?.cast(DType::F64)?;
    let b = p[1].value().sin()?.sum_all()?;
    let c = p[2].value().exp()?.sum_all()?.cast(DType::F64)?;
    a.mul(&b)?.add(&c)
}

fn values(p: &[Param<CpuBackend>]) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for q in p {
        out.extend(q.data().cast(DType::F64)?.to_vec::<f64>()?);
    }
    Ok(out)
}

fn adam(p: &[Param<CpuBackend>]) -> Result<Box<dyn Optimizer<CpuBackend>>> {
    let config = AdamConfig {
        lr: 0.1,
        ..Default::default()
    };
    Ok(Box::new(Adam::new(p.to_vec(), config)?))
}

#[test]
fn one_rank_steps_exactly_as_the_wrapped_optimizer_for_any_bucket_size() -> Result<()> {
    let cpu = CpuBackend::new();
    let plain_params = params(&cpu)?;
    let mut plain = adam(&plain_params)?;
    for _ in 0..5 {
        plain.backward_step(&loss(&plain_params)?)?;
    }
    let expected = values(&plain_params)?;
    let p = params(&cpu)?;
    let mut alone = DataParallel::new(adam(&p)?, Arc::new(SingleProcess), &[], 8)?;
    for _ in 0..5 {
        alone.backward_step(&loss(&p)?)?;
    }
    assert_eq!(values(&p)?, expected, "a world of one");
    for bucket_bytes in [1, 8, 20, DEFAULT_BUCKET_BYTES] {
        let p = params(&cpu)?;
        let mirror = Arc::new(Mirror::default());
        let mut dp = DataParallel::new(adam(&p)?, mirror.clone(), &[], bucket_bytes)?;
        // Construction checks that the ranks agree on the model (one all-reduce of its own).
        let at_start = mirror.reduces.load(Ordering::Relaxed);
        for _ in 0..5 {
            dp.backward_step(&loss(&p)?)?;
        }
        assert_eq!(values(&p)?, expected, "bucket_bytes {bucket_bytes}");
        let reduces = mirror.reduces.load(Ordering::Relaxed) - at_start;
        assert_eq!(reduces, 5 * dp.num_buckets());
        // One bucket per dtype run at most, one per parameter at least.
        let buckets = dp.num_buckets();
        assert!((2..=3).contains(&buckets), "{buckets} buckets");
        let t = dp.last_step();
        assert_eq!(t.bytes, 4 * 4 + 2 * 8 + 2 * 4);
        assert_eq!(t.buckets, buckets);
    }
    Ok(())
}

#[test]
fn step_and_accumulation_average_too() -> Result<()> {
    let cpu = CpuBackend::new();
    let plain_params = params(&cpu)?;
    let mut plain = adam(&plain_params)?;
    let p = params(&cpu)?;
    let mut dp = DataParallel::new(adam(&p)?, Arc::new(Mirror::default()), &[], 8)?;
    plain.step(&loss(&plain_params)?.backward()?)?;
    dp.step(&loss(&p)?.backward()?)?;
    assert_eq!(values(&p)?, values(&plain_params)?);
    for _ in 0..2 {
        plain.accumulate(&loss(&plain_params)?.backward()?)?;
        dp.accumulate(&loss(&p)?.backward()?)?;
    }
    plain.step_accumulated()?;
    dp.step_accumulated()?;
    assert_eq!(values(&p)?, values(&plain_params)?);
    Ok(())
}

#[test]
fn learning_rates_and_state_pass_through() -> Result<()> {
    let cpu = CpuBackend::new();
    let p = params(&cpu)?;
    let mut dp = DataParallel::new(adam(&p)?, Arc::new(SingleProcess), &[], 64)?;
    dp.set_lr(0, 0.01);
    assert_eq!(dp.lr(0), 0.01);
    assert_eq!(dp.inner().lr(0), 0.01);
    dp.backward_step(&loss(&p)?)?;
    let state = dp.state_dict();
    let mut other = DataParallel::new(adam(&p)?, Arc::new(SingleProcess), &[], 64)?;
    other.load_state_dict(&state)?;
    assert_eq!(other.lr(0), 0.01);
    Ok(())
}

#[test]
fn bad_settings_and_parameters_are_errors() -> Result<()> {
    let cpu = CpuBackend::new();
    let p = params(&cpu)?;
    let err = DataParallel::new(adam(&p)?, Arc::new(SingleProcess), &[], 0)
        .err()
        .expect("a zero bucket size is refused");
    assert!(err.to_string().contains("bucket_bytes"), "{err}");
    let complex = Param::new(Tensor::zeros([2], DType::C64, &cpu)?)?;
    let sgd = nabla_nn::optim::Sgd::new(vec![complex], Default::default())?;
    let err = DataParallel::new(Box::new(sgd), Arc::new(SingleProcess), &[], 64)
        .err()
        .expect("complex parameters are refused");
    assert!(err.to_string().contains("complex64"), "{err}");
    Ok(())
}

#[test]
fn buffers_of_every_real_dtype_are_broadcast_and_complex_ones_refused() -> Result<()> {
    let cpu = CpuBackend::new();
    let p = params(&cpu)?;
    let buffers = vec![
        Param::buffer(Tensor::from_vec(vec![3i64, -4], [2], &cpu)?),
        Param::buffer(Tensor::from_vec(vec![true, false], [2], &cpu)?),
        Param::buffer(Tensor::from_vec(vec![0.5f64], [1], &cpu)?),
        Param::buffer(Tensor::from_vec(vec![7u8], [1], &cpu)?),
    ];
    // The mirror's broadcast hands back what it was given: the values survive the round trip.
    let mut dp = DataParallel::new(adam(&p)?, Arc::new(Mirror::default()), &buffers, 64)?;
    dp.backward_step(&loss(&p)?)?;
    assert_eq!(buffers[0].data().to_vec::<i64>()?, vec![3, -4]);
    assert_eq!(buffers[1].data().to_vec::<bool>()?, vec![true, false]);
    assert_eq!(buffers[2].data().to_vec::<f64>()?, vec![0.5]);
    assert_eq!(buffers[3].data().to_vec::<u8>()?, vec![7]);
    let complex = Param::buffer(Tensor::zeros([1], DType::C128, &cpu)?);
    let err = DataParallel::new(adam(&p)?, Arc::new(Mirror::default()), &[complex], 64)
        .err()
        .expect("complex buffers are refused");
    assert!(err.to_string().contains("cannot broadcast"), "{err}");
    Ok(())
}
