//! The zoo's models against their reference libraries (fixtures written by
//! `scripts/gen_model_zoo_fixtures.py` with torchvision and Hugging Face `transformers`): weights
//! loaded by the libraries' names from their own files (`torch.save` for torchvision, safetensors
//! and `pytorch_model.bin` for GPT-2, BERT and ViT), then logits and every parameter's gradient of a
//! cross-entropy loss compared in float32 (to 1e-5 of each tensor's scale) and float64 (to 1e-12,
//! the reference also running in float64).

use nabla_core::{DType, Generator};
use nabla_cpu::CpuBackend;
mod fixture_configs;

use fixture_configs::{bert_config, gpt2_config, resnet_config, vit_config};
use nabla_models::gpt2::{GenerateOptions, KvCache, sample_token};
use nabla_models::{Bert, BertConfig, Gpt2, Gpt2Config, ResNet, ResNetConfig, Vit, VitConfig};
use nabla_nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla_nn::{Forward, Module, load_safetensors};
use nabla_tensor::Tensor;
use std::collections::HashMap;
use std::path::PathBuf;

type T = Tensor<CpuBackend>;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The reference tensors of `<model>_ref.safetensors` by name.
fn reference(model: &str, cpu: &CpuBackend) -> HashMap<String, T> {
    let file = load_safetensors(fixture(&format!("{model}_ref.safetensors")), cpu).unwrap();
    file.tensors.into_iter().collect()
}

/// The largest magnitude of `t`'s values (at least 1e-3) and the largest difference from `u`'s.
fn scale_and_error(t: &T, u: &T) -> (f64, f64) {
    assert_eq!(t.shape(), u.shape());
    let (a, b) = (t.to_f64_vec().unwrap(), u.to_f64_vec().unwrap());
    let scale = a.iter().fold(1e-3f64, |m, v| m.max(v.abs()));
    (
        scale,
        a.iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max),
    )
}

/// `got` against the references `key("f64")` and `key("f32")` of `want`. In float64: to
/// 1e-12 of the tensor's scale. In float32, nabla's error from the float64 reference must be at
/// most 1e-5 of the scale, or, where rounding grows through stacked convolutions and batch
/// statistics (both libraries' float32 logits of the bottleneck ResNet are off by over 6e-6 of
/// their scale, in different summation orders), at most four times PyTorch's own float32 error.
fn check(what: &str, got: &T, want: &HashMap<String, T>, key: impl Fn(&str) -> String) {
    let exact = &want[&key("f64")];
    let (scale, error) = scale_and_error(exact, got);
    if got.dtype() == DType::F64 {
        assert!(
            error <= 1e-12 * scale,
            "f64 {what}: off by {error:e} at scale {scale:e}"
        );
        return;
    }
    let (_, torch_error) = scale_and_error(exact, &want[&key("f32")]);
    let allowed = (1e-5 * scale).max(4.0 * torch_error);
    assert!(
        error <= allowed,
        "f32 {what}: off by {error:e} at scale {scale:e} (PyTorch's float32 is off by {torch_error:e})"
    );
}

/// Every parameter's gradient of `loss` against `grad.<f32|f64>.<name>` of `want`.
fn check_grads<M: Module<CpuBackend>>(model: &M, loss: &T, want: &HashMap<String, T>) {
    let grads = loss.backward().unwrap();
    let named = model.named_parameters();
    let expected = want.keys().filter(|k| k.starts_with("grad.f64.")).count();
    assert_eq!(named.len(), expected, "parameters with reference gradients");
    for (name, p) in named {
        let g = p
            .grad(&grads)
            .unwrap_or_else(|| panic!("no gradient for {name}"));
        check(&format!("gradient of {name}"), &g, want, |tag| {
            format!("grad.{tag}.{name}")
        });
    }
}

fn check_resnet(name: &str, bottleneck: bool) {
    let cpu = CpuBackend::new();
    let want = reference(name, &cpu);
    for dtype in [DType::F64, DType::F32] {
        let mut model = ResNet::new(
            resnet_config(bottleneck),
            dtype,
            &mut Generator::new(1),
            &cpu,
        )
        .unwrap();
        model.load(fixture(&format!("{name}.pt")), &cpu).unwrap();
        let x = want["x"].cast(dtype).unwrap();
        let logits = model.forward(&x).unwrap();
        check("logits", &logits, &want, |tag| format!("logits.{tag}"));
        let loss =
            cross_entropy(&logits, &want["labels"], &CrossEntropyOptions::default()).unwrap();
        check_grads(&model, &loss, &want);
        if dtype == DType::F32 {
            // The training step moved the running statistics as PyTorch's did.
            model.eval();
            let logits = model.forward(&x).unwrap();
            let (scale, error) = scale_and_error(&want["eval_logits.f32"], &logits);
            assert!(
                error <= 1e-4 * scale,
                "eval logits: off by {error:e} at scale {scale:e}"
            );
        }
    }
}

