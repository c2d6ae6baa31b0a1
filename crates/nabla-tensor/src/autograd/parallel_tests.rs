//! The reverse pass on two threads gives bitwise the gradients, sink order and errors of the
//! sequential pass, on graphs whose nodes receive several contributions in an order that matters.

use super::{LANE_JOBS, ParallelBackward, lane_contributions};
use crate::autograd::accumulate::Cotangent;
use crate::autograd::pass::{Contribution, Pass, Walk};
use crate::{BackwardOptions, Tensor};
use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use proptest::prelude::*;

type T = Tensor<CpuBackend>;

/// A variable of `shape` with smooth, distinct values (`seed` picks which).
fn var(name: &str, shape: &[usize], seed: f64) -> Result<T> {
    let n: usize = shape.iter().product();
    let values = (0..n).map(|i| ((i as f64 * 0.37 + seed).sin() * 0.8) as f32);
    let data = Tensor::from_vec(values.collect(), shape.to_vec(), &CpuBackend::new())?;
    Tensor::var(name, data)
}

fn bits(t: &T) -> Result<Vec<u64>> {
    let values = t.cast(DType::F64)?.to_vec::<f64>()?;
    Ok(values.into_iter().map(f64::to_bits).collect())
}

fn in_two_threads<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool of two threads");
    pool.install(f)
}

/// The gradients of the scalar `build` makes (with its variables) from one sequential pass and one
/// pass sending every ready op node to the second lane, both in one two-thread pool: asserts they are bitwise equal and
/// returns how many nodes the second pass ran on the second lane.
fn assert_same_bits(build: impl Fn() -> Result<(T, Vec<T>)> + Send + Sync) -> usize {
    in_two_threads(|| {
        let run = |parallel| -> Result<Vec<Vec<u64>>> {
            let (y, vars) = build()?;
            let opts = BackwardOptions {
                parallel,
                ..Default::default()
            };
            let grads = y.backward_opts(None, opts)?;
            vars.iter().map(|v| bits(&grads.get_or_zeros(v)?)).collect()
        };
        let sequential = run(ParallelBackward::Off).expect("sequential pass");
        let before = LANE_JOBS.with(|p| p.get());
        let paired = run(ParallelBackward::MinElements(1)).expect("paired pass");
        assert_eq!(
            sequential, paired,
            "gradients differ from the sequential pass"
        );
        LANE_JOBS.with(|p| p.get()) - before
    })
}

/// Multi-head attention with per-head projections: 12 products of `x`, whose cotangent sums them.
fn heads() -> Result<(T, Vec<T>)> {
    let x = var("x", &[16, 24], 0.1)?;
    let wo = var("wo", &[32, 24], 0.2)?;
    let mut vars = vec![x.clone(), wo.clone()];
    let mut outs = Vec::new();
    for h in 0..4 {
        let seed = h as f64;
        let (wq, wk, wv) = (
            var(&format!("wq{h}"), &[24, 8], seed + 0.3)?,
            var(&format!("wk{h}"), &[24, 8], seed + 0.4)?,
            var(&format!("wv{h}"), &[24, 8], seed + 0.5)?,
        );
        let (q, k, v) = (x.matmul(&wq)?, x.matmul(&wk)?, x.matmul(&wv)?);
        let scores = q.matmul(&k.t()?)?.mul(0.35)?.softmax(-1)?;
        outs.push(scores.matmul(&v)?);
        vars.extend([wq, wk, wv]);
    }
    let joined = Tensor::cat(&outs.iter().collect::<Vec<_>>(), 1)?;
    Ok((joined.matmul(&wo)?.tanh()?.sum_all()?, vars))
}

#[test]
fn per_head_attention_runs_two_lanes_and_keeps_the_bits() {
    let lane_jobs = assert_same_bits(heads);
    assert!(
        lane_jobs >= 4,
        "only {lane_jobs} nodes ran on the second lane"
    );
}

#[test]
fn many_branches_into_one_node_keep_their_order() {
    let lane_jobs = assert_same_bits(|| {
        let x = var("x", &[12, 12], 0.7)?;
        let branches = [
            x.exp()?.mul(0.1)?,
            x.sin()?.mul(&x)?,
            x.matmul(&x)?.tanh()?,
            x.t()?.sigmoid()?,
            x.mul(&x)?.mul(&x)?,
            x.matmul(&x.t()?)?.cos()?,
        ];
        let mut total = branches[0].clone();
        for b in &branches[1..] {
            total = total.add(b)?;
        }
        Ok((total.sum_all()?, vec![x]))
    });
    assert!(lane_jobs > 0);
}

