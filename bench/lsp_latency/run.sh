#!/usr/bin/env bash
# Latency and memory of `culint server` against `ruff server` (see bench.py). Builds culint in
# release mode and installs ruff (pinned) into a venv under the cache directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${CULINT_E2E_CACHE:-$HOME/.cache/culint-e2e}/bench-venv"
# The peer is pinned: BENCHMARKS.md compares against this release.
ruff_version=0.17.6

if [ ! -x "$venv/bin/ruff" ] || [ "$("$venv/bin/ruff" --version)" != "ruff $ruff_version" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "ruff==$ruff_version"
fi
(cd "$repo" && cargo build --release --quiet --bin culint)

python3 "$here/bench.py" --server "$repo/target/release/culint server" --server "$venv/bin/ruff server" "$@"
