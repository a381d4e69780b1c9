#!/usr/bin/env python3
"""Stress `culint server` through the protocol, as a hostile editor would.

- 10,000 random incremental edits (inserts, deletes and replacements spanning lines, with CJK and
  emoji) in a UTF-8 session and in a UTF-16 session; at the end the server's text must equal the
  client's byte for byte (read back through the `culint.debug.documentText` command).
- Malformed JSON, unknown methods, requests for closed documents, out-of-range positions, a 10 MB
  document, many open documents, and cancelled in-flight requests: each bad input gets an error
  response, the server never dies, and its memory stays bounded.

Prints a Markdown summary for RELIABILITY.md; exits 1 on any failure.
Usage: python3 bench/lsp_stress.py [--culint PATH] [--edits N] [--documents N] [--huge-mb N] [--seed N]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAGMENTS = ["x", "loss", "\n", "\n    ", "注释", "😀", "é", " ", "(", ")", "torch.cuda.empty_cache()\n", "\t", "🚀🚀", "# 中文\n", ""]
# Memory bounds: one edited document must stay small; the huge document (closed again) and the
# many small ones together must not run away.
EDIT_SESSION_RSS_LIMIT_MIB = 512
HOSTILE_RSS_LIMIT_MIB = 2048
# The edited document hovers around this many characters.
TARGET_CHARS = 1500
SCRIPT = """import torch  # 训练脚本 😀
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    loss = model(torch.randn(2, 8, device="cuda")).sum()  # 损失
    loss.backward()
    opt.step()
    torch.cuda.empty_cache()
