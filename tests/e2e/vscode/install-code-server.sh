#!/usr/bin/env bash
# Installs code-server (the real VS Code workbench, served to a browser) into a cache folder, once.
#
# Usage: install-code-server.sh CACHE_DIR
# Prints the path of the code-server launcher on its last line.
#
# code-server 4.100.3 is the last release whose npm package runs on Node 20. Its postinstall
# builds VS Code's native modules (needs libkrb5-dev, libxkbfile-dev, libsecret-1-dev) and runs
# @vscode/ripgrep's postinstall, which would download a ripgrep build from the internet. That
# download is skipped by seeding the script's own cache with Debian's rg, so the install only
# talks to the npm registry.
set -euo pipefail

CODE_SERVER_VERSION=4.100.3
cache_dir=${1:?usage: install-code-server.sh CACHE_DIR}
prefix="$cache_dir/code-server-$CODE_SERVER_VERSION"
launcher="$prefix/node_modules/.bin/code-server"
stamp="$prefix/.installed"

if [ -f "$stamp" ] && [ -x "$launcher" ]; then
  echo "$launcher"
  exit 0
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" != 20 ]; then
  echo "code-server $CODE_SERVER_VERSION needs Node 20; this machine has $(node --version)" >&2
  exit 1
fi

mkdir -p "$prefix"
cd "$prefix"
[ -f package.json ] || echo '{ "name": "culint-e2e-code-server", "private": true }' >package.json

# Step 1: fetch the package tree without running any install script.
npm install --no-save --ignore-scripts --no-audit --no-fund "code-server@$CODE_SERVER_VERSION" >&2

# Step 2: seed @vscode/ripgrep's download cache. Its postinstall looks for
# $TMPDIR/vscode-ripgrep-cache-<package version>/ripgrep-<release>-<target>.tar.gz and uses it
# instead of downloading. The package version comes from VS Code's shrinkwrap, the release tag
# from the package's own postinstall script.
shrinkwrap="$prefix/node_modules/code-server/lib/vscode/npm-shrinkwrap.json"
rg_package_version=$(node -e '
  const lock = require(process.argv[1]);
  const entry = lock.packages["node_modules/@vscode/ripgrep"];
  if (!entry) { console.error("no @vscode/ripgrep in " + process.argv[1]); process.exit(1); }
  console.log(entry.version);' "$shrinkwrap")
rg_pack_dir=$(mktemp -d)
trap 'rm -rf "$rg_pack_dir"' EXIT
(cd "$rg_pack_dir" && npm pack --silent "@vscode/ripgrep@$rg_package_version" >/dev/null && tar xzf ./*.tgz)
rg_release=$(sed -n "s/^const VERSION = '\([^']*\)';/\1/p" "$rg_pack_dir/package/lib/postinstall.js")
if [ -z "$rg_release" ]; then
  echo "could not read the ripgrep release from @vscode/ripgrep@$rg_package_version's postinstall.js" >&2
  exit 1
fi
case "$(uname -m)" in
  x86_64) rg_target=x86_64-unknown-linux-musl ;;
  aarch64) rg_target=aarch64-unknown-linux-musl ;;
  *) echo "no ripgrep target known for $(uname -m)" >&2; exit 1 ;;
esac
system_rg=$(command -v rg) || { echo "ripgrep (Debian package 'ripgrep') is required" >&2; exit 1; }
export TMPDIR="$prefix/tmp"
rg_cache="$TMPDIR/vscode-ripgrep-cache-$rg_package_version"
mkdir -p "$rg_cache"
cp "$system_rg" "$rg_pack_dir/rg"
tar czf "$rg_cache/ripgrep-$rg_release-$rg_target.tar.gz" -C "$rg_pack_dir" rg

# Step 3: run the install scripts skipped in step 1: argon2's native build and code-server's
# postinstall, which installs and builds VS Code's own dependencies. As root that postinstall
# insists on npm_config_unsafe_perm=true, which npm 11 no longer sets itself.
export npm_config_yes=true npm_config_unsafe_perm=true
npm rebuild --foreground-scripts >&2

[ -x "$launcher" ] || { echo "code-server launcher missing at $launcher after install" >&2; exit 1; }
"$launcher" --version >&2
touch "$stamp"
echo "$launcher"
