#!/usr/bin/env bash
# Builds the Python package (crates/nabla-py) into a fresh virtual environment with maturin and runs
# its pytest suite, which checks values and gradients against NumPy and JAX.
#
#   bash scripts/test_python.sh            # the venv goes to target/py-venv
#   NABLA_PY_VENV=/tmp/venv bash scripts/test_python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VENV="${NABLA_PY_VENV:-$ROOT/target/py-venv}"
case "$VENV" in /*) ;; *) VENV="$ROOT/$VENV" ;; esac

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "maturin>=1.9.4,<2" "numpy>=1.23" "pytest>=7" "hypothesis>=6" jax \
    array-api-strict scikit-learn onnxruntime
# NABLA_PY_PROFILE picks the Cargo profile (release unless set); CI uses `py-test` (Cargo.toml), which
# compiles faster.
PROFILE="${NABLA_PY_PROFILE:-release}"
(cd crates/nabla-py && VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" maturin develop --profile "$PROFILE")
"$VENV/bin/python" -m pytest -q crates/nabla-py/tests "$@"
