//! Shared helpers: the device (or a skip), random host data and CPU-vs-GPU comparisons.
#![allow(dead_code)]

use nabla_core::{Backend, DType, HostData, Layout};
use nabla_cpu::CpuBackend;
use nabla_wgpu::WgpuBackend;
use std::sync::OnceLock;

/// The shared wgpu backend, or `None` (after a message) when no adapter exists. With `CI=true` a
/// missing adapter fails the test instead.
pub fn gpu() -> Option<&'static WgpuBackend> {
    static GPU: OnceLock<Option<WgpuBackend>> = OnceLock::new();
    let gpu = GPU.get_or_init(|| match WgpuBackend::new() {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("no wgpu adapter, skipping the wgpu tests: {e}");
            None
        }
    });
    if gpu.is_none() && std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "CI=true but no wgpu adapter was found (install mesa-vulkan-drivers and libvulkan1)"
        );
    }
    gpu.as_ref()
}

/// Runs `f` with both backends, or skips (see [`gpu`]).
pub fn with_gpu(f: impl FnOnce(&WgpuBackend, &CpuBackend)) {
    if let Some(g) = gpu() {
        f(g, &CpuBackend::new());
    }
}

/// A small deterministic generator (xorshift).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `[lo, hi)`.
    pub fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }
}

/// `n` random values of `dtype` (floats in `[-3, 3)`, integers in `[-50, 50)`, bytes, booleans).
pub fn random(dtype: DType, n: usize, seed: u64) -> HostData {
    let mut r = Rng::new(seed);
    match dtype {
        DType::F32 => HostData::F32((0..n).map(|_| r.f32(-3.0, 3.0)).collect()),
        DType::F16 => HostData::F16(
            (0..n)
                .map(|_| half::f16::from_f32(r.f32(-3.0, 3.0)))
                .collect(),
        ),
        DType::I32 => HostData::I32((0..n).map(|_| r.int(-50, 50) as i32).collect()),
        DType::I64 => HostData::I64((0..n).map(|_| r.int(-50, 50)).collect()),
        DType::U8 => HostData::U8((0..n).map(|_| r.int(0, 256) as u8).collect()),
        DType::Bool => HostData::Bool((0..n).map(|_| r.next() & 1 == 1).collect()),
        other => panic!("no random data for {other}"),
    }
}

/// The dtypes the wgpu backend holds.
pub const DTYPES: [DType; 6] = [
    DType::F32,
    DType::F16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::Bool,
];

/// Asserts equal dtypes and lengths, exact equality for non-floats and `|a - b| <= tol * (1 + |b|)`
/// for floats (NaN matches NaN).
pub fn assert_close(what: &str, got: &HostData, want: &HostData, tol: f64) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.len(), want.len(), "{what}: length");
    if !got.dtype().is_float() {
        assert_eq!(got, want, "{what}");
        return;
    }
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * (1.0 + b.abs());
        assert!(ok, "{what}: element {i}: wgpu {a} vs cpu {b}");
    }
}

/// `values` with every subnormal replaced by a zero of its sign.
pub fn flush_subnormals(values: &[f32]) -> Vec<f32> {
    values
        .iter()
        .map(|&v| {
            if v.is_subnormal() {
                0.0f32.copysign(v)
            } else {
                v
            }
        })
        .collect()
}

/// Uploads `data` to both backends.
pub fn both(
    g: &WgpuBackend,
    c: &CpuBackend,
    data: &HostData,
) -> (nabla_wgpu::WgpuStorage, <CpuBackend as Backend>::Storage) {
    (
        g.upload(data.clone()).expect("upload to wgpu"),
        c.upload(data.clone()).expect("upload to cpu"),
    )
}

/// Views of a buffer of `shape` worth testing: contiguous, transposed, reversed along the first axis,
/// broadcast along a new leading axis... Returns `(layout, elements the buffer needs)`.
pub fn views(shape: &[usize]) -> Vec<(Layout, usize)> {
    let n: usize = shape.iter().product();
    let mut out = vec![(Layout::row_major(shape), n)];
    if shape.len() >= 2 {
        let r = shape.len();
        let mut perm: Vec<usize> = (0..r).collect();
        perm.swap(r - 2, r - 1);
        // A transposed buffer read back in `shape`'s order.
        let mut src_shape = shape.to_vec();
        src_shape.swap(r - 2, r - 1);
        let t = Layout::row_major(&src_shape)
            .permute(&perm)
            .expect("permute");
        out.push((t, n));
    }
    if !shape.is_empty() && shape[0] > 1 {
        let mut strides: Vec<isize> = Layout::row_major(shape).strides().to_vec();
        strides[0] = -strides[0];
        let offset = (shape[0] - 1) * strides[0].unsigned_abs();
        let l = Layout::from_parts(shape.to_vec(), strides, offset).expect("reversed");
        out.push((l, n));
        // Broadcast: the first axis has stride 0.
        let mut strides: Vec<isize> = Layout::row_major(&shape[1..]).strides().to_vec();
        strides.insert(0, 0);
        let l = Layout::from_parts(shape.to_vec(), strides, 1).expect("broadcast");
        out.push((l, n / shape[0] + 1));
    }
    out
}
