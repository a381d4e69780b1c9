import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { findCulint, type LookupPlaces, pythonScriptDirectories } from "../src/binary";

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

/** A machine with a culint in every place the extension looks: the bundled folder, the Python
 * environment, PATH and cargo's bin folder. */
function everyPlace(root: string): { places: LookupPlaces; binaries: Record<string, string> } {
  const binaries = {
    bundled: fakeBinary(path.join(root, "extension", "bundled")),
    python: fakeBinary(path.join(root, "venv", "bin")),
    PATH: fakeBinary(path.join(root, "on-path")),
    cargo: fakeBinary(path.join(root, "cargo", "bin")),
  };
  const places = {
    configuredPath: "",
    bundledDirectory: path.join(root, "extension", "bundled"),
    pythonScriptDirectories: async () => [path.join(root, "venv", "bin")],
    env: { PATH: path.join(root, "on-path"), CARGO_HOME: path.join(root, "cargo") },
  };
  return { places, binaries };
}

test("the culint.path setting wins over every other place", async () => {
  const root = tempDir();
  const configured = fakeBinary(path.join(root, "configured"));
  const { places } = everyPlace(root);
  const lookup = await findCulint({ ...places, configuredPath: configured });
  assert.deepEqual(lookup, { found: true, path: configured, source: "culint.path" });
});

test("without culint.path, the places are taken in order: bundled, Python, PATH, cargo", async () => {
  const root = tempDir();
  const { places, binaries } = everyPlace(root);
  for (const source of ["bundled", "python", "PATH", "cargo"] as const) {
    const lookup = await findCulint(places);
    assert.deepEqual(lookup, { found: true, path: binaries[source], source });
    fs.rmSync(binaries[source]);
  }
  assert.equal((await findCulint(places)).found, false);
});

test("the Python environment is not asked when the bundled binary is there", async () => {
  const root = tempDir();
  const { places, binaries } = everyPlace(root);
  let asked = false;
  const lookup = await findCulint({
    ...places,
    pythonScriptDirectories: async () => {
      asked = true;
      return [];
    },
  });
  assert.deepEqual(lookup, { found: true, path: binaries.bundled, source: "bundled" });
  assert.equal(asked, false);
});

test("a relative culint.path is resolved against the workspace folder", async () => {
  const root = tempDir();
  const binary = fakeBinary(path.join(root, "target", "debug"));
  const lookup = await findCulint({
    configuredPath: "target/debug/culint",
    workspaceFolder: root,
    pythonScriptDirectories: async () => [],
    env: { PATH: "", CARGO_HOME: root },
  });
  assert.deepEqual(lookup, { found: true, path: binary, source: "culint.path" });
});

test("a culint.path that is not executable is an error naming the setting", async () => {
  const root = tempDir();
  const notExecutable = fakeBinary(path.join(root, "bin"), 0o644);
  const { places } = everyPlace(root);
  const lookup = await findCulint({ ...places, configuredPath: notExecutable });
  assert.equal(lookup.found, false);
  assert.match(!lookup.found ? lookup.message : "", /culint\.path/);
});

test("a bundled file that is not executable is passed over", async () => {
  const root = tempDir();
  const { places, binaries } = everyPlace(root);
  fs.chmodSync(binaries.bundled, 0o644);
  assert.deepEqual(await findCulint(places), { found: true, path: binaries.python, source: "python" });
});

test("PATH is searched in order, skipping folders without culint", async () => {
  const root = tempDir();
  const second = fakeBinary(path.join(root, "second"));
  fakeBinary(path.join(root, "third"));
  const PATH = [path.join(root, "first"), path.join(root, "second"), path.join(root, "third")].join(path.delimiter);
  const lookup = await findCulint({ configuredPath: "", pythonScriptDirectories: async () => [], env: { PATH, CARGO_HOME: root } });
  assert.deepEqual(lookup, { found: true, path: second, source: "PATH" });
});

test("when culint is nowhere, the message names the Python environment and the install command", async () => {
  const root = tempDir();
  const venvBin = path.join(root, "venv", "bin");
  const lookup = await findCulint({
    configuredPath: "",
    bundledDirectory: path.join(root, "extension", "bundled"),
    pythonScriptDirectories: async () => [venvBin],
    env: { PATH: path.join(root, "empty"), CARGO_HOME: root },
  });
  assert.equal(lookup.found, false);
  const message = !lookup.found ? lookup.message : "";
  assert.ok(message.includes(venvBin), message);
  assert.match(message, /pip install culint/);
  assert.match(message, /culint\.path/);
});

test("a venv's scripts are beside its interpreter", () => {
  assert.deepEqual(pythonScriptDirectories("/work/.venv/bin/python", "/work/.venv", "linux"), ["/work/.venv/bin"]);
  assert.deepEqual(pythonScriptDirectories("C:\\work\\.venv\\Scripts\\python.exe", "C:\\work\\.venv", "win32"), [
    "C:\\work\\.venv\\Scripts",
  ]);
});

test("a conda environment on Windows keeps its scripts in Scripts\\, below python.exe", () => {
  assert.deepEqual(pythonScriptDirectories("C:\\conda\\envs\\ml\\python.exe", "C:\\conda\\envs\\ml", "win32"), [
    "C:\\conda\\envs\\ml",
    "C:\\conda\\envs\\ml\\Scripts",
  ]);
});

test("an interpreter reached through a link is searched beside the link and in its prefix", () => {
  assert.deepEqual(pythonScriptDirectories("/usr/bin/python3", "/usr", "linux"), ["/usr/bin"]);
  assert.deepEqual(pythonScriptDirectories("/home/me/.pyenv/shims/python", "/home/me/.pyenv/versions/3.11.7", "linux"), [
    "/home/me/.pyenv/shims",
    "/home/me/.pyenv/versions/3.11.7/bin",
  ]);
  assert.deepEqual(pythonScriptDirectories(undefined, undefined, "linux"), []);
});
