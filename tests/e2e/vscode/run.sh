#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code: builds culint and this platform's
# .vsix with that binary inside, installs the .vsix into code-server, and drives the workbench with
# Debian's Chromium (test.mjs). Nothing tells the extension where culint is: culint.path is unset,
# and code-server runs with a PATH and CARGO_HOME that hold no culint, so the extension must start
# the binary bundled in it. Then, with that binary taken away, it must start the culint of the
# selected Python environment: a venv with the wheel installed, reported by a stand-in for the
# Python extension (python-extension-stand-in/, as ms-python.python cannot be installed here), and
# the other venv's culint once the other is selected.
#
# Installs what it needs once (apt packages; code-server under $CULINT_E2E_CACHE, default
# ~/.cache/culint-e2e; playwright-core into this folder). Screenshots go to artifacts/.
# Exits non-zero when any check fails, and stops every process it started.
set -euo pipefail

suite_dir=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$suite_dir/../../.." && pwd)
cache_dir=${CULINT_E2E_CACHE:-$HOME/.cache/culint-e2e}
artifacts=$suite_dir/artifacts
extension_dir=$repo_root/editors/vscode
export npm_config_yes=true npm_config_audit=false npm_config_fund=false npm_config_loglevel=error
# playwright-core drives the system Chromium; it must never fetch a browser of its own.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

log() { printf '[vscode e2e] %s\n' "$*"; }

# --- system packages ------------------------------------------------------------------------
apt_packages=(libkrb5-dev libxkbfile-dev libsecret-1-dev ripgrep chromium build-essential pkg-config)
missing=()
for package in "${apt_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
chromium_path=${CULINT_E2E_CHROMIUM:-/usr/bin/chromium}

# --- code-server, playwright-core -------------------------------------------------------------
log "code-server (cached under $cache_dir)"
code_server=$("$suite_dir/install-code-server.sh" "$cache_dir" | tail -n 1)

npm_ci_if_stale() { # DIR: npm ci when node_modules is missing or older than the lock file
  local dir=$1
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund >/dev/null)
  fi
}
npm_ci_if_stale "$suite_dir"

# --- culint and the extension -----------------------------------------------------------------
log "building culint"
culint=$("$repo_root/tests/e2e/lib/build-culint.sh")

case "$(uname -m)" in
  x86_64) vsce_target=linux-x64 ;;
  aarch64) vsce_target=linux-arm64 ;;
  *) echo "no VS Code platform known for $(uname -m)" >&2; exit 1 ;;
esac
log "building the extension for $vsce_target with $culint inside"
npm_ci_if_stale "$extension_dir"
build_log=$(mktemp "${TMPDIR:-/tmp}/culint-e2e-vscode-build.XXXXXX")
if ! (cd "$extension_dir" && npm test && npm run package -- --target "$vsce_target" --binary "$culint") >"$build_log" 2>&1; then
  cat "$build_log" >&2
  rm -f "$build_log"
  echo "building the extension in $extension_dir failed (unit tests, type check or packaging)" >&2
  exit 1
fi
rm -f "$build_log"
vsix=$extension_dir/culint-$vsce_target.vsix

# --- a private code-server: its own config, user data, extensions and workspace ----------------
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/culint-e2e-vscode.XXXXXX")
code_server_pid=
cleanup() {
  if [ -n "$code_server_pid" ] && kill -0 "$code_server_pid" 2>/dev/null; then
    # code-server runs in its own process group (setsid): stop it with the extension host and
    # culint server it spawned.
    kill -TERM -- "-$code_server_pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$code_server_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$code_server_pid" 2>/dev/null || true
  fi
  rm -rf "$run_dir"
}
trap cleanup EXIT

workspace=$run_dir/workspace
cp -r "$suite_dir/workspace-template" "$workspace"
mkdir -p "$run_dir/user-data/User" "$run_dir/extensions"

# Two Python environments with culint installed from this checkout's wheel, as `pip install
# culint` would.
log "building the wheel; two venvs with culint installed from it"
wheel=$("$repo_root/tests/e2e/lib/build-wheel.sh" "$run_dir/wheel")
for venv in venv-a venv-b; do
  python3 -m venv "$run_dir/$venv"
  "$run_dir/$venv/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
done
python_stand_in="$run_dir/python-extension-stand-in.vsix"
(cd "$suite_dir/python-extension-stand-in" &&
  node "$extension_dir/node_modules/@vscode/vsce/vsce" package --no-dependencies --allow-missing-repository \
    --skip-license --out "$python_stand_in" >/dev/null)

