#!/usr/bin/env bash
# Builds the debug culint binary and prints its path: the end-to-end suites' one way to get it.
#
# The path comes from cargo itself (`cargo metadata`'s target_directory), so it is right whether
# CARGO_TARGET_DIR is set, a .cargo/config.toml names build.target-dir, or neither.
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build --locked --quiet --bin culint >&2
target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
binary="$target_dir/debug/culint"
[ -x "$binary" ] || { echo "culint binary missing at $binary after cargo build" >&2; exit 1; }
echo "$binary"
