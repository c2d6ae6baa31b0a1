#!/usr/bin/env python3
"""The CUDA backend against PyTorch on the same GPU, in the same run.

Workloads (the issue's): a matrix product at 8192^3 in bf16 (tensor cores) and in f32 (with and
without TF32), and a GPT-2-small training step (12 layers of width 768, 12 heads, context 1024,
batch 8, AdamW) under bf16 autocast, both eager. PyTorch builds the GPT first (seed 0) and writes its
weights to a safetensors file with its own names, which nabla loads, so both start from identical
weights and report the same first loss (to bf16 autocast's rounding) before timing is compared.

Each side times `--steps` calls after warm-up calls, synchronising the device around each; medians
and ranges are printed, and the ratio PyTorch time / nabla time (above 1: nabla faster).

    python scripts/bench_cuda.py --nabla target/release/examples/bench_cuda [--steps 5] [--json out.json]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time

import torch
from torch import nn
from torch.nn import functional as F

VOCAB, CONTEXT, WIDTH, LAYERS, HEADS, BATCH = 50257, 1024, 768, 12, 12, 8


class Gpt(nn.Module):
    """GPT-2 small with the module names nabla's benchmark uses."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Embedding(CONTEXT, WIDTH)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(LAYERS))
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, ids, targets, pos, mask):
        x = self.tok(ids) + self.pos(pos)
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=True)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, VOCAB).float(), targets)


def timed(fn, warm, reps):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        runs.append(time.perf_counter() - t0)
    return sorted(runs)


def matmul(dtype, tf32):
    n = 8192
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(n, n, device="cuda", generator=g).to(dtype)
    b = torch.randn(n, n, device="cuda", generator=g).to(dtype)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    runs = timed(lambda: a @ b, 3, 10)
    torch.backends.cuda.matmul.allow_tf32 = False
    name = {torch.bfloat16: "bfloat16", torch.float32: "float32"}[dtype]
    med = runs[len(runs) // 2]
    return {"workload": f"matmul_{name}{'_tf32' if tf32 else ''}_8192", "median_ms": med * 1e3,
            "min_ms": runs[0] * 1e3, "max_ms": runs[-1] * 1e3, "tflops": 2 * n**3 / med / 1e12}


def gpt_step(weights_path, steps):
    torch.manual_seed(0)
    model = Gpt().cuda()
    from safetensors.torch import save_file
    save_file({k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}, weights_path)
    ids = torch.tensor([[(7 * i + 3 * j) % VOCAB for j in range(CONTEXT)] for i in range(BATCH)],
                       device="cuda")
    targets = torch.tensor([(7 * i + 3 * (j + 1)) % VOCAB for i in range(BATCH)
                            for j in range(CONTEXT)], device="cuda")
    pos = torch.arange(CONTEXT, device="cuda")
    mask = nn.Transformer.generate_square_subsequent_mask(CONTEXT, device="cuda")
    opt = torch.optim.AdamW(model.parameters())
    first = []

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids, targets, pos, mask)
        if not first:
            first.append(loss.item())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    torch.cuda.reset_peak_memory_stats()
    runs = timed(step, 2, steps)
    return {"workload": "gpt2_small_step_bf16", "median_ms": runs[len(runs) // 2] * 1e3,
            "min_ms": runs[0] * 1e3, "max_ms": runs[-1] * 1e3, "first_loss": first[0],
            "peak_gib": torch.cuda.max_memory_allocated() / 2**30}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nabla", required=True, help="the bench_cuda example binary")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--json", help="write both sides' results here")
    args = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    torch_rows = [matmul(torch.bfloat16, False), matmul(torch.float32, False),
                  matmul(torch.float32, True)]
    # PyTorch's autocast product of f32 tensors (casts included), the counterpart of nabla's.
    a = torch.randn(8192, 8192, device="cuda")
    b = torch.randn(8192, 8192, device="cuda")

    def autocast_product():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return a @ b

    runs = timed(autocast_product, 3, 10)
    med = runs[len(runs) // 2]
    torch_rows.insert(1, {"workload": "matmul_autocast_bfloat16_8192", "median_ms": med * 1e3,
                          "min_ms": runs[0] * 1e3, "max_ms": runs[-1] * 1e3,
                          "tflops": 2 * 8192**3 / med / 1e12})
    del a, b
    with tempfile.TemporaryDirectory() as d:
        weights = f"{d}/gpt2.safetensors"
        torch_rows.append(gpt_step(weights, args.steps))
        torch.cuda.empty_cache()
        out = subprocess.run([args.nabla, "--weights", weights, "--steps", str(args.steps)],
                             capture_output=True, text=True)
    sys.stderr.write(out.stderr)
    nabla_rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0:
        print(f"nabla failed with exit code {out.returncode}", flush=True)
    by_name = {r["workload"]: r for r in nabla_rows}
    print(f"\n| workload | nabla median ms (min-max) | PyTorch median ms (min-max) | PyTorch / nabla | notes |")
    print("|---|---|---|---|---|")
    for t in torch_rows:
        n = by_name.get(t["workload"])
        theirs = f"{t['median_ms']:.2f} ({t['min_ms']:.2f}-{t['max_ms']:.2f})"
        if n is None:
            print(f"| {t['workload']} | failed | {theirs} | - | |")
            continue
        ours = f"{n['median_ms']:.2f} ({n['min_ms']:.2f}-{n['max_ms']:.2f})"
        notes = (f"{n['tflops']:.0f} vs {t['tflops']:.0f} TFLOP/s" if "tflops" in t else
                 f"first loss {n['first_loss']:.4f} vs {t['first_loss']:.4f}; peak "
                 f"{n['peak_gib']:.1f} vs {t['peak_gib']:.1f} GiB")
        print(f"| {t['workload']} | {ours} | {theirs} | {t['median_ms'] / n['median_ms']:.2f} | {notes} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch_rows, "nabla": nabla_rows}, f, indent=1)
    return out.returncode


if __name__ == "__main__":
    sys.exit(main())
