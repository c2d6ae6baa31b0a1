//! DataLoader, Dataset, Subset, random_split and collate.

use nabla_core::{DType, Error, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_data::{Collate, DataLoader, Dataset, Subset, TensorDataset, random_split};
use nabla_tensor::Tensor;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Rows `[i, 10 i]` (f32) with label `i` (i64).
fn rows(n: usize) -> TensorDataset<CpuBackend> {
    let cpu = CpuBackend::new();
    let x: Vec<f32> = (0..n).flat_map(|i| [i as f32, 10.0 * i as f32]).collect();
    let y: Vec<i64> = (0..n as i64).collect();
    TensorDataset::new(vec![
        Tensor::from_vec(x, [n, 2], &cpu).unwrap(),
        Tensor::from_vec(y, [n], &cpu).unwrap(),
    ])
    .unwrap()
}

/// The labels of every batch of one epoch.
fn epoch_labels(
    loader: &mut DataLoader<TensorDataset<CpuBackend>, Vec<Tensor<CpuBackend>>>,
) -> Vec<Vec<i64>> {
    loader
        .iter()
        .map(|b| b.and_then(|b| b[1].to_vec::<i64>()))
        .collect::<Result<_>>()
        .unwrap()
}

#[test]
fn batches_in_order_with_remainder() {
    let mut loader = DataLoader::new(rows(7), 3).unwrap();
    assert_eq!(loader.len(), 3);
    let batches: Vec<_> = loader.iter().collect::<Result<_>>().unwrap();
    assert_eq!(batches.len(), 3);
    assert_eq!(batches[0][0].shape(), &[3, 2]);
    assert_eq!(batches[0][0].dtype(), DType::F32);
    assert_eq!(batches[2][0].to_vec::<f32>().unwrap(), vec![6.0, 60.0]);
    assert_eq!(batches[2][1].to_vec::<i64>().unwrap(), vec![6]);
}

#[test]
fn drop_last_drops_the_short_batch() {
    let mut loader = DataLoader::new(rows(7), 3).unwrap().drop_last(true);
    assert_eq!(loader.len(), 2);
    assert_eq!(
        epoch_labels(&mut loader),
        vec![vec![0, 1, 2], vec![3, 4, 5]]
    );
    let mut exact = DataLoader::new(rows(6), 3).unwrap().drop_last(true);
    assert_eq!(exact.len(), 2);
    assert_eq!(epoch_labels(&mut exact).len(), 2);
}

#[test]
fn zero_batch_size_is_an_error() {
    assert!(DataLoader::new(rows(3), 0).is_err());
}

#[test]
fn shuffling_is_a_seeded_permutation_that_changes_each_epoch() {
    let mut a = DataLoader::new(rows(50), 8).unwrap().shuffle(true).seed(3);
    let mut b = DataLoader::new(rows(50), 8).unwrap().shuffle(true).seed(3);
    let a1 = epoch_labels(&mut a);
    let a2 = epoch_labels(&mut a);
    assert_eq!(a1, epoch_labels(&mut b), "same seed, same first epoch");
    assert_eq!(a2, epoch_labels(&mut b), "same seed, same second epoch");
    assert_ne!(a1, a2, "a new order each epoch");
    let mut all: Vec<i64> = a1.concat();
    all.sort();
    assert_eq!(all, (0..50).collect::<Vec<_>>());
    let mut c = DataLoader::new(rows(50), 8).unwrap().shuffle(true).seed(4);
    assert_ne!(a1, epoch_labels(&mut c));
    assert_eq!(a.epochs_started(), 2);
    // Resuming from a saved generator state reproduces the next epoch.
    let g = a.current_generator().clone();
    let mut resumed = DataLoader::new(rows(50), 8)
        .unwrap()
        .shuffle(true)
        .generator(g);
    assert_eq!(epoch_labels(&mut a), epoch_labels(&mut resumed));
}

#[test]
fn workers_equal_inline() {
    for workers in [1, 2, 3, 8] {
        let mut inline = DataLoader::new(rows(37), 4).unwrap().shuffle(true).seed(9);
        let mut threaded = DataLoader::new(rows(37), 4)
            .unwrap()
            .shuffle(true)
            .seed(9)
            .num_workers(workers)
            .prefetch_factor(1);
        for _ in 0..2 {
            let x: Vec<_> = inline.iter().collect::<Result<_>>().unwrap();
            let y: Vec<_> = threaded.iter().collect::<Result<_>>().unwrap();
            assert_eq!(x.len(), y.len());
            for (bx, by) in x.iter().zip(&y) {
                assert_eq!(
                    bx[0].to_vec::<f32>().unwrap(),
                    by[0].to_vec::<f32>().unwrap()
                );
                assert_eq!(
                    bx[1].to_vec::<i64>().unwrap(),
                    by[1].to_vec::<i64>().unwrap()
                );
            }
        }
    }
}

/// A data set that counts its `get` calls and fails (or panics) on chosen indices.
struct Probe {
    len: usize,
    fail_at: Option<usize>,
    panic_at: Option<usize>,
    gets: Arc<AtomicUsize>,
}

impl Dataset for Probe {
    type Item = (Tensor<CpuBackend>,);
    fn len(&self) -> usize {
        self.len
    }
    fn get(&self, i: usize) -> Result<Self::Item> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        if Some(i) == self.fail_at {
            return Err(Error::invalid("Probe", format!("bad example {i}")));
        }
        if Some(i) == self.panic_at {
            panic!("probe panicked at {i}");
        }
        Ok((Tensor::from_vec(vec![i as i64], [], &CpuBackend::new())?,))
    }
}

