#!/usr/bin/env bash
# Seed every fuzz target's corpus with the rule fixtures and the examples.
set -euo pipefail
cd "$(dirname "$0")"
for target in lint_bytes fix_bytes document_edits; do
  mkdir -p "corpus/$target"
  find ../tests/fixtures ../examples -name '*.py' -print0 | while IFS= read -r -d '' file; do
    cp "$file" "corpus/$target/$(echo "$file" | tr '/.' '__')"
  done
done
