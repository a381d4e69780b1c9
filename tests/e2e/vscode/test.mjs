// Drives the installed culint extension inside code-server (the real VS Code workbench) with
// Debian's Chromium, and checks what a user would see: culint's findings in the Problems panel,
// the rule doc on hover, a quick fix that rewrites the file, the GPU probe's report, and a
// notebook's findings in the notebook editor.
//
// run.sh starts code-server and passes its URL and the workspace through the environment:
//   CULINT_E2E_URL        workbench URL with ?folder= pointing at the workspace
//   CULINT_E2E_WORKSPACE  the workspace folder (a fresh copy of workspace-template/)
//   CULINT_E2E_ARTIFACTS  where screenshots go
//   CULINT_E2E_CHROMIUM   the Chromium executable (default /usr/bin/chromium)
//   CULINT_E2E_LOGS       code-server's log folder, where the extension's "culint" output goes
//   CULINT_E2E_BUNDLED    the culint binary inside the installed extension, the one it must start
//   CULINT_E2E_VENVS      two venvs (colon-separated) with culint installed; the first is selected

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { chromium } from "playwright-core";

import { SCENARIO } from "./scenario.mjs";

const url = requiredEnv("CULINT_E2E_URL");
const workspace = requiredEnv("CULINT_E2E_WORKSPACE");
const artifacts = requiredEnv("CULINT_E2E_ARTIFACTS");
const logs = requiredEnv("CULINT_E2E_LOGS");
const bundledBinary = requiredEnv("CULINT_E2E_BUNDLED");
const [venvA, venvB] = requiredEnv("CULINT_E2E_VENVS").split(":");
const chromiumPath = process.env.CULINT_E2E_CHROMIUM || "/usr/bin/chromium";

const WORKBENCH_ATTEMPTS = 3;
const WORKBENCH_TIMEOUT_MS = 120_000;
/** Server start plus the first lint; generous because CI shares 2 cores with compilers. */
const DIAGNOSTICS_TIMEOUT_MS = 90_000;

const scriptPath = join(workspace, SCENARIO.file);

mkdirSync(artifacts, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), "culint-e2e-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: chromiumPath,
  headless: true,
  viewport: { width: 1600, height: 1000 },
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const page = context.pages()[0] ?? (await context.newPage());
page.setDefaultTimeout(30_000);

