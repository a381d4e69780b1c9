#!/usr/bin/env bash
# End-to-end test of .pre-commit-hooks.yaml with the real pre-commit: in a scratch git
# repository, culint-check blocks a commit with a finding and lets a clean one through, and
# culint-fix rewrites a fixable file. pre-commit builds culint itself (language: rust, so
# `cargo install` of this repository), exactly as it does for users.
#
# Then the hook for users without Rust (docs/install.md): a local hook with `language: python`
# that pip-installs `culint==VERSION`, run by a pre-commit with no cargo on PATH. The package
# index it installs from is a folder holding this checkout's wheel (tests/e2e/lib/build-wheel.sh)
# and setuptools, which pre-commit's placeholder package for local hooks needs.
#
# This repository is used as it is on disk, uncommitted changes included (as `pre-commit
# try-repo` does): its working tree is committed into a shadow clone with a fixed date, so an
# unchanged tree gives the same rev and pre-commit's cached build is reused.
#
# Installs once, under $CULINT_E2E_CACHE (default ~/.cache/culint-e2e): a venv with pre-commit,
# pre-commit's store, and a cargo target folder shared by its release builds.
set -euo pipefail

suite_dir=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$suite_dir/../../.." && pwd)
cache_dir=${CULINT_E2E_CACHE:-$HOME/.cache/culint-e2e}
PRE_COMMIT_VERSION=4.7.0

log() { printf '[pre-commit e2e] %s\n' "$*"; }

venv="$cache_dir/pre-commit-venv"
if ! "$venv/bin/pre-commit" --version 2>/dev/null | grep -qx "pre-commit $PRE_COMMIT_VERSION"; then
  log "installing pre-commit $PRE_COMMIT_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "pre-commit==$PRE_COMMIT_VERSION"
fi
pre_commit="$venv/bin/pre-commit"

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/culint-e2e-pre-commit.XXXXXX")
trap 'rm -rf "$run_dir"' EXIT

# Before CARGO_TARGET_DIR is redirected below: the wheel packages the debug build.
log "building the wheel and its local package index"
index="$run_dir/index"
wheel=$("$repo_root/tests/e2e/lib/build-wheel.sh" "$index")
"$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary :all: --dest "$index" "setuptools>=40.8.0"
version=$(basename "$wheel" | cut -d- -f2)
wheel_binary="$run_dir/wheel-binary"
python3 -c 'import sys, zipfile
names = [n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.endswith(".data/scripts/culint")]
open(sys.argv[2], "wb").write(zipfile.ZipFile(sys.argv[1]).read(names[0]))' "$wheel" "$wheel_binary"

export PRE_COMMIT_HOME="$cache_dir/pre-commit-home"
# pre-commit's `cargo install` builds in release mode; a shared target folder keeps the
# dependencies compiled between runs.
export CARGO_TARGET_DIR="$cache_dir/pre-commit-cargo-target"
export PRE_COMMIT_COLOR=never

# A fixed identity and date make commits reproducible (the shadow's rev) and keep the user's git
# configuration out of the test.
export GIT_AUTHOR_NAME="culint e2e" GIT_AUTHOR_EMAIL="e2e@culint.invalid"
export GIT_COMMITTER_NAME="culint e2e" GIT_COMMITTER_EMAIL="e2e@culint.invalid"
export GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

# --- this repository's working tree as a commit ------------------------------------------------
shadow="$run_dir/culint"
git clone --quiet --no-hardlinks "$repo_root" "$shadow"
git -C "$shadow" checkout --quiet "$(git -C "$repo_root" rev-parse HEAD)"
(cd "$repo_root" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$repo_root" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) |
  (cd "$shadow" && tar -xf -)
git -C "$shadow" add -A
git -C "$shadow" commit --quiet --allow-empty -m "working tree under test"
rev=$(git -C "$shadow" rev-parse HEAD)
log "testing hooks of $repo_root at shadow rev $rev"

# --- the user's repository ---------------------------------------------------------------------
new_repository() { # DIR: an empty git repository, made the working directory
  mkdir -p "$1"
  cd "$1"
  git init --quiet -b main
}
new_repository "$run_dir/project"
cat >.pre-commit-config.yaml <<EOF
repos:
  - repo: $shadow
    rev: $rev
    hooks:
      - id: culint-check
EOF
git add .pre-commit-config.yaml
git commit --quiet --no-verify -m "pre-commit configuration"
"$pre_commit" install >/dev/null

failures=0
pass() { printf 'ok - %s\n' "$1"; }
fail() {
  printf 'not ok - %s\n' "$1"
  failures=$((failures + 1))
}

# The step loop empties the cache on every batch (CUL201): a finding without a safe fix.
cat >train.py <<'EOF'
import torch


def train(model, loader, optimizer):
    for inputs, targets in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(inputs.cuda()), targets.cuda())
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
EOF
git add train.py
log "building culint through pre-commit (cargo install, release; minutes on a cold cache)"
started=$(date +%s)
if git commit -m "train" >"$run_dir/blocked.log" 2>&1; then
  fail "culint-check blocks a commit with a finding"
  cat "$run_dir/blocked.log"
