#!/usr/bin/env bash
# Reliability smoke suite: each fuzz target for a short bounded run from the seeded corpus, fix
# safety over every fixture and example, and a reduced language-server stress run, all against
# the debug build. The long runs and their figures are in RELIABILITY.md.
#
# FUZZ_SECONDS (default 20) bounds each fuzz target.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
fuzz_seconds="${FUZZ_SECONDS:-20}"
cd "$root"

if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked --quiet
fi
culint=$("$root/tests/e2e/lib/build-culint.sh")

# Without a sanitizer, cargo-fuzz passes only stable flags (the coverage instrumentation), so
# the stable toolchain builds the targets. 16 codegen units keep the build to minutes.
fuzz_flags=(--sanitizer none --codegen-units 16)
bash fuzz/seed.sh
(cd fuzz && cargo fuzz build "${fuzz_flags[@]}" 2>&1 | tail -n 3)
for target in lint_bytes fix_bytes document_edits; do
  echo "--- fuzz $target (${fuzz_seconds}s)"
  log="$(mktemp)"
  if ! (cd fuzz && cargo fuzz run "${fuzz_flags[@]}" "$target" -- \
    -max_total_time="$fuzz_seconds" -max_len=8192 -timeout=20 -rss_limit_mb=4096 >"$log" 2>&1); then
    tail -n 60 "$log" >&2
    echo "fuzz target $target failed; the reproducer is under fuzz/artifacts/$target/" >&2
    exit 1
  fi
  grep -E '^Done [0-9]+ runs' "$log" || tail -n 2 "$log"
  rm -f "$log"
done

echo "--- fix safety (fixtures and examples)"
python3 bench/fix_safety.py --culint "$culint" --fixtures-only

echo "--- language-server stress (1,000 edits, 100 documents)"
python3 bench/lsp_stress.py --culint "$culint" --edits 1000 --documents 100 --huge-mb 2

echo "reliability: fuzz smoke, fix safety and LSP stress passed"
