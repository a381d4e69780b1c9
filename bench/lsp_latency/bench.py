"""Language-server latency and memory benchmark: culint server against ruff server.

Latency: open a 10,000-line training script, then replay 1,000 single-character edits (typing
and deleting comments and code, which leaves the file briefly unparsable as real typing does).
After each didChange the client waits for the publishDiagnostics of exactly that version, so
each sample is the keystroke-to-fresh-diagnostics time a user sees. Each sample is also taken a
second way, at the moment the publish's last byte was read, before this client decodes its JSON:
that is the server's share, without the decoding of a large publish in Python (an editor decodes
it too, at its own speed).

The keystrokes that type or delete inside a comment (after its `#`) are also left out of a second
pair of figures, code_p50_ms and code_p99_ms: a server may treat them apart (culint does not
reparse them), and the others set the tail.

Python's cyclic garbage collector is paused while the edits are replayed, as `timeit` pauses it
by default: a collection starts whenever this client has allocated enough objects, and decoding
a large publish allocates thousands, so its pauses land on arbitrary samples and are the client's
time, not the server's. (Decoding the same 232 KB publish 1,000 times, 8 ms apart: p99 10.5 ms
with the collector, 3.6 ms without; p50 2.8 ms either way.) The decoded JSON holds no cycles, so
reference counting frees all of it as before.

Paired latency (--paired): every server opens the script, and each keystroke goes to each server
in turn, each waiting for its own publish before the next server gets it. The order rotates by
one server a keystroke, so each server takes each place equally often; of three or more, none
takes two keystrokes in a row (order alternating forwards and backwards gave that to the first
and last server only, which favoured them). Of two, each does so every other keystroke.
This host's speed drifts by half from one minute to the next; in turns, the servers meet the same
drift, so a difference between two builds of a few tenths of a millisecond shows, where runs one
after the other bury it.

Pulled (--pull): the client declares pull diagnostics, as VS Code does, and after each didChange
asks for the document's diagnostics (textDocument/diagnostic) with the result id of the last
report it got; the sample is the time from the didChange to the report. A server may answer
"unchanged" when the user would see the same diagnostics as before. With --pull-full the client
passes no result id, so every report is full: what a keystroke that moves diagnostics costs
(Enter, or typing before a finding on its line).

Where (--anywhere): the edits type at the ends of training-loop lines, which leave the
indentation of the lines around them alone. With --anywhere they type at the end of any line
outside strings and comments, blank lines included: a function's header, the last line of a
block before a dedent, the blank line between two functions. There a keystroke touches an
INDENT or DEDENT, which a server reparsing incrementally with tree-sitter must take care of.

Module level (--module-level): the 10,000-line script is written at module level
(corpus.py's module_level_script): steps spelled out as top-level assignments and calls between
a few top-level loops. Tree-sitter's incremental reparse shares no top-level statement that
starts with a name, so there nearly every statement is parsed, and linted, anew on every
keystroke.

Client (--client node): the keystrokes are replayed by replay.mjs in Node, the runtime of VS
Code's language client, and each publish is decoded with V8's JSON.parse, as there. This client
decodes with Python's json.loads, which takes about a millisecond for the script's 238 KB
publish when warm and several on a core that waited: the client that measures then sets much of
the tail it measures. The keystrokes, the turns and the summary are the same for both. V8's
garbage collector is left running, as it is in an editor.

Floor (replay_server.py): a server that does no work and sends the same publish as a real one
shows what the pipe and this client's decoding alone cost on this host.

Samples (--samples FILE): every keystroke's two latencies, by server, with where it typed what,
written as JSON beside the summary: a p99 is the tenth slowest of a thousand, and these show
whether those were keystrokes that cost the server more or cheap ones that met a stall.

Memory: open 1,000 different training scripts, wait until each has its diagnostics, and read
the server's resident set size from /proc.

Usage: bench.py --server "culint server" --server "ruff server" [--edits 1000] [--files 1000]
       [--only latency|memory] [--paired] [--pull | --pull-full] [--anywhere] [--module-level]
       [--client python|node] [--samples FILE]
Writes a JSON summary to stdout; with --samples, every keystroke's latency to FILE as well.
"""