elif grep -q "CUL201" "$run_dir/blocked.log" && [ "$(git rev-list --count HEAD)" = 1 ]; then
  pass "culint-check blocks a commit with a finding ($(($(date +%s) - started)) s incl. any build)"
else
  fail "culint-check blocks a commit with a finding, naming CUL201"
  cat "$run_dir/blocked.log"
fi

# The same loop without the call is clean.
sed -i '/torch.cuda.empty_cache()/d' train.py
git add train.py
if git commit -m "train" >"$run_dir/clean.log" 2>&1 && [ "$(git rev-list --count HEAD)" = 2 ]; then
  pass "culint-check lets a clean commit through"
else
  fail "culint-check lets a clean commit through"
  cat "$run_dir/clean.log"
fi

# culint-fix: emptying the cache before `del` (CUL202) has a safe fix that swaps the two lines.
cat >.pre-commit-config.yaml <<EOF
repos:
  - repo: $shadow
    rev: $rev
    hooks:
      - id: culint-fix
EOF
cat >release.py <<'EOF'
import torch


def release(model, optimizer):
    torch.cuda.empty_cache()
    del model, optimizer
EOF
cat >"$run_dir/release.fixed.py" <<'EOF'
import torch


def release(model, optimizer):
    del model, optimizer
    torch.cuda.empty_cache()
EOF
git add .pre-commit-config.yaml release.py
if git commit -m "release" >"$run_dir/fix.log" 2>&1; then
  fail "culint-fix rewrites the file and stops the commit so the fix can be reviewed"
  cat "$run_dir/fix.log"
elif diff -u "$run_dir/release.fixed.py" release.py; then
  pass "culint-fix rewrites the file and stops the commit so the fix can be reviewed"
else
  fail "culint-fix rewrites release.py as expected"
  cat "$run_dir/fix.log"
fi
git add release.py
if git commit -m "release" >"$run_dir/fixed.log" 2>&1; then
  pass "the fixed file commits"
else
  fail "the fixed file commits"
  cat "$run_dir/fixed.log"
fi

# `pre-commit try-repo`, the documented way to try the hooks before pinning a rev, reads the
# manifest from the repository and runs a hook on the given files.
printf 'import torch\n\nfor step in range(10):\n    loss = step_loss(step)\n    loss.backward()\n    torch.cuda.empty_cache()\n' >loop.py
if "$pre_commit" try-repo "$shadow" culint-check --ref "$rev" --files loop.py >"$run_dir/try-repo.log" 2>&1; then
  fail "pre-commit try-repo culint-check reports the finding"
  cat "$run_dir/try-repo.log"
elif grep -q "CUL201" "$run_dir/try-repo.log"; then
  pass "pre-commit try-repo culint-check reports the finding"
else
  fail "pre-commit try-repo culint-check reports the finding (CUL201)"
  cat "$run_dir/try-repo.log"
fi

# --- without Rust: language: python, culint from the package index ------------------------------
# The configuration docs/install.md gives, with this checkout's version.
new_repository "$run_dir/python-project"
cat >.pre-commit-config.yaml <<EOF
repos:
  - repo: local
    hooks:
      - id: culint-check
        name: culint check
        entry: culint check
        language: python
        additional_dependencies: ["culint==$version"]
        types: [python]
EOF
cp "$repo_root/tests/fixtures/cli/step_loop.py" train.py
git add .pre-commit-config.yaml train.py
# pre-commit's own venv and the system's tools (git), nothing of Rust's; pip reads only $index.
without_rust=(env PATH="$venv/bin:/usr/bin:/bin" PIP_NO_INDEX=1 PIP_FIND_LINKS="$index" PRE_COMMIT_HOME="$run_dir/pre-commit-home")
if "${without_rust[@]}" sh -c 'command -v cargo || command -v rustc'; then
  echo "PATH=$venv/bin:/usr/bin:/bin reaches a Rust toolchain: the test would prove nothing" >&2
  exit 1
fi
if "${without_rust[@]}" "$pre_commit" run --all-files >"$run_dir/python-hook.log" 2>&1; then
  fail "the language: python hook, without Rust, fails on a finding"
  cat "$run_dir/python-hook.log"
elif grep -q "CUL201" "$run_dir/python-hook.log" &&
  cmp -s "$(find "$run_dir/pre-commit-home" -path '*/bin/culint' | head -n 1)" "$wheel_binary"; then
  pass "the language: python hook, without Rust, installs culint $version from the index and reports CUL201"
else
  fail "the language: python hook, without Rust, installs the wheel's culint and reports CUL201"
  cat "$run_dir/python-hook.log"
fi
sed -i '/torch.cuda.empty_cache()/d' train.py
if "${without_rust[@]}" "$pre_commit" run --all-files >"$run_dir/python-hook-clean.log" 2>&1; then
  pass "the language: python hook passes the clean script"
else
  fail "the language: python hook passes the clean script"
  cat "$run_dir/python-hook-clean.log"
fi

total=7
printf '%d passed, %d failed\n' $((total - failures)) "$failures"
[ "$failures" = 0 ]
