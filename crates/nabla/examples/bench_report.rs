//! Times the benchmark workloads of issue 2 and prints one JSON document with the median time of each, for
//! `scripts/bench_compare.py` (which times the same workloads in NumPy and JAX in the same run).
//!
//! ```sh
//! cargo run --release -p nabla --example bench_report -- [--filter SUBSTRING | --name NAME] [--repeats N] [--budget SECONDS]
//! ```
//!
//! Each workload is warmed up (at least 2 runs and 0.3 s), then run at least `--repeats` times (default 10)
//! and until `--budget` seconds (default 2) have passed, at most 200 times. Progress goes to stderr, the JSON
//! to stdout. `cargo bench -p nabla` gives the same workloads with criterion's statistics.

#[path = "../benches/common/workloads.rs"]
mod workloads;

use nabla::prelude::*;
use std::time::{Duration, Instant};

struct Options {
    filter: Option<String>,
    name: Option<String>,
    repeats: usize,
    budget: Duration,
}

fn parse_args() -> std::result::Result<Options, String> {
    let mut opts = Options {
        filter: None,
        name: None,
        repeats: 10,
        budget: Duration::from_secs(2),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--filter" => opts.filter = Some(value("--filter")?),
            "--name" => opts.name = Some(value("--name")?),
            "--repeats" => {
                let v = value("--repeats")?;
                opts.repeats = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("--repeats wants a positive integer, got {v:?}"))?;
            }
            "--budget" => {
                let v = value("--budget")?;
                let secs: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .ok_or(format!("--budget wants seconds, got {v:?}"))?;
                opts.budget = Duration::from_secs_f64(secs);
            }
            "-h" | "--help" => {
                return Err(
                    "usage: bench_report [--filter SUBSTRING | --name NAME] [--repeats N] [--budget SECONDS]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(opts)
}

/// Median, minimum and count of the timed runs of one workload, in seconds.
fn time_workload(
    w: &workloads::Workload,
    cpu: &CpuBackend,
    opts: &Options,
) -> Result<(f64, f64, usize)> {
    let prepared = w.prepare(cpu)?;
    let warm = Instant::now();
    let mut warm_runs = 0;
    while warm_runs < 2 || warm.elapsed() < Duration::from_millis(300) {
        prepared.run()?;
        warm_runs += 1;
    }
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < opts.repeats || (start.elapsed() < opts.budget && times.len() < 200) {
        let t = Instant::now();
        let out = prepared.run()?;
        times.push(t.elapsed().as_secs_f64());
        drop(out);
    }
    times.sort_by(f64::total_cmp);
    let n = times.len();
    let median = if n % 2 == 1 {
        times[n / 2]
    } else {
        0.5 * (times[n / 2 - 1] + times[n / 2])
    };
    Ok((median, times[0], n))
}

fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let cpu = CpuBackend::new();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut entries = Vec::new();
    for w in workloads::all() {
        let filtered_out = opts
            .filter
            .as_ref()
            .is_some_and(|f| !w.name.contains(f.as_str()));
        if filtered_out || opts.name.as_ref().is_some_and(|n| *n != w.name) {
            continue;
        }
        eprint!("nabla {:<32}", w.name);
        let entry = match time_workload(&w, &cpu, &opts) {
            Ok((median, min, n)) => {
                eprintln!("{:>10.3} ms (median of {n})", median * 1e3);
                format!(
                    "{{\"name\": \"{}\", \"group\": \"{}\", \"median_s\": {median:e}, \"min_s\": {min:e}, \"repeats\": {n}, \"flops\": {:e}, \"bytes\": {:e}}}",
                    w.name, w.group, w.flops, w.bytes
                )
            }
            Err(e) => {
                eprintln!("failed: {e}");
                let msg = e.to_string().replace('\\', "\\\\").replace('"', "\\\"");
                format!(
                    "{{\"name\": \"{}\", \"group\": \"{}\", \"error\": \"{msg}\"}}",
                    w.name, w.group
                )
            }
        };
        entries.push(entry);
    }
    println!(
        "{{\"tool\": \"nabla\", \"threads\": {threads}, \"results\": [\n  {}\n]}}",
        entries.join(",\n  ")
    );
}
