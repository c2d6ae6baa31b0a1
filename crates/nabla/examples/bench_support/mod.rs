//! Timing helpers shared by the benchmark examples (included with `#[path]`, not an example itself).

use nabla::Result;
use std::time::{Duration, Instant};

/// The median of `runs`, in seconds.
pub fn median(mut runs: Vec<Duration>) -> f64 {
    runs.sort();
    runs[runs.len() / 2].as_secs_f64()
}

/// Median seconds of `f` over `repeats` runs after three warm-up runs.
pub fn time(repeats: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    for _ in 0..3 {
        f()?;
    }
    let mut runs = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        f()?;
        runs.push(start.elapsed());
    }
    Ok(median(runs))
}
