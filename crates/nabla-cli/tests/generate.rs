//! `nabla generate` on small GPT-2 checkpoints this test writes: byte-level text in and out,
//! reproducible sampling, greedy decoding, the sizes read from the weights and config.json, and the
//! refusals.

mod support;

use nabla_core::{DType, Generator};
use nabla_cpu::CpuBackend;
use nabla_models::{Gpt2, Gpt2Config};
use nabla_nn::{Module, save_safetensors};
use std::path::{Path, PathBuf};
use support::{assert_one_line_error, nabla, stderr, stdout, temp};

/// A GPT-2 of `vocab_size` tokens and `n_embd` features in `dir`, saved with the `transformer.`
/// names of `GPT2LMHeadModel`.
fn checkpoint(dir: &Path, vocab_size: usize, n_embd: usize, n_head: usize) -> PathBuf {
    let cpu = CpuBackend::new();
    let config = Gpt2Config {
        vocab_size,
        n_positions: 32,
        n_embd,
        n_layer: 2,
        n_head,
        layer_norm_epsilon: 1e-5,
    };
    let model = Gpt2::new(config, DType::F32, &mut Generator::new(9), &cpu).unwrap();
    let state: Vec<_> = model
        .state_dict()
        .into_iter()
        .map(|(n, t)| (format!("transformer.{n}"), t))
        .collect();
    let path = dir.join("model.safetensors");
    save_safetensors(&path, &state, &Default::default()).unwrap();
    path
}

fn generate(weights: &Path, extra: &[&str]) -> std::process::Output {
    let w = weights.to_string_lossy();
    let mut args = vec!["generate", "--model", "gpt2", "--weights", &w];
    args.extend_from_slice(extra);
    nabla(&args)
}

#[test]
fn a_byte_level_model_continues_text_reproducibly() {
    let dir = temp("generate-bytes");
    std::fs::create_dir_all(&dir).unwrap();
    let weights = checkpoint(&dir, 256, 64, 1);
    let run = |extra: &[&str]| {
        let o = generate(&weights, extra);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let args = [
        "--prompt-text",
        "ab",
        "--max-new-tokens",
        "5",
        "--seed",
        "3",
    ];
    let out = run(&args);
    let ids: Vec<u32> = out
        .lines()
        .next()
        .unwrap()
        .split(' ')
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 5);
    assert!(ids.iter().all(|&i| i < 256));
    assert_eq!(out.lines().count(), 2, "ids, then the text: {out:?}");
    assert_eq!(run(&args), out, "the same seed samples the same tokens");
    let greedy = [
        "--prompt-ids",
        "97,98",
        "--temperature",
        "0",
        "--max-new-tokens",
        "4",
    ];
    let a = run(&greedy);
    assert_eq!(
        a,
        run(&[&greedy[..], &["--seed", "8"]].concat()),
        "greedy ignores the seed"
    );
    assert_eq!(a.lines().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sizes_come_from_the_weights_and_config_json() {
    let dir = temp("generate-config");
    std::fs::create_dir_all(&dir).unwrap();
    // 48 features in 4 heads: not 64 per head, so the heads come from config.json.
    let weights = checkpoint(&dir, 50, 48, 4);
    let ids = ["--prompt-ids", "1,2,3", "--max-new-tokens", "3"];
    assert_one_line_error(&generate(&weights, &ids), "give n_head");
    std::fs::write(dir.join("config.json"), r#"{"n_head": 4, "n_embd": 48}"#).unwrap();
    let o = generate(&weights, &ids);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).split_whitespace().count(), 3);
    assert!(
        generate(&weights, &[&ids[..], &["--n-head", "4"]].concat())
            .status
            .success()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_prompts_and_files_are_refused() {
    let dir = temp("generate-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let weights = checkpoint(&dir, 50, 64, 1);
    assert_one_line_error(&generate(&weights, &["--prompt-text", "hi"]), "byte-level");
    assert_one_line_error(
        &generate(&weights, &["--prompt-ids", "1,x"]),
        "not a token id",
    );
    assert_one_line_error(
        &generate(&weights, &["--prompt-ids", "1,50"]),
        "outside the vocabulary",
    );
    assert_one_line_error(&generate(&weights, &[]), "--prompt-ids or --prompt-text");
    assert_one_line_error(
        &generate(&weights, &["--prompt-ids", "1", "--prompt-text", "a"]),
        "cannot be used with",
    );
    assert_one_line_error(
        &generate(&weights, &["--prompt-ids", "1", "--temperature=-1"]),
        "temperature",
    );
    let long: Vec<String> = (0..40).map(|i| (i % 50).to_string()).collect();
    assert_one_line_error(
        &generate(&weights, &["--prompt-ids", &long.join(",")]),
        "n_positions",
    );
    std::fs::write(dir.join("other.safetensors"), b"not a checkpoint").unwrap();
    assert_one_line_error(
        &generate(&dir.join("other.safetensors"), &["--prompt-ids", "1"]),
        "other.safetensors",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
