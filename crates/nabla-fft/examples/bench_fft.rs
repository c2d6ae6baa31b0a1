//! Times one-dimensional transforms on the CPU backend: the complex `fft` and the real `rfft` of
//! 2^10..2^20 points, in single and double precision (eager calls, output allocation included).
//!
//! ```text
//! cargo run --release -p nabla-fft --example bench_fft -- [--repeats 20]
//! ```
//!
//! Prints one line per measurement and, last, one JSON object `{"<fft|rfft>_<dtype>_<log2 n>_s":
//! seconds}` (medians of `--repeats` runs after three warm-up runs) read by `scripts/bench_fft.py`.

#[allow(dead_code)]
#[path = "../../nabla/examples/bench_support/mod.rs"]
mod bench_support;

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_fft::Norm;
use nabla_tensor::Tensor;

/// The powers of two timed.
const LOG2_SIZES: [u32; 6] = [10, 12, 14, 16, 18, 20];

fn usage() -> ! {
    eprintln!("usage: bench_fft [--repeats N]");
    std::process::exit(2)
}

fn main() -> Result<()> {
    let mut repeats = 20usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().map(|v| v.parse::<usize>())) {
            ("--repeats", Some(Ok(n))) if n > 0 => repeats = n,
            _ => usage(),
        }
    }
    nabla_cpu::init_thread_pool(None)?;
    let cpu = CpuBackend::new();
    let mut json = Vec::new();
    for (real, complex) in [(DType::F32, DType::C64), (DType::F64, DType::C128)] {
        for log2 in LOG2_SIZES {
            let n = 1usize << log2;
            let v: Vec<f64> = (0..n)
                .map(|i| ((i * 7919) % 1000) as f64 / 500.0 - 1.0)
                .collect();
            let x = Tensor::from_vec(v, [n], &cpu)?.cast(real)?;
            let z = Tensor::complex(&x, &x.flip(&[0])?.contiguous()?)?.cast(complex)?;
            let fft = bench_support::time(repeats, || {
                nabla_fft::fft(&z, None, -1, Norm::Backward).map(drop)
            })?;
            let rfft = bench_support::time(repeats, || {
                nabla_fft::rfft(&x, None, -1, Norm::Backward).map(drop)
            })?;
            for (kind, secs) in [("fft", fft), ("rfft", rfft)] {
                let key = format!("{kind}_{}_{log2}", complex.name());
                println!("{key:24} {:10.4} ms", secs * 1e3);
                json.push(format!("\"{key}_s\": {secs:e}"));
            }
        }
    }
    println!("{{{}}}", json.join(", "));
    Ok(())
}
