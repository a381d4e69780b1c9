// The Python environment selected in the Python extension (ms-python.python), through its public
// API: where `pip install culint` into that environment puts the binary, and a signal when the
// user selects another environment. Without the Python extension there is no such environment.

import { PythonExtension } from "@vscode/python-extension";
import * as vscode from "vscode";

import { pythonScriptDirectories } from "./binary";

const PYTHON_EXTENSION_ID = "ms-python.python";

export class PythonEnvironment implements vscode.Disposable {
  private api: Promise<PythonExtension | undefined> | undefined;
  private subscription: vscode.Disposable | undefined;

  /** `onDidChange` is called whenever the user selects another Python environment, once culint
   * has been looked for in one (the Python extension is never activated just to listen). */
  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly onDidChange: () => unknown,
  ) {}

  /** The script folders of the environment selected for `resource`; empty when the Python
   * extension is not installed or has no environment selected. */
  async scriptDirectories(resource: vscode.Uri | undefined): Promise<string[]> {
    const api = await this.loadApi();
    if (api === undefined) {
      return [];
    }
    try {
      const selected = api.environments.getActiveEnvironmentPath(resource);
      const environment = await api.environments.resolveEnvironment(selected);
      if (environment === undefined) {
        this.output.info(`The selected Python environment ${selected.path} could not be resolved`);
        return [];
      }
      return pythonScriptDirectories(environment.executable.uri?.fsPath, environment.executable.sysPrefix);
    } catch (error) {
      this.output.warn(`Reading the selected Python environment: ${errorText(error)}`);
      return [];
    }
  }

  dispose(): void {
    this.subscription?.dispose();
  }

  private loadApi(): Promise<PythonExtension | undefined> {
    if (this.api === undefined) {
      this.api =
        vscode.extensions.getExtension(PYTHON_EXTENSION_ID) === undefined
          ? Promise.resolve(undefined)
          : PythonExtension.api().then(
              (api) => {
                this.subscription = api.environments.onDidChangeActiveEnvironmentPath(() => this.onDidChange());
                return api;
              },
              (error: unknown) => {
                this.output.warn(`The Python extension's API is unavailable: ${errorText(error)}`);
                return undefined;
              },
            );
    }
    return this.api;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
