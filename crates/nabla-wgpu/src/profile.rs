//! Optional per-kernel timing. With profiling on, every dispatch is submitted and waited for on its
//! own, so that its wall time (host work, pipeline compilation and device execution) is charged to
//! the op that launched it; read-backs are charged to `"read"`. This serialises the device, so it is
//! for finding where time goes, not for measuring throughput.
//!
//! Turn it on with [`crate::WgpuBackend::set_profiling`], or for a whole program (such as
//! `nabla train --backend wgpu`) by setting the environment variable `NABLA_WGPU_PROFILE=1`: the
//! table is then printed to standard error when the device is dropped.

use std::collections::HashMap;
use std::fmt::Write;
use std::time::Duration;

/// The time one kind of kernel took while profiling was on.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTime {
    /// The op that launched the kernels (`"matmul"`, `"conv2d"`, `"add"`, ...), or `"read"` for
    /// read-backs.
    pub op: &'static str,
    /// How many dispatches (or read-backs).
    pub calls: usize,
    /// Wall time of those calls in seconds, waiting for the device included.
    pub seconds: f64,
    /// The part of `seconds` spent compiling pipelines (each shader is compiled once).
    pub compile_seconds: f64,
}

/// The running table of one device.
#[derive(Default)]
pub(crate) struct Profile {
    table: HashMap<&'static str, KernelTime>,
    /// Print the table to standard error when the device is dropped (set by the environment
    /// variable).
    pub print_on_drop: bool,
}

impl Profile {
    /// An empty table.
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

/// `true` when the environment asks for profiling (`NABLA_WGPU_PROFILE` set, not empty or `0`).
pub(crate) fn from_env() -> bool {
    std::env::var("NABLA_WGPU_PROFILE").is_ok_and(|v| !v.is_empty() && v != "0")
}
