#!/usr/bin/env bash
# Fetch the benchmark corpus: the source distributions of transformers, diffusers, timm and
# accelerate from PyPI, unpacked into a cache outside the repository. Prints the corpus directory.
# Versions are pinned so that figures from different days compare.
set -euo pipefail
cache=${CULINT_BENCH_CACHE:-$HOME/.cache/culint-bench}
corpus=$cache/corpus
packages=(transformers==4.57.1 diffusers==0.35.2 timm==1.0.22 accelerate==1.11.0)
if [ ! -f "$corpus/.complete" ]; then
  mkdir -p "$cache/sdists" "$corpus"
  for package in "${packages[@]}"; do
    python3 -m pip download --quiet --no-deps --no-binary :all: -d "$cache/sdists" "$package" >&2
  done
  for archive in "$cache"/sdists/*.tar.gz; do
    tar -xzf "$archive" -C "$corpus"
  done
  touch "$corpus/.complete"
fi
echo "$corpus"
