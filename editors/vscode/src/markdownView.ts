// Shows read-only markdown (probe reports, error explanations) in VS Code's markdown preview.
//
// The text lives in virtual `culint:` documents, so closing the preview never asks to save.

import * as vscode from "vscode";

export const SCHEME = "culint";

export class MarkdownView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? "";
  }

  /** Shows `markdown` under the tab title `name` (e.g. "GPU probe.md"), replacing earlier text. */
  async show(name: string, markdown: string): Promise<void> {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${name}` });
    this.contents.set(uri.toString(), markdown);
    this.changed.fire(uri);
    try {
      await vscode.commands.executeCommand("markdown.showPreview", uri);
    } catch {
      // The built-in markdown extension is disabled: show the source instead.
      const document = await vscode.workspace.openTextDocument(uri);
      await vscode.languages.setTextDocumentLanguage(document, "markdown");
      await vscode.window.showTextDocument(document, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    }
  }

  dispose(): void {
    this.changed.dispose();
  }
}
