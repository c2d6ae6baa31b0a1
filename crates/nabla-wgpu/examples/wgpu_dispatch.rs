//! The wgpu backend's cost per kernel launch: chains of dependent elementwise adds (each one
//! dispatch on 256 elements, so that launching, not computing, is measured), queued and then waited
//! for; the median of five rounds.
//!
//! ```sh
//! cargo run --release -p nabla-wgpu --example wgpu_dispatch          # 2000 launches per round
//! cargo run --release -p nabla-wgpu --example wgpu_dispatch 20000
//! ```

use nabla_core::{Backend, BinaryOp, DType, Error, Layout, Result, Scalar};
use nabla_wgpu::WgpuBackend;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds for `launches` dependent adds on `[n]` (each reads the last result), waited for.
fn chain(gpu: &WgpuBackend, n: usize, launches: usize) -> Result<f64> {
    let l = Layout::contiguous([n]);
    let one = gpu.full(n, Scalar::F64(1.0), DType::F32)?;
    let mut x = gpu.full(n, Scalar::F64(0.0), DType::F32)?;
    gpu.synchronize()?;
    let start = Instant::now();
    for _ in 0..launches {
        x = gpu.binary(BinaryOp::Add, &x, &l, &one, &l)?;
    }
    gpu.synchronize()?;
    let seconds = start.elapsed().as_secs_f64();
    let last = gpu.read(&x, &l)?.get(0).map(|s| s.to_f64());
    if last != Some(launches as f64) {
        return Err(Error::invalid(
            "wgpu_dispatch",
            format!("the chain ended at {last:?}, not {launches}"),
        ));
    }
    Ok(seconds)
}

fn main() -> Result<()> {
    let launches: usize = match std::env::args().nth(1) {
        Some(a) => a
            .parse()
            .map_err(|e| Error::invalid("wgpu_dispatch", format!("launches {a:?}: {e}")))?,
        None => 2000,
    };
    let gpu = WgpuBackend::new()?;
    println!("adapter: {}", gpu.adapter_name());
    chain(&gpu, 256, 50)?; // compile the pipelines
    let mut per_launch = Vec::new();
    for _ in 0..5 {
        per_launch.push(chain(&gpu, 256, launches)? / launches as f64);
    }
    let lo = per_launch.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = per_launch.iter().copied().fold(0.0, f64::max);
    println!(
        "{launches} dependent launches on 256 elements: {:.2} us per launch (median of 5, range {:.2}-{:.2})",
        median(per_launch) * 1e6,
        lo * 1e6,
        hi * 1e6
    );
    Ok(())
}
