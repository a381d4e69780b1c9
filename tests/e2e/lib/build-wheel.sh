#!/usr/bin/env bash
# Builds culint's wheel from this checkout as `pip install <checkout>` does (PEP 517, with the
# maturin that pyproject.toml requires, fetched from PyPI) and prints the wheel's path.
#
# Usage: tests/e2e/lib/build-wheel.sh OUT_DIR
#
# The wheel is built with cargo's dev profile (MATURIN_PEP517_ARGS="--profile dev"): maturin then
# packages the debug binary the other suites test, byte for byte, instead of spending ten minutes
# on a release build on two cores. Release wheels (.github/workflows/release.yml) differ only in
# the profile.
set -euo pipefail
out_dir=${1:?usage: build-wheel.sh OUT_DIR}
repo_root=$(cd "$(dirname "$0")/../../.." && pwd)
build_venv=$(mktemp -d "${TMPDIR:-/tmp}/culint-wheel-build.XXXXXX")
trap 'rm -rf "$build_venv"' EXIT
python3 -m venv "$build_venv"
MATURIN_PEP517_ARGS="--profile dev" PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$build_venv/bin/pip" wheel --quiet --no-deps --wheel-dir "$out_dir" "$repo_root" >&2
wheels=("$out_dir"/culint-*.whl)
[ -f "${wheels[0]}" ] || { echo "no culint wheel in $out_dir after pip wheel" >&2; exit 1; }
echo "${wheels[0]}"