#[test]
fn resnet_basic_blocks_match_torchvision() {
    check_resnet("resnet_basic", false);
}

#[test]
fn resnet_bottleneck_blocks_match_torchvision() {
    check_resnet("resnet_bottleneck", true);
}

#[test]
fn gpt2_matches_transformers() {
    let cpu = CpuBackend::new();
    let want = reference("gpt2_tiny", &cpu);
    let ids = &want["ids"];
    let (n, t) = (ids.shape()[0], ids.shape()[1]);
    // save_pretrained's safetensors (`transformer.` names, no head) and torch.save's state dict
    // (with the tied `lm_head.weight`) load alike.
    for (dtype, file) in [
        (DType::F32, "gpt2_tiny.safetensors"),
        (DType::F64, "gpt2_tiny.bin"),
    ] {
        let model = Gpt2::new(gpt2_config(), dtype, &mut Generator::new(1), &cpu).unwrap();
        model.load(fixture(file), &cpu).unwrap();
        let logits = model.forward(ids).unwrap();
        check("logits", &logits, &want, |tag| format!("logits.{tag}"));
        let inputs = logits
            .narrow(1, 0, t - 1)
            .unwrap()
            .reshape([n * (t - 1), 64])
            .unwrap();
        let targets = ids
            .narrow(1, 1, t - 1)
            .unwrap()
            .reshape([n * (t - 1)])
            .unwrap();
        let loss = cross_entropy(&inputs, &targets, &CrossEntropyOptions::default()).unwrap();
        check_grads(&model, &loss, &want);
    }
}

#[test]
fn bert_matches_transformers() {
    let cpu = CpuBackend::new();
    let want = reference("bert_tiny", &cpu);
    let (ids, mask, types) = (
        &want["ids"],
        &want["attention_mask"],
        &want["token_type_ids"],
    );
    // save_pretrained's safetensors (BertModel's names) and torch.save's state dict of
    // BertForSequenceClassification (`bert.` names and a classifier head) load alike.
    for (dtype, file) in [
        (DType::F64, "bert_tiny.safetensors"),
        (DType::F32, "bert_tiny.bin"),
    ] {
        let mut model = Bert::new(bert_config(), dtype, &mut Generator::new(1), &cpu).unwrap();
        model.load(fixture(file), &cpu).unwrap();
        // Evaluation mode: dropout off, as the reference ran.
        model.eval();
        let out = model.run(ids, Some(types), Some(mask)).unwrap();
        check("hidden states", &out.last_hidden_state, &want, |tag| {
            format!("hidden.{tag}")
        });
        check("pooled output", &out.pooler_output, &want, |tag| {
            format!("pooled.{tag}")
        });
        let weighted = |t: &T, w: &str| t.mul(want[w].cast(dtype).unwrap()).unwrap().sum_all();
        let loss = weighted(&out.last_hidden_state, "weights_h")
            .unwrap()
            .add(weighted(&out.pooler_output, "weights_p").unwrap())
            .unwrap();
        check_grads(&model, &loss, &want);
    }
}

#[test]
fn bert_masks_padding_and_drops_out_in_training() {
    let cpu = CpuBackend::new();
    let mut config = bert_config();
    config.hidden_dropout_prob = 0.5;
    let mut model = Bert::new(config, DType::F64, &mut Generator::new(3), &cpu).unwrap();
    model.eval();
    let ids = Tensor::from_vec(vec![5i64, 9, 2, 0, 0], [1, 5], &cpu).unwrap();
    let mask = Tensor::from_vec(vec![1i64, 1, 1, 0, 0], [1, 5], &cpu).unwrap();
    let padded = model.run(&ids, None, Some(&mask)).unwrap();
    let short = model
        .run(&ids.narrow(1, 0, 3).unwrap(), None, None)
        .unwrap();
    // The unpadded tokens see only each other: the same states as without the padding.
    let (_, error) = scale_and_error(
        &short.last_hidden_state,
        &padded.last_hidden_state.narrow(1, 0, 3).unwrap(),
    );
    assert!(error < 1e-12, "padding leaks into attention: {error:e}");
    model.train();
    let a = model.forward(&ids).unwrap().to_f64_vec().unwrap();
    let b = model.forward(&ids).unwrap().to_f64_vec().unwrap();
    assert_ne!(a, b, "dropout draws anew in training");
    let err = model
        .run(
            &ids,
            None,
            Some(&Tensor::zeros([1, 4], DType::I64, &cpu).unwrap()),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("attention_mask"), "{err}");
}

