#!/usr/bin/env bash
# Run culint whole on every project of projects.tsv (tests included), as someone adding it to
# pre-commit would: once plain, once with the hardware of an 8×H100 node. Writes
# $RESULTS/NAME.plain.txt and NAME.hw.txt (concise format, paths relative to the project) and
# prints the findings per project, then scores them against review.tsv.
#   CULINT=target/release/culint CORPUS=/tmp/corpus bench/real_world/run_repos.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
culint=$(realpath "${CULINT:-$here/../../target/release/culint}")
corpus=${CORPUS:-/tmp/corpus}
results=${RESULTS:-/tmp/real_world_results}
mkdir -p "$results"
grep -v '^#' "$here/projects.tsv" | while IFS=$'\t' read -r name _ commit _; do
  dir=$corpus/$name
  [ "$(cat "$dir/.culint-commit" 2>/dev/null)" = "$commit" ] || { echo "$name: not checked out at $commit (run checkout.sh)" >&2; exit 2; }
  (cd "$dir" && "$culint" check --quiet --exit-zero --output-format concise . > "$results/$name.plain.txt" || true)
  (cd "$dir" && "$culint" check --quiet --exit-zero --output-format concise --gpus 8 --gpu-memory 80GiB \
      --compute-capability 9.0 . > "$results/$name.hw.txt" || true)
  printf '%-28s plain %4d   hardware %4d\n' "$name" "$(grep -c ': CUL' "$results/$name.plain.txt" || true)" \
      "$(grep -c ': CUL' "$results/$name.hw.txt" || true)"
done
python3 "$here/score_repos.py" "$results"
