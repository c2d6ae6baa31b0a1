//! [`DistributedSampler`]: each rank's share of an epoch's examples in data-parallel training.

use nabla_core::{Error, Result};

/// Splits every epoch's example order across the ranks of a data-parallel job, as PyTorch's
/// `DistributedSampler`: rank `r` of `w` takes positions `r, r + w, r + 2w, ...` of the epoch's
/// order (shuffled by the [`DataLoader`](crate::DataLoader)'s generator, which is seeded alike on
/// every rank). When the number of examples is not a multiple of `w`, the order is padded by
/// repeating its start (every rank then gets the same count), or with `drop_last(true)` its tail
/// is dropped; with `pad(false)` the ranks' shares differ by at most one example and every example
/// is visited exactly once (for evaluation, where the ranks need not take equal steps).
///
/// With a per-rank batch of `b`, batch `i` of all ranks together holds exactly positions
/// `i*w*b .. (i+1)*w*b` of the order: the global batch a single process with batch `w*b` would
/// see, so that the training does not depend on the number of ranks.
///
/// ```
/// use nabla_data::DistributedSampler;
/// let order: Vec<usize> = (0..7).collect();
/// let rank1 = DistributedSampler::new(1, 3)?;
/// assert_eq!(rank1.shard(&order), vec![1, 4, 0]); // padded with the start of the order
/// assert_eq!(rank1.drop_last(true).shard(&order), vec![1, 4]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistributedSampler {
    rank: usize,
    world_size: usize,
    drop_last: bool,
    pad: bool,
}

impl DistributedSampler {
    /// The share of rank `rank` of `world_size` (padding, not dropping).
    pub fn new(rank: usize, world_size: usize) -> Result<Self> {
        if world_size == 0 || rank >= world_size {
            return Err(Error::invalid(
                "DistributedSampler::new",
                format!("rank {rank} is not in a world of {world_size} ranks"),
            ));
        }
        Ok(DistributedSampler {
            rank,
            world_size,
            drop_last: false,
            pad: true,
        })
    }

    /// Whether to drop the tail of the order that does not divide among the ranks, instead of
    /// padding it (default `false`).
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// Whether to pad the order to a multiple of the number of ranks (default `true`); without
    /// padding (and without `drop_last`) the first `n % world_size` ranks get one example more.
    pub fn pad(mut self, pad: bool) -> Self {
        self.pad = pad;
        self
    }

    /// The rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// How many of `n` examples each rank gets per epoch.
    pub fn num_samples(&self, n: usize) -> usize {
        self.end(n)
            .saturating_sub(self.rank)
            .div_ceil(self.world_size)
    }

    /// The end of the (padded or cut) order of `n` examples.
    fn end(&self, n: usize) -> usize {
        let w = self.world_size;
        if self.drop_last {
            n / w * w
        } else if self.pad && n > 0 {
            n.div_ceil(w) * w
        } else {
            n
        }
    }

    /// This rank's positions of `order`, in order.
    pub fn shard(&self, order: &[usize]) -> Vec<usize> {
        let total = self.end(order.len());
        (self.rank..total)
            .step_by(self.world_size)
            .map(|i| order[i % order.len()])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_order_and_pad_evenly() -> Result<()> {
        for n in 0..20usize {
            for w in 1..6usize {
                let order: Vec<usize> = (0..n).rev().collect();
                let shards: Vec<Vec<usize>> = (0..w)
                    .map(|r| DistributedSampler::new(r, w).map(|s| s.shard(&order)))
                    .collect::<Result<_>>()?;
                let len = shards[0].len();
                assert!(shards.iter().all(|s| s.len() == len), "n={n} w={w}");
                assert_eq!(len, if n == 0 { 0 } else { n.div_ceil(w) });
                let mut seen: Vec<usize> = shards.concat();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), n, "every example is visited, n={n} w={w}");
                let dropped: Vec<Vec<usize>> = (0..w)
                    .map(|r| DistributedSampler::new(r, w).map(|s| s.drop_last(true).shard(&order)))
                    .collect::<Result<_>>()?;
                let mut all = dropped.concat();
                all.sort_unstable();
                let before = all.len();
                all.dedup();
                assert_eq!(all.len(), before, "drop_last never repeats an example");
                assert_eq!(before, n / w * w);
                let mut exact: Vec<usize> = (0..w)
                    .map(|r| {
                        let s = DistributedSampler::new(r, w)?.pad(false);
                        let shard = s.shard(&order);
                        assert_eq!(shard.len(), s.num_samples(n));
                        Ok(shard)
                    })
                    .collect::<Result<Vec<_>>>()?
                    .concat();
                exact.sort_unstable();
                assert_eq!(
                    exact,
                    (0..n).collect::<Vec<_>>(),
                    "pad(false) visits each once"
                );
            }
        }
        Ok(())
    }

    #[test]
    fn per_rank_batches_together_are_the_global_batch() -> Result<()> {
        let order: Vec<usize> = (0..64).map(|i| (i * 37) % 64).collect();
        let (w, b) = (4, 4);
        for i in 0..(64 / (w * b)) {
            let mut together: Vec<usize> = (0..w)
                .flat_map(|r| {
                    let shard = DistributedSampler::new(r, w).unwrap().shard(&order);
                    shard[i * b..(i + 1) * b].to_vec()
                })
                .collect();
            together.sort_unstable();
            let mut global = order[i * w * b..(i + 1) * w * b].to_vec();
            global.sort_unstable();
            assert_eq!(together, global);
        }
        Ok(())
    }

    #[test]
    fn a_rank_outside_the_world_is_an_error() {
        assert!(DistributedSampler::new(2, 2).is_err());
        assert!(DistributedSampler::new(0, 0).is_err());
    }
}
