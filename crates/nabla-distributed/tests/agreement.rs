//! `check_agreement` and `DataParallel::new` on ranks that disagree, in a world of threads: every
//! rank ends with the same error naming the lowest differing rank and its first difference,
//! before any buffer of a disputed size moves.

use nabla_core::{Error, Result};
use nabla_cpu::CpuBackend;
use nabla_distributed::{
    Communicator, DEFAULT_BUCKET_BYTES, DataParallel, HostBuffer, Pending, check_agreement,
};
use nabla_nn::Param;
use nabla_nn::optim::{Optimizer, Sgd, SgdConfig};
use nabla_tensor::Tensor;
use std::sync::{Arc, Barrier, Mutex};

/// Ranks in threads of one process: each collective meets at a barrier, reads every rank's
/// buffer, and meets again before the slots are reused.
struct Group {
    barrier: Barrier,
    slots: Mutex<Vec<Option<HostBuffer>>>,
}

struct Local {
    rank: usize,
    group: Arc<Group>,
}

impl Local {
    /// Every rank's buffer of this collective, once all have arrived. Buffers of different kinds
    /// or lengths are an error, as the MPI communicator's size check makes them.
    fn exchange(&self, buffer: HostBuffer) -> Result<Vec<HostBuffer>> {
        self.group.slots.lock().unwrap()[self.rank] = Some(buffer);
        self.group.barrier.wait();
        let all: Vec<HostBuffer> = self
            .group
            .slots
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .cloned()
            .collect();
        self.group.barrier.wait();
        let same = all
            .iter()
            .all(|b| b.kind() == all[0].kind() && b.len() == all[0].len());
        if !same {
            return Err(Error::invalid("collective", "buffers of different sizes"));
        }
        Ok(all)
    }
}

impl Communicator for Local {
    fn rank(&self) -> usize {
        self.rank
    }
    fn world_size(&self) -> usize {
        self.group.slots.lock().unwrap().len()
    }
    fn local_rank(&self) -> usize {
        self.rank
    }
    fn describe(&self) -> String {
        format!("thread rank {}", self.rank)
    }
    fn all_reduce_sum(&self, buffer: HostBuffer) -> Result<Pending> {
        let all = self.exchange(buffer)?;
        let sum = match &all[0] {
            HostBuffer::U64(_) => HostBuffer::U64(
                (0..all[0].len())
                    .map(|i| {
                        all.iter()
                            .map(|b| if let HostBuffer::U64(v) = b { v[i] } else { 0 })
                            .sum()
                    })
                    .collect(),
            ),
            HostBuffer::F32(_) => HostBuffer::F32(
                (0..all[0].len())
                    .map(|i| {
                        all.iter()
                            .map(|b| {
                                if let HostBuffer::F32(v) = b {
                                    v[i]
                                } else {
                                    0.0
                                }
                            })
                            .sum()
                    })
                    .collect(),
            ),
            HostBuffer::F64(_) => HostBuffer::F64(
                (0..all[0].len())
                    .map(|i| {
                        all.iter()
                            .map(|b| {
                                if let HostBuffer::F64(v) = b {
                                    v[i]
                                } else {
                                    0.0
                                }
                            })
                            .sum()
                    })
                    .collect(),
            ),
        };
        Ok(Pending::ready("all_reduce", Ok(sum)))
    }
    fn broadcast(&self, buffer: HostBuffer, root: usize) -> Result<Pending> {
        let all = self.exchange(buffer)?;
        Ok(Pending::ready("broadcast", Ok(all[root].clone())))
    }
}

/// Runs `body` on each of `n` thread ranks and returns their results in rank order.
fn on_ranks<T: Send + 'static>(
    n: usize,
    body: impl Fn(Local) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let group = Arc::new(Group {
        barrier: Barrier::new(n),
        slots: Mutex::new(vec![None; n]),
    });
    let body = Arc::new(body);
    let threads: Vec<_> = (0..n)
        .map(|rank| {
            let (group, body) = (Arc::clone(&group), Arc::clone(&body));
            std::thread::spawn(move || body(Local { rank, group }))
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn record(epochs: u64, seed: u64) -> Vec<(String, String)> {
    vec![
        ("--model".into(), "cnn".into()),
        ("--epochs".into(), epochs.to_string()),
        ("--seed".into(), seed.to_string()),
    ]
}

#[test]
fn ranks_that_agree_pass() {
    let results = on_ranks(3, |comm| {
        check_agreement(&comm, "the options", &record(3, 0))
    });
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[test]
fn every_rank_names_the_lowest_differing_rank_and_its_first_difference() {
    let results = on_ranks(3, |comm| {
        let record = match comm.rank {
            0 => record(3, 0),
            1 => record(3, 7),
            _ => record(5, 9),
        };
        check_agreement(&comm, "the options", &record)
    });
    for result in results {
        let message = result.unwrap_err().to_string();
        assert!(
            message.contains(
                "the ranks disagree on the options: rank 1 has --seed = 7 where rank 0 has 0"
            ),
            "{message}"
        );
    }
}

#[test]
fn a_missing_entry_is_a_difference() {
    let results = on_ranks(2, |comm| {
        let mut record = record(3, 0);
        if comm.rank == 1 {
            record.pop();
        }
        check_agreement(&comm, "the options", &record)
    });
    for result in results {
        let message = result.unwrap_err().to_string();
        assert!(
            message.contains("rank 1 has --seed = (missing)"),
            "{message}"
        );
    }
}

#[test]
fn data_parallel_refuses_ranks_with_different_models() {
    let results = on_ranks(2, |comm| -> Result<()> {
        let cpu = CpuBackend::new();
        let rows = if comm.rank == 0 { 2 } else { 3 };
        let w = Param::new(Tensor::from_vec(vec![0.5f32; rows * 2], [rows, 2], &cpu)?)?;
        let sgd = Sgd::new(vec![w], SgdConfig::default())?;
        let inner: Box<dyn Optimizer<CpuBackend>> = Box::new(sgd);
        DataParallel::new(inner, Arc::new(comm), &[], DEFAULT_BUCKET_BYTES).map(|_| ())
    });
    for result in results {
        let message = result.unwrap_err().to_string();
        assert!(
            message.contains("the ranks disagree on the model: rank 1 has parameter 0 = [3, 2] float32 where rank 0 has [2, 2] float32"),
            "{message}"
        );
    }
}