"""


class Server:
    def __init__(self, culint):
        # The server's own log, shown when it dies.
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([culint, "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        self.next_id = 0
        self.responses = {}
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        stream = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                key, _, value = line.decode().partition(":")
                headers[key.lower()] = value.strip()
            body = json.loads(stream.read(int(headers["content-length"])))
            if "id" in body and "method" not in body:
                with self.cond:
                    self.responses[body["id"]] = body
                    self.cond.notify_all()
            elif "id" in body and "method" in body:
                # A request from the server (registration, configuration): answer it.
                self.send({"jsonrpc": "2.0", "id": body["id"], "result": None})

    def send_raw(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message):
        self.send_raw(frame(json.dumps(message).encode()))

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request_async(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, request_id, timeout=60):
        deadline = time.time() + timeout
        with self.cond:
            while request_id not in self.responses:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited with {self.proc.returncode}:\n{self.log_tail()}")
                remaining = deadline - time.time()
                if remaining <= 0:
                    raise TimeoutError(f"no response to request {request_id}")
                self.cond.wait(remaining)
            return self.responses.pop(request_id)

    def request(self, method, params, timeout=60):
        return self.wait(self.request_async(method, params), timeout)

    def log_tail(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-3000:]

    def rss_mib(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def units(text, encoding):
    return len(text.encode("utf-8")) if encoding == "utf-8" else len(text.encode("utf-16-le")) // 2


def position(text, index, encoding):
    before = text[:index]
    line = before.count("\n")
    start = before.rfind("\n") + 1
    return {"line": line, "character": units(text[start:index], encoding)}


def initialize(server, encoding, root):
    result = server.request(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "capabilities": {"general": {"positionEncodings": [encoding]}, "textDocument": {"diagnostic": {}}},
        },
    )
    server.notify("initialized", {})
    return result["result"]["capabilities"].get("positionEncoding", "utf-16")


def edit_session(culint, encoding, edits, rng, root):
    server = Server(culint)
    negotiated = initialize(server, encoding, root)
    assert negotiated == encoding, f"asked for {encoding}, got {negotiated}"
    uri = (root / f"stress_{encoding}.py").as_uri()
    text = SCRIPT * 4
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 0, "text": text}})
    peak = server.rss_mib()
    for version in range(1, edits + 1):
        start = rng.randrange(len(text) + 1)
        # Deletions are longer than insertions on average: below the target size, only insert,
        # so the document keeps several lines of mixed-width text to edit.
        span = rng.choice([0, 0, 1, 3, 12, 40]) if len(text) > TARGET_CHARS else 0
        end = min(len(text), start + span)
        # Never split a surrogate pair's character: indices are Python characters, always whole.
        new = rng.choice(FRAGMENTS)
        change = {"range": {"start": position(text, start, encoding), "end": position(text, end, encoding)}, "text": new}
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})
        text = text[:start] + new + text[end:]
        if version % 1000 == 0:
            server.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
            peak = max(peak, server.rss_mib())
    echoed = server.request("workspace/executeCommand", {"command": "culint.debug.documentText", "arguments": [uri]})
    server_text = echoed.get("result")
    ok = server_text == text
    server.stop()
    return ok, len(text.encode()), peak


def hostile_session(culint, documents, huge_mb, root):
    server = Server(culint)
    initialize(server, "utf-16", root)
    results = {}

    nowhere = {"textDocument": {"uri": (root / "nowhere.py").as_uri()}, "position": {"line": 0, "character": 0}}
    malformed = {
        "truncated JSON": frame(b'{"jsonrpc": "2.0", "id": 999, "method": '),
        "a body that is not UTF-8": frame(b"\xff\xfe{}"),
        "JSON that is not a JSON-RPC message": frame(b"{}"),
        "a batch array": frame(b"[1, 2]"),
        "a header without Content-Length": b"Content-Type: text/plain\r\n\r\n",
        "a non-numeric Content-Length": b"Content-Length: many\r\n\r\n",
        "garbage bytes": b"\x00\x01garbage\r\n\r\n",
    }
    for name, raw in malformed.items():
        server.send_raw(raw)
        try:
            reply = server.request("textDocument/hover", nowhere, timeout=30)
            results[f"{name}, then a request still answered"] = server.alive() and "error" in reply
        except (RuntimeError, TimeoutError) as error:
            results[f"{name}, then a request still answered"] = False
            print(f"after {name}: {error}", file=sys.stderr)
            server = Server(culint)
            initialize(server, "utf-16", root)

    reply = server.request("culint/noSuchMethod", {})
    results["unknown method answered with an error"] = reply.get("error", {}).get("code") == -32601

    closed = (root / "closed.py").as_uri()
    server.notify("textDocument/didOpen", {"textDocument": {"uri": closed, "languageId": "python", "version": 0, "text": SCRIPT}})
    server.notify("textDocument/didClose", {"textDocument": {"uri": closed}})
    reply = server.request("textDocument/diagnostic", {"textDocument": {"uri": closed}})
    results["request for a closed document answered with an error"] = "error" in reply

    uri = (root / "open.py").as_uri()
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 0, "text": SCRIPT}})
    reply = server.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 10_000, "character": 5}})
    results["out-of-range position answered with an error"] = "error" in reply
    reply = server.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": "not a position"})
    results["malformed params answered with an error"] = "error" in reply

    huge_bytes = huge_mb * 1_000_000
    huge = (SCRIPT * (huge_bytes // len(SCRIPT) + 1))[:huge_bytes]
    huge_uri = (root / "huge.py").as_uri()
    started = time.time()
    server.notify("textDocument/didOpen", {"textDocument": {"uri": huge_uri, "languageId": "python", "version": 0, "text": huge}})
    reply = server.request("textDocument/diagnostic", {"textDocument": {"uri": huge_uri}}, timeout=300)
    results[f"{huge_mb} MB document answered"] = "result" in reply or "error" in reply
    huge_seconds = time.time() - started
    huge_rss = server.rss_mib()
    server.notify("textDocument/didClose", {"textDocument": {"uri": huge_uri}})

    for i in range(documents):
        doc = (root / f"many_{i}.py").as_uri()
        server.notify("textDocument/didOpen", {"textDocument": {"uri": doc, "languageId": "python", "version": 0, "text": SCRIPT}})
    reply = server.request("textDocument/diagnostic", {"textDocument": {"uri": (root / "many_0.py").as_uri()}}, timeout=120)
    results[f"{documents} open documents"] = "result" in reply
    many_rss = server.rss_mib()

    cancelled = 0
    for _ in range(50):
        request_id = server.request_async("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        server.notify("$/cancelRequest", {"id": request_id})
        reply = server.wait(request_id)
        cancelled += reply.get("error", {}).get("code") == -32800
    results["cancelled requests each answered (result or RequestCancelled)"] = server.alive()

    results["server alive at the end"] = server.alive()
    server.stop()
    return results, huge_seconds, huge_rss, many_rss, cancelled


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--culint", default=str(ROOT / "target" / "release" / "culint"))
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--huge-mb", type=int, default=10, help="size of the huge document, in MB")
    parser.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args()
    root = Path("/tmp/culint-lsp-stress")
    root.mkdir(exist_ok=True)
    rng = random.Random(args.seed)

    failures = []
    print("| session | edits | final text matches | final size | peak RSS |")
    print("|---|---|---|---|---|")
    for encoding in ["utf-8", "utf-16"]:
        ok, size, peak = edit_session(args.culint, encoding, args.edits, rng, root)
        print(f"| {encoding} | {args.edits} | {'yes' if ok else 'NO'} | {size} bytes | {peak:.0f} MiB |")
        if not ok:
            failures.append(f"{encoding}: the server's text differs from the client's")
        if peak > EDIT_SESSION_RSS_LIMIT_MIB:
            failures.append(f"{encoding}: peak RSS {peak:.0f} MiB is over {EDIT_SESSION_RSS_LIMIT_MIB} MiB")

    results, huge_seconds, huge_rss, many_rss, cancelled = hostile_session(args.culint, args.documents, args.huge_mb, root)
    print("\n| hostile input | outcome |")
    print("|---|---|")
    for name, ok in results.items():
        print(f"| {name} | {'ok' if ok else 'FAILED'} |")
        if not ok:
            failures.append(name)
    print(f"\n{args.huge_mb} MB document: diagnostics in {huge_seconds:.1f} s, RSS {huge_rss:.0f} MiB; "
          f"{args.documents} open documents: RSS {many_rss:.0f} MiB; {cancelled}/50 requests cancelled before they ran.")
    if many_rss > HOSTILE_RSS_LIMIT_MIB:
        failures.append(f"RSS {many_rss:.0f} MiB after the hostile session is over {HOSTILE_RSS_LIMIT_MIB} MiB")
    if failures:
        print("\nFailures: " + "; ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
