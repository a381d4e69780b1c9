"""A language server that does no work, as a floor for bench.py's latency.

It starts the real server given on its command line, opens the benchmark's script there once,
keeps the diagnostics that server publishes for it and stops it. From then on it answers every
change at once with those same diagnostics, for the change's version, already encoded. Measured
by bench.py beside the real server (with --paired), it shows what any server that sends those
bytes cannot go below on this host: the pipe, and the client reading and decoding the publish.

Usage (the servers run in a temporary folder: give absolute paths, or commands on PATH):
    bench.py --paired --only latency --server "culint server" \
        --server "python3 $PWD/bench/lsp_latency/replay_server.py culint server"
"""

import json
import os
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench import frame, open_script, read_body, start_server  # noqa: E402

VERSION_MARK = '"version":-1'


def encode(message):
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def recorded_publish(command, uri, text):
    """The real server's publish for `text`, encoded, split where its version goes."""
    real = start_server(shlex.join(command), os.getcwd())
    try:
        message = open_script(real, uri, text)
    finally:
        real.close()
    message["params"]["version"] = -1
    body = encode(message).decode()
    if body.count(VERSION_MARK) != 1:
        sys.exit("replay_server: cannot place the version in the recorded publish")
    return body.split(VERSION_MARK)


def main():
    command = sys.argv[1:]
    if not command:
        sys.exit("usage: replay_server.py REAL-SERVER-COMMAND...")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    publish = None
    while (body := read_body(stdin)) is not None:
        message = json.loads(body)
        method = message.get("method")
        if method == "initialize":
            capabilities = {"textDocumentSync": {"openClose": True, "change": 2}}
            stdout.write(frame(encode({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": capabilities}})))
        elif method == "shutdown":
            stdout.write(frame(encode({"jsonrpc": "2.0", "id": message["id"], "result": None})))
        elif method == "exit":
            return
        elif method == "textDocument/didOpen":
            document = message["params"]["textDocument"]
            publish = recorded_publish(command, document["uri"], document["text"])
        if method in ("textDocument/didOpen", "textDocument/didChange") and publish:
            version = message["params"]["textDocument"]["version"]
            before, after = publish
            stdout.write(frame(f'{before}"version":{version}{after}'.encode()))
        stdout.flush()


if __name__ == "__main__":
    main()
