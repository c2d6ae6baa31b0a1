#!/usr/bin/env python3
"""Does training under nabla's bf16 autocast track the f32 loss curve? Trains GPT-2 small (bench_scale.py's
model, weights and fixed batch; AdamW) for --steps steps in f32 and again under autocast(BF16), from the
same weights, and compares the two loss curves step by step.

Run from the repository root (about 25 minutes for 200 steps on two cores):

    python3 scripts/check_autocast_curve.py [--steps 200] [--skip-build] [--json out.json]

Prints every 10th step's losses, the largest absolute and relative difference over all steps, and the
difference over the last 20 steps (where the curve has flattened). The batch is fixed, so the loss falls
as the model memorises it; the check is that bf16 products (f32 accumulation, f32 master weights and
optimizer state) follow the same descent.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scale_models as models  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
EXE = os.path.join(REPO, "target", "release", "examples", "bench_scale")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.steps < 20:
        ap.error("--steps must be at least 20")
    if not args.skip_build:
        subprocess.run(["cargo", "build", "--release", "-p", "nabla", "--example", "bench_scale"], cwd=REPO, check=True)
    curves = {}
    with tempfile.TemporaryDirectory(prefix="nabla-autocast-curve-") as tmp:
        weights = os.path.join(tmp, "gpt2.safetensors")
        models.write_weights("gpt2", weights)
        for run, extra in (("f32", []), ("bf16", ["--autocast", "bf16"])):
            cmd = [EXE, "--workload", "gpt2", "--weights", weights, "--steps", str(args.steps), "--warmup", "0", *extra]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            curves[run] = json.loads(out.strip().splitlines()[-1])["losses"]
            print(f"{run}: {len(curves[run])} steps, loss {curves[run][0]:.6f} -> {curves[run][-1]:.6f}", file=sys.stderr)
    f32, bf16 = curves["f32"], curves["bf16"]
    print(f"{'step':>6}{'f32':>12}{'bf16':>12}{'diff':>11}")
    for i in list(range(0, args.steps, 10)) + [args.steps - 1]:
        print(f"{i + 1:>6}{f32[i]:>12.6f}{bf16[i]:>12.6f}{bf16[i] - f32[i]:>+11.6f}")
    diffs = [abs(a - b) for a, b in zip(f32, bf16)]
    rel = [d / max(abs(a), 1e-12) for d, a in zip(diffs, f32)]
    tail = diffs[-20:]
    print(f"largest difference {max(diffs):.6f} (relative {max(rel):.4f}); "
          f"last 20 steps: largest {max(tail):.6f}, mean {sum(tail) / len(tail):.6f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(curves, fh)


if __name__ == "__main__":
    main()
