//! Modules: dotted names from `#[derive(Module)]`, train/eval, freezing, state dicts and safetensors
//! files (round trip bit for bit, files written by PyTorch, atomic writes, bad files).

use nabla_core::{Backend, DType, Generator, HostData, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::activation::Tanh;
use nabla_nn::{
    Forward, Linear, Module, Param, Sequential, Strictness, load_module, load_safetensors,
    load_state_dict, save_module, save_safetensors,
};
use nabla_tensor::Tensor;
use std::collections::HashMap;
use std::path::PathBuf;

/// A module with a training flag of its own, to see `set_training` reach it.
struct Switch {
    training: bool,
}

impl<B: Backend> Module<B> for Switch {
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Param<B>)) {}
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
}

#[derive(Module)]
#[module(crate = nabla_nn)]
struct Block<B: Backend> {
    q_proj: Linear<B>,
    norm: Option<Param<B>>,
    switch: Switch,
}

#[derive(Module)]
#[module(crate = nabla_nn)]
struct Encoder<B: Backend> {
    layers: Vec<Block<B>>,
    scale: Param<B>,
    hidden: usize,
    #[module(skip)]
    _label: std::marker::PhantomData<B>,
}

#[derive(Module)]
#[module(crate = nabla_nn)]
struct Pair<B: Backend>(Linear<B>, Param<B>);

fn cpu() -> CpuBackend {
    CpuBackend::new()
}

fn encoder(rng: &mut Generator) -> Result<Encoder<CpuBackend>> {
    let cpu = cpu();
    let block = |rng: &mut Generator, norm: bool| -> Result<Block<CpuBackend>> {
        Ok(Block {
            q_proj: Linear::new(3, 2, norm, DType::F32, rng, &cpu)?,
            norm: if norm {
                Some(Param::new(Tensor::ones([2], DType::F32, &cpu)?)?)
            } else {
                None
            },
            switch: Switch { training: true },
        })
    };
    Ok(Encoder {
        layers: vec![block(rng, true)?, block(rng, false)?],
        scale: Param::new(Tensor::ones([1], DType::F32, &cpu)?)?,
        hidden: 2,
        _label: std::marker::PhantomData,
    })
}

#[test]
fn derived_modules_name_parameters_like_pytorch() -> Result<()> {
    let mut rng = Generator::new(1);
    let enc = encoder(&mut rng)?;
    let names: Vec<String> = enc.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "layers.0.q_proj.weight",
            "layers.0.q_proj.bias",
            "layers.0.norm",
            "layers.1.q_proj.weight",
            "scale"
        ]
    );
    assert_eq!(enc.num_parameters(), 6 + 2 + 2 + 6 + 1);
    let pair = Pair(
        Linear::new(2, 2, false, DType::F64, &mut rng, &cpu())?,
        Param::new(Tensor::zeros([3], DType::F64, &cpu())?)?,
    );
    let names: Vec<String> = pair.state_dict().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["0.weight", "1"]);
    Ok(())
}

#[test]
fn train_and_eval_reach_every_submodule() -> Result<()> {
    let mut enc = encoder(&mut Generator::new(2))?;
    enc.eval();
    assert!(enc.layers.iter().all(|b| !b.switch.training));
    enc.train();
    assert!(enc.layers.iter().all(|b| b.switch.training));
    Ok(())
}

#[test]
fn frozen_parameters_get_no_gradient() -> Result<()> {
    let cpu = cpu();
    let layer = Linear::new(3, 2, true, DType::F64, &mut Generator::new(3), &cpu)?;
    let x = Tensor::ones([4, 3], DType::F64, &cpu)?;
    layer.weight.freeze();
    assert_eq!(layer.num_trainable_parameters(), 2);
    let grads = layer.forward(&x)?.sum_all()?.backward()?;
    assert!(layer.weight.grad(&grads).is_none());
    assert_eq!(
        layer
            .bias
            .as_ref()
            .unwrap()
            .grad(&grads)
            .unwrap()
            .to_vec::<f64>()?,
        vec![4.0, 4.0]
    );
    layer.unfreeze()?;
    let grads = layer.forward(&x)?.sum_all()?.backward()?;
    assert_eq!(
        layer.weight.grad(&grads).unwrap().to_vec::<f64>()?,
        vec![4.0; 6]
    );
    Ok(())
}

