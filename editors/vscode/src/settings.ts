// Turns the extension's `culint.*` settings into the settings object the server reads from
// `initializationOptions` and `workspace/didChangeConfiguration`.
//
// Kept free of the `vscode` module so it can be unit-tested under plain Node.

import { resolveUserPath } from "./binary";

export type SeverityLevel = "error" | "warning" | "info" | "hint";

/** The server's settings. Keys the user left at their default are omitted, so the server's own
 * configuration (culint.toml / pyproject.toml) decides them. */
export interface ServerSettings {
  select?: string[];
  ignore?: string[];
  unsafeFixes?: boolean;
  preview?: boolean;
  severity?: Record<string, SeverityLevel>;
  configuration?: string;
  showSyntaxErrors?: boolean;
}

/** The part of `vscode.WorkspaceConfiguration` this module needs. */
export interface SettingsSource {
  get<T>(section: string): T | undefined;
}

const SEVERITY_LEVELS: readonly string[] = ["error", "warning", "info", "hint"];

export function toServerSettings(source: SettingsSource, workspaceFolder?: string): ServerSettings {
  const settings: ServerSettings = {};

  const select = nonEmptyStrings(source.get<unknown>("select"));
  if (select.length > 0) {
    settings.select = select;
  }
  const ignore = nonEmptyStrings(source.get<unknown>("ignore"));
  if (ignore.length > 0) {
    settings.ignore = ignore;
  }
  if (source.get<unknown>("unsafeFixes") === true) {
    settings.unsafeFixes = true;
  }
  if (source.get<unknown>("preview") === true) {
    settings.preview = true;
  }
  if (source.get<unknown>("showSyntaxErrors") === true) {
    settings.showSyntaxErrors = true;
  }

  const severity = source.get<unknown>("severity");
  if (severity !== null && typeof severity === "object") {
    const levels: Record<string, SeverityLevel> = {};
    for (const [code, level] of Object.entries(severity)) {
      if (typeof level === "string" && SEVERITY_LEVELS.includes(level)) {
        levels[code] = level as SeverityLevel;
      }
    }
    if (Object.keys(levels).length > 0) {
      settings.severity = levels;
    }
  }

  const configuration = source.get<unknown>("configuration");
  if (typeof configuration === "string" && configuration.trim() !== "") {
    settings.configuration = resolveUserPath(configuration.trim(), workspaceFolder);
  }
  return settings;
}

function nonEmptyStrings(value: unknown): string[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.filter((item): item is string => typeof item === "string" && item.trim() !== "").map((s) => s.trim());
}
