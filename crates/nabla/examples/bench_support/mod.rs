//! Timing helpers shared by the benchmark examples of `nabla` and `nabla-linalg` (included with
//! `#[path]`, not an example itself).

use nabla_core::Result;
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

/// `--repeats R` (default 30) and `--workload NAME` (`all` or one of `workloads`, default `all`) from
/// the command line; prints a usage line naming `program` and exits with status 2 on anything else.
pub fn repeats_and_workload(program: &str, workloads: &[&str]) -> (usize, String) {
    let usage = || -> ! {
        eprintln!(
            "usage: {program} [--repeats R] [--workload all|{}]",
            workloads.join("|")
        );
        std::process::exit(2);
    };
    let (mut repeats, mut workload) = (30usize, "all".to_string());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--repeats" => match value.parse() {
                Ok(n) if n > 0 => repeats = n,
                _ => usage(),
            },
            "--workload" if value == "all" || workloads.contains(&value.as_str()) => {
                workload = value
            }
            _ => usage(),
        }
    }
    (repeats, workload)
}

/// The process's peak resident memory in MiB (Linux; 0 elsewhere). Only some examples report it.
#[allow(dead_code)]
pub fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}
