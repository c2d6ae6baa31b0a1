#!/usr/bin/env bash
# Fails, naming the crate and the path to it, if the default build of the workspace or of the
# command line depends on a crate that needs more than a Rust toolchain at build time: a system
# library or its headers (MPI, OpenSSL, BLAS, CUDA, ...), libclang (bindgen) or a build tool
# (pkg-config, cmake). Those belong behind opt-in features. Needs only cargo; .ci/run runs it
# before installing any system package.
#
#   bash scripts/check_default_deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# `*-sys` crates that are plain Rust bindings needing nothing installed to build (system calls,
# Windows and browser APIs, a library loaded at run time if present).
PURE_RUST_SYS='^(linux-raw-sys|windows-sys|js-sys|web-sys|renderdoc-sys)$'
# Crates that build or find native code: binding generators, build-system drivers, library finders.
NATIVE_BUILD='^(bindgen|clang-sys|pkg-config|cmake|vcpkg|autotools|build-probe-mpi|mpi)$'

failed=0
for selection in "--workspace" "-p nabla-cli"; do
    # shellcheck disable=SC2086 # the selection is two words on purpose
    crates=$(cargo tree -q $selection --target all -e normal,build,dev --prefix none \
        | awk '{print $1}' | sort -u)
    offending=$(printf '%s\n' "$crates" \
        | grep -E -e '-(sys|src)$' -e "$NATIVE_BUILD" | grep -Ev "$PURE_RUST_SYS" || true)
    for crate in $offending; do
        failed=1
        echo "error: the default build ($selection) depends on \`$crate\`, which needs a system" \
            "library or build tool: make it an opt-in feature. Path to it:" >&2
        # shellcheck disable=SC2086
        cargo tree -q $selection --target all -e normal,build,dev -i "$crate" >&2 || true
    done
done
if [ "$failed" = 0 ]; then
    echo "default dependency graph: no crate needs a system library (workspace and nabla-cli)"
fi
exit "$failed"