let currentStep = "start";
let failed = false;
try {
  await step("workbench loads", () => openWorkbench());
  await step(`open ${SCENARIO.file}`, () => openFile(SCENARIO.file));
  await step("diagnostics appear in the Problems panel", () => problemsShowFindings());
  await step("the server is the binary bundled in the .vsix", () => serverIsBundledBinary());
  await step("hover shows the rule doc", () => hoverShowsRuleDoc());
  await step("a quick fix rewrites the file", () => quickFixRewritesFile());
  await step("culint: Fix all applies the safe fixes", () => fixAllRewritesFile());
  await step("culint: Explain error explains the selected log", () => explainsSelection());
  await step("culint: Probe GPU reports", () => probeReports());
  await step(`a notebook's cells show their findings (${SCENARIO.notebook.file})`, () => notebookShowsFindings());
  await step("without the bundled binary, the server is the selected Python environment's culint", () =>
    serverIsPythonEnvironmentsCulint(),
  );
  await step("selecting another Python environment restarts the server with its culint", () =>
    otherEnvironmentRestartsServer(),
  );
} catch (error) {
  failed = true;
  console.error(`FAILED at step "${currentStep}": ${error instanceof Error ? error.stack : error}`);
  await screenshot("failure.png").catch(() => {});
  const notifications = await page
    .locator(".notification-list-item-message")
    .allInnerTexts()
    .catch(() => []);
  if (notifications.length > 0) {
    console.error(`notifications on screen:\n${notifications.join("\n")}`);
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(failed ? "vscode e2e: FAILED" : "vscode e2e: all steps passed");
process.exit(failed ? 1 : 0);

async function step(name, action) {
  currentStep = name;
  const started = Date.now();
  await action();
  console.log(`ok - ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}

/** Loads the workbench, reloading when it does not come up (a cold code-server can be slow). */
async function openWorkbench() {
  for (let attempt = 1; ; attempt++) {
    try {
      await page.goto(url, { waitUntil: "domcontentloaded", timeout: WORKBENCH_TIMEOUT_MS });
      await page.locator(".monaco-workbench").waitFor({ timeout: WORKBENCH_TIMEOUT_MS });
      // The explorer lists the workspace once the remote file system is connected.
      await page
        .locator(".explorer-folders-view .monaco-list-row", { hasText: SCENARIO.file })
        .waitFor({ timeout: WORKBENCH_TIMEOUT_MS });
      return;
    } catch (error) {
      if (attempt >= WORKBENCH_ATTEMPTS) {
        throw error;
      }
      console.log(`workbench not ready (attempt ${attempt}): ${firstLine(error)}; reloading`);
    }
  }
}

async function openFile(name) {
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first().dblclick();
  await page.locator(".tabs-container .tab.active", { hasText: name }).waitFor();
  await page.locator(".editor-instance .monaco-editor .view-lines").first().waitFor();
  await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
}

async function problemsShowFindings() {
  await runCommand("View: Focus Problems");
  const panel = page.locator(".markers-panel");
  await panel.waitFor();
  for (const code of SCENARIO.expectedCodes) {
    await panel
      .locator(".monaco-list-row", { hasText: code })
      .first()
      .waitFor({ timeout: DIAGNOSTICS_TIMEOUT_MS });
  }
  const rows = await panel.locator(".monaco-list-row").allInnerTexts();
  const culintRows = rows.filter((row) => row.includes("culint"));
  assert.ok(
    culintRows.length >= SCENARIO.expectedCodes.length,
    `expected findings attributed to culint in the Problems panel, got:\n${rows.join("\n")}`,
  );
  await screenshot("problems.png");
  await focusEditor();
}

/** The extension logs which binary it started, and from where, to its "culint" output, which
 * code-server writes under its log folder. */
async function serverIsBundledBinary() {
  const started = await waitFor(
    () => logLines(logs).find((line) => line.includes(" server (found via ")),
    30_000,
    `the culint output's "Starting ... server (found via ...)" line under ${logs}`,
  );
  assert.ok(
    started.includes(`Starting ${bundledBinary} server (found via the binary bundled with the extension)`),
    `expected the extension to start ${bundledBinary}, the binary bundled in it; it logged:\n${started}`,
  );
}

/** Takes the bundled binary away (as in the .vsix for other platforms, which has none) and
 * restarts the server: the extension must find culint in the venv the Python extension selected. */
async function serverIsPythonEnvironmentsCulint() {
  rmSync(bundledBinary);
  await focusEditor();
  await runCommand("culint: Restart server");
  await serverStartedFrom(join(venvA, "bin", "culint"), "the selected Python environment");
  await problemsStillShowFindings();
}

async function otherEnvironmentRestartsServer() {
  // The command asks for the path in the same quick-input widget the palette uses.
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input.input");
  await input.fill(">Python: Select Interpreter");
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: "Python: Select Interpreter" }).first().click();
  await page.locator(".quick-input-widget", { hasText: "Path to a Python interpreter" }).waitFor();
  await input.fill(join(venvB, "bin", "python"));
  await page.keyboard.press("Enter");
  await serverStartedFrom(join(venvB, "bin", "culint"), "the selected Python environment");
  await problemsStillShowFindings();
}

async function serverStartedFrom(binary, source) {
  const expected = `Starting ${binary} server (found via ${source})`;
  await waitFor(
    () => logLines(logs).some((line) => line.includes(expected)),
    60_000,
    `the culint output's line "${expected}" under ${logs}`,
  );
}

/** CUL201 has only an unsafe fix, so neither fix step removed it: the new server reports it. */
async function problemsStillShowFindings() {
  await runCommand("View: Focus Problems");
  await page
    .locator(".markers-panel .monaco-list-row", { hasText: "CUL201" })
    .first()
    .waitFor({ timeout: DIAGNOSTICS_TIMEOUT_MS });
  await screenshot("python-environment.png");
  await focusEditor();
}

function logLines(directory) {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".log"))
    .flatMap((entry) => readFileSync(join(entry.parentPath, entry.name), "utf8").split("\n"));
}