import argparse
import gc
import json
import os
import queue
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from corpus import module_level_script, training_script  # noqa: E402

CAPABILITIES = {
    "textDocument": {
        "synchronization": {"didSave": False, "dynamicRegistration": False},
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": True},
    },
    "general": {"positionEncodings": ["utf-16"]},
}

# As CAPABILITIES, with diagnostics pulled by the client instead of pushed by the server.
PULL_CAPABILITIES = {
    **CAPABILITIES,
    "textDocument": {**CAPABILITIES["textDocument"], "diagnostic": {"dynamicRegistration": False}},
}


def frame(body):
    """An LSP message as it goes over the wire: its header, then `body`."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_body(stream):
    """The body of the next LSP message on `stream`, or None at its end."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return stream.read(length)


class Connection:
    """A JSON-RPC connection to a server process over stdio."""

    def __init__(self, command, cwd):
        self.process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.messages = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while (body := read_body(self.process.stdout)) is not None:
            received = time.perf_counter()
            message = json.loads(body)
            # The arrival times are taken here, before any queueing in the client: once the last
            # byte is read, and once the message is decoded.
            self.messages.put(((received, time.perf_counter()), message))

    def send(self, message):
        body = json.dumps(message).encode()
        self.process.stdin.write(frame(body))
        self.process.stdin.flush()

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        return self.call(method, params)[1].get("result")

    def call(self, method, params):
        """Send a request; returns its response's arrival times and the response."""
        self.next_id += 1
        request_id = self.next_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m)

    def wait(self, wanted, timeout=60):
        """The next message that `wanted` accepts, with its arrival times: (received, decoded)."""
        deadline = time.perf_counter() + timeout
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError("the server sent nothing matching in time")
            arrived, message = self.messages.get(timeout=remaining)
            if "method" in message and "id" in message:
                # A request from the server (registration, configuration, progress): accept it.
                result = [None] * len(message["params"].get("items", [])) if message["method"] == "workspace/configuration" else None
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
                continue
            if wanted(message):
                return arrived, message

    def pull_diagnostics(self, uri, previous_result_id):
        """Ask for the document's diagnostics; returns the report's arrival times and the report."""
        params = {"textDocument": {"uri": uri}, "previousResultId": previous_result_id}
        arrived, message = self.call("textDocument/diagnostic", params)
        if "result" not in message:
            raise RuntimeError(f"textDocument/diagnostic failed: {message.get('error')}")
        return arrived, message["result"]

    def wait_diagnostics(self, uri, version):
        return self.wait(
            lambda m: m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri
            and m["params"].get("version") == version
        )

    def rss_bytes(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()


def server_argv(command):
    """The server's command line, with a relative program path made absolute: the server runs
    in a temporary project folder, not where the benchmark was started."""
    argv = shlex.split(command)
    if os.sep in argv[0] and not os.path.isabs(argv[0]):
        argv[0] = os.path.abspath(argv[0])
    return argv


def start_server(command, root, pull=False):
    connection = Connection(server_argv(command), root)
    connection.request(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": Path(root).as_uri(),
            "capabilities": PULL_CAPABILITIES if pull else CAPABILITIES,
        },
    )
    connection.notify("initialized", {})
    return connection


LOOP_LINES = ("loss = ", "running += ", "logits = ")


def edits(text, count, anywhere=False):
    """Single-character edits: type a comment or a code fragment at the end of a line in a
    training loop, then delete it again, cycling over lines through the whole file. With
    `anywhere`, at the end of any line outside strings and comments, blank lines included: a
    function's header, a block's last line before a dedent, the blank line between two functions
    (keystrokes.rs's `--anywhere` makes the same keystrokes)."""
    lines = text.split("\n")
    if anywhere:
        targets = [i for i, line in enumerate(lines[:-1]) if not any(c in line for c in "\"'#")]
    else:
        targets = [i for i, line in enumerate(lines) if line.strip().startswith(LOOP_LINES)]
    fragments = ["  # warm up", " * 2"]
    produced = []
    cycle = 0
    while len(produced) < count:
        line = targets[(cycle * 97) % len(targets)]
        fragment = fragments[cycle % len(fragments)]
        column = len(lines[line])
        # Whether the keystroke types or deletes a character after the comment's `#`.
        for i, char in enumerate(fragment):
            produced.append((line, column + i, column + i, char, "#" in fragment[:i]))
        for i in reversed(range(len(fragment))):
            produced.append((line, column + i, column + i + 1, "", "#" in fragment[:i]))
        cycle += 1
    return produced[:count]