#[test]
fn slices_half_precision_and_untracked_branches_keep_the_bits() {
    let lane_jobs = assert_same_bits(|| {
        let x = var("x", &[8, 40], 0.2)?;
        let w = var("w", &[8, 40], 0.9)?;
        let pieces = x.split(10, 1)?;
        let mut parts = Vec::new();
        for (k, p) in pieces.iter().enumerate() {
            let part = match k % 4 {
                0 => p.tanh()?,
                1 => p.cast(DType::F16)?.cast(DType::F32)?.mul(2.0)?.exp()?,
                2 => p.mul(p.detach())?,
                _ => p.sin()?.mul(&x.narrow(1, 5, 10)?)?,
            };
            parts.push(part);
        }
        let joined = Tensor::cat(&parts.iter().collect::<Vec<_>>(), 1)?;
        let y = joined.mul(&w)?.add(&x.mul(w.detach())?)?.sum_all()?;
        Ok((y, vec![x, w]))
    });
    assert!(lane_jobs > 0);
}

#[test]
fn a_node_with_many_inputs_delivers_to_each_in_order() {
    let lane_jobs = assert_same_bits(|| {
        let x = var("x", &[6, 6], 0.4)?;
        let w = var("w", &[6, 6], 0.8)?;
        // 48 branches, each reading x twice (`x * x`-like) and w once, joined by one `cat`.
        let branches = (0..48)
            .map(|k| {
                let scaled = x.mul(0.1 * k as f64)?;
                scaled.mul(&x)?.matmul(&w)?.tanh()
            })
            .collect::<Result<Vec<_>>>()?;
        let joined = Tensor::cat(&branches.iter().collect::<Vec<_>>(), 0)?;
        Ok((joined.sum_all()?, vec![x, w]))
    });
    assert!(lane_jobs > 10);
}

#[test]
fn two_recurrences_sharing_a_weight_keep_the_bits() {
    let lane_jobs = assert_same_bits(|| {
        let w = var("w", &[16, 16], 0.3)?;
        let (mut h, mut g) = (var("h0", &[4, 16], 0.5)?, var("g0", &[4, 16], 0.6)?);
        for _ in 0..6 {
            h = h.matmul(&w)?.tanh()?;
            g = g.matmul(&w.t()?)?.sigmoid()?;
        }
        Ok((h.add(&g)?.sum_all()?, vec![w]))
    });
    assert!(lane_jobs > 0);
}

#[test]
fn gradients_reach_the_sink_in_the_sequential_order() {
    // Each variable's gradient, by its place among the model's variables, in the order they come.
    let sunk = |parallel| {
        in_two_threads(|| -> Result<Vec<(usize, Vec<u64>)>> {
            let (y, vars) = heads()?;
            let place = |id| vars.iter().position(|v| v.node_id() == Some(id));
            let mut seen = Vec::new();
            let opts = BackwardOptions {
                parallel,
                ..Default::default()
            };
            super::super::backward::stream_backward(
                &y,
                y.full_like(1.0)?,
                super::super::backward::Targets::Leaves,
                opts,
                None,
                &mut |node, grad| {
                    seen.push((place(node.id).expect("a model variable"), bits(&grad)?));
                    Ok(())
                },
            )?;
            Ok(seen)
        })
        .expect("pass")
    };
    let (sequential, paired) = (
        sunk(ParallelBackward::Off),
        sunk(ParallelBackward::MinElements(1)),
    );
    assert_eq!(sequential.len(), 14);
    let order = |s: &[(usize, Vec<u64>)]| s.iter().map(|(k, _)| *k).collect::<Vec<_>>();
    assert_eq!(order(&sequential), order(&paired));
    assert_eq!(sequential, paired);
}

#[test]
fn a_released_branch_fails_as_in_the_sequential_pass() {
    let message = |parallel| {
        in_two_threads(|| {
            let (x, w) = (
                var("x", &[8, 8], 0.1).unwrap(),
                var("w", &[8, 8], 0.2).unwrap(),
            );
            let left = x.matmul(&w).unwrap().tanh().unwrap();
            let right = x.mul(&w).unwrap().exp().unwrap();
            // Differentiating `right` alone frees its saved values; the second pass meets them.
            right.sum_all().unwrap().backward().unwrap();
            let y = left.add(&right).unwrap().sum_all().unwrap();
            let opts = BackwardOptions {
                parallel,
                ..Default::default()
            };
            y.backward_opts(None, opts).unwrap_err().to_string()
        })
    };
    let sequential = message(ParallelBackward::Off);
    assert!(
        sequential.contains("already differentiated"),
        "{sequential}"
    );
    assert_eq!(sequential, message(ParallelBackward::MinElements(1)));
}

