//! Memory behaviour of the eager reverse pass, measured with `MemoryTracked<CpuBackend>`: backward of a
//! deep MLP peaks below twice the forward's peak, frees what it saved, leaks nothing, and untracked
//! computation records nothing.
//!
//! Run with `--nocapture` to see the numbers.

use nabla_core::{DType, Generator, MemoryStats, MemoryTracked};
use nabla_cpu::CpuBackend;
use nabla_tensor::{BackwardOptions, Tensor, no_grad};

type Mem = MemoryTracked<CpuBackend>;
type T = Tensor<Mem>;

const LAYERS: usize = 16;
const WIDTH: usize = 256;
const BATCH: usize = 64;

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

struct Mlp {
    x: T,
    params: Vec<(T, T)>,
}

/// Inputs and `LAYERS` dense layers of `WIDTH`, as variables (scaled so activations stay O(1)).
fn mlp(mem: &Mem, seed: u64) -> Mlp {
    let mut rng = Generator::new(seed);
    let x = Tensor::randn([BATCH, WIDTH], DType::F32, &mut rng, mem).unwrap();
    let scale = (2.0 / WIDTH as f64).sqrt();
    let params = (0..LAYERS)
        .map(|i| {
            let w = Tensor::randn([WIDTH, WIDTH], DType::F32, &mut rng, mem)
                .unwrap()
                .mul(scale)
                .unwrap();
            let b = Tensor::zeros([WIDTH], DType::F32, mem).unwrap();
            (
                Tensor::var(format!("w{i}"), w).unwrap(),
                Tensor::var(format!("b{i}"), b).unwrap(),
            )
        })
        .collect();
    Mlp { x, params }
}

fn relu(x: &T) -> T {
    x.gt(0.0).unwrap().where_(x, 0.0).unwrap()
}

/// `mean(relu(...relu(x W0 + b0)... W15 + b15)^2)`.
fn forward(net: &Mlp) -> T {
    let mut h = net.x.clone();
    for (w, b) in &net.params {
        h = relu(&h.matmul(w).unwrap().add(b).unwrap());
    }
    h.square().unwrap().mean_all().unwrap()
}

fn param_bytes() -> usize {
    LAYERS * (WIDTH * WIDTH + WIDTH) * 4
}

struct Measured {
    baseline: MemoryStats,
    forward: MemoryStats,
    backward: MemoryStats,
    after: MemoryStats,
}

fn measure(opts: BackwardOptions) -> Measured {
    let mem = Mem::new(CpuBackend::new());
    let net = mlp(&mem, 7);
    let baseline = mem.stats();
    mem.reset_peak();

    let loss = forward(&net);
    let forward_stats = mem.stats();
    mem.reset_peak();

    let grads = loss.backward_opts(None, opts).unwrap();
    let backward_stats = mem.stats();
    assert_eq!(grads.len(), 2 * LAYERS);
    for (w, b) in &net.params {
        assert_eq!(grads.get(w).unwrap().shape(), w.shape());
        assert_eq!(grads.get(b).unwrap().shape(), b.shape());
    }
    assert!(loss.item::<f32>().unwrap().is_finite());

    drop(grads);
    drop(loss);
    let after = mem.stats();
    Measured {
        baseline,
        forward: forward_stats,
        backward: backward_stats,
        after,
    }
}

#[test]
fn backward_of_a_deep_mlp_peaks_below_twice_the_forward() {
    let m = measure(BackwardOptions::default());
    let base = m.baseline.live_bytes;
    let (pf, pb) = (m.forward.peak_bytes, m.backward.peak_bytes);
    println!(
        "deep MLP {LAYERS}x{WIDTH}, batch {BATCH}, f32: params+inputs {:.2} MiB; forward peak {:.2} MiB \
         (live after forward {:.2} MiB, {} buffers); backward peak {:.2} MiB = {:.2}x forward peak \
         (live after backward, gradients held {:.2} MiB); after dropping loss and gradients {:.2} MiB",
        mib(base),
        mib(pf),
        mib(m.forward.live_bytes),
        m.forward.live_buffers,
        mib(pb),
        pb as f64 / pf as f64,
        mib(m.backward.live_bytes),
        mib(m.after.live_bytes),
    );
    assert_eq!(base, param_bytes() + BATCH * WIDTH * 4);
    assert!(
        pb < 2 * pf,
        "backward peaked at {pb} bytes, not below twice the forward's {pf}"
    );
    // The same statement about what the passes add on top of parameters and inputs: backward holds at
    // most the saved activations plus one set of parameter gradients plus a few layers of transients.
    let (extra_f, extra_b) = (pf - base, pb - base);
    assert!(
        extra_b < extra_f + param_bytes() + extra_f / 4,
        "backward added {extra_b} bytes over the baseline; forward added {extra_f}, gradients are {}",
        param_bytes()
    );
    // Nothing the graph saved outlives it.
    assert_eq!(
        m.after.live_bytes, base,
        "leak: {} bytes in {} buffers",
        m.after.live_bytes, m.after.live_buffers
    );
    assert_eq!(m.after.live_buffers, m.baseline.live_buffers);
}

