//! Per-op overhead of the eager autodiff tape on tiny tensors: a chain of 10,000 additions of a 4-element
//! f32 tensor (`y = x; y = y + x`, repeated), summed, then differentiated.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_autograd -- [--ops N] [--repeats R]
//! ```
//!
//! Three cases are timed, each the best of `--repeats` runs (default 30) after a warm-up:
//! - `untracked_forward`: the chain on a plain tensor (no graph is recorded);
//! - `forward`: the chain on a variable, recording the graph (and dropping it);
//! - `forward_backward`: the chain on a variable, then `backward()`, dropping graph and gradients.
//!
//! Every time includes freeing what the run made, as PyTorch's does when the graph goes out of scope.
//! Times are reported per op, where the chain counts `--ops` ops (the final sum is one more, negligible).
//! A separate, untimed run counts heap allocations per op with a counting allocator. Human-readable lines
//! go to stderr; one JSON line goes to stdout for `scripts/bench_autograd.py`, which runs the same
//! workload in PyTorch eager and prints the ratio.

#[path = "../benches/common/autograd_chain.rs"]
mod autograd_chain;

use nabla::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// The system allocator, counting allocations while `COUNTING` is set (a relaxed load otherwise).
struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Heap allocations made by `f`.
fn count_allocations(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    f();
    COUNTING.store(false, Ordering::SeqCst);
    ALLOCATIONS.load(Ordering::Relaxed)
}

struct Options {
    ops: usize,
    repeats: usize,
}

fn parse_args() -> std::result::Result<Options, String> {
    let mut opts = Options {
        ops: autograd_chain::OPS,
        repeats: 30,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut positive = |name: &str| -> std::result::Result<usize, String> {
            let v = args.next().ok_or(format!("{name} needs a value"))?;
            v.parse()
                .ok()
                .filter(|&n: &usize| n > 0)
                .ok_or(format!("{name} wants a positive integer, got {v:?}"))
        };
        match arg.as_str() {
            "--ops" => opts.ops = positive("--ops")?,
            "--repeats" => opts.repeats = positive("--repeats")?,
            "-h" | "--help" => return Err("usage: bench_autograd [--ops N] [--repeats R]".into()),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(opts)
}

/// Best and median seconds of `repeats` runs of `f`, after warm-up runs.
fn time(repeats: usize, mut f: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    for _ in 0..3 {
        f()?;
    }
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok((times[0], times[times.len() / 2]))
}

fn run(opts: &Options) -> Result<()> {
    let cpu = CpuBackend::new();
    let ops = opts.ops;
    let plain = autograd_chain::input(&cpu, false)?;
    let var = autograd_chain::input(&cpu, true)?;
    autograd_chain::check(&var, ops)?;

    let cases: [(&str, &CpuTensor, bool); 3] = [
        ("untracked_forward", &plain, false),
        ("forward", &var, false),
        ("forward_backward", &var, true),
    ];
    let mut json = Vec::new();
    eprintln!(
        "nabla eager tape: chain of {ops} adds of [{}] f32, best of {} runs",
        autograd_chain::LEN,
        opts.repeats
    );
    for (name, x, backward) in cases {
        let body = || -> Result<()> {
            if backward {
                drop(autograd_chain::forward_backward(x, ops)?);
            } else {
                drop(autograd_chain::forward(x, ops)?);
            }
            Ok(())
        };
        let (best, median) = time(opts.repeats, body)?;
        let mut result = Ok(());
        let allocs = count_allocations(|| result = body());
        result?;
        let per_op = |s: f64| s / ops as f64 * 1e6;
        let allocs_per_op = allocs as f64 / ops as f64;
        eprintln!(
            "  {name:<18} {:>8.3} us/op (median {:.3}), {allocs_per_op:.1} allocations/op",
            per_op(best),
            per_op(median),
        );
        json.push(format!(
            "\"{name}\": {{\"best_s\": {best:e}, \"median_s\": {median:e}, \"us_per_op\": {:.6}, \"allocations_per_op\": {allocs_per_op:.3}}}",
            per_op(best)
        ));
    }
    println!(
        "{{\"tool\": \"nabla\", \"ops\": {ops}, \"len\": {}, \"repeats\": {}, {}}}",
        autograd_chain::LEN,
        opts.repeats,
        json.join(", ")
    );
    Ok(())
}

fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&opts) {
        eprintln!("bench_autograd failed: {e}");
        std::process::exit(1);
    }
}
