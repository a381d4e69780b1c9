#!/usr/bin/env bash
# End-to-end tests of `culint server` through pytest-lsp (a pygls client): diagnostics while
# editing, quick fixes, fix-all, hover, in a UTF-16 push session (VS Code's capabilities) and a
# UTF-8 pull session (Neovim 0.11's); notebooks in both.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
venv="${CULINT_E2E_CACHE:-$HOME/.cache/culint-e2e}/pytest-lsp-venv"

if [ ! -x "$venv/bin/pytest" ] || ! "$venv/bin/python" -c "import pytest_lsp, nbformat" 2>/dev/null; then
  python3 -m venv "$venv"
  # nbformat validates the notebooks `culint check --fix` writes (test_notebook.py).
  "$venv/bin/pip" install --quiet --disable-pip-version-check "pytest-lsp==1.0.1" nbformat
fi

# CULINT_BIN, when set, names a binary to test instead of the debug build.
if [ -z "${CULINT_BIN:-}" ]; then
  CULINT_BIN=$("$repo/tests/e2e/lib/build-culint.sh")
fi
export CULINT_BIN

cd "$here"
exec "$venv/bin/pytest" -q -p no:cacheprovider "$@"
