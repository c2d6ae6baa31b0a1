//! `DataLoader`: batching, seeded shuffling and background prefetching.

use crate::dataset::{Collate, Dataset, random_permutation};
use crate::sampler::DistributedSampler;
use nabla_core::{Error, Generator, Result};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// A function that stacks examples into a batch.
type CollateFn<I, O> = Arc<dyn Fn(Vec<I>) -> Result<O> + Send + Sync>;

/// Loads the batch with the given example indices.
type LoadFn<O> = Arc<dyn Fn(&[usize]) -> Result<O> + Send + Sync>;

/// Iterates over a [`Dataset`] in batches, like PyTorch's `torch.utils.data.DataLoader`.
///
/// Each call to [`DataLoader::iter`] is one epoch. With `shuffle(true)` every epoch visits the
/// examples in a new order drawn from the loader's seeded [`Generator`], so a run is reproducible
/// from its seed. With `num_workers(k)` for `k > 0`, `k` background threads load and collate batches
/// ahead of the consumer (at most `prefetch_factor` batches waiting per worker); batches still come
/// out in order and equal those of `num_workers(0)`, which loads inline. Errors (and panics) in a
/// data set are returned as `Err` items; dropping the iterator mid-epoch stops its workers.
///
/// ```
/// use nabla_cpu::CpuBackend;
/// use nabla_data::{DataLoader, TensorDataset};
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let x = Tensor::arange(0.0, 10.0, 1.0, nabla_core::DType::F32, &cpu)?.reshape([5, 2])?;
/// let ds = TensorDataset::new(vec![x])?;
/// let mut loader = DataLoader::new(ds, 2)?.drop_last(true).num_workers(2);
/// let batches = loader.iter().collect::<Result<Vec<_>, _>>()?;
/// assert_eq!(batches.len(), 2);
/// assert_eq!(batches[1][0].to_vec::<f32>()?, vec![4.0, 5.0, 6.0, 7.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct DataLoader<D: Dataset, O> {
    dataset: Arc<D>,
    collate: CollateFn<D::Item, O>,
    batch_size: usize,
    shuffle: bool,
    drop_last: bool,
    num_workers: usize,
    prefetch_factor: usize,
    generator: Generator,
    epoch: u64,
    sampler: Option<DistributedSampler>,
}

impl<D> DataLoader<D, <D::Item as Collate>::Batch>
where
    D: Dataset,
    D::Item: Collate + 'static,
{
    /// A loader of batches of `batch_size` examples, collated with [`Collate`]; no shuffling,
    /// `drop_last = false`, no workers. Fails if `batch_size` is 0.
    pub fn new(dataset: D, batch_size: usize) -> Result<Self> {
        if batch_size == 0 {
            return Err(Error::invalid(
                "DataLoader::new",
                "batch_size must be at least 1, got 0",
            ));
        }
        Ok(DataLoader {
            dataset: Arc::new(dataset),
            collate: Arc::new(<D::Item as Collate>::collate),
            batch_size,
            shuffle: false,
            drop_last: false,
            num_workers: 0,
            prefetch_factor: 2,
            generator: Generator::new(0),
            epoch: 0,
            sampler: None,
        })
    }
}