#[test]
fn param_updates_keep_identity_and_check_shape_and_dtype() -> Result<()> {
    let cpu = cpu();
    let p = Param::new(Tensor::zeros([2, 2], DType::F32, &cpu)?)?;
    let id = p.id();
    let shared = p.clone();
    p.set(Tensor::ones([2, 2], DType::F32, &cpu)?)?;
    assert_eq!(shared.id(), id);
    assert_eq!(shared.value().to_vec::<f32>()?, vec![1.0; 4]);
    let err = p.set(Tensor::ones([4], DType::F32, &cpu)?).unwrap_err();
    assert!(err.to_string().contains("Param::set"), "{err}");
    let err = p.set(Tensor::ones([2, 2], DType::F64, &cpu)?).unwrap_err();
    assert!(err.to_string().contains("Param::set"), "{err}");
    assert!(Param::new(Tensor::zeros([2], DType::I64, &cpu)?).is_err());
    Ok(())
}

#[test]
fn load_state_dict_lists_every_offender_and_changes_nothing_on_error() -> Result<()> {
    let cpu = cpu();
    let layer = Linear::new(2, 2, true, DType::F32, &mut Generator::new(4), &cpu)?;
    let before = layer.weight.value().to_vec::<f32>()?;
    let state = vec![
        (
            "weight".to_string(),
            Tensor::zeros([2, 2], DType::F32, &cpu)?,
        ),
        ("bias".to_string(), Tensor::zeros([3], DType::F32, &cpu)?),
        ("extra".to_string(), Tensor::zeros([1], DType::F32, &cpu)?),
    ];
    let err = load_state_dict(&layer, &state, Strictness::Strict)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unexpected: extra"), "{err}");
    assert!(err.contains("bias: expected [2], got [3]"), "{err}");
    assert_eq!(layer.weight.value().to_vec::<f32>()?, before);

    // Lenient loading still refuses a wrong shape, but reports missing and unexpected names.
    let ok = vec![
        (
            "weight".to_string(),
            Tensor::zeros([2, 2], DType::F64, &cpu)?,
        ),
        ("extra".to_string(), Tensor::zeros([1], DType::F32, &cpu)?),
    ];
    let report = load_state_dict(&layer, &ok, Strictness::Lenient)?;
    assert_eq!(report.missing, ["bias"]);
    assert_eq!(report.unexpected, ["extra"]);
    // Loaded and cast to the parameter's dtype.
    assert_eq!(layer.weight.value().dtype(), DType::F32);
    assert_eq!(layer.weight.value().to_vec::<f32>()?, vec![0.0; 4]);
    Ok(())
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nabla-nn-{}-{name}", std::process::id()))
}

#[test]
fn safetensors_round_trip_is_bit_exact_for_every_storable_dtype() -> Result<()> {
    let cpu = cpu();
    let path = temp_path("roundtrip.safetensors");
    let mut rng = Generator::new(5);
    let base = Tensor::randn([3, 5], DType::F64, &mut rng, &cpu)?;
    let tensors = vec![
        ("a.f64".to_string(), base.clone()),
        ("b.f32".to_string(), base.cast(DType::F32)?),
        ("c.f16".to_string(), base.cast(DType::F16)?),
        ("d.bf16".to_string(), base.cast(DType::BF16)?),
        (
            "e.i64".to_string(),
            Tensor::from_vec(vec![i64::MIN, -1, 0, 7, i64::MAX], [5], &cpu)?,
        ),
        (
            "f.i32".to_string(),
            Tensor::from_vec(vec![i32::MIN, 3], [2], &cpu)?,
        ),
        (
            "g.u8".to_string(),
            Tensor::from_vec(vec![0u8, 255], [2], &cpu)?,
        ),
        (
            "h.bool".to_string(),
            Tensor::from_vec(vec![true, false, true], [3], &cpu)?,
        ),
        // A non-contiguous view is written in its logical order.
        ("i.view".to_string(), base.t()?),
    ];
    let mut meta = HashMap::new();
    meta.insert("format".to_string(), "pt".to_string());
    save_safetensors(&path, &tensors, &meta)?;
    let file = load_safetensors(&path, &cpu)?;
    assert_eq!(file.metadata.get("format").map(String::as_str), Some("pt"));
    assert_eq!(file.tensors.len(), tensors.len());
    for ((name, want), (got_name, got)) in tensors.iter().zip(&file.tensors) {
        assert_eq!(name, got_name);
        assert_eq!(want.shape(), got.shape(), "{name}");
        assert_eq!(want.dtype(), got.dtype(), "{name}");
        let (w, g) = (want.to_host()?, got.to_host()?);
        let bits = |h: &HostData| format!("{h:?}");
        // Debug output of floats is exact (shortest round trip), so equal text means equal bits.
        assert_eq!(bits(&w), bits(&g), "{name}");
    }
    std::fs::remove_file(&path).ok();
    Ok(())
}