#[test]
fn backward_frees_saved_values_as_it_goes() {
    let freed = measure(BackwardOptions::default());
    let kept = measure(BackwardOptions {
        retain_graph: true,
        ..Default::default()
    });
    println!(
        "backward peak {:.2} MiB freeing saved values, {:.2} MiB with retain_graph; live with gradients \
         {:.2} MiB vs {:.2} MiB",
        mib(freed.backward.peak_bytes),
        mib(kept.backward.peak_bytes),
        mib(freed.backward.live_bytes),
        mib(kept.backward.live_bytes),
    );
    // Same forward either way.
    assert_eq!(freed.forward.peak_bytes, kept.forward.peak_bytes);
    // Without retain_graph, once backward returns only gradients remain on top of the baseline (the loss
    // tensor and its seed are a few bytes); with it, every saved activation is still held by the graph.
    let grads = param_bytes();
    assert!(freed.backward.live_bytes <= freed.baseline.live_bytes + grads + 64);
    assert!(
        kept.backward.live_bytes >= kept.forward.live_bytes + grads,
        "retain_graph should keep the saved activations"
    );
    assert!(freed.backward.peak_bytes < kept.backward.peak_bytes);
    // Retained or not, everything goes when the loss and the gradients do.
    assert_eq!(kept.after.live_bytes, kept.baseline.live_bytes);
}

#[test]
fn backward_each_never_holds_all_the_gradients() {
    let collected = measure(BackwardOptions::default());
    let mem = Mem::new(CpuBackend::new());
    let net = mlp(&mem, 7);
    let loss = forward(&net);
    mem.reset_peak();
    let mut count = 0;
    // Each gradient is dropped as soon as it is handed over, as an optimizer fused into backward does.
    loss.backward_each(|_, grad| {
        count += 1;
        drop(grad);
        Ok(())
    })
    .unwrap();
    let streamed = mem.stats();
    println!(
        "backward peak {:.2} MiB collecting the gradients, {:.2} MiB handing each over",
        mib(collected.backward.peak_bytes),
        mib(streamed.peak_bytes),
    );
    assert_eq!(count, 2 * LAYERS);
    // Collecting ends with every gradient held; streaming holds about one layer's at a time, so its
    // peak is lower by most of the gradients' size.
    assert!(
        streamed.peak_bytes + param_bytes() / 2 < collected.backward.peak_bytes,
        "streamed peak {} bytes, collected {} bytes, gradients {} bytes",
        streamed.peak_bytes,
        collected.backward.peak_bytes,
        param_bytes()
    );
    drop(loss);
    assert_eq!(mem.stats().live_bytes, collected.baseline.live_bytes);
}

/// A chain of ops whose intermediates are dropped as it goes.
fn chain(x: &T, steps: usize) -> T {
    let mut y = x.clone();
    for _ in 0..steps {
        y = y.mul(0.5).unwrap().add(1.0).unwrap().tanh().unwrap();
    }
    y
}

#[test]
fn untracked_computation_records_no_graph() {
    let mem = Mem::new(CpuBackend::new());
    let mut rng = Generator::new(1);
    let n = 4096;
    let buffer = n * 4;
    let x = Tensor::randn([n], DType::F32, &mut rng, &mem).unwrap();
    let start = mem.stats();
    mem.reset_peak();

    // Plain tensors: live memory is flat, whatever the chain's length. At most the previous link and the
    // three temporaries of one statement are alive at once.
    let y = chain(&x, 200);
    let plain = mem.stats();
    assert_eq!(
        plain.live_bytes,
        start.live_bytes + buffer,
        "only y is left"
    );
    assert!(
        plain.peak_bytes <= start.live_bytes + 5 * buffer,
        "peak {} bytes: intermediates were kept",
        plain.peak_bytes
    );
    drop(y);
    assert_eq!(mem.stats().live_bytes, start.live_bytes);

    // A variable under no_grad records nothing either.
    let v = Tensor::var("v", x.clone()).unwrap();
    mem.reset_peak();
    let y = no_grad(|| chain(&v, 200));
    assert!(!y.requires_grad());
    assert_eq!(mem.stats().live_bytes, start.live_bytes + buffer);
    assert!(mem.stats().peak_bytes <= start.live_bytes + 5 * buffer);
    drop(y);

    // Tracked, the graph keeps what backward needs (tanh saves its output), so memory grows with the
    // chain: the contrast shows the measurement above would catch a recorded graph.
    let y = chain(&v, 200);
    assert!(y.requires_grad());
    let tracked = mem.stats();
    assert!(
        tracked.live_bytes >= start.live_bytes + 200 * buffer,
        "tracked chain holds {} bytes",
        tracked.live_bytes
    );
    println!(
        "chain of 200 x (mul, add, tanh) on {n} f32: untracked live {} B (peak {} B), tracked live {} B",
        plain.live_bytes - start.live_bytes,
        plain.peak_bytes - start.live_bytes,
        tracked.live_bytes - start.live_bytes
    );
    drop(y);
    assert_eq!(mem.stats().live_bytes, start.live_bytes);
}