#[test]
fn vit_matches_transformers() {
    let cpu = CpuBackend::new();
    let want = reference("vit_tiny", &cpu);
    // save_pretrained's safetensors (the published checkpoints' names) and torch.save's state dict
    // (transformers 5's module names) load alike.
    for (dtype, file) in [
        (DType::F32, "vit_tiny.safetensors"),
        (DType::F64, "vit_tiny.bin"),
    ] {
        let model = Vit::new(vit_config(), dtype, &mut Generator::new(1), &cpu).unwrap();
        model.load(fixture(file), &cpu).unwrap();
        let x = want["x"].cast(dtype).unwrap();
        let logits = model.forward(&x).unwrap();
        check("logits", &logits, &want, |tag| format!("logits.{tag}"));
        let loss =
            cross_entropy(&logits, &want["labels"], &CrossEntropyOptions::default()).unwrap();
        check_grads(&model, &loss, &want);
    }
    let model = Vit::new(vit_config(), DType::F32, &mut Generator::new(1), &cpu).unwrap();
    let err = model
        .forward(&Tensor::zeros([1, 3, 32, 32], DType::F32, &cpu).unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("[batch, 3, 16, 16]"), "{err}");
}

#[test]
fn loading_refuses_weights_of_another_shape_or_model() {
    let cpu = CpuBackend::new();
    let rng = &mut Generator::new(0);
    let wider = Gpt2Config {
        n_embd: 48,
        n_head: 4,
        ..gpt2_config()
    };
    let model = Gpt2::new(wider, DType::F32, rng, &cpu).unwrap();
    let err = model
        .load(fixture("gpt2_tiny.safetensors"), &cpu)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("wte.weight: expected [64, 48], got [64, 32]"),
        "{err}"
    );
    let resnet = ResNet::new(resnet_config(false), DType::F32, rng, &cpu).unwrap();
    let err = resnet
        .load(fixture("gpt2_tiny.bin"), &cpu)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("missing: conv1.weight") && err.contains("unexpected"),
        "{err}"
    );
    let err = Gpt2::new(
        Gpt2Config {
            n_head: 5,
            ..gpt2_config()
        },
        DType::F32,
        rng,
        &cpu,
    )
    .err()
    .unwrap();
    assert!(
        err.to_string().contains("n_head must divide n_embd"),
        "{err}"
    );
    let err = model
        .forward(&Tensor::zeros([1, 17], DType::I64, &cpu).unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("n_positions = 16"), "{err}");
}

#[test]
fn published_configurations_have_their_sizes() {
    let cpu = CpuBackend::new();
    let config = ResNetConfig::from_name("resnet18", 1000).unwrap();
    let model = ResNet::new(config, DType::F32, &mut Generator::new(0), &cpu).unwrap();
    // torchvision's resnet18 has 11,689,512 parameters.
    assert_eq!(model.num_parameters(), 11_689_512);
    let names: Vec<String> = model.state_dict().into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"layer2.0.downsample.1.num_batches_tracked".to_string()));
    let gpt2 = Gpt2Config::from_name("gpt2").unwrap();
    assert_eq!((gpt2.n_embd, gpt2.n_layer, gpt2.n_head), (768, 12, 12));
    assert!(ResNetConfig::from_name("resnet19", 10).is_none());
    // transformers' bert-base-uncased BertModel: 109,482,240 parameters.
    let bert = Bert::new(
        BertConfig::from_name("bert-base-uncased").unwrap(),
        DType::F32,
        &mut Generator::new(0),
        &cpu,
    )
    .unwrap();
    assert_eq!(bert.num_parameters(), 109_482_240);
    // google/vit-base-patch16-224 (ViTForImageClassification, 1000 classes): 86,567,656.
    let vit = Vit::new(
        VitConfig::from_name("vit-base", 1000).unwrap(),
        DType::F32,
        &mut Generator::new(0),
        &cpu,
    )
    .unwrap();
    assert_eq!(vit.num_parameters(), 86_567_656);
}

