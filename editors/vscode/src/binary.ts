// Finds the `culint` executable the extension starts as its language server.
//
// Kept free of the `vscode` module so it can be unit-tested under plain Node.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** The command that installs culint from a checkout of its repository. */
export const INSTALL_COMMAND = "cargo install --locked --path .";

export type BinaryLookup =
  | { found: true; path: string; source: "culint.path" | "PATH" | "cargo" }
  | { found: false; message: string };

/**
 * Looks for culint in the `culint.path` setting, then on PATH, then in cargo's install folder
 * (`$CARGO_HOME/bin`, else `~/.cargo/bin`), which is where `cargo install` puts it and which a
 * VS Code started from a desktop launcher often lacks on its PATH.
 */
export function findCulint(configuredPath: string, env: NodeJS.ProcessEnv, workspaceFolder?: string): BinaryLookup {
  const configured = configuredPath.trim();
  if (configured !== "") {
    const candidate = resolveUserPath(configured, workspaceFolder);
    if (isExecutableFile(candidate)) {
      return { found: true, path: candidate, source: "culint.path" };
    }
    return {
      found: false,
      message:
        `The setting culint.path is "${configured}", but ${candidate} is not an executable file. ` +
        `Point culint.path at the culint binary, or clear it to use culint from PATH.`,
    };
  }

  const executableName = process.platform === "win32" ? "culint.exe" : "culint";
  for (const directory of (env.PATH ?? "").split(path.delimiter)) {
    if (directory === "") {
      continue;
    }
    const candidate = path.join(directory, executableName);
    if (isExecutableFile(candidate)) {
      return { found: true, path: candidate, source: "PATH" };
    }
  }

  const cargoHome = env.CARGO_HOME || path.join(os.homedir(), ".cargo");
  const cargoInstalled = path.join(cargoHome, "bin", executableName);
  if (isExecutableFile(cargoInstalled)) {
    return { found: true, path: cargoInstalled, source: "cargo" };
  }

  return {
    found: false,
    message:
      `culint was not found on PATH or in ${path.join(cargoHome, "bin")}. Install it by running ` +
      `\`${INSTALL_COMMAND}\` in a clone of the culint repository, or set culint.path to the binary.`,
  };
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
    fs.accessSync(candidate, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
