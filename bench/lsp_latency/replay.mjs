// bench.py's keystroke replay, in Node: the runtime of VS Code's language client, which decodes
// every message with V8's `JSON.parse` where bench.py's own client uses Python's `json.loads`.
// On the benchmark script's publishes (238 KB, 397 diagnostics) Python's decoding takes about a
// millisecond when warm and three or more on a core that waited: about a third of the p99 that
// bench.py measured was its own client's (BENCHMARKS.md). Replayed here, the same keystrokes are
// timed the same two ways: once the message's last byte is read, and once it is decoded, as an
// editor built on Node would have it.
//
// bench.py --client node runs this: it writes the job (the servers, the script, its keystrokes,
// how diagnostics are got) as JSON to this script's stdin, and reads back each server's samples
// in milliseconds, from which it makes the same summary as for its own client. Not meant to be
// run by hand.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

/** How long a server may take to answer anything before the run is given up. */
const TIMEOUT_MS = 60_000;

/** A JSON-RPC connection to a server process over stdio. */
class Connection {
  constructor(argv, cwd) {
    const [program, ...args] = argv;
    this.command = argv.join(" ");
    this.process = spawn(program, args, { cwd, stdio: ["pipe", "pipe", "ignore"] });
    // The output read and not yet handled, in the chunks it came in: a message's chunks are
    // joined once it is whole, as vscode-jsonrpc joins them, not copied again at every chunk.
    this.chunks = [];
    this.buffered = 0;
    // The length of the body being read, once its header has been.
    this.bodyLength = null;
    this.waiters = [];
    this.nextId = 0;
    this.ended = null;
    this.process.stdout.on("data", (chunk) => this.read(chunk));
    const end = (why) => {
      this.ended ??= why;
      this.waiters.splice(0).forEach((waiter) => waiter.fail(new Error(`${this.command}: ${why}`)));
    };
    this.process.on("error", (error) => end(`could not start: ${error.message}`));
    this.process.on("exit", (code, signal) => end(`exited (${signal ?? `code ${code}`})`));
  }

  /** Take in a chunk of the server's output and handle each message it completes. */
  read(chunk) {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.bodyLength === null) {
        const pending = this.joined();
        const headerEnd = pending.indexOf("\r\n\r\n");
        if (headerEnd < 0) return;
        const header = pending.subarray(0, headerEnd).toString("ascii");
        const length = Number(/content-length:\s*(\d+)/i.exec(header)?.[1]);
        if (!Number.isInteger(length)) throw new Error(`${this.command}: a message without a Content-Length`);
        this.keep(pending.subarray(headerEnd + 4));
        this.bodyLength = length;
      }
      if (this.buffered < this.bodyLength) return;
      const pending = this.joined();
      const body = pending.subarray(0, this.bodyLength);
      this.keep(pending.subarray(this.bodyLength));
      this.bodyLength = null;
      // As in bench.py: once the last byte is read, and once the message is decoded (the bytes
      // turned into a string and parsed, as vscode-jsonrpc does).
      const received = performance.now();
      const message = JSON.parse(body.toString("utf8"));
      this.handle(message, { received, decoded: performance.now() });
    }
  }

  /** What is buffered, as one buffer. */
  joined() {
    if (this.chunks.length !== 1) this.chunks = [Buffer.concat(this.chunks, this.buffered)];
    return this.chunks[0];
  }

  /** Buffer `rest` alone: what follows the part just taken. */
  keep(rest) {
    this.chunks = [rest];
    this.buffered = rest.length;
  }

  handle(message, arrived) {
    if (message.method !== undefined && message.id !== undefined) {
      // A request from the server (registration, configuration, progress): accept it.
      const items = message.params?.items ?? [];
      const result = message.method === "workspace/configuration" ? items.map(() => null) : null;
      this.send({ jsonrpc: "2.0", id: message.id, result });
      return;
    }
    const index = this.waiters.findIndex((waiter) => waiter.wanted(message));
    if (index >= 0) this.waiters.splice(index, 1)[0].found({ arrived, message });
  }

  send(message) {
    const body = Buffer.from(JSON.stringify(message), "utf8");
    this.process.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  }

  notify(method, params) {
    this.send({ jsonrpc: "2.0", method, params });
  }

  /** The next message that `wanted` accepts, with its arrival times. Call before sending what
   * it answers: a message that arrives with no one waiting for it is dropped. */
  wait(wanted) {
    if (this.ended) return Promise.reject(new Error(`${this.command}: ${this.ended}`));
    return new Promise((found, fail) => {
      const timer = setTimeout(() => fail(new Error(`${this.command}: nothing matching in time`)), TIMEOUT_MS);
      const settle = (then) => (value) => {
        clearTimeout(timer);
        then(value);
      };
      this.waiters.push({ wanted, found: settle(found), fail: settle(fail) });
    });
  }

  async call(method, params) {
    const id = ++this.nextId;
    const answer = this.wait((message) => message.id === id && message.method === undefined);
    this.send({ jsonrpc: "2.0", id, method, params });
    const { arrived, message } = await answer;
    if (message.error) throw new Error(`${this.command}: ${method} failed: ${JSON.stringify(message.error)}`);
    return { arrived, result: message.result };
  }

  rssBytes() {
    const status = readFileSync(`/proc/${this.process.pid}/status`, "utf8");
    return Number(/^VmRSS:\s*(\d+)/m.exec(status)[1]) * 1024;
  }

  async close() {
    try {
      await this.call("shutdown", null);
      this.notify("exit", null);
    } catch {
      this.process.kill();
    }
  }
}