async function hoverShowsRuleDoc() {
  const { line, column } = locate(SCENARIO.hover.text);
  await goTo(line, column);
  await runCommand("Show or Focus Hover");
  const hover = page.locator(".monaco-hover:visible", { hasText: SCENARIO.hover.code });
  await hover.waitFor();
  for (const text of SCENARIO.hover.expectText) {
    await hover.getByText(text).first().waitFor();
  }
  await screenshot("hover.png");
  await page.keyboard.press("Escape");
}

async function quickFixRewritesFile() {
  const before = readFileSync(scriptPath, "utf8");
  const { line, column } = locate(SCENARIO.fix.text, SCENARIO.fix.after);
  await goTo(line, column);
  await runCommand("Quick Fix...");
  const action = page.locator(".action-widget .monaco-list-row.action", { hasText: SCENARIO.fix.title }).first();
  await action.waitFor();
  await screenshot("quick-fix-menu.png");
  // The menu takes keys, as a user drives it (a pointer block over the editor eats clicks): move
  // the focus down to the fix, then apply it.
  for (let presses = 0; !(await action.getAttribute("class")).split(" ").includes("focused"); presses++) {
    assert.ok(presses < 10, `the quick fix "${SCENARIO.fix.title}" never got the focus in the menu`);
    await page.keyboard.press("ArrowDown");
  }
  await page.keyboard.press("Enter");
  await saveWhenEdited();
  const after = await waitFor(
    () => {
      const text = readFileSync(scriptPath, "utf8");
      return text !== before ? text : undefined;
    },
    20_000,
    `${SCENARIO.file} on disk to change after the quick fix and save`,
  );
  assert.equal(after, SCENARIO.fix.expected(before), "the file after the quick fix");
  // The finding the fix resolved leaves the Problems panel.
  await runCommand("View: Focus Problems");
  await waitFor(
    async () => {
      const rows = await page.locator(".markers-panel .monaco-list-row").allInnerTexts();
      return rows.every((row) => !row.includes(SCENARIO.fix.code)) || undefined;
    },
    30_000,
    `${SCENARIO.fix.code} to leave the Problems panel`,
  );
  await screenshot("after-fix.png");
  await focusEditor();
}

async function notebookShowsFindings() {
  const { file, expectedCodes } = SCENARIO.notebook;
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: file }).first().dblclick();
  await page.locator(".tabs-container .tab.active", { hasText: file }).waitFor();
  // The notebook editor, not a text editor: its cells are editors of their own.
  const notebook = page.locator(".notebook-editor");
  await notebook.locator(".cell-editor-container .monaco-editor").first().waitFor({ timeout: WORKBENCH_TIMEOUT_MS });
  await runCommand("View: Focus Problems");
  const panel = page.locator(".markers-panel");
  for (const code of expectedCodes) {
    await panel.locator(".monaco-list-row", { hasText: code }).first().waitFor({ timeout: DIAGNOSTICS_TIMEOUT_MS });
  }
  const rows = await panel.locator(".monaco-list-row").allInnerTexts();
  assert.ok(
    rows.some((row) => row.includes(file)),
    `expected the notebook's findings grouped under ${file} in the Problems panel, got:\n${rows.join("\n")}`,
  );
  // And in the cell they are in, under the code.
  await notebook.locator(".squiggly-info, .squiggly-warning").first().waitFor({ timeout: DIAGNOSTICS_TIMEOUT_MS });
  await screenshot("notebook.png");
}

/** Saves the active editor once an edit has made it dirty. (Fix all's edit comes from the server
 * through workspace/applyEdit, a moment after the command returns; saving earlier saves nothing.) */
async function saveWhenEdited() {
  await page.locator(".tabs-container .tab.active.dirty").waitFor({ timeout: 20_000 });
  await page.keyboard.press("Control+S");
}

async function fixAllRewritesFile() {
  const before = readFileSync(scriptPath, "utf8");
  await focusEditor();
  await runCommand("culint: Fix all");
  await saveWhenEdited();
  const after = await waitFor(
    () => {
      const text = readFileSync(scriptPath, "utf8");
      return text !== before ? text : undefined;
    },
    20_000,
    `${SCENARIO.file} on disk to change after Fix all and save`,
  );
  assert.equal(after, SCENARIO.fixAll.expected(before), "the file after Fix all");
  await runCommand("View: Focus Problems");
  await waitFor(
    async () => {
      const rows = await page.locator(".markers-panel .monaco-list-row").allInnerTexts();
      return rows.every((row) => !row.includes(SCENARIO.fixAll.code)) || undefined;
    },
    30_000,
    `${SCENARIO.fixAll.code} to leave the Problems panel`,
  );
  await focusEditor();
}

