#!/usr/bin/env bash
# End-to-end test of the Python package (pyproject.toml: maturin, `bin` bindings), as a Python
# user installs it:
#   - pip builds a wheel from this checkout, and the wheel holds exactly the culint binary that
#     `cargo build` makes (byte for byte) and its metadata;
#   - a fresh venv installs the wheel with no cargo (and no index) reachable, and its culint
#     checks a script, prints a rule's doc and serves LSP (lsp_session.py);
#   - `pip install <checkout>` and `uv tool install <checkout>` give the same culint.
#
# Every wheel here is built with cargo's dev profile (see tests/e2e/lib/build-wheel.sh), so the
# byte-for-byte check compares with the debug build and proves maturin adds nothing to cargo's
# binary.
#
# Installs once, under $CULINT_E2E_CACHE (default ~/.cache/culint-e2e): a venv with uv. pip and
# uv fetch maturin (pyproject.toml's build requirement) from PyPI into their own caches.
set -euo pipefail

suite_dir=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$suite_dir/../../.." && pwd)
cache_dir=${CULINT_E2E_CACHE:-$HOME/.cache/culint-e2e}
UV_VERSION=0.13.9
export MATURIN_PEP517_ARGS="--profile dev"
export PIP_DISABLE_PIP_VERSION_CHECK=1

log() { printf '[wheel e2e] %s\n' "$*"; }

failures=0
pass() { printf 'ok - %s\n' "$1"; }
fail() {
  printf 'not ok - %s\n' "$1"
  failures=$((failures + 1))
}

tools="$cache_dir/wheel-tools-venv"
if ! "$tools/bin/uv" --version 2>/dev/null | grep -q "^uv $UV_VERSION"; then
  log "installing uv $UV_VERSION into $tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet "uv==$UV_VERSION"
fi

log "building culint (debug)"
culint=$("$repo_root/tests/e2e/lib/build-culint.sh")
version=$("$culint" --version)

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/culint-e2e-wheel.XXXXXX")
trap 'rm -rf "$run_dir"' EXIT
cp "$repo_root/tests/fixtures/cli/step_loop.py" "$repo_root/tests/fixtures/cli/clean.py" "$run_dir/"

# --- the wheel ---------------------------------------------------------------------------------
log "pip wheel $repo_root"
wheel=$("$repo_root/tests/e2e/lib/build-wheel.sh" "$run_dir/dist")
log "built $(basename "$wheel")"
if python3 - "$wheel" "$culint" <<'PY'; then
import hashlib, sys, zipfile
wheel, binary = sys.argv[1], sys.argv[2]
names = zipfile.ZipFile(wheel).namelist()
scripts = [name for name in names if ".data/scripts/" in name]
assert scripts and all(name.endswith("/culint") for name in scripts), f"expected one script, culint: {names}"
packaged = hashlib.sha256(zipfile.ZipFile(wheel).read(scripts[0])).hexdigest()
built = hashlib.sha256(open(binary, "rb").read()).hexdigest()
assert packaged == built, f"the wheel's {scripts[0]} ({packaged}) is not cargo's {binary} ({built})"
code = [name for name in names if name.endswith((".py", ".so", ".pyd"))]
assert not code, f"a bin wheel carries no Python code or extension modules: {code}"
PY
  pass "the wheel holds cargo's culint binary, byte for byte, and nothing else to run"
else
  fail "the wheel holds cargo's culint binary, byte for byte, and nothing else to run"
fi

# --- a fresh venv without cargo ------------------------------------------------------------------
# Only the venv's own bin/ on PATH: no cargo, no rustc, no culint from anywhere else; no index.
venv="$run_dir/venv"
python3 -m venv "$venv"
in_venv() { env -i HOME="$run_dir" LANG=C.UTF-8 PATH="$venv/bin" "$@"; }
if in_venv /bin/sh -c 'command -v cargo || command -v rustc'; then
  echo "the fresh venv's PATH reaches a Rust toolchain: the test would prove nothing" >&2
  exit 1
fi
in_venv "$venv/bin/pip" install --quiet --no-index "$wheel"
if [ "$(in_venv /bin/sh -c 'command -v culint')" = "$venv/bin/culint" ] && [ "$(in_venv culint --version)" = "$version" ]; then
  pass "pip installs the wheel into a fresh venv without cargo: $version"
else
  fail "pip installs the wheel into a fresh venv without cargo, putting culint in its bin/"
fi

status=0
(cd "$run_dir" && in_venv culint check step_loop.py >"$run_dir/check.log" 2>&1) || status=$?
if [ "$status" = 1 ] && grep -q "CUL201" "$run_dir/check.log"; then
  pass "culint check from the venv reports CUL201 and exits 1"
else
  fail "culint check from the venv reports CUL201 and exits 1 (exit $status)"
  cat "$run_dir/check.log"
fi
if (cd "$run_dir" && in_venv culint check clean.py >"$run_dir/clean.log" 2>&1); then
  pass "culint check from the venv passes a clean script"
else
  fail "culint check from the venv passes a clean script"
  cat "$run_dir/clean.log"
fi
# The rule docs, queries and knowledge base are inside the binary: nothing is read from a checkout.
if (cd "$run_dir" && in_venv culint rule CUL201 | grep -q "empty-cache-in-step-loop"); then
  pass "culint rule prints a rule's doc from the installed binary"
else
  fail "culint rule prints a rule's doc from the installed binary"
fi
if (cd "$run_dir" && in_venv "$venv/bin/python" "$suite_dir/lsp_session.py" step_loop.py) >"$run_dir/lsp.log" 2>&1 &&
  grep -q "CUL201" "$run_dir/lsp.log"; then
  pass "culint server from the venv publishes diagnostics, answers hover and shuts down ($(grep diagnostics: "$run_dir/lsp.log"))"
else
  fail "culint server from the venv publishes diagnostics, answers hover and shuts down"
  cat "$run_dir/lsp.log"
fi

# --- the other two ways in --------------------------------------------------------------------------
same_binary() { cmp -s "$1" "$culint"; }
python3 -m venv "$run_dir/pip-install"
if "$run_dir/pip-install/bin/pip" install --quiet "$repo_root" && same_binary "$run_dir/pip-install/bin/culint"; then
  pass "pip install <checkout> installs cargo's culint"
else
  fail "pip install <checkout> installs cargo's culint"
fi

export UV_CACHE_DIR="$cache_dir/uv-cache" UV_TOOL_DIR="$run_dir/uv-tools" UV_TOOL_BIN_DIR="$run_dir/uv-bin"
if "$tools/bin/uv" tool install --quiet "$repo_root" && same_binary "$UV_TOOL_BIN_DIR/culint" &&
  [ "$(in_venv "$UV_TOOL_BIN_DIR/culint" --version)" = "$version" ]; then
  pass "uv tool install <checkout> installs cargo's culint"
else
  fail "uv tool install <checkout> installs cargo's culint"
fi

total=8
printf '%d passed, %d failed\n' $((total - failures)) "$failures"
[ "$failures" = 0 ]