/** Diagnostics as the server pushes them: each version's publishDiagnostics. */
class Pushed {
  constructor(connection, uri) {
    Object.assign(this, { connection, uri, unchanged: 0 });
  }

  /** A promise of the arrival times of the diagnostics of `version`, and a function that sends
   * what makes the server produce them: the waiting starts before the sending. */
  expect(version, send) {
    const publish = this.connection.wait(
      (m) => m.method === "textDocument/publishDiagnostics" && m.params.uri === this.uri && m.params.version === version,
    );
    send();
    return publish.then(({ arrived }) => arrived);
  }
}

/** Diagnostics as the client pulls them, passing the result id of the last report unless
 * `full`, as bench.py's Pulled and PulledFull do. */
class Pulled {
  constructor(connection, uri, full) {
    Object.assign(this, { connection, uri, full, resultId: null, unchanged: 0 });
  }

  async expect(_version, send) {
    send();
    const params = { textDocument: { uri: this.uri }, previousResultId: this.resultId };
    const { arrived, result } = await this.connection.call("textDocument/diagnostic", params);
    this.unchanged += result.kind === "unchanged";
    if (!this.full && result.resultId != null) this.resultId = result.resultId;
    return arrived;
  }
}

async function startServer(job, argv) {
  const connection = new Connection(argv, job.root);
  await connection.call("initialize", { processId: process.pid, rootUri: job.rootUri, capabilities: job.capabilities });
  connection.notify("initialized", {});
  const watch = job.how === "push" ? new Pushed(connection, job.uri) : new Pulled(connection, job.uri, job.how === "pull-full");
  const open = { textDocument: { uri: job.uri, languageId: "python", version: 1, text: job.text } };
  await watch.expect(1, () => connection.notify("textDocument/didOpen", open));
  return { connection, watch };
}

/** Send one edit to one server; its latency as received and as decoded, in milliseconds. */
async function keystroke({ connection, watch }, uri, version, [line, start, end, text, endLine]) {
  const range = { start: { line, character: start }, end: { line: endLine ?? line, character: end } };
  const change = { textDocument: { uri, version }, contentChanges: [{ range, text }] };
  let sent;
  const arrived = await watch.expect(version, () => {
    sent = performance.now();
    connection.notify("textDocument/didChange", change);
  });
  return { received: arrived.received - sent, decoded: arrived.decoded - sent };
}

async function main() {
  const job = JSON.parse(readFileSync(0, "utf8"));
  const servers = [];
  try {
    for (const argv of job.commands) servers.push(await startServer(job, argv));
    const samples = servers.map(() => ({ decoded: [], received: [] }));
    // In turns, as bench.py takes them: the order rotates by one server a keystroke.
    for (const [index, edit] of job.edits.entries()) {
      const version = index + 2;
      const first = version % servers.length;
      const order = [...servers.keys()];
      for (const i of [...order.slice(first), ...order.slice(0, first)]) {
        const { decoded, received } = await keystroke(servers[i], job.uri, version, edit);
        samples[i].decoded.push(decoded);
        samples[i].received.push(received);
      }
    }
    const results = servers.map(({ connection, watch }, i) => ({
      ...samples[i],
      unchanged_reports: watch.unchanged,
      rss_bytes: connection.rssBytes(),
    }));
    return JSON.stringify(results);
  } finally {
    await Promise.all(servers.map(({ connection }) => connection.close()));
  }
}

// The process ends once the output is written out whole: a server that is slow to exit keeps
// it no longer than that.
main().then(
  (output) => process.stdout.write(output, () => process.exit(0)),
  (error) => process.stderr.write(`replay.mjs: ${error.message}\n`, () => process.exit(1)),
);
