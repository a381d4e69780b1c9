"""One language-server session with `culint server` from an installed package, over stdio.

Usage: lsp_session.py SCRIPT

Starts `culint` as found on PATH (the package's script), opens SCRIPT, waits for its pushed
diagnostics, asks for hover on the first one, then shuts the server down. Prints the codes it
got and exits non-zero when the session breaks, the diagnostics do not come, or the server does
not exit cleanly. Standard library only, so it runs in the fresh venv with nothing else.
"""

import json
import pathlib
import shutil
import subprocess
import sys
import threading

TIMEOUT_S = 120


def main() -> int:
    script = pathlib.Path(sys.argv[1]).resolve()
    culint = shutil.which("culint")
    if culint is None:
        print("culint is not on PATH", file=sys.stderr)
        return 1
    server = subprocess.Popen([culint, "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    messages = Reader(server.stdout)
    threading.Thread(target=messages.run, daemon=True).start()
    ids = iter(range(1, 1_000))

    def send(message):
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        server.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        server.stdin.flush()

    def request(method, params):
        request_id = next(ids)
        send({"id": request_id, "method": method, "params": params})
        reply = messages.wait(lambda m: m.get("id") == request_id and "method" not in m)
        if "error" in reply:
            raise SystemExit(f"{method} failed: {reply['error']}")
        return reply["result"]

    uri = script.as_uri()
    info = request("initialize", {"processId": None, "rootUri": script.parent.as_uri(), "capabilities": {}})
    print(f"initialized: {info.get('serverInfo')}")
    send({"method": "initialized", "params": {}})
    text = script.read_text()
    send({"method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}})
    published = messages.wait(
        lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri and m["params"]["diagnostics"]
    )
    diagnostics = published["params"]["diagnostics"]
    print("diagnostics:", " ".join(sorted({str(d.get("code")) for d in diagnostics})))
    hover = request("textDocument/hover", {"textDocument": {"uri": uri}, "position": diagnostics[0]["range"]["start"]})
    contents = json.dumps(hover)
    if str(diagnostics[0]["code"]) not in contents:
        raise SystemExit(f"hover on {diagnostics[0]['code']} does not name the rule: {contents[:300]}")
    print(f"hover: the rule doc of {diagnostics[0]['code']}")
    request("shutdown", None)
    send({"method": "exit"})
    status = server.wait(timeout=30)
    if status != 0:
        raise SystemExit(f"culint server exited with {status} after shutdown and exit")
    return 0


class Reader:
    """Reads framed messages off the server's stdout; `wait` returns the first that matches."""

    def __init__(self, stream):
        self.stream = stream
        self.messages = []
        self.changed = threading.Condition()
        self.closed = False

    def run(self):
        while True:
            headers = {}
            while (line := self.stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            if line == b"":
                break
            message = json.loads(self.stream.read(int(headers["content-length"])))
            with self.changed:
                self.messages.append(message)
                self.changed.notify_all()
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def wait(self, matches):
        with self.changed:
            found = self.changed.wait_for(lambda: self.closed or any(matches(m) for m in self.messages), TIMEOUT_S)
            for message in self.messages:
                if matches(message):
                    return message
            raise SystemExit("the server closed its output" if found else f"no matching message within {TIMEOUT_S} s")


if __name__ == "__main__":
    sys.exit(main())
