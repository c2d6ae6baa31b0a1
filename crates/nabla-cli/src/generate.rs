//! `nabla generate`: token ids sampled from a GPT-2 checkpoint of Hugging Face's names (the zoo's
//! `Gpt2`), with temperature and top-k, one token per step over the model's key-value cache.

use crate::args::{GenerateArgs, GenerateModel};
use crate::backend::{Job, dispatch};
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_models::gpt2::{GenerateOptions, hf_name};
use nabla_models::{Gpt2, Gpt2Config};
use nabla_nn::{Strictness, load_state_dict, load_tensors};
use nabla_tensor::Tensor;
use std::io::Write;
use std::path::Path;

/// `nabla generate` on the backend of `--backend`.
pub fn generate(args: &GenerateArgs) -> Result<()> {
    dispatch(&args.common, Generate(args))
}

/// The `generate` job.
struct Generate<'a>(&'a GenerateArgs);

impl Job for Generate<'_> {
    fn run<B: Backend>(self, backend: &B) -> Result<()> {
        generate_on(self.0, backend)
    }
}

/// The prompt's token ids: `--prompt-ids` (comma-separated), or `--prompt-text`'s bytes for a
/// byte-level model (a vocabulary of 256).
fn prompt(args: &GenerateArgs, vocab_size: usize) -> Result<Vec<i64>> {
    let ids: Vec<i64> = match (&args.prompt_ids, &args.prompt_text) {
        (Some(ids), None) => ids
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<i64>()
                    .map_err(|_| Error::invalid("--prompt-ids", format!("{s:?} is not a token id")))
            })
            .collect::<Result<_>>()?,
        (None, Some(text)) if vocab_size == 256 => text.bytes().map(i64::from).collect(),
        (None, Some(_)) => {
            return Err(Error::invalid(
                "--prompt-text",
                format!(
                    "the model's vocabulary has {vocab_size} tokens, not the 256 bytes of a \
                     byte-level model: give --prompt-ids"
                ),
            ));
        }
        _ => {
            return Err(Error::invalid(
                "generate",
                "give the prompt as --prompt-ids or --prompt-text",
            ));
        }
    };
    if ids.is_empty() {
        return Err(Error::invalid("generate", "the prompt is empty"));
    }
    if let Some(bad) = ids.iter().find(|&&i| i < 0 || i >= vocab_size as i64) {
        return Err(Error::invalid(
            "--prompt-ids",
            format!("token id {bad} is outside the vocabulary of {vocab_size}"),
        ));
    }
    Ok(ids)
}

/// The number of heads: `--n-head`, else `n_head` of a `config.json` beside the weights (as
/// `save_pretrained` writes it), else none (the configuration then assumes GPT-2's 64-wide heads).
fn heads(args: &GenerateArgs, weights: &Path) -> Result<Option<usize>> {
    if args.n_head.is_some() {
        return Ok(args.n_head);
    }
    let config = weights.with_file_name("config.json");
    let Ok(text) = std::fs::read_to_string(&config) else {
        return Ok(None);
    };
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::invalid("generate", format!("{}: not JSON: {e}", config.display())))?;
    Ok(json
        .get("n_head")
        .and_then(serde_json::Value::as_u64)
        .map(|n| n as usize))
}

/// The continuation of the prompt by the GPT-2 in `--weights`.
fn gpt2_continuation<B: Backend>(args: &GenerateArgs, backend: &B) -> Result<Vec<i64>> {
    let file = load_tensors(&args.weights, backend)?;
    let state: Vec<(String, Tensor<B>)> = file
        .tensors
        .into_iter()
        .filter_map(|(name, t)| Some((hf_name(&name)?, t)))
        .collect();
    let shapes: Vec<(&str, &[usize])> =
        state.iter().map(|(n, t)| (n.as_str(), t.shape())).collect();
    let config = Gpt2Config::from_weights(&shapes, heads(args, &args.weights)?)?;
    let dtype = state
        .iter()
        .find(|(n, _)| n == "wte.weight")
        .map_or(DType::F32, |(_, t)| t.dtype());
    let model = Gpt2::new(config, dtype, &mut Generator::new(0), backend)?;
    load_state_dict(&model, &state, Strictness::Strict)?;
    let ids = prompt(args, config.vocab_size)?;
    let options = GenerateOptions {
        max_new_tokens: args.max_new_tokens,
        temperature: args.temperature,
        top_k: (args.top_k > 0).then_some(args.top_k),
        eos_token_id: args.eos_id,
        seed: args.seed,
    };
    model.generate(&ids, &options)
}

/// Loads the checkpoint, samples `--max-new-tokens` tokens and prints their ids (and, for a
/// byte-level model, their text).
fn generate_on<B: Backend>(args: &GenerateArgs, backend: &B) -> Result<()> {
    nabla_train::check_input_file(&args.weights, "weights")?;
    let new = match args.model {
        GenerateModel::Gpt2 => gpt2_continuation(args, backend)?,
    };
    let mut line = new.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
    if args.prompt_text.is_some() {
        let bytes: Vec<u8> = new.iter().map(|&i| i as u8).collect();
        line = format!("{line}\n{}", String::from_utf8_lossy(&bytes));
    }
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Io {
            context: "writing to standard output".into(),
            message: e.to_string(),
        }),
        _ => Ok(()),
    }
}
