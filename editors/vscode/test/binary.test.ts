import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { findCulint } from "../src/binary";

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "culint-binary-"));
}

function fakeBinary(directory: string, mode = 0o755): string {
  fs.mkdirSync(directory, { recursive: true });
  const binary = path.join(directory, "culint");
  fs.writeFileSync(binary, "#!/bin/sh\n");
  fs.chmodSync(binary, mode);
  return binary;
}

test("the culint.path setting wins over PATH", () => {
  const root = tempDir();
  const configured = fakeBinary(path.join(root, "configured"));
  fakeBinary(path.join(root, "on-path"));
  const lookup = findCulint(configured, { PATH: path.join(root, "on-path"), CARGO_HOME: root });
  assert.deepEqual(lookup, { found: true, path: configured, source: "culint.path" });
});

test("a relative culint.path is resolved against the workspace folder", () => {
  const root = tempDir();
  const binary = fakeBinary(path.join(root, "target", "debug"));
  const lookup = findCulint("target/debug/culint", { PATH: "" , CARGO_HOME: root }, root);
  assert.deepEqual(lookup, { found: true, path: binary, source: "culint.path" });
});

test("a culint.path that is not executable is an error naming the setting", () => {
  const root = tempDir();
  const notExecutable = fakeBinary(path.join(root, "bin"), 0o644);
  fakeBinary(path.join(root, "on-path"));
  const lookup = findCulint(notExecutable, { PATH: path.join(root, "on-path"), CARGO_HOME: root });
  assert.equal(lookup.found, false);
  assert.match(!lookup.found ? lookup.message : "", /culint\.path/);
});

test("PATH is searched in order, skipping folders without culint", () => {
  const root = tempDir();
  const second = fakeBinary(path.join(root, "second"));
  fakeBinary(path.join(root, "third"));
  const PATH = [path.join(root, "first"), path.join(root, "second"), path.join(root, "third")].join(path.delimiter);
  assert.deepEqual(findCulint("", { PATH, CARGO_HOME: root }), { found: true, path: second, source: "PATH" });
});

test("cargo's bin folder is the last resort", () => {
  const root = tempDir();
  const binary = fakeBinary(path.join(root, "cargo", "bin"));
  const lookup = findCulint("  ", { PATH: path.join(root, "empty"), CARGO_HOME: path.join(root, "cargo") });
  assert.deepEqual(lookup, { found: true, path: binary, source: "cargo" });
});

test("when culint is nowhere, the message gives the install command", () => {
  const root = tempDir();
  const lookup = findCulint("", { PATH: path.join(root, "empty"), CARGO_HOME: root });
  assert.equal(lookup.found, false);
  const message = !lookup.found ? lookup.message : "";
  assert.match(message, /cargo install --locked --path \./);
  assert.match(message, /culint\.path/);
});
