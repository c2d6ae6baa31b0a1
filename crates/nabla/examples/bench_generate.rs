//! GPT-2 small generating text with a key-value cache: nabla's side of `scripts/bench_generate.py`,
//! which runs the same loop in PyTorch eager in the same run, from the same weights.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_generate -- --weights W.safetensors [--prompt 32] [--tokens 256] [--rounds 1] [--context 1024]
//! ```
//!
//! The model is GPT-2 small as in `bench_scale` (12 pre-norm layers of width 768 and 12 heads,
//! vocabulary 50,257, head tied to the token embedding, f32), with `--context` positions (the
//! weights' position table; 1,024 by default, GPT-2's). Greedy decoding of batch 1, under `no_grad`: the prompt
//! (`--prompt` fixed ids) runs as one causal pass that fills each layer's cache of keys and values
//! (`[1, 12, t, 64]`), then each new token runs alone, its keys and values appended to the cache
//! (`cat`, as PyTorch's dynamic cache does), its query attending to every cached position through
//! `scaled_dot_product_attention`. Only the last position's logits are computed.
//!
//! Prints one JSON object: the prompt's last logits' first values and the argmax (to check that the
//! frameworks agree before comparing times), the generated ids, the prompt (prefill) time and the
//! decode rate in tokens per second (median over `--rounds`), and the peak resident memory.

use nabla::nn::{Forward, Module, SdpaArgs, TransformerEncoderLayer, scaled_dot_product_attention};
use nabla::prelude::*;
#[allow(dead_code)]
#[path = "bench_support/mod.rs"]
mod bench_support;
#[allow(dead_code)]
#[path = "bench_support/language_model.rs"]
mod language_model;
use language_model::{GPT2, HEADS, LAYERS, LanguageModel, Spec, WIDTH};
use std::path::PathBuf;
use std::time::Instant;

/// One layer's cached keys and values, `[1, heads, t, head width]` each.
struct LayerCache {
    k: CpuTensor,
    v: CpuTensor,
}

/// `x` (`[1, n, 768]`, positions `t..t + n`) through one layer, extending its cache (`None`
/// before the first pass).
fn layer_step(
    layer: &TransformerEncoderLayer<CpuBackend>,
    x: &CpuTensor,
    cache: &mut Option<LayerCache>,
) -> Result<CpuTensor> {
    let n = x.shape()[1];
    let d = WIDTH / HEADS;
    let attn = &layer.self_attn;
    let h = layer.norm1.forward(x)?;
    let mut qkv = h.matmul(&attn.in_proj_weight.value().t()?)?;
    if let Some(b) = &attn.in_proj_bias {
        qkv = qkv.add(b.value())?;
    }
    let heads = |part: usize| -> Result<CpuTensor> {
        qkv.narrow(-1, part * WIDTH, WIDTH)?
            .reshape([1, n, HEADS, d])?
            .permute(&[0, 2, 1, 3])
    };
    let (q, k, v) = (heads(0)?, heads(1)?, heads(2)?);
    let (k, v) = match cache.take() {
        Some(c) => (Tensor::cat(&[&c.k, &k], 2)?, Tensor::cat(&[&c.v, &v], 2)?),
        None => (k.contiguous()?, v.contiguous()?),
    };
    // The prompt attends causally within itself; a new token sees every cached position.
    let args = SdpaArgs {
        is_causal: n > 1,
        ..SdpaArgs::default()
    };
    let a = scaled_dot_product_attention(&q, &k, &v, args)?;
    *cache = Some(LayerCache { k, v });
    let a = a.permute(&[0, 2, 1, 3])?.reshape([1, n, WIDTH])?;
    let x = x.add(&attn.out_proj.forward(&a)?)?;
    let ff = layer.linear1.forward(&layer.norm2.forward(&x)?)?.gelu()?;
    x.add(&layer.linear2.forward(&ff)?)
}

