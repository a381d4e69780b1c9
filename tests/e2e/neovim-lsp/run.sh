#!/usr/bin/env bash
# End-to-end test of `culint server` through Neovim's built-in LSP client (Debian's neovim,
# 0.7 on Debian 12): diagnostics with exact columns after CJK text and an emoji, incremental
# edits (as ranges, then as whole texts), a quick fix and a disable comment applied by Neovim
# itself, hover, and bad requests that must get error responses from a server that stays up.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"

if ! command -v nvim >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null
  fi
fi

# CULINT_BIN, when set, names a binary to test instead of the debug build.
if [ -z "${CULINT_BIN:-}" ]; then
  CULINT_BIN=$("$repo/tests/e2e/lib/build-culint.sh")
fi
export CULINT_BIN

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CULINT_E2E_DIR="$work"

# -u NONE: no user configuration; the test drives vim.lsp directly. Twice: with incremental
# changes, and with the whole text sent on every change.
for full_sync in 0 1; do
  rm -f "$work"/*
  CULINT_E2E_FULL_SYNC=$full_sync timeout 120 nvim --headless -u NONE -i NONE -n -c "luafile $here/test.lua"
  echo
done
