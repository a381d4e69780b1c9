#!/usr/bin/env bash
# The language server's latency benchmark (bench/lsp_latency) still runs, through both of its
# clients: bench.py's own and the Node replay. A few keystrokes against the debug build, pushed,
# pulled, and to two servers in turns; each client waits for the diagnostics of exactly each
# keystroke's version, so a replay that loses its way hangs or fails here. Nothing is timed: the
# figures belong in BENCHMARKS.md, measured on a release build.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
command -v node >/dev/null || { echo "node is required for the Node replay" >&2; exit 1; }
culint=$("$root/tests/e2e/lib/build-culint.sh")
python3 "$here/check.py" "$culint"
