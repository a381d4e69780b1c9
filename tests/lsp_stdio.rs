//! `culint server` as a process: LSP framing on stdout and nothing else, the log on stderr, and
//! the protocol's exit codes.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

fn spawn() -> Child {
    Command::new(env!("CARGO_BIN_EXE_culint"))
        .arg("server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("culint runs")
}

fn send(child: &mut Child, message: Value) {
    let body = message.to_string();
    let stdin = child.stdin.as_mut().expect("stdin");
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
    stdin.flush().expect("flush");
}

/// Read one framed message; panics on anything that is not a frame.
fn receive(stdout: &mut BufReader<ChildStdout>) -> Value {
    let mut length = None;
    loop {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read");
        assert!(!line.is_empty(), "stdout closed before a message");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let value = line.strip_prefix("Content-Length: ").unwrap_or_else(|| panic!("not an LSP header: {line:?}"));
        length = Some(value.parse::<usize>().expect("a length"));
    }
    let mut body = vec![0; length.expect("Content-Length")];
    stdout.read_exact(&mut body).expect("body");
    serde_json::from_slice(&body).expect("JSON")
}

fn receive_response(stdout: &mut BufReader<ChildStdout>, id: i64) -> Value {
    loop {
        let message = receive(stdout);
        if message["id"] == json!(id) && message.get("method").is_none() {
            return message;
        }
    }
}

fn initialize(child: &mut Child, stdout: &mut BufReader<ChildStdout>) {
    send(child, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}));
    let response = receive_response(stdout, 1);
    assert_eq!(response["result"]["serverInfo"]["name"], "culint");
    send(child, json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
}

#[test]
fn shutdown_then_exit_ends_with_code_zero() {
    let mut child = spawn();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    initialize(&mut child, &mut stdout);
    let text = "import torch\nfor b in d:\n    loss = m(b)\n    loss.backward()\n    torch.cuda.empty_cache()\n";
    send(
        &mut child,
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": "file:///tmp/culint-stdio/train.py", "languageId": "python", "version": 1, "text": text}}}),
    );
    let published = loop {
        let message = receive(&mut stdout);
        if message["method"] == "textDocument/publishDiagnostics" {
            break message;
        }
    };
    let codes: Vec<&str> =
        published["params"]["diagnostics"].as_array().unwrap().iter().filter_map(|d| d["code"].as_str()).collect();
    assert!(codes.contains(&"CUL201"), "{published}");

    send(&mut child, json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}));
    assert_eq!(receive_response(&mut stdout, 2)["result"], Value::Null);
    send(&mut child, json!({"jsonrpc": "2.0", "method": "exit"}));
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(0));
}

/// Clients keep the server's stdin open until the process has ended (`Child::wait` in std closes
/// it first, which would hide a server stuck in a read of stdin).
#[test]
fn exit_ends_the_process_while_stdin_is_still_open() {
    let mut child = spawn();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    send(
        &mut child,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "rootUri": "file:///tmp/culint-e2e",
            "capabilities": {"window": {"workDoneProgress": true},
                "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}}},
            "initializationOptions": {"select": ["CUL2"]}}}),
    );
    receive_response(&mut stdout, 1);
    send(&mut child, json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    send(&mut child, json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}));
    receive_response(&mut stdout, 2);
    send(&mut child, json!({"jsonrpc": "2.0", "method": "exit"}));
    let _open_stdin = child.stdin.take();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            panic!("the server was still running 20 s after `exit`");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn exit_without_shutdown_ends_with_code_one() {
    let mut child = spawn();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    initialize(&mut child, &mut stdout);
    send(&mut child, json!({"jsonrpc": "2.0", "method": "exit"}));
    assert_eq!(child.wait().expect("exits").code(), Some(1));
}

#[test]
fn malformed_requests_get_errors_and_the_server_goes_on() {
    let mut child = spawn();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    initialize(&mut child, &mut stdout);
    send(&mut child, json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"position": 3}}));
    assert_eq!(receive_response(&mut stdout, 2)["error"]["code"], -32602);
    send(&mut child, json!({"jsonrpc": "2.0", "id": 3, "method": "culint/noSuchMethod", "params": {}}));
    assert_eq!(receive_response(&mut stdout, 3)["error"]["code"], -32601);
    send(&mut child, json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}));
    assert_eq!(receive_response(&mut stdout, 4)["result"], Value::Null);
    send(&mut child, json!({"jsonrpc": "2.0", "method": "exit"}));
    assert_eq!(child.wait().expect("exits").code(), Some(0));
}

#[test]
fn an_unwritable_log_file_is_a_usage_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_culint"))
        .args(["server", "--log-file", "/nonexistent-dir/culint.log"])
        .stdin(Stdio::null())
        .output()
        .expect("culint runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot open the log file /nonexistent-dir/culint.log"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing but LSP on stdout");
}
