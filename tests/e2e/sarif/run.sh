#!/usr/bin/env bash
# SARIF output validated against the official SARIF 2.1.0 schema with Python's jsonschema.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/culint-e2e"
venv="$cache/sarif-venv"

if ! "$venv/bin/python" -c "import jsonschema" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "jsonschema>=4,<5"
fi
culint=$("$root/tests/e2e/lib/build-culint.sh")

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/my project"
cp "$root/tests/fixtures/cli/step_loop.py" "$work/src/my project/train.py"
cp "$root/tests/fixtures/cli/clean.py" "$work/src/clean.py"

cd "$work"
status=0
"$culint" check --output-format sarif --output-file findings.sarif . || status=$?
if [ "$status" -ne 1 ]; then
  echo "culint check exited $status, expected 1 (findings)" >&2
  exit 1
fi
expected="$("$culint" check --output-format json --exit-zero . | "$venv/bin/python" -c 'import json, sys; print(len(json.load(sys.stdin)))')"
[ "$expected" -gt 0 ] || { echo "the fixture should have findings" >&2; exit 1; }
"$venv/bin/python" "$here/validate.py" "$here/sarif-schema-2.1.0.json" findings.sarif "$expected"
grep -q '"uri": "src/my%20project/train.py"' findings.sarif || { echo "expected a percent-encoded relative uri" >&2; exit 1; }

"$culint" check --output-format sarif --output-file clean.sarif src/clean.py
"$venv/bin/python" "$here/validate.py" "$here/sarif-schema-2.1.0.json" clean.sarif 0
echo "sarif: 2 logs valid against SARIF 2.1.0"
