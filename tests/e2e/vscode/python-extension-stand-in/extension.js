// A stand-in for the Python extension (ms-python.python), which this test cannot install: the
// Marketplace and Open VSX are out of reach. It serves the part of the extension's public API
// that culint's extension reads, shaped as @vscode/python-extension types it: the selected
// environment (python.defaultInterpreterPath until "Python: Select Interpreter" selects
// another), its resolution to an interpreter and sys.prefix, and the event fired when another
// environment is selected.
const path = require("node:path");
const vscode = require("vscode");

exports.activate = (context) => {
  const changed = new vscode.EventEmitter();
  let selected = vscode.workspace.getConfiguration("python").get("defaultInterpreterPath");
  context.subscriptions.push(
    changed,
    // As "Python: Select Interpreter" does, minus the list: the interpreter's path is typed in.
    vscode.commands.registerCommand("python.setInterpreter", async () => {
      const typed = await vscode.window.showInputBox({ prompt: "Path to a Python interpreter" });
      if (typed) {
        selected = typed;
        changed.fire({ id: selected, path: selected, resource: undefined });
      }
    }),
  );
  return {
    environments: {
      getActiveEnvironmentPath: () => ({ id: selected, path: selected }),
      resolveEnvironment: async (environment) => {
        const interpreter = typeof environment === "string" ? environment : environment.path;
        return {
          id: interpreter,
          path: interpreter,
          // A venv: bin/python below the prefix.
          executable: { uri: vscode.Uri.file(interpreter), bitness: "64-bit", sysPrefix: path.dirname(path.dirname(interpreter)) },
          environment: undefined,
          version: undefined,
          tools: ["Venv"],
        };
      },
      onDidChangeActiveEnvironmentPath: changed.event,
    },
  };
};
