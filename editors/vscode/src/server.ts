// Owns the language client: finds the culint binary, starts `culint server`, forwards settings,
// and runs the server's workspace commands.

import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
} from "vscode-languageclient/node";

import { type BinarySource, describeSource, findCulint, INSTALL_COMMAND } from "./binary";
import type { PythonEnvironment } from "./pythonEnvironment";
import { type ServerSettings, toServerSettings } from "./settings";

const CLIENT_ID = "culint";
const CLIENT_NAME = "culint";

export class CulintServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly traceOutput = vscode.window.createOutputChannel("culint Language Server Trace", { log: true });
  /** Where the running server's binary came from; undefined when none was found. */
  private source: BinarySource | undefined;

  /** `bundledDirectory`: the folder a platform-specific .vsix carries the binary in. */
  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly bundledDirectory: string,
    private readonly python: PythonEnvironment,
  ) {}

  /** Starts the server, or explains in an error message why it cannot. */
  async start(): Promise<boolean> {
    const configuration = vscode.workspace.getConfiguration("culint");
    const lookup = await findCulint({
      configuredPath: configuration.get<string>("path") ?? "",
      workspaceFolder: workspaceFolder(),
      bundledDirectory: this.bundledDirectory,
      pythonScriptDirectories: () => this.python.scriptDirectories(vscode.workspace.workspaceFolders?.[0]?.uri),
      env: process.env,
    });
    this.source = lookup.found ? lookup.source : undefined;
    if (!lookup.found) {
      this.output.error(lookup.message);
      void this.reportMissingBinary(lookup.message);
      return false;
    }
    this.output.info(`Starting ${lookup.path} server (found via ${describeSource(lookup.source)})`);

    const serverOptions: ServerOptions = { command: lookup.path, args: ["server"] };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "untitled", language: "python" },
      ],
      initializationOptions: currentSettings(),
      outputChannel: this.output,
      traceOutputChannel: this.traceOutput,
    };
    this.client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    try {
      await this.client.start();
      return true;
    } catch (error) {
      this.output.error(`culint server failed to start: ${errorMessage(error)}`);
      void vscode.window.showErrorMessage(
        `culint server failed to start: ${errorMessage(error)}. See the "culint" output for details.`,
      );
      return false;
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Whether the binary may change with the selected Python environment: culint came from the
   * last environment, or from a place looked at after it, or was not found at all. */
  dependsOnPythonEnvironment(): boolean {
    return this.source !== "culint.path" && this.source !== "bundled";
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client === undefined) {
      return;
    }
    try {
      // A client whose server never came up cannot be stopped, only disposed.
      await (client.state === State.Running ? client.stop() : client.dispose());
    } catch (error) {
      this.output.warn(`stopping the culint server: ${errorMessage(error)}`);
    }
  }

  /** Sends the current `culint.*` settings to a running server. */
  async sendSettings(): Promise<void> {
    if (this.client?.state !== State.Running) {
      return;
    }
    await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: currentSettings() });
  }

  /** Runs one of the server's `workspace/executeCommand` commands and returns its result. */
  async executeCommand(command: string, args: unknown[]): Promise<unknown> {
    if (this.client?.state !== State.Running) {
      throw new Error('the culint server is not running (run "culint: Restart server")');
    }
    return this.client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  }

  dispose(): void {
    void this.stop();
    this.traceOutput.dispose();
  }

  private async reportMissingBinary(message: string): Promise<void> {
    const openSettings = "Open Settings";
    const copyInstall = "Copy install command";
    const choice = await vscode.window.showErrorMessage(message, openSettings, copyInstall);
    if (choice === openSettings) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "culint.path");
    } else if (choice === copyInstall) {
      await vscode.env.clipboard.writeText(INSTALL_COMMAND);
    }
  }
}

function currentSettings(): ServerSettings {
  return toServerSettings(vscode.workspace.getConfiguration("culint"), workspaceFolder());
}

function workspaceFolder(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
