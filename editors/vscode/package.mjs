// Packages the extension as a .vsix with vsce (its `vscode:prepublish` script bundles it first).
//
//   node package.mjs                                     culint.vsix, for every platform: finds
//                                                        culint in the Python environment or on PATH
//   node package.mjs --target linux-x64 --binary PATH    culint-linux-x64.vsix, for one platform,
//                                                        with that culint binary inside (bundled/)
//
// The targets are vsce's: linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64, ...
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { target: { type: "string" }, binary: { type: "string" } } });
if ((values.target === undefined) !== (values.binary === undefined)) {
  console.error("usage: node package.mjs [--target VSCE_TARGET --binary PATH_TO_CULINT]");
  process.exit(2);
}

const vsce = createRequire(import.meta.url).resolve("@vscode/vsce/vsce");
const bundled = "bundled";
rmSync(bundled, { recursive: true, force: true });
let out = "culint.vsix";
const args = ["package", "--no-dependencies"];
if (values.target !== undefined) {
  if (!existsSync(values.binary) || !statSync(values.binary).isFile()) {
    console.error(`--binary ${values.binary} is not a file`);
    process.exit(2);
  }
  const name = values.target.startsWith("win32-") ? "culint.exe" : "culint";
  mkdirSync(bundled);
  copyFileSync(values.binary, `${bundled}/${name}`);
  chmodSync(`${bundled}/${name}`, 0o755);
  out = `culint-${values.target}.vsix`;
  args.push("--target", values.target);
}
try {
  execFileSync(process.execPath, [vsce, ...args, "--out", out], { stdio: "inherit" });
} finally {
  // A binary left in bundled/ would end up in the next package, whatever its platform.
  rmSync(bundled, { recursive: true, force: true });
}
console.log(`wrote ${out}`);