/// The logits `[1, vocab]` of the last of `ids` (`[1, n]`, at positions `t..t + n`).
fn step(
    model: &LanguageModel<CpuBackend>,
    ids: &CpuTensor,
    t: usize,
    caches: &mut [Option<LayerCache>],
) -> Result<CpuTensor> {
    let n = ids.shape()[1];
    let positions = Tensor::arange(t as i64, (t + n) as i64, 1, DType::I64, ids.backend())?;
    let mut x = model
        .tok
        .forward(ids)?
        .add(&model.pos.forward(&positions)?)?;
    for (layer, cache) in model.layers.iter().zip(caches.iter_mut()) {
        x = layer_step(layer, &x, cache)?;
    }
    let mut last = x.narrow(1, n - 1, 1)?;
    if let Some(norm) = &model.norm {
        last = norm.forward(&last)?;
    }
    last.reshape([1, WIDTH])?
        .matmul(&model.tok.weight.value().t()?)
}

/// Command-line options.
struct Args {
    weights: PathBuf,
    prompt: usize,
    tokens: usize,
    rounds: usize,
    /// Positions of the model (the weights' position table).
    context: usize,
}

fn parse_args() -> Result<Args> {
    let bad = |msg: String| Error::invalid("bench_generate", msg);
    let (mut weights, mut prompt, mut tokens, mut rounds, mut context) = (None, 32, 256, 1, 1024);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| bad(format!("{flag} needs a value")))?;
        let count = || -> Result<usize> {
            match value.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(bad(format!("{flag} takes a positive count, got {value}"))),
            }
        };
        match flag.as_str() {
            "--weights" => weights = Some(PathBuf::from(&value)),
            "--prompt" => prompt = count()?,
            "--tokens" => tokens = count()?,
            "--rounds" => rounds = count()?,
            "--context" => context = count()?,
            _ => return Err(bad(format!("unknown argument {flag} {value}"))),
        }
    }
    let weights = weights.ok_or_else(|| bad("needs --weights FILE".into()))?;
    Ok(Args {
        weights,
        prompt,
        tokens,
        rounds,
        context,
    })
}

/// The fixed prompt's id `j` (the script makes the same ids).
fn prompt_id(j: usize) -> i64 {
    ((104_729 * j + 13) % GPT2.vocab) as i64
}

/// The index of the largest logit (the first of ties).
fn argmax(logits: &CpuTensor) -> Result<i64> {
    logits
        .reshape([GPT2.vocab])?
        .argmax(0, false)?
        .item::<i64>()
}

fn main() -> Result<()> {
    nabla::cpu::init_thread_pool(None)?;
    let args = parse_args()?;
    let cpu = CpuBackend::new();
    let context = args.context;
    if args.prompt + args.tokens > context {
        return Err(Error::invalid(
            "bench_generate",
            format!("--prompt + --tokens exceeds the model's {context} positions"),
        ));
    }
    let spec = Spec {
        positions: context,
        ..GPT2
    };
    let mut model = LanguageModel::load(spec, &args.weights, &cpu)?;
    model.eval();
    let prompt: Vec<i64> = (0..args.prompt).map(prompt_id).collect();
    let ids = Tensor::from_vec(prompt, [1, args.prompt], &cpu)?;
    let (mut prefill, mut rates, mut first, mut generated) = (vec![], vec![], vec![], vec![]);
    no_grad(|| -> Result<()> {
        for _ in 0..args.rounds {
            let mut caches: Vec<Option<LayerCache>> = (0..LAYERS).map(|_| None).collect();
            let t0 = Instant::now();
            let logits = step(&model, &ids, 0, &mut caches)?;
            let mut next = argmax(&logits)?;
            prefill.push(t0.elapsed().as_secs_f64());
            first = logits.narrow(1, 0, 5)?.reshape([5])?.to_vec::<f32>()?;
            generated = vec![next];
            let t1 = Instant::now();
            for i in 1..args.tokens {
                let token = Tensor::from_vec(vec![next], [1, 1], &cpu)?;
                next = argmax(&step(&model, &token, args.prompt + i - 1, &mut caches)?)?;
                generated.push(next);
            }
            rates.push((args.tokens - 1) as f64 / t1.elapsed().as_secs_f64());
        }
        Ok(())
    })?;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{{\"first_logits\": {first:?}, \"ids\": {generated:?}, \"prefill_s\": {}, \
         \"tokens_per_s\": {}, \"peak_rss_mib\": {}}}",
        median(prefill),
        median(rates),
        bench_support::peak_rss_mib(),
    );
    Ok(())
}