PASTED = "def pasted(model, batch):\n    model.train()\n    logits = model(batch)\n    loss = logits.sum()\n    loss.backward()\n    return loss\n"


def file_edits(text, count, kind):
    """Edits of the whole file's shape rather than keystrokes (`--edit`): `import` comments the
    first import out and back in (an editor's toggle-comment, one change each way), which changes
    what every statement's names resolve to; `paste` pastes a 6-line function at the end of the
    file and deletes it again. Each edit is (line, start, end, text, in_comment, end_line)."""
    lines = text.split("\n")
    if kind == "import":
        line = next(i for i, l in enumerate(lines) if l.startswith(("import ", "from ")))
        cycle = [(line, 0, 0, "# ", False, line), (line, 0, 2, "", False, line)]
    else:
        last = len(lines) - 1
        cycle = [(last, 0, 0, PASTED, False, last), (last, 0, 0, "", False, last + PASTED.count("\n"))]
    return [cycle[n % 2] for n in range(count)]


def percentile(samples, share):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


class Pushed:
    """Diagnostics as the server pushes them: each version's publishDiagnostics."""

    mode = "push"
    # Only pulled reports can be "unchanged".
    unchanged = 0

    def __init__(self, connection, uri):
        self.connection, self.uri = connection, uri

    def fresh(self, version):
        """The arrival times of the diagnostics of `version`, and the publish."""
        return self.connection.wait_diagnostics(self.uri, version)


class Pulled:
    """Diagnostics as the client pulls them, passing the result id of the last report."""

    mode = "pull"
    keeps_result_ids = True

    def __init__(self, connection, uri):
        self.connection, self.uri = connection, uri
        self.result_id = None
        self.unchanged = 0

    def fresh(self, version):
        """The arrival times of the report for the document as it is now, and the report."""
        arrived, report = self.connection.pull_diagnostics(self.uri, self.result_id)
        self.unchanged += report.get("kind") == "unchanged"
        if self.keeps_result_ids and report.get("resultId") is not None:
            self.result_id = report["resultId"]
        return arrived, report


class PulledFull(Pulled):
    """Diagnostics pulled without a result id: every report is a full one."""

    mode = "pull-full"
    keeps_result_ids = False


def open_script(connection, uri, text, watch=None):
    """Open the script; returns its diagnostics as `watch` gets them (pushed by default): the
    publish, or the pulled report."""
    connection.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )
    return (watch or Pushed(connection, uri)).fresh(1)[1]


def keystroke(connection, diagnostics, uri, version, edit):
    """Send one edit; returns its latency as decoded and as received, in milliseconds."""
    line, start, end, char, _, *end_line = edit
    end_line = end_line[0] if end_line else line
    change = {
        "range": {"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}},
        "text": char,
    }
    sent = time.perf_counter()
    connection.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
    )
    (received, decoded), _ = diagnostics.fresh(version)
    return (decoded - sent) * 1000, (received - sent) * 1000


def summary(samples, received_samples, text, in_comment):
    # The keystrokes that type code or blank space, apart: those inside a comment may cost a
    # server less (culint reparses none of them), and those left set the tail.
    in_code = [sample for sample, comment in zip(samples, in_comment) if not comment]
    return {
        "edits": len(samples),
        "file_lines": 10_000,
        "file_bytes": len(text.encode()),
        "p50_ms": round(percentile(samples, 0.50), 2),
        "p90_ms": round(percentile(samples, 0.90), 2),
        "p99_ms": round(percentile(samples, 0.99), 2),
        "max_ms": round(max(samples), 2),
        # The first keystroke after opening the script, which also pays for what the open left.
        "first_ms": round(samples[0], 2),
        "mean_ms": round(statistics.fmean(samples), 2),
        "received_p50_ms": round(percentile(received_samples, 0.50), 2),
        "received_p99_ms": round(percentile(received_samples, 0.99), 2),
        "code_edits": len(in_code),
        "code_p50_ms": round(percentile(in_code, 0.50), 2),
        "code_p99_ms": round(percentile(in_code, 0.99), 2),
    }


