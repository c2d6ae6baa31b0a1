//! `init_thread_pool` on the main thread (this test has no harness, so `main` runs it there): the
//! caller joins the pool, kernels give the same results, work sent from another thread runs while
//! the caller waits for it, and a second set-up is an error.

use nabla_core::{Backend, HostData, Layout, ReduceOp};
use nabla_cpu::{CpuBackend, init_thread_pool};

/// The sum of `0..n` computed by the backend (in parallel above the threshold).
fn sum(cpu: &CpuBackend, n: usize) -> f64 {
    let x = cpu
        .upload(HostData::F64((0..n).map(|v| v as f64).collect()))
        .unwrap();
    let s = cpu
        .reduce(ReduceOp::Sum, &x, &Layout::contiguous([n]), &[0])
        .unwrap();
    cpu.read(&s, &Layout::contiguous([])).unwrap().to_f64_vec()[0]
}

fn main() {
    assert!(
        init_thread_pool(Some(0)).is_err(),
        "zero threads is refused"
    );
    init_thread_pool(Some(2)).unwrap();
    assert_eq!(
        rayon::current_thread_index(),
        Some(0),
        "the caller is in the pool"
    );
    assert_eq!(rayon::current_num_threads(), 2);
    let cpu = CpuBackend::new();
    let n = 1 << 20;
    let want = (n * (n - 1) / 2) as f64;
    assert_eq!(sum(&cpu, n), want);
    // Another thread's parallel op completes while this one blocks waiting for it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(sum(&CpuBackend::new(), n)).unwrap());
    assert_eq!(rx.recv().unwrap(), want);
    let again = init_thread_pool(None).unwrap_err().to_string();
    assert!(again.contains("once"), "{again}");
    println!("thread_pool: ok");
}
