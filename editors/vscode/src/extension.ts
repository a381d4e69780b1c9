// culint for VS Code: starts `culint server` for Python files and adds the commands
// "culint: Probe GPU", "culint: Explain error", "culint: Fix all" and "culint: Restart server".

import * as vscode from "vscode";
import { ResponseError } from "vscode-languageclient/node";

import { MarkdownView, SCHEME } from "./markdownView";
import { type ProbeSummary, summarizeProbe, summarizeProbeFailure } from "./probeReport";
import { PythonEnvironment } from "./pythonEnvironment";
import { CulintServer, errorMessage } from "./server";

/** LSP's RequestFailed: the server's answer to `culint.probe` on a machine with no NVIDIA driver
 * or no GPU. */
const REQUEST_FAILED = -32803;

let server: CulintServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("culint", { log: true });
  const markdownView = new MarkdownView();
  const gpuStatus = vscode.window.createStatusBarItem("culint.gpu", vscode.StatusBarAlignment.Right, 100);
  gpuStatus.name = "culint GPU memory";
  gpuStatus.command = "culint.probeGpu";
  const python = new PythonEnvironment(output, async () => {
    if (culint.dependsOnPythonEnvironment()) {
      output.info("Another Python environment was selected: looking for culint again");
      await culint.restart();
    }
  });
  server = new CulintServer(output, context.asAbsolutePath("bundled"), python);
  const culint = server;

  context.subscriptions.push(
    output,
    python,
    markdownView,
    gpuStatus,
    culint,
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, markdownView),
    vscode.commands.registerCommand("culint.probeGpu", () => probeGpu(culint, markdownView, gpuStatus)),
    vscode.commands.registerCommand("culint.explainError", () => explainError(culint, markdownView)),
    vscode.commands.registerCommand("culint.fixAll", () => fixAll(culint)),
    vscode.commands.registerCommand("culint.restartServer", () => culint.restart()),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("culint.path")) {
        await culint.restart();
      } else if (event.affectsConfiguration("culint")) {
        await culint.sendSettings();
      }
    }),
  );

  await culint.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}

async function probeGpu(culint: CulintServer, view: MarkdownView, status: vscode.StatusBarItem): Promise<void> {
  let summary: ProbeSummary;
  try {
    summary = summarizeProbe(await culint.executeCommand("culint.probe", []));
  } catch (error) {
    if (!(error instanceof ResponseError && error.code === REQUEST_FAILED)) {
      void vscode.window.showErrorMessage(`culint: the GPU probe failed: ${errorMessage(error)}`);
      return;
    }
    // No driver or no GPU is an answer, not a failure: the server gives the one-line reason as
    // the error's message and the report in its data.
    summary = summarizeProbeFailure(error.message, error.data);
  }
  if (summary.statusText !== undefined) {
    status.text = `$(circuit-board) ${summary.statusText}`;
    status.tooltip = `${summary.tooltip ?? summary.statusText}\nClick to probe again.`;
    status.show();
  }
  await view.show("GPU probe.md", summary.markdown);
}

async function explainError(culint: CulintServer, view: MarkdownView): Promise<void> {
  const text = await errorTextToExplain();
  if (text === undefined) {
    return;
  }
  try {
    const result = await culint.executeCommand("culint.explain", [text]);
    await view.show("Explanation.md", explanationMarkdown(result));
  } catch (error) {
    void vscode.window.showErrorMessage(`culint: could not explain the error: ${errorMessage(error)}`);
  }
}

/** The selection, else the clipboard, else what the user types. */
async function errorTextToExplain(): Promise<string | undefined> {
  const editor = vscode.window.activeTextEditor;
  if (editor) {
    const selected = editor.selections
      .map((selection) => editor.document.getText(selection))
      .filter((text) => text.trim() !== "")
      .join("\n");
    if (selected !== "") {
      return selected;
    }
  }
  const clipboard = await vscode.env.clipboard.readText();
  if (clipboard.trim() !== "") {
    return clipboard;
  }
  const typed = await vscode.window.showInputBox({
    title: "culint: Explain error",
    prompt: "Nothing is selected and the clipboard is empty. Paste the CUDA or cuBLAS error message:",
    placeHolder: "RuntimeError: CUDA out of memory. Tried to allocate ...",
  });
  return typed?.trim() ? typed : undefined;
}

function explanationMarkdown(result: unknown): string {
  if (typeof result === "string") {
    return result;
  }
  if (result !== null && typeof result === "object" && typeof (result as { markdown?: unknown }).markdown === "string") {
    return (result as { markdown: string }).markdown;
  }
  return "```json\n" + JSON.stringify(result, null, 2) + "\n```\n";
}

async function fixAll(culint: CulintServer): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== "python") {
    void vscode.window.showInformationMessage("culint: open a Python file to fix.");
    return;
  }
  const document = editor.document;
  try {
    await culint.executeCommand("culint.applyAllFixes", [{ uri: document.uri.toString(), version: document.version }]);
  } catch (error) {
    void vscode.window.showErrorMessage(`culint: fix all failed: ${errorMessage(error)}`);
  }
}
