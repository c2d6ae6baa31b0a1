//! safetensors files that must be refused with one clear line naming the file (truncated files,
//! header lengths over the limit, tensor names given twice, offsets that do not fit the shapes or the
//! data, paths that are not files), the cleanup of temporary files left by killed saves ([`refused`]),
//! the writers' refusals ([`written`]), and proptest mutation fuzzing of `load_safetensors` and `load_checkpoint` from valid files written
//! here ([`fuzz`]). `NABLA_FUZZ_CASES` sets the number of cases of each fuzz test (default 256).

mod fuzz;
/// Shared with nabla-data's fuzz tests.
#[path = "../../../nabla-data/tests/data/mutation.rs"]
mod mutation;
/// Shared with nabla-data's tests; installs the counting global allocator of this binary.
#[path = "../../../nabla-data/tests/data/peak.rs"]
mod peak;
mod refused;
mod written;

use nabla_cpu::CpuBackend;
use nabla_nn::save_safetensors;
use nabla_tensor::Tensor;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nabla-st-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A linear layer of `inputs` to 2 features with finite weights, the same on every call.
fn linear(inputs: usize) -> nabla_nn::Linear<CpuBackend> {
    let mut rng = nabla_core::Generator::new(1);
    nabla_nn::Linear::new(
        inputs,
        2,
        true,
        nabla_core::DType::F32,
        &mut rng,
        &CpuBackend::new(),
    )
    .unwrap()
}

/// A safetensors file: the header length, `header`, then `data`.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(data);
    b
}

/// A reader error: one line, naming the file, short.
fn check_message(msg: &str, name: &str) {
    check_one_line(msg);
    assert!(msg.contains(name), "error does not name {name}: {msg}");
}

/// An error: one line, short.
fn check_one_line(msg: &str) {
    assert!(!msg.contains('\n'), "error spans lines: {msg}");
    assert!(msg.len() < 1200, "error of {} bytes: {msg}", msg.len());
}

/// A valid file of three tensors and metadata, written by `save_safetensors`.
fn seed_file(dir: &Path) -> Vec<u8> {
    let cpu = CpuBackend::new();
    let tensors = vec![
        (
            "a.weight".to_string(),
            Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &cpu).unwrap(),
        ),
        (
            "b".to_string(),
            Tensor::from_vec(vec![-1i64, 7], [2], &cpu).unwrap(),
        ),
        (
            "c".to_string(),
            Tensor::from_vec(vec![3u8], [1], &cpu).unwrap(),
        ),
    ];
    let metadata = HashMap::from([("k".to_string(), "v".to_string())]);
    let path = dir.join("seed.safetensors");
    save_safetensors(&path, &tensors, &metadata).unwrap();
    std::fs::read(&path).unwrap()
}