#[test]
fn retained_graphs_and_recorded_passes_stay_sequential_where_they_must() {
    in_two_threads(|| -> Result<()> {
        let (y, vars) = heads()?;
        let retain = BackwardOptions {
            retain_graph: true,
            parallel: ParallelBackward::MinElements(1),
            ..Default::default()
        };
        let before = LANE_JOBS.with(|p| p.get());
        let first = y.backward_opts(None, retain)?;
        let second = y.backward_opts(None, retain)?;
        assert!(
            LANE_JOBS.with(|p| p.get()) > before,
            "a retained graph uses the second lane"
        );
        for v in &vars {
            assert_eq!(bits(first.get(v).unwrap())?, bits(second.get(v).unwrap())?);
        }
        let recorded = BackwardOptions {
            create_graph: true,
            ..retain
        };
        let before = LANE_JOBS.with(|p| p.get());
        y.backward_opts(None, recorded)?;
        assert_eq!(
            LANE_JOBS.with(|p| p.get()),
            before,
            "create_graph runs on one thread"
        );
        Ok(())
    })
    .expect("passes");
    // Outside a pool (a test thread) the pass runs on one thread.
    let before = LANE_JOBS.with(|p| p.get());
    let (y, _) = heads().expect("graph");
    let opts = BackwardOptions {
        parallel: ParallelBackward::MinElements(1),
        ..Default::default()
    };
    y.backward_opts(None, opts).expect("pass");
    assert_eq!(LANE_JOBS.with(|p| p.get()), before);
}

/// One step of a random graph: `kind` picks the op, `a` and `b` earlier values.
fn random_step(values: &[T], kind: u8, a: usize, b: usize) -> Result<T> {
    let (x, y) = (&values[a % values.len()], &values[b % values.len()]);
    match kind % 7 {
        0 => x.add(y),
        1 => x.mul(y)?.mul(0.5),
        2 => x.tanh(),
        3 => x.matmul(y)?.mul(0.2),
        4 => x.t()?.sub(y),
        5 => pad_rows(&x.narrow(0, 2, 4)?.sin()?, x),
        _ => x.sigmoid()?.mul(&x.exp()?.mul(0.1)?),
    }
}

/// `rows` (4 rows of `like`'s 8) placed into rows 2..6 of a tensor shaped like `like`, plus `like`:
/// slices' cotangents meeting dense ones.
fn pad_rows(rows: &T, like: &T) -> Result<T> {
    let zeros = like.narrow(0, 0, 2)?.mul(0.0)?;
    let lower = like.narrow(0, 6, 2)?;
    Tensor::cat(&[&zeros, rows, &lower], 0)?.add(like)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_graphs_keep_the_bits(steps in prop::collection::vec((0u8..7, 0usize..64, 0usize..64), 4..24)) {
        assert_same_bits(|| {
            let inputs = [var("a", &[8, 8], 0.1)?, var("b", &[8, 8], 0.2)?, var("c", &[8, 8], 0.3)?];
            let mut values = inputs.to_vec();
            for &(kind, a, b) in &steps {
                let next = random_step(&values, kind, a, b)?;
                values.push(next);
            }
            let mut total = values[3].sum_all()?;
            for v in &values[4..] {
                total = total.add(&v.sum_all()?)?;
            }
            Ok((total, inputs.to_vec()))
        });
    }
}

#[test]
fn a_lane_job_ignores_anomaly_detection_on_the_thread_that_takes_it() {
    // A pool thread inside `detect_anomaly` (another pass, waiting in a kernel) may take the lane's
    // job. The job must still make what the driver would: here the deferred product of a thin
    // matrix product, which anomaly detection would turn into a dense contribution.
    let (x, w) = (
        var("x", &[4, 8], 0.1).unwrap(),
        var("w", &[8, 8], 0.2).unwrap(),
    );
    let y = x.matmul(&w).unwrap();
    let node = y.ad.clone().expect("tracked");
    let graph = Walk::new(&node, &|n| matches!(n.kind, super::NodeKind::Leaf { .. }));
    let needs = [
        Some(graph.slot(x.ad.as_ref().unwrap())),
        Some(graph.slot(w.ad.as_ref().unwrap())),
    ];
    let pass = Pass {
        retain: true,
        create_graph: false,
        ext: None,
    };
    let seed = Cotangent::from_seed(y.full_like(1.0).unwrap());
    let made = crate::detect_anomaly(|| lane_contributions(&pass, &node, seed, &needs)).unwrap();
    let products = made
        .iter()
        .filter(|c| matches!(c, Contribution::Product { .. }))
        .count();
    assert_eq!(
        products, 1,
        "the weight's contribution stays a deferred product"
    );
}
