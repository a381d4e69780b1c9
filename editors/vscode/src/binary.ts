// Finds the `culint` executable the extension starts as its language server.
//
// Kept free of the `vscode` module so it can be unit-tested under plain Node.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** The command that installs culint into the selected Python environment. */
export const INSTALL_COMMAND = "pip install culint";

export type BinarySource = "culint.path" | "bundled" | "python" | "PATH" | "cargo";

export type BinaryLookup =
  | { found: true; path: string; source: BinarySource }
  | { found: false; message: string };

export interface LookupPlaces {
  /** The `culint.path` setting, as the user wrote it. */
  configuredPath: string;
  /** Resolves a relative `culint.path`. */
  workspaceFolder?: string;
  /** The folder a platform-specific .vsix ships its culint binary in. */
  bundledDirectory?: string;
  /** Where the selected Python environment installs its scripts, most likely first (see
   * `pythonScriptDirectories`); empty without the Python extension. Asked only when neither
   * culint.path nor a bundled binary gives culint, as asking may activate the Python extension. */
  pythonScriptDirectories: () => Promise<readonly string[]>;
  env: NodeJS.ProcessEnv;
}

/** How the log names each place culint can come from. */
export function describeSource(source: BinarySource): string {
  switch (source) {
    case "culint.path":
      return "the culint.path setting";
    case "bundled":
      return "the binary bundled with the extension";
    case "python":
      return "the selected Python environment";
    case "PATH":
      return "PATH";
    case "cargo":
      return "cargo's bin folder";
  }
}

/**
 * Looks for culint in the `culint.path` setting; then the binary bundled in a platform-specific
 * extension; then the selected Python environment (where `pip install culint` puts it); then on
 * PATH; last in cargo's install folder (`$CARGO_HOME/bin`, else `~/.cargo/bin`), which is where
 * `cargo install` puts it and which a VS Code started from a desktop launcher often lacks on its
 * PATH. A `culint.path` that names no executable is an error rather than a reason to look on.
 */
export async function findCulint(places: LookupPlaces): Promise<BinaryLookup> {
  const configured = places.configuredPath.trim();
  if (configured !== "") {
    const candidate = resolveUserPath(configured, places.workspaceFolder);
    if (isExecutableFile(candidate)) {
      return { found: true, path: candidate, source: "culint.path" };
    }
    return {
      found: false,
      message:
        `The setting culint.path is "${configured}", but ${candidate} is not an executable file. ` +
        `Point culint.path at the culint binary, or clear it to let the extension find culint.`,
    };
  }

  const executableName = process.platform === "win32" ? "culint.exe" : "culint";
  const cargoHome = places.env.CARGO_HOME || path.join(os.homedir(), ".cargo");
  let pythonDirectories: readonly string[] = [];
  const searched: [BinarySource, () => Promise<readonly string[]>][] = [
    ["bundled", async () => (places.bundledDirectory === undefined ? [] : [places.bundledDirectory])],
    ["python", async () => (pythonDirectories = await places.pythonScriptDirectories())],
    ["PATH", async () => (places.env.PATH ?? "").split(path.delimiter).filter((directory) => directory !== "")],
    ["cargo", async () => [path.join(cargoHome, "bin")]],
  ];
  for (const [source, directories] of searched) {
    for (const directory of await directories()) {
      const candidate = path.join(directory, executableName);
      if (isExecutableFile(candidate)) {
        return { found: true, path: candidate, source };
      }
    }
  }

  const pythonPlaces = pythonDirectories.length > 0 ? `, in ${pythonDirectories[0]}` : "";
  return {
    found: false,
    message:
      `culint was not found in this extension${pythonPlaces}, on PATH or in ${path.join(cargoHome, "bin")}. ` +
      `Install it into the selected Python environment with \`${INSTALL_COMMAND}\`, ` +
      `or set culint.path to the binary.`,
  };
}

/**
 * The folders a Python environment's console scripts go to, from its interpreter's path and
 * `sys.prefix`: beside the interpreter (a venv's bin/ or Scripts\), and the prefix's own
 * bin/ (Scripts\ on Windows, where a conda environment or a python.org install keeps
 * python.exe one level above its scripts).
 */
export function pythonScriptDirectories(
  interpreter: string | undefined,
  sysPrefix: string | undefined,
  platform: NodeJS.Platform = process.platform,
): string[] {
  const paths = platform === "win32" ? path.win32 : path.posix;
  const directories: string[] = [];
  if (interpreter !== undefined && interpreter !== "") {
    directories.push(paths.dirname(interpreter));
  }
  if (sysPrefix !== undefined && sysPrefix !== "") {
    directories.push(paths.join(sysPrefix, platform === "win32" ? "Scripts" : "bin"));
  }
  return [...new Set(directories)];
}

/** Expands a leading `~` and resolves a relative path against the workspace folder. */
export function resolveUserPath(userPath: string, workspaceFolder?: string): string {
  let expanded = userPath;
  if (expanded === "~" || expanded.startsWith("~/")) {
    expanded = path.join(os.homedir(), expanded.slice(1));
  }
  if (path.isAbsolute(expanded)) {
    return expanded;
  }
  return path.resolve(workspaceFolder ?? process.cwd(), expanded);
}

function isExecutableFile(candidate: string): boolean {
  try {
    if (!fs.statSync(candidate).isFile()) {
      return false;
    }
    // On Windows X_OK only checks that the file exists.
    fs.accessSync(candidate, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
