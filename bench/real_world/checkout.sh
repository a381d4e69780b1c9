#!/usr/bin/env bash
# Check out every project of projects.tsv at its commit into $CORPUS (default /tmp/corpus), outside
# the repository. Uses a local mirror (/work/.mirror/OWNER+NAME/repo) when there is one, else
# clones from GitHub. Their code is never committed here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=${CORPUS:-/tmp/corpus}
mkdir -p "$corpus"
grep -v '^#' "$here/projects.tsv" | while IFS=$'\t' read -r name repo commit _; do
  dest=$corpus/$name
  [ -d "$dest" ] && [ "$(cat "$dest/.culint-commit" 2>/dev/null)" = "$commit" ] && continue
  mirror=/work/.mirror/${repo/\//+}/repo
  if [ ! -d "$mirror" ]; then
    mirror=$corpus/.git-$name
    [ -d "$mirror" ] || git clone --quiet --bare "https://github.com/$repo" "$mirror"
  fi
  rm -rf "$dest" && mkdir -p "$dest"
  # Large binary blobs may be absent from a mirror; the Python files are what counts.
  git --git-dir="$mirror" --work-tree="$dest" checkout -f "$commit" -- . 2>/dev/null || true
  echo "$commit" > "$dest/.culint-commit"
  echo "$name $commit $(find "$dest" -name '*.py' | wc -l) python files" >&2
done
