//! The per-op kernel profile the GPU backends keep while profiling is on: each launch waits for the
//! device, so that its wall time (host work, kernel compilation and device execution) is charged to
//! the op that launched it. This serialises the device, so it is for finding where time goes, not
//! for measuring throughput. `WgpuBackend::set_profiling` and `CudaBackend::set_profiling` turn it
//! on; [`format_profile`] prints their rows.

use std::collections::HashMap;
use std::fmt::Write;
use std::time::Duration;

/// The time one kind of kernel took while profiling was on.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTime {
    /// The op that launched the kernels (`"matmul"`, `"conv2d"`, `"add"`, ...), or `"read"` for
    /// read-backs (wgpu).
    pub op: &'static str,
    /// How many launches (or read-backs).
    pub calls: usize,
    /// Wall time of those calls in seconds, waiting for the device included.
    pub seconds: f64,
    /// The part of `seconds` spent compiling kernels (each is compiled once).
    pub compile_seconds: f64,
}

/// The running table of one device.
#[derive(Debug, Default)]
pub struct Profile {
    table: HashMap<&'static str, KernelTime>,
    /// Print the table to standard error when the device is dropped (set by the environment
    /// variable).
    pub print_on_drop: bool,
}

impl Profile {
    /// An empty table; `print_on_drop` records that its device prints it when dropped.
    pub fn new(print_on_drop: bool) -> Profile {
        Profile {
            table: HashMap::new(),
            print_on_drop,
        }
    }

    /// Charges one call of `op` taking `elapsed`, of which `compile` compiling.
    pub fn add(&mut self, op: &'static str, elapsed: Duration, compile: Duration) {
        let row = self.table.entry(op).or_insert(KernelTime {
            op,
            calls: 0,
            seconds: 0.0,
            compile_seconds: 0.0,
        });
        row.calls += 1;
        row.seconds += elapsed.as_secs_f64();
        row.compile_seconds += compile.as_secs_f64();
    }

    /// The rows, slowest first.
    pub fn rows(&self) -> Vec<KernelTime> {
        let mut rows: Vec<KernelTime> = self.table.values().cloned().collect();
        rows.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then(a.op.cmp(b.op)));
        rows
    }
}

/// The rows as an aligned text table with a total line.
pub fn format_profile(rows: &[KernelTime]) -> String {
    let mut s = format!(
        "{:<24} {:>8} {:>11} {:>11} {:>12}\n",
        "op", "calls", "total ms", "compile ms", "us per call"
    );
    let (mut calls, mut total) = (0, 0.0);
    for r in rows {
        calls += r.calls;
        total += r.seconds;
        let _ = writeln!(
            s,
            "{:<24} {:>8} {:>11.1} {:>11.1} {:>12.1}",
            r.op,
            r.calls,
            r.seconds * 1e3,
            r.compile_seconds * 1e3,
            r.seconds * 1e6 / r.calls.max(1) as f64
        );
    }
    let _ = writeln!(s, "{:<24} {:>8} {:>11.1}", "total", calls, total * 1e3);
    s
}