def latency(commands, edit_count, how=Pushed, anywhere=False, client="python", script=training_script, kind="type"):
    """Latency of each server in `commands`, with diagnostics got as `how` gets them: alone when
    there is one, in turns when there are more. `client` replays the keystrokes: this script, or
    replay.mjs in Node; `script` makes the 10,000-line script they edit. For each server, its
    summary and its keystrokes' samples."""
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "train.py"
        text = script(10_000)
        path.write_text(text)
        keystrokes = edits(text, edit_count, anywhere) if kind == "type" else file_edits(text, edit_count, kind)
        replay = replay_in_node if client == "node" else replay_in_python
        runs = replay(commands, root, path.as_uri(), text, keystrokes, how)
    results = []
    for run in runs:
        result = {"client": client, **summary(run["decoded"], run["received"], text, [edit[4] for edit in keystrokes])}
        if how is not Pushed:
            # Of the keystrokes' reports (the open's is full).
            result["unchanged_reports"] = run["unchanged_reports"]
        result["rss_mb_after"] = round(run["rss_bytes"] / 2**20, 1)
        results.append((result, samples_of(run, keystrokes)))
    return results


def samples_of(run, keystrokes):
    """Every keystroke of a run with its two latencies, in the order typed: what --samples writes,
    to see which keystrokes make the tail."""
    return [
        {
            "keystroke": n,
            "line": line + 1,
            "typed": char,
            "deleted": end > start,
            "in_comment": in_comment,
            "ms": round(decoded, 3),
            "received_ms": round(received, 3),
        }
        for n, ((line, start, end, char, in_comment, *_), decoded, received) in enumerate(
            zip(keystrokes, run["decoded"], run["received"])
        )
    ]


def replay_in_python(commands, root, uri, text, keystrokes, how):
    """Each server's samples of `keystrokes`, replayed by this script: decoded and received
    latencies in milliseconds, the unchanged reports (when pulled) and the RSS after."""
    connections = [start_server(command, root, how is not Pushed) for command in commands]
    watches = [how(connection, uri) for connection in connections]
    for connection, watch in zip(connections, watches):
        open_script(connection, uri, text, watch)
    samples = [([], []) for _ in connections]
    gc.collect()
    gc.disable()
    try:
        for version, edit in enumerate(keystrokes, start=2):
            turns = list(enumerate(connections))
            first = version % len(turns)
            for i, connection in turns[first:] + turns[:first]:
                decoded, received = keystroke(connection, watches[i], uri, version, edit)
                samples[i][0].append(decoded)
                samples[i][1].append(received)
    finally:
        gc.enable()
    runs = []
    for connection, watch, (decoded, received) in zip(connections, watches, samples):
        runs.append(
            {"decoded": decoded, "received": received, "unchanged_reports": watch.unchanged, "rss_bytes": connection.rss_bytes()}
        )
        connection.close()
    return runs


def replay_in_node(commands, root, uri, text, keystrokes, how):
    """As `replay_in_python`, with the keystrokes replayed by replay.mjs in Node."""
    job = {
        "commands": [server_argv(command) for command in commands],
        "root": root,
        "rootUri": Path(root).as_uri(),
        "uri": uri,
        "text": text,
        "edits": [[*edit[:4], edit[5] if len(edit) > 5 else edit[0]] for edit in keystrokes],
        "how": how.mode,
        "capabilities": CAPABILITIES if how is Pushed else PULL_CAPABILITIES,
    }
    script = Path(__file__).with_name("replay.mjs")
    try:
        done = subprocess.run(["node", str(script)], input=json.dumps(job).encode(), capture_output=True)
    except FileNotFoundError:
        sys.exit("bench.py: --client node needs `node` on PATH")
    if done.returncode != 0:
        sys.exit(f"bench.py: the Node replay failed: {done.stderr.decode().strip()}")
    return json.loads(done.stdout)


