#!/usr/bin/env bash
# The CUDA checks on a machine lent an NVIDIA GPU, as one prepared run: the kernel-compilation tests,
# the conformance suite and the model gradients against the CPU (NABLA_REQUIRE_CUDA=1, so a device
# that fails to open fails the run instead of skipping), then the benchmark against PyTorch
# (scripts/bench_cuda.py). Binaries are built elsewhere and passed in a folder:
#
#   scripts/device_cuda.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds the stripped test binaries `lib`, `conformance` and `models` (from
# `cargo test -p nabla-cuda --no-run`) and the release example `bench_cuda`. The CUDA 13 libraries
# (libnvrtc, libcublas) are looked for in the CUDA toolkit and in PyTorch's nvidia wheels.
# TESTS (default "lib conformance models") picks the test binaries, TEST_TIMEOUT (seconds, default
# 240) bounds each, BENCH_STEPS (default 5) sets the timed steps, BENCH_TIMEOUT (default 300)
# bounds the benchmark, and BENCH=0 skips it. When BIN_DIR also holds the command line (`nabla`),
# the default `nabla train` runs on the GPU (`--backend cuda`) and on the CPU, for their accuracies.
set -uo pipefail
BIN="${1:?binary folder}"
OUT="${2:?output folder}"
mkdir -p "$OUT"

dirs=""
for f in $(find /usr/local/cuda*/ /opt /usr/lib -name 'libnvrtc.so.13*' -o -name 'libcublas.so.13*' 2>/dev/null); do
    d="$(dirname "$f")"
    case ":$dirs:" in *":$d:"*) ;; *) dirs="$dirs:$d" ;; esac
done
export LD_LIBRARY_PATH="${dirs#:}:${LD_LIBRARY_PATH:-}"
echo "library path: $LD_LIBRARY_PATH"
nvidia-smi -L

# The conformance fixtures are read from the path the test binaries were built at.
mkdir -p /work && [ -e /work/main ] || ln -s "$PWD" /work/main

export NABLA_REQUIRE_CUDA=1
status=0
for t in ${TESTS:-lib conformance models}; do
    echo "== $t"
    timeout "${TEST_TIMEOUT:-240}" "$BIN/$t" 2>&1 | tee "$OUT/$t.log" \
        | grep -E "^test |test result|panicked|SKIPPED|kernels compiled" || true
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
done
if [ -x "$BIN/nabla" ]; then
    for backend in cuda cpu; do
        echo "== nabla train --backend $backend"
        start=$SECONDS
        timeout 300 "$BIN/nabla" train --backend "$backend" --checkpoint "/tmp/nabla-$backend.safetensors" \
            --plot "/tmp/nabla-$backend.svg" 2>&1 | tee "$OUT/train-$backend.log" | tail -4
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
        echo "($((SECONDS - start)) s)"
    done
fi
if [ "${BENCH:-1}" != 0 ]; then
    echo "== benchmark"
    PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-300}" python3 scripts/bench_cuda.py --nabla "$BIN/bench_cuda" \
        --steps "${BENCH_STEPS:-5}" --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
exit $status