cat >"$run_dir/user-data/User/settings.json" <<EOF
{
  "python.defaultInterpreterPath": "$run_dir/venv-a/bin/python",
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "extensions.ignoreRecommendations": true,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "files.autoSave": "off",
  "editor.hover.delay": 200
}
EOF

code_server_args=(--config "$run_dir/config.yaml" --user-data-dir "$run_dir/user-data" --extensions-dir "$run_dir/extensions")
printf 'auth: none\ncert: false\n' >"$run_dir/config.yaml"
"$code_server" "${code_server_args[@]}" --install-extension "$vsix" --force >"$run_dir/install-extension.log" 2>&1 || {
  cat "$run_dir/install-extension.log" >&2
  echo "code-server could not install $vsix" >&2
  exit 1
}
"$code_server" "${code_server_args[@]}" --install-extension "$python_stand_in" >>"$run_dir/install-extension.log" 2>&1 || {
  cat "$run_dir/install-extension.log" >&2
  echo "code-server could not install the Python extension stand-in" >&2
  exit 1
}
"$code_server" "${code_server_args[@]}" --list-extensions | grep -qx 'culint.culint' || {
  echo "culint.culint is not listed by code-server --list-extensions after installing $vsix" >&2
  exit 1
}
installed=("$run_dir"/extensions/culint.culint-*/bundled/culint)
if [ ! -x "${installed[0]}" ] || ! cmp -s "${installed[0]}" "$culint"; then
  echo "the installed extension holds no executable copy of $culint in bundled/ (${installed[0]})" >&2
  exit 1
fi

# PATH without any folder that holds a culint (cargo's bin among them, when it has one), and a
# CARGO_HOME with nothing in it: the bundled binary is the only culint the extension can find.
path_without_culint=
IFS=: read -r -a path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}"; do
  [ -n "$dir" ] && [ ! -e "$dir/culint" ] && path_without_culint=${path_without_culint:+$path_without_culint:}$dir
done
if PATH=$path_without_culint command -v culint >/dev/null; then
  echo "culint is still on PATH after removing the folders that hold it" >&2
  exit 1
fi
mkdir -p "$run_dir/no-cargo-home"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The port is free when chosen, but another process may take it before code-server binds it:
# retry with a new one.
for attempt in 1 2 3; do
  port=$(free_port)
  log "starting code-server on 127.0.0.1:$port (attempt $attempt)"
  PATH=$path_without_culint CARGO_HOME=$run_dir/no-cargo-home setsid "$code_server" "${code_server_args[@]}" --bind-addr "127.0.0.1:$port" --auth none \
    --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override \
    "$workspace" >"$run_dir/code-server.log" 2>&1 &
  code_server_pid=$!
  up=false
  for _ in $(seq 120); do
    if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
      up=true
      break
    fi
    kill -0 "$code_server_pid" 2>/dev/null || break
    sleep 0.5
  done
  $up && break
  cat "$run_dir/code-server.log" >&2
  kill -KILL -- "-$code_server_pid" 2>/dev/null || true
  code_server_pid=
  [ "$attempt" = 3 ] && { echo "code-server did not come up on 127.0.0.1 after 3 attempts" >&2; exit 1; }
done

rm -rf "$artifacts"
mkdir -p "$artifacts"
log "driving the workbench with $chromium_path"
status=0
CULINT_E2E_URL="http://127.0.0.1:$port/?folder=$workspace" \
  CULINT_E2E_WORKSPACE="$workspace" \
  CULINT_E2E_ARTIFACTS="$artifacts" \
  CULINT_E2E_CHROMIUM="$chromium_path" \
  CULINT_E2E_LOGS="$run_dir/user-data/logs" \
  CULINT_E2E_BUNDLED="${installed[0]}" \
  CULINT_E2E_VENVS="$run_dir/venv-a:$run_dir/venv-b" \
  node "$suite_dir/test.mjs" || status=$?
if [ "$status" != 0 ]; then
  log "code-server log (last 60 lines):"
  tail -n 60 "$run_dir/code-server.log" >&2 || true
  # The workbench's logs, the extension host's and the culint output channel among them.
  cp -r "$run_dir/user-data/logs" "$artifacts/logs" 2>/dev/null || true
  log "screenshots: $artifacts"
fi
exit "$status"