def memory(command, file_count):
    with tempfile.TemporaryDirectory() as root:
        connection = start_server(command, root)
        baseline = connection.rss_bytes()
        uris = []
        total_bytes = 0
        for i in range(file_count):
            text = training_script(200 + (i % 5) * 100, seed=i)
            total_bytes += len(text.encode())
            path = Path(root) / f"train_{i:04}.py"
            path.write_text(text)
            uri = path.as_uri()
            uris.append(uri)
            connection.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
            )
        pending = set(uris)
        while pending:
            _, message = connection.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
            pending.discard(message["params"]["uri"])
        time.sleep(0.5)
        rss = connection.rss_bytes()
        connection.close()
    return {
        "files": file_count,
        "source_mb": round(total_bytes / 2**20, 1),
        "rss_mb_idle": round(baseline / 2**20, 1),
        "rss_mb": round(rss / 2**20, 1),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", action="append", required=True, help="server command line")
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--only", choices=["latency", "memory"], help="run one of the two measurements")
    parser.add_argument(
        "--paired", action="store_true", help="latency of all servers at once, each keystroke to each in turn"
    )
    pulling = parser.add_mutually_exclusive_group()
    pulling.add_argument("--pull", action="store_true", help="latency with diagnostics pulled, as VS Code does")
    pulling.add_argument(
        "--pull-full", action="store_true", help="latency with diagnostics pulled, every report a full one"
    )
    parser.add_argument(
        "--anywhere", action="store_true", help="type at the end of any line of code, not only in training loops"
    )
    parser.add_argument(
        "--edit",
        choices=["type", "import", "paste"],
        default="type",
        help="what the edits do: type characters (default), comment the first import out and back in, "
        "or paste a 6-line function at the end and delete it",
    )
    parser.add_argument(
        "--module-level",
        action="store_true",
        help="edit a script written at module level (top-level assignments and calls), not in functions",
    )
    parser.add_argument(
        "--samples",
        metavar="FILE",
        type=Path,
        help="also write every keystroke's latency, by server, as JSON to FILE (which keystrokes make the tail)",
    )
    parser.add_argument(
        "--client",
        choices=["python", "node"],
        default="python",
        help="the client that replays the keystrokes: this script, or replay.mjs in Node (as VS Code's)",
    )
    args = parser.parse_args()
    how = Pulled if args.pull else PulledFull if args.pull_full else Pushed
    script = module_level_script if args.module_level else training_script
    if args.paired and args.only == "memory":
        parser.error("--paired measures latency; it does not go with --only memory")
    if args.samples and args.only == "memory":
        parser.error("--samples records latency; it does not go with --only memory")
    if args.module_level and args.only == "memory":
        parser.error("--module-level chooses the script whose edits are timed; it does not go with --only memory")
    if args.samples and not args.samples.resolve().parent.is_dir():
        # Found out now, not after minutes of keystrokes.
        parser.error(f"--samples: no folder {args.samples.resolve().parent} to write {args.samples.name} in")
    results = {command: {} for command in args.server}
    samples = {}
    if args.paired:
        print(f"benchmarking {len(args.server)} servers in turns ...", file=sys.stderr)
        runs = latency(args.server, args.edits, how, args.anywhere, args.client, script, args.edit)
        for command, (result, run_samples) in zip(args.server, runs):
            results[command]["latency"], samples[command] = result, run_samples
    for command in args.server:
        print(f"benchmarking {command} ...", file=sys.stderr)
        if args.only != "memory" and not args.paired:
            [(result, run_samples)] = latency([command], args.edits, how, args.anywhere, args.client, script, args.edit)
            results[command]["latency"], samples[command] = result, run_samples
        if args.only != "latency":
            results[command]["memory"] = memory(command, args.files)
        print(json.dumps(results[command]), file=sys.stderr)
    if args.samples:
        args.samples.write_text(json.dumps(samples, indent=1) + "\n")
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
