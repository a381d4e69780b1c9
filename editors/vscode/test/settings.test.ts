import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";

import { type SettingsSource, toServerSettings } from "../src/settings";

function source(values: Record<string, unknown>): SettingsSource {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

test("default settings send nothing, so the project's configuration decides", () => {
  const settings = toServerSettings(source({ select: [], ignore: [], unsafeFixes: false, severity: {}, configuration: "" }));
  assert.deepEqual(settings, {});
});

test("every setting is passed through in the server's shape", () => {
  const settings = toServerSettings(
    source({
      select: ["CUL1", " missing-set-device "],
      ignore: ["CUL201"],
      unsafeFixes: true,
      severity: { CUL101: "error", CUL202: "hint" },
      configuration: "configs/culint.toml",
      showSyntaxErrors: true,
    }),
    "/work/project",
  );
  assert.deepEqual(settings, {
    select: ["CUL1", "missing-set-device"],
    ignore: ["CUL201"],
    unsafeFixes: true,
    severity: { CUL101: "error", CUL202: "hint" },
    configuration: path.resolve("/work/project", "configs/culint.toml"),
    showSyntaxErrors: true,
  });
});

test("unknown severity levels and non-string rule selectors are dropped", () => {
  const settings = toServerSettings(source({ select: ["CUL1", 3, ""], severity: { CUL101: "fatal", CUL102: "info" } }));
  assert.deepEqual(settings, { select: ["CUL1"], severity: { CUL102: "info" } });
});