impl<D: Dataset, O> DataLoader<D, O> {
    /// Whether each epoch visits the examples in a new random order (default `false`).
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }

    /// Seeds the shuffling generator (default seed 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.generator = Generator::new(seed);
        self
    }

    /// Uses `generator` for shuffling, e.g. one restored from a checkpoint.
    pub fn generator(mut self, generator: Generator) -> Self {
        self.generator = generator;
        self
    }

    /// Whether to drop the last batch of an epoch when it is smaller than `batch_size` (default `false`).
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// Loads only this rank's share of each epoch in data-parallel training (see
    /// [`DistributedSampler`]); the shuffling generator must be seeded alike on every rank.
    pub fn distributed(mut self, sampler: DistributedSampler) -> Self {
        self.sampler = Some(sampler);
        self
    }

    /// The sampler of [`DataLoader::distributed`], if any.
    pub fn sampler(&self) -> Option<&DistributedSampler> {
        self.sampler.as_ref()
    }

    /// Background threads that load batches; 0 (the default) loads inline in the consumer's thread.
    pub fn num_workers(mut self, num_workers: usize) -> Self {
        self.num_workers = num_workers;
        self
    }

    /// Batches each worker may load ahead (default 2; values below 1 count as 1).
    pub fn prefetch_factor(mut self, prefetch_factor: usize) -> Self {
        self.prefetch_factor = prefetch_factor.max(1);
        self
    }

    /// Replaces the collate step with `collate`, which turns a list of examples into a batch.
    pub fn with_collate<O2, F>(self, collate: F) -> DataLoader<D, O2>
    where
        F: Fn(Vec<D::Item>) -> Result<O2> + Send + Sync + 'static,
    {
        DataLoader {
            dataset: self.dataset,
            collate: Arc::new(collate),
            batch_size: self.batch_size,
            shuffle: self.shuffle,
            drop_last: self.drop_last,
            num_workers: self.num_workers,
            prefetch_factor: self.prefetch_factor,
            generator: self.generator,
            epoch: self.epoch,
            sampler: self.sampler,
        }
    }

    /// The batch size.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The data set.
    pub fn dataset(&self) -> &D {
        &self.dataset
    }

    /// The shuffling generator in its current state (save its seed and counter to resume a run).
    pub fn current_generator(&self) -> &Generator {
        &self.generator
    }

    /// The number of epochs started so far.
    pub fn epochs_started(&self) -> u64 {
        self.epoch
    }

    /// The examples an epoch visits: the data set's size, or this rank's share of it.
    pub fn num_examples(&self) -> usize {
        let n = self.dataset.len();
        match &self.sampler {
            Some(s) => s.num_samples(n),
            None => n,
        }
    }

    /// Batches per epoch.
    pub fn len(&self) -> usize {
        let n = self.num_examples();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }

    /// Whether an epoch yields no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The example indices of each batch of the next epoch (advances the generator when shuffling).
    fn plan_epoch(&mut self) -> Vec<Vec<usize>> {
        let n = self.dataset.len();
        let order: Vec<usize> = if self.shuffle {
            random_permutation(n, &mut self.generator)
        } else {
            (0..n).collect()
        };
        let order = match &self.sampler {
            Some(s) => s.shard(&order),
            None => order,
        };
        let mut batches: Vec<Vec<usize>> = order
            .chunks(self.batch_size)
            .map(<[usize]>::to_vec)
            .collect();
        if self.drop_last && batches.last().is_some_and(|b| b.len() < self.batch_size) {
            batches.pop();
        }
        batches
    }
}

impl<D, O> DataLoader<D, O>
where
    D: Dataset + Send + Sync + 'static,
    O: Send + 'static,
{
    /// Starts an epoch: draws its order, tells the data set the epoch number, and returns an iterator
    /// over its batches (spawning the workers, if any).
    pub fn iter(&mut self) -> DataLoaderIter<O> {
        let batches = Arc::new(self.plan_epoch());
        self.dataset.set_epoch(self.epoch);
        self.epoch += 1;
        let dataset = Arc::clone(&self.dataset);
        let collate = Arc::clone(&self.collate);
        let load: LoadFn<O> = Arc::new(move |indices: &[usize]| {
            let items = indices
                .iter()
                .map(|&i| dataset.get(i))
                .collect::<Result<Vec<_>>>()?;
            collate(items)
        });
        let workers = if self.num_workers == 0 {
            None
        } else {
            Some(Workers::spawn(
                self.num_workers.min(batches.len().max(1)),
                self.prefetch_factor,
                Arc::clone(&batches),
                Arc::clone(&load),
            ))
        };
        DataLoaderIter {
            batches,
            next: 0,
            load,
            workers,
        }
    }
}

