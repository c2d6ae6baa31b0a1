//! The CPU buffer cache learns a working set larger than its initial capacity: after a couple of
//! steps that each need more large buffers at once than [`INITIAL_CACHED_BYTES`] holds, every
//! further step is served from the cache, with no fresh (page-faulted, kernel-zeroed) memory.
//!
//! One test in its own binary: the cache is global to the process, and other tests running beside
//! it would take and return buffers too.

use nabla_core::{Backend, DType, Scalar};
use nabla_cpu::{CpuBackend, INITIAL_CACHED_BYTES, buffer_cache_stats, release_cached_buffers};

/// Buffers a step holds at once, and the elements of each (distinct sizes of about 64 MiB of f32).
const BUFFERS: usize = 6;
const ELEMENTS: usize = 16 << 20;

/// One step: every buffer allocated and filled, all alive together, then all freed.
fn step(cpu: &CpuBackend) {
    let live: Vec<_> = (0..BUFFERS)
        .map(|i| {
            cpu.full(ELEMENTS + 1024 * i, Scalar::F64(1.0), DType::F32)
                .unwrap()
        })
        .collect();
    drop(live);
}

#[test]
fn a_working_set_larger_than_the_initial_cache_is_served_from_it_after_two_steps() {
    let working_set: usize = (0..BUFFERS).map(|i| (ELEMENTS + 1024 * i) * 4).sum();
    assert!(working_set > INITIAL_CACHED_BYTES);
    let cpu = CpuBackend::new();
    release_cached_buffers();
    step(&cpu);
    step(&cpu);
    let before = buffer_cache_stats();
    assert!(
        before.capacity_bytes >= working_set,
        "the capacity grew to {} bytes, the working set is {working_set}: {before:?}",
        before.capacity_bytes
    );
    for _ in 0..3 {
        step(&cpu);
    }
    let after = buffer_cache_stats();
    assert_eq!(
        after.misses, before.misses,
        "steps after the second asked for fresh memory: {before:?} then {after:?}"
    );
    assert_eq!(after.fresh_bytes, before.fresh_bytes);
    assert_eq!(after.hits - before.hits, 3 * BUFFERS as u64);
    assert!(after.high_water_bytes >= working_set, "{after:?}");
    assert!(after.hit_rate() > 0.5, "{after:?}");
    // Releasing frees every buffer and keeps the learnt capacity.
    release_cached_buffers();
    let released = buffer_cache_stats();
    assert_eq!((released.cached_bytes, released.cached_buffers), (0, 0));
    assert_eq!(released.capacity_bytes, after.capacity_bytes);
}

#[test]
fn the_capacity_never_passes_half_the_allocation_limit() {
    // Run in a child process with a small limit, so that the limit binds before the working set.
    if std::env::var("NABLA_MAX_ALLOC_BYTES").as_deref() != Ok("600MiB") {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "the_capacity_never_passes_half_the_allocation_limit",
            ])
            .env("NABLA_MAX_ALLOC_BYTES", "600MiB")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let cpu = CpuBackend::new();
    for _ in 0..4 {
        step(&cpu);
    }
    let stats = buffer_cache_stats();
    // Half of 600 MiB is 300 MiB: more than the initial 256 MiB, less than the working set.
    assert_eq!(stats.capacity_bytes, 300 << 20, "{stats:?}");
    assert!(stats.cached_bytes <= stats.capacity_bytes, "{stats:?}");
}