fn probe(len: usize, fail_at: Option<usize>, panic_at: Option<usize>) -> (Probe, Arc<AtomicUsize>) {
    let gets = Arc::new(AtomicUsize::new(0));
    let p = Probe {
        len,
        fail_at,
        panic_at,
        gets: Arc::clone(&gets),
    };
    (p, gets)
}

#[test]
fn errors_and_panics_become_err_items() {
    for workers in [0, 2] {
        let (p, _) = probe(10, Some(4), Some(8));
        let mut loader = DataLoader::new(p, 2).unwrap().num_workers(workers);
        let results: Vec<_> = loader.iter().collect();
        assert_eq!(results.len(), 5);
        let ok: Vec<bool> = results.iter().map(|r| r.is_ok()).collect();
        assert_eq!(ok, vec![true, true, false, true, false]);
        let e2 = results[2].as_ref().err().unwrap().to_string();
        assert!(e2.contains("bad example 4"), "{e2}");
        let e4 = results[4].as_ref().err().unwrap().to_string();
        assert!(
            e4.contains("panicked") && e4.contains("probe panicked at 8"),
            "{e4}"
        );
        assert_eq!(
            results[3].as_ref().unwrap().0.to_vec::<i64>().unwrap(),
            vec![6, 7]
        );
    }
}

#[test]
fn dropping_mid_epoch_stops_workers() {
    let (p, gets) = probe(10_000, None, None);
    let mut loader = DataLoader::new(p, 10)
        .unwrap()
        .num_workers(3)
        .prefetch_factor(2);
    {
        let mut it = loader.iter();
        assert!(it.next().unwrap().is_ok());
        // `it` is dropped here: workers are told to stop and joined.
    }
    let after_drop = gets.load(Ordering::SeqCst);
    // At most (prefetch + one in hand + one in flight) batches per worker were loaded.
    assert!(
        after_drop <= 3 * 4 * 10 + 10,
        "{after_drop} examples loaded"
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        gets.load(Ordering::SeqCst),
        after_drop,
        "workers kept running"
    );
    // The loader still works afterwards.
    assert_eq!(loader.iter().count(), 1000);
}

#[test]
fn subset_and_random_split() {
    let s = Subset::new(rows(10), vec![9, 0, 4]).unwrap();
    assert_eq!(s.len(), 3);
    assert_eq!(s.get(0).unwrap()[1].item::<i64>().unwrap(), 9);
    assert!(s.get(3).is_err());
    assert!(Subset::new(rows(10), vec![10]).is_err());

    let parts = random_split(rows(20), &[15, 5], &mut Generator::new(1)).unwrap();
    let again = random_split(rows(20), &[15, 5], &mut Generator::new(1)).unwrap();
    assert_eq!(parts[0].indices(), again[0].indices());
    let mut all: Vec<usize> = parts.iter().flat_map(|p| p.indices().to_vec()).collect();
    all.sort();
    assert_eq!(all, (0..20).collect::<Vec<_>>());
    assert!(random_split(rows(20), &[15, 4], &mut Generator::new(1)).is_err());
    // Subsets feed a loader.
    let mut loader = DataLoader::new(parts[1].clone(), 2).unwrap();
    assert_eq!(loader.iter().count(), 3);
}

#[test]
fn collate_variants() {
    let cpu = CpuBackend::new();
    let t = |v: f32| Tensor::from_vec(vec![v, v], [2], &cpu).unwrap();
    let (a, b, c) =
        Collate::collate(vec![(t(1.0), t(2.0), t(3.0)), (t(4.0), t(5.0), t(6.0))]).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 1.0, 4.0, 4.0]);
    assert_eq!((b.shape(), c.shape()), (&[2usize, 2][..], &[2usize, 2][..]));
    let ragged = Collate::collate(vec![vec![t(1.0)], vec![t(1.0), t(2.0)]]);
    assert!(ragged.is_err());
    let mismatched = <Tensor<CpuBackend> as Collate>::collate(vec![
        t(1.0),
        Tensor::from_vec(vec![1.0f32], [1], &cpu).unwrap(),
    ]);
    assert!(mismatched.is_err());
}

#[test]
fn custom_collate_and_map() {
    let ds = rows(6).map(|row| Ok(row[1].item::<i64>()? * 2));
    let mut loader = DataLoader::new(rows(6), 4)
        .unwrap()
        .with_collate(|items: Vec<Vec<Tensor<CpuBackend>>>| Ok(items.len()));
    assert_eq!(
        loader.iter().collect::<Result<Vec<_>>>().unwrap(),
        vec![4, 2]
    );
    assert_eq!(ds.get(5).unwrap(), 10);
    assert_eq!(ds.len(), 6);
}

#[test]
fn tensor_dataset_checks_shapes() {
    let cpu = CpuBackend::new();
    let a = Tensor::zeros([3, 2], DType::F32, &cpu).unwrap();
    let b = Tensor::zeros([4], DType::F32, &cpu).unwrap();
    let err = TensorDataset::new(vec![a, b]).err().unwrap().to_string();
    assert!(err.contains("[3, 2]") && err.contains("[4]"), "{err}");
    assert!(TensorDataset::<CpuBackend>::new(vec![]).is_err());
    assert!(rows(3).get(3).is_err());
}