impl<D, O> IntoIterator for &mut DataLoader<D, O>
where
    D: Dataset + Send + Sync + 'static,
    O: Send + 'static,
{
    type Item = Result<O>;
    type IntoIter = DataLoaderIter<O>;
    fn into_iter(self) -> DataLoaderIter<O> {
        self.iter()
    }
}

/// Runs `load`, turning a panic into an error.
fn load_catching<O>(load: &LoadFn<O>, indices: &[usize], batch: usize) -> Result<O> {
    match catch_unwind(AssertUnwindSafe(|| load(indices))) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(Error::invalid(
                "DataLoader",
                format!("loading batch {batch} panicked: {what}"),
            ))
        }
    }
}

/// The background threads of one epoch: worker `w` loads batches `w, w + k, w + 2k, ...` into its
/// own bounded channel, so the consumer can take them in order.
struct Workers<O> {
    receivers: Vec<Receiver<Result<O>>>,
    handles: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl<O: Send + 'static> Workers<O> {
    fn spawn(
        count: usize,
        prefetch: usize,
        batches: Arc<Vec<Vec<usize>>>,
        load: LoadFn<O>,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut receivers = Vec::with_capacity(count);
        let mut handles = Vec::with_capacity(count);
        for w in 0..count {
            let (tx, rx): (SyncSender<Result<O>>, _) = sync_channel(prefetch);
            let (batches, load, stop) =
                (Arc::clone(&batches), Arc::clone(&load), Arc::clone(&stop));
            let spawned = std::thread::Builder::new()
                .name(format!("nabla-data-worker-{w}"))
                .spawn(move || {
                    for b in (w..batches.len()).step_by(count) {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let result = load_catching(&load, &batches[b], b);
                        if tx.send(result).is_err() {
                            return; // the consumer is gone
                        }
                    }
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // A worker that could not start reports that as the error of its first batch.
                    let (tx, rx2) = sync_channel(1);
                    let _ = tx.send(Err(Error::Io {
                        context: format!("starting data-loader worker {w}"),
                        message: e.to_string(),
                    }));
                    receivers.push(rx2);
                    continue;
                }
            }
            receivers.push(rx);
        }
        Workers {
            receivers,
            handles,
            stop,
        }
    }
}

impl<O> Drop for Workers<O> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Dropping the receivers wakes workers blocked on a full channel; they then exit.
        self.receivers.clear();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// The batches of one epoch of a [`DataLoader`]; each item is `Ok(batch)` or the error that loading
/// it produced. Dropping it stops and joins the epoch's worker threads.
pub struct DataLoaderIter<O> {
    batches: Arc<Vec<Vec<usize>>>,
    next: usize,
    load: LoadFn<O>,
    workers: Option<Workers<O>>,
}

impl<O> DataLoaderIter<O> {
    /// The example indices of every batch of this epoch, in order.
    pub fn batch_indices(&self) -> &[Vec<usize>] {
        &self.batches
    }
}

impl<O> Iterator for DataLoaderIter<O> {
    type Item = Result<O>;

    fn next(&mut self) -> Option<Result<O>> {
        let b = self.next;
        if b >= self.batches.len() {
            return None;
        }
        self.next += 1;
        let result = match &self.workers {
            None => load_catching(&self.load, &self.batches[b], b),
            Some(workers) => {
                let w = b % workers.receivers.len();
                workers.receivers[w].recv().unwrap_or_else(|_| {
                    // Cannot happen while the worker catches panics, but never hang or panic.
                    Err(Error::invalid(
                        "DataLoader",
                        format!("worker {w} stopped before delivering batch {b}"),
                    ))
                })
            }
        };
        Some(result)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.batches.len() - self.next;
        (left, Some(left))
    }
}

impl<O> ExactSizeIterator for DataLoaderIter<O> {}