#[test]
fn a_state_dict_written_by_pytorch_loads_into_the_same_model() -> Result<()> {
    let cpu = cpu();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut rng = Generator::new(6);
    let model = Sequential::new()
        .push(Linear::new(4, 8, true, DType::F32, &mut rng, &cpu)?)
        .push(Tanh)
        .push(Linear::new(8, 3, true, DType::F32, &mut rng, &cpu)?);
    load_module(
        &model,
        dir.join("torch_mlp.safetensors"),
        &cpu,
        Strictness::Strict,
    )?;
    let text = std::fs::read_to_string(dir.join("torch_mlp.json")).expect("fixture");
    let fixture: serde_json::Value = serde_json::from_str(&text).expect("json");
    let floats = |key: &str| -> Vec<f32> {
        fixture[key]
            .as_array()
            .expect("array")
            .iter()
            .map(|v| v.as_f64().expect("number") as f32)
            .collect()
    };
    let x = Tensor::from_vec(floats("input"), [5, 4], &cpu)?;
    let y = model.forward(&x)?.to_vec::<f32>()?;
    for (a, b) in y.iter().zip(floats("output")) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
    // And back: saved by nabla, loaded into a fresh model, identical parameters.
    let path = temp_path("mlp.safetensors");
    save_module(&model, &path)?;
    let copy = Sequential::new()
        .push(Linear::new(4, 8, true, DType::F32, &mut rng, &cpu)?)
        .push(Tanh)
        .push(Linear::new(8, 3, true, DType::F32, &mut rng, &cpu)?);
    load_module(&copy, &path, &cpu, Strictness::Strict)?;
    for ((n1, a), (n2, b)) in model.state_dict().iter().zip(copy.state_dict()) {
        assert_eq!(n1, &n2);
        assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?);
    }
    std::fs::remove_file(&path).ok();
    Ok(())
}

#[test]
fn bad_files_are_errors_that_name_the_file() -> Result<()> {
    let cpu = cpu();
    let missing = temp_path("does-not-exist.safetensors");
    let err = load_safetensors(&missing, &cpu)
        .err()
        .expect("missing file");
    assert!(err.to_string().contains("does-not-exist"), "{err}");

    let path = temp_path("corrupt.safetensors");
    let w = Tensor::ones([4, 4], DType::F32, &cpu)?;
    save_safetensors(&path, &[("w".to_string(), w)], &HashMap::new())?;
    let bytes = std::fs::read(&path).expect("written");
    for cut in [0, 4, 12, bytes.len() - 3] {
        std::fs::write(&path, &bytes[..cut]).expect("write");
        let err = load_safetensors(&path, &cpu).err().expect("truncated file");
        assert!(err.to_string().contains("corrupt.safetensors"), "{err}");
    }
    let mut garbage = bytes.clone();
    garbage[8] = b'#';
    std::fs::write(&path, &garbage).expect("write");
    assert!(load_safetensors(&path, &cpu).is_err());
    std::fs::remove_file(&path).ok();

    // Names must be unique; complex tensors have no safetensors dtype.
    let t = Tensor::ones([1], DType::F32, &cpu)?;
    let dup = [("x".to_string(), t.clone()), ("x".to_string(), t)];
    assert!(save_safetensors(&path, &dup, &HashMap::new()).is_err());
    let c = Tensor::ones([1], DType::C64, &cpu)?;
    let err = save_safetensors(&path, &[("z".to_string(), c)], &HashMap::new()).unwrap_err();
    assert!(err.to_string().contains("complex"), "{err}");
    assert!(!path.exists());
    Ok(())
}

#[test]
fn a_failed_write_leaves_the_previous_file_intact() -> Result<()> {
    let cpu = cpu();
    let path = temp_path("atomic.safetensors");
    let w = Tensor::ones([2], DType::F32, &cpu)?;
    save_safetensors(&path, &[("w".to_string(), w)], &HashMap::new())?;
    let before = std::fs::read(&path).expect("written");
    // This save fails while encoding (a complex tensor): the old file must be untouched and no
    // temporary file left behind.
    let c = Tensor::ones([1], DType::C64, &cpu)?;
    assert!(save_safetensors(&path, &[("z".to_string(), c)], &HashMap::new()).is_err());
    assert_eq!(std::fs::read(&path).expect("still there"), before);
    // A directory in the way of the destination makes the rename fail: again nothing is left over.
    let dir_path = temp_path("atomic-dir");
    std::fs::create_dir_all(dir_path.join("occupied")).expect("dir");
    let t = Tensor::ones([1], DType::F32, &cpu)?;
    let target = dir_path.join("occupied");
    assert!(save_safetensors(&target, &[("t".to_string(), t)], &HashMap::new()).is_err());
    let leftovers: Vec<_> = std::fs::read_dir(&dir_path)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    std::fs::remove_dir_all(&dir_path).ok();
    std::fs::remove_file(&path).ok();
    Ok(())
}