#[test]
fn gpt2_with_a_kv_cache_gives_the_logits_of_the_whole_sequence() {
    let cpu = CpuBackend::new();
    let model = Gpt2::new(gpt2_config(), DType::F64, &mut Generator::new(4), &cpu).unwrap();
    let ids: Vec<i64> = (0..12).map(|i| (i * 29 + 3) % 64).collect();
    let all = Tensor::from_vec(ids.clone(), [1, 12], &cpu).unwrap();
    let want = model.forward(&all).unwrap();
    // A prompt, one token, three tokens (a causal mask offset by the cache), then one.
    let mut cache = KvCache::new();
    let mut start = 0;
    for len in [5, 1, 3, 1, 2] {
        let part = all.narrow(1, start, len).unwrap();
        let got = model.logits_cached(&part, &mut cache).unwrap();
        let (_, error) = scale_and_error(&want.narrow(1, start, len).unwrap(), &got);
        assert!(
            error < 1e-12,
            "tokens {start}..{}: off by {error:e}",
            start + len
        );
        start += len;
    }
    assert_eq!(cache.len(), 12);
    let err = model
        .logits_cached(
            &Tensor::zeros([1, 5], DType::I64, &cpu).unwrap(),
            &mut cache,
        )
        .unwrap_err();
    assert!(err.to_string().contains("less the 12 cached"), "{err}");
}

#[test]
fn gpt2_generates_greedily_and_samples_reproducibly() {
    let cpu = CpuBackend::new();
    let model = Gpt2::new(gpt2_config(), DType::F64, &mut Generator::new(5), &cpu).unwrap();
    let prompt = [7i64, 21, 3];
    let greedy = GenerateOptions {
        max_new_tokens: 6,
        temperature: 0.0,
        ..GenerateOptions::default()
    };
    let tokens = model.generate(&prompt, &greedy).unwrap();
    // Greedy decoding over the cache picks each step's argmax of the full recomputation.
    let mut sequence = prompt.to_vec();
    for &token in &tokens {
        let ids = Tensor::from_vec(sequence.clone(), [1, sequence.len()], &cpu).unwrap();
        let logits = model.forward(&ids).unwrap();
        let last = logits
            .narrow(1, sequence.len() - 1, 1)
            .unwrap()
            .to_f64_vec()
            .unwrap();
        assert_eq!(sample_token(&last, 0.0, None, 0.5).unwrap() as i64, token);
        sequence.push(token);
    }
    let sampled = GenerateOptions {
        max_new_tokens: 8,
        seed: 11,
        top_k: Some(5),
        ..GenerateOptions::default()
    };
    let a = model.generate(&prompt, &sampled).unwrap();
    assert_eq!(a, model.generate(&prompt, &sampled).unwrap());
    assert_eq!(a.len(), 8);
    // The context of 16 positions ends the continuation.
    let long = GenerateOptions {
        max_new_tokens: 100,
        ..sampled.clone()
    };
    assert_eq!(model.generate(&prompt, &long).unwrap().len(), 16 - 3 + 1);
    let stop = GenerateOptions {
        eos_token_id: Some(a[2]),
        ..sampled
    };
    assert!(model.generate(&prompt, &stop).unwrap().len() <= 3);
    let err = model
        .generate(&[], &GenerateOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("prompt is empty"), "{err}");
}

#[test]
fn sampling_keeps_the_top_k_and_follows_the_temperature() {
    let logits = [0.0, 2.0, 1.0, 2.0];
    // Ties go to the lower token; top-1 is greedy whatever the draw.
    assert_eq!(sample_token(&logits, 0.0, None, 0.99).unwrap(), 1);
    assert_eq!(sample_token(&logits, 1.0, Some(1), 0.99).unwrap(), 1);
    // Top-2 keeps tokens 1 and 3, each with half the mass.
    assert_eq!(sample_token(&logits, 1.0, Some(2), 0.49).unwrap(), 1);
    assert_eq!(sample_token(&logits, 1.0, Some(2), 0.51).unwrap(), 3);
    // A high temperature flattens the four weights: u = 0.3 lands on the second, token 3.
    assert_eq!(sample_token(&logits, 1e6, None, 0.3).unwrap(), 3);
    assert!(sample_token(&logits, -1.0, None, 0.5).is_err());
    assert!(sample_token(&[f64::NAN], 1.0, None, 0.5).is_err());
    assert!(sample_token(&logits, 1.0, Some(0), 0.5).is_err());
}

#[test]
fn gpt2_configurations_follow_from_the_weights() {
    let cpu = CpuBackend::new();
    let model = Gpt2::new(gpt2_config(), DType::F32, &mut Generator::new(0), &cpu).unwrap();
    let state = model.state_dict();
    let shapes: Vec<(&str, &[usize])> =
        state.iter().map(|(n, t)| (n.as_str(), t.shape())).collect();
    assert_eq!(
        Gpt2Config::from_weights(&shapes, Some(4)).unwrap(),
        gpt2_config()
    );
    // 32 features are not 64 per head: the heads must be given.
    assert!(Gpt2Config::from_weights(&shapes, None).is_err());
    assert!(Gpt2Config::from_weights(&shapes[1..], Some(4)).is_err());
}
