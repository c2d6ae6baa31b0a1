//! f32 matrix-product throughput of the wgpu backend.
//!
//! ```sh
//! cargo run --release -p nabla-wgpu --example wgpu_matmul            # sizes 512 and 1024
//! cargo run --release -p nabla-wgpu --example wgpu_matmul 2048 4096  # on a real GPU
//! ```

use nabla_core::{Backend, DType, Distribution, Generator, Layout, Result};
use nabla_wgpu::WgpuBackend;
use std::time::Instant;

fn main() -> Result<()> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .map_err(|e| nabla_core::Error::invalid("wgpu_matmul", format!("size {a:?}: {e}")))
        })
        .collect::<Result<_>>()?;
    let sizes = if sizes.is_empty() {
        vec![512, 1024]
    } else {
        sizes
    };
    let gpu = WgpuBackend::new()?;
    println!(
        "adapter: {} (flushes f32 subnormals: {})",
        gpu.adapter_name(),
        gpu.flushes_subnormals()?
    );
    let mut rng = Generator::new(0);
    let normal = Distribution::Normal {
        mean: 0.0,
        std: 1.0,
    };
    for n in sizes {
        let l = Layout::contiguous([n, n]);
        let a = gpu.random(normal, n * n, DType::F32, rng.next_key(n * n))?;
        let b = gpu.random(normal, n * n, DType::F32, rng.next_key(n * n))?;
        gpu.matmul(&a, &l, &b, &l)?; // compile the pipeline, warm up
        gpu.synchronize()?;
        // Repeat until about half a second has passed (at least twice).
        let start = Instant::now();
        let mut reps = 0;
        while reps < 2 || start.elapsed().as_secs_f64() < 0.5 {
            gpu.matmul(&a, &l, &b, &l)?;
            gpu.synchronize()?;
            reps += 1;
        }
        let secs = start.elapsed().as_secs_f64() / reps as f64;
        let gflops = 2.0 * (n as f64).powi(3) / secs / 1e9;
        println!(
            "f32 {n} x {n} x {n}: {:.2} ms, {gflops:.1} GFLOP/s ({reps} runs)",
            secs * 1e3
        );
    }
    Ok(())
}
