#!/usr/bin/env python3
"""GPT-2 small generating tokens with a key-value cache, nabla against PyTorch eager, in one run from the
same weights.

Run from the repository root:

    python3 scripts/bench_generate.py [--rounds 3] [--prompt 32] [--tokens 256] [--skip-build]

The model is bench_scale.py's GPT-2 small (12 pre-norm layers, width 768, 12 heads, vocabulary 50,257,
head tied to the token embedding, f32) with GPT-2's 1,024 positions; the weights are drawn once by
PyTorch (bench_scale_models.write_weights) and loaded by name in both frameworks. Both run the same
greedy loop of batch 1 without gradients (nabla: crates/nabla/examples/bench_generate.rs, under
no_grad; PyTorch: below, under inference_mode): the prompt of --prompt fixed ids in one causal pass that
fills each layer's key and value cache, then one token at a time, its keys and values appended to the
cache with cat and its query attending to the whole cache with scaled_dot_product_attention; only the
last position's logits are computed. The prompt's last logits must agree (1e-4) and give the same
next token before any time is reported; later tokens may part ways on near-ties of the random model's
logits without changing the work.

Each framework runs in its own subprocess with 2 threads; rounds alternate the order. Reported: decode
tokens per second (the --tokens - 1 steps after the prompt; median and range over rounds), the
prompt's time, the ratio nabla / PyTorch (above 1 = nabla faster) and the peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scale_models as models  # noqa: E402
from bench_scale import run_child  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NABLA_EXE = os.path.join(REPO, "target", "release", "examples", "bench_generate")
CONTEXT = 1024


def prompt_id(j: int) -> int:
    """The fixed prompt's id j (as bench_generate.rs makes it)."""
    return (104729 * j + 13) % models.VOCAB


def worker_torch(weights: str, prompt: int, tokens: int) -> dict:
    import torch
    import torch.nn.functional as F
    from safetensors.torch import load_file

    torch.set_num_threads(2)
    model = models.torch_model("gpt2", CONTEXT)
    model.load_state_dict(load_file(weights))
    model.eval()
    heads, width = models.HEADS, models.WIDTH

    def layer_step(layer, x, cache):
        n = x.shape[1]
        attn = layer.self_attn
        qkv = F.linear(layer.norm1(x), attn.in_proj_weight, attn.in_proj_bias)
        q, k, v = (t.view(1, n, heads, width // heads).transpose(1, 2) for t in qkv.split(width, -1))
        if cache:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=n > 1)
        x = x + attn.out_proj(a.transpose(1, 2).reshape(1, n, width))
        x = x + layer.linear2(F.gelu(layer.linear1(layer.norm2(x))))
        return x, (k, v)

    def step(ids, t, caches):
        n = ids.shape[1]
        x = model.tok(ids) + model.pos(torch.arange(t, t + n))
        for i, layer in enumerate(model.layers):
            x, caches[i] = layer_step(layer, x, caches[i])
        return model.norm(x[:, -1]) @ model.tok.weight.t()

    ids = torch.tensor([[prompt_id(j) for j in range(prompt)]])
    with torch.inference_mode():
        caches = [None] * models.LAYERS
        t0 = time.perf_counter()
        logits = step(ids, 0, caches)
        nxt = int(logits.argmax())
        prefill = time.perf_counter() - t0
        first = logits[0, :5].tolist()
        generated = [nxt]
        t1 = time.perf_counter()
        for i in range(1, tokens):
            nxt = int(step(torch.tensor([[nxt]]), prompt + i - 1, caches).argmax())
            generated.append(nxt)
        rate = (tokens - 1) / (time.perf_counter() - t1)
    return {"first_logits": first, "ids": generated, "prefill_s": prefill, "tokens_per_s": rate}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--weights", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.prompt < 1 or args.tokens < 2 or args.prompt + args.tokens > CONTEXT:
        ap.error(f"--prompt >= 1 and --tokens >= 2 with --prompt + --tokens <= {CONTEXT}")
    if args.worker:
        print(json.dumps(worker_torch(args.weights, args.prompt, args.tokens)))
        return
    if not args.skip_build:
        subprocess.run(["cargo", "build", "--release", "-p", "nabla", "--example", "bench_generate"], cwd=REPO, check=True)
    with tempfile.TemporaryDirectory(prefix="nabla-bench-generate-") as tmp:
        weights = os.path.join(tmp, "gpt2.safetensors")
        models.write_weights("gpt2", weights, CONTEXT)
        sizes = ["--prompt", str(args.prompt), "--tokens", str(args.tokens)]
        commands = {
            "nabla": [NABLA_EXE, "--weights", weights, "--context", str(CONTEXT), *sizes],
            "torch": [sys.executable, os.path.abspath(__file__), "--worker", "--weights", weights, *sizes],
        }
        results = {run: [] for run in commands}
        for r in range(args.rounds):
            for run in (list(commands) if r % 2 == 0 else list(commands)[::-1]):
                results[run].append(run_child(commands[run]))
                res = results[run][-1]
                print(f"round {r + 1}: {run:6} {res['tokens_per_s']:.1f} tokens/s, prompt {res['prefill_s'] * 1e3:.0f} ms",
                      file=sys.stderr)
    want, got = results["torch"][0], results["nabla"][0]
    if max(abs(a - b) for a, b in zip(want["first_logits"], got["first_logits"])) > 1e-4 or want["ids"][0] != got["ids"][0]:
        sys.exit(f"the prompt's logits differ: nabla {got['first_logits']} (next {got['ids'][0]}), torch "
                 f"{want['first_logits']} (next {want['ids'][0]}): the models are not the same, no time is reported")
    same = sum(1 for a, b in zip(want["ids"], got["ids"]) if a == b)
    print(f"\nGPT-2 small, prompt {args.prompt}, {args.tokens} tokens greedy, batch 1, f32; first logits agree; "
          f"{same} of {args.tokens} generated ids equal")
    print(f"{'run':8}{'tokens/s':>10}{'range':>16}{'prompt ms':>11}{'nabla/run':>11}{'RSS MiB':>9}")
    for run, rs in results.items():
        rates = [r["tokens_per_s"] for r in rs]
        ratio = statistics.median(a["tokens_per_s"] / b["tokens_per_s"] for a, b in zip(results["nabla"], rs))
        print(f"{run:8}{statistics.median(rates):>10.1f}{f'{min(rates):.1f}-{max(rates):.1f}':>16}"
              f"{statistics.median(r['prefill_s'] for r in rs) * 1e3:>11.0f}{ratio:>11.2f}"
              f"{statistics.median(r['peak_rss_mib'] for r in rs):>9.0f}")


if __name__ == "__main__":
    main()