async function explainsSelection() {
  await openFile(SCENARIO.explain.file);
  await page.keyboard.press("Control+A");
  await runCommand("culint: Explain error");
  const explanation = await previewText(SCENARIO.explain.expectText, "the explanation");
  assert.match(explanation, SCENARIO.explain.expectText);
  await screenshot("explain.png");
}

async function probeReports() {
  await runCommand("culint: Probe GPU");
  const reportText = await previewText(SCENARIO.probe.expectText, "the GPU probe report");
  assert.match(reportText, SCENARIO.probe.expectText);
  const status = page.locator(".statusbar-item", { hasText: "GPU" }).first();
  await status.waitFor();
  assert.match(await status.innerText(), SCENARIO.probe.statusText);
  await screenshot("probe.png");
}

/** The text of the markdown preview matching `pattern`. A preview is a webview, so its text
 * lives in a nested frame. Fails at once when culint shows an error notification instead. */
async function previewText(pattern, what) {
  return waitFor(
    async () => {
      const errors = await page.locator(".notification-list-item-message", { hasText: "culint:" }).allInnerTexts();
      if (errors.length > 0) {
        throw new Error(`culint reported an error instead of showing ${what}: ${errors.join(" / ")}`);
      }
      for (const frame of page.frames()) {
        const text = await frame
          .locator("body")
          .innerText({ timeout: 1_000 })
          .catch(() => "");
        if (pattern.test(text)) {
          return text;
        }
      }
      return undefined;
    },
    60_000,
    `${what} matching ${pattern}`,
  );
}

/** Runs a command from the command palette: the row titled exactly `title`, else the first row
 * whose title starts with it. (The first row can be another command: fuzzy matching and
 * "recently used" put e.g. "File: Compare Active File with Saved" above "File: Save".) */
async function runCommand(title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor();
  await input.fill(`>${title}`);
  const rows = page.locator(".quick-input-widget .monaco-list-row");
  await rows.filter({ hasText: title }).first().waitFor();
  const labels = (await rows.locator(".label-name").allInnerTexts()).map((label) => label.trim());
  let index = labels.indexOf(title);
  if (index < 0) {
    index = labels.findIndex((label) => label.startsWith(title));
  }
  assert.ok(index >= 0, `no command titled "${title}" in the palette; it lists: ${labels.join(" | ")}`);
  await rows.nth(index).click();
  await page.locator(".quick-input-widget").waitFor({ state: "hidden" });
}

async function goTo(line, column) {
  await focusEditor();
  await page.keyboard.press("Control+G");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor();
  // Go to Line is Quick Open with the ":" prefix; fill() replaces the prefix too.
  await input.fill(`:${line}:${column}`);
  await page.keyboard.press("Enter");
  await page.locator(".quick-input-widget").waitFor({ state: "hidden" });
}

async function focusEditor() {
  await runCommandQuietly("View: Focus Active Editor Group");
}

async function runCommandQuietly(title) {
  await page.keyboard.press("Escape");
  await runCommand(title);
}

/** 1-based line and column of the first occurrence of `text` in the fixture, after the first
 * line that contains `after` when given. */
function locate(text, after) {
  const lines = readFileSync(scriptPath, "utf8").split("\n");
  let index = after === undefined ? 0 : lines.findIndex((line) => line.includes(after));
  if (index < 0) {
    throw new Error(`"${after}" is not in ${scriptPath}`);
  }
  for (; index < lines.length; index++) {
    const column = lines[index].indexOf(text);
    if (column >= 0) {
      return { line: index + 1, column: column + 1 };
    }
  }
  throw new Error(`"${text}" is not in ${scriptPath}${after === undefined ? "" : ` after "${after}"`}`);
}

async function waitFor(probe, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function screenshot(name) {
  await page.screenshot({ path: join(artifacts, name) });
}

function requiredEnv(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set; run this test through tests/e2e/vscode/run.sh`);
    process.exit(2);
  }
  return value;
}

function firstLine(error) {
  return String(error instanceof Error ? error.message : error).split("\n")[0];
}
