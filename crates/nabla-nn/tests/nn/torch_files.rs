//! Reading `torch.save` archives (fixtures written by PyTorch itself with
//! `scripts/gen_torch_file_fixtures.py`): every dtype, strided and shared views, 0-d and empty
//! tensors, nested checkpoints, modules loaded from `.pt` files, and the files that must be refused
//! (a pickle that would run code, the format before PyTorch 1.6, TorchScript archives).

use nabla_core::DType;
use nabla_cpu::CpuBackend;
use nabla_nn::{BatchNorm1d, Linear, Module, Strictness, load_module, load_tensors, load_torch};
use nabla_tensor::Tensor;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/torch_files")
        .join(name)
}

/// The values of `t` as f64 (complex numbers as their parts, interleaved).
fn values(t: &Tensor<CpuBackend>) -> Vec<f64> {
    if t.dtype().is_complex() {
        let parts = t.real().unwrap().to_f64_vec().unwrap();
        let imag = t.imag().unwrap().to_f64_vec().unwrap();
        return parts
            .iter()
            .zip(&imag)
            .flat_map(|(&a, &b)| [a, b])
            .collect();
    }
    t.to_f64_vec().unwrap()
}

#[test]
fn state_dict_values_match_pytorch() {
    let cpu = CpuBackend::new();
    let file = load_torch(fixture("state_dict.pt"), &cpu).unwrap();
    let text = std::fs::read_to_string(fixture("expected.json")).unwrap();
    let expected: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = file.tensors.iter().map(|(n, _)| n.as_str()).collect();
    let wanted: Vec<&str> = expected.keys().map(String::as_str).collect();
    let mut sorted = names.clone();
    sorted.sort();
    let mut wanted_sorted = wanted.clone();
    wanted_sorted.sort();
    assert_eq!(sorted, wanted_sorted);
    // The file's order is the state dict's.
    assert_eq!(names[..2], ["0.weight", "0.bias"]);
    for (name, tensor) in &file.tensors {
        let want = &expected[name];
        let dtype = DType::from_name(want["dtype"].as_str().unwrap()).unwrap();
        assert_eq!(tensor.dtype(), dtype, "{name}");
        let shape: Vec<usize> = want["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(tensor.shape(), shape.as_slice(), "{name}");
        let flat: Vec<f64> = want["values"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|v| match v {
                serde_json::Value::Array(pair) => pair.iter().map(json_f64).collect(),
                other => vec![json_f64(other)],
            })
            .collect();
        assert_eq!(values(tensor), flat, "{name}");
    }
}

fn json_f64(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::Bool(b) => *b as u8 as f64,
        other => other.as_f64().unwrap(),
    }
}

#[test]
fn checkpoints_name_tensors_by_their_path() {
    let cpu = CpuBackend::new();
    let file = load_torch(fixture("checkpoint.pt"), &cpu).unwrap();
    let names: Vec<&str> = file.tensors.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"model.0.weight"), "{names:?}");
    assert!(names.contains(&"model.1.running_var"), "{names:?}");
    assert!(
        names.contains(&"optimizer.state.0.momentum_buffer"),
        "{names:?}"
    );
    let buffer = &file.tensors[names
        .iter()
        .position(|n| n.ends_with("momentum_buffer"))
        .unwrap()]
    .1;
    assert_eq!(buffer.shape(), &[4, 3]);
    assert!(buffer.to_vec::<f32>().unwrap().iter().all(|&v| v == 1.0));
}

#[test]
fn modules_load_from_pt_files_by_name() {
    let cpu = CpuBackend::new();
    /// Named `0` and `1`, as PyTorch's `Sequential` names them.
    #[derive(nabla_nn::Module)]
    #[module(crate = nabla_nn)]
    struct Net<B: nabla_core::Backend>(Linear<B>, BatchNorm1d<B>);
    let rng = &mut nabla_core::Generator::new(1);
    let net = Net(
        Linear::new(3, 4, true, DType::F32, rng, &cpu).unwrap(),
        BatchNorm1d::new(4, 1e-5, Some(0.1), true, true, DType::F32, &cpu).unwrap(),
    );
    let report = load_module(&net, fixture("state_dict.pt"), &cpu, Strictness::Lenient).unwrap();
    assert!(report.missing.is_empty(), "{report:?}");
    let file = load_tensors(fixture("state_dict.pt"), &cpu).unwrap();
    let weight = &file.tensors[0].1;
    assert_eq!(
        net.0.weight.value().to_vec::<f32>().unwrap(),
        weight.to_vec::<f32>().unwrap()
    );
    let names: Vec<String> = net.state_dict().into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"1.running_mean".to_string()), "{names:?}");
}

#[test]
fn refuses_files_that_could_run_code_or_are_not_torch_save_archives() {
    let cpu = CpuBackend::new();
    let cases = [
        ("malicious.pt", "refusing the global `posix.system`"),
        ("legacy.pt", "not a zip archive"),
        ("scripted.pt", "TorchScript"),
    ];
    for (name, why) in cases {
        let err = load_torch(fixture(name), &cpu).err().unwrap().to_string();
        assert!(err.contains(why) && err.contains(name), "{name}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
    let err = load_torch(fixture(""), &cpu).err().unwrap().to_string();
    assert!(err.contains("directory"), "{err}");
}
