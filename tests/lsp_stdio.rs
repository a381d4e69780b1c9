//! `culint server` as a process: LSP framing on stdout and nothing else, the log on stderr, and
//! the protocol's exit codes.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn spawn() -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_culint"));
    command.arg("server");
    spawn_piped(command)
}

fn spawn_piped(mut command: Command) -> Child {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("culint runs")
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

/// Open a script with a finding and see it published.
fn open_and_see_a_finding(child: &mut Child, stdout: &mut BufReader<ChildStdout>) {
    let text = "import torch\nfor b in d:\n    loss = m(b)\n    loss.backward()\n    torch.cuda.empty_cache()\n";
    send(
        child,
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": "file:///tmp/culint-stdio/train.py", "languageId": "python", "version": 1, "text": text}}}),
    );
    let published = loop {
        let message = receive(stdout);
        if message["method"] == "textDocument/publishDiagnostics" {
            break message;
        }
    };
    let codes: Vec<&str> =
        published["params"]["diagnostics"].as_array().unwrap().iter().filter_map(|d| d["code"].as_str()).collect();
    assert!(codes.contains(&"CUL201"), "{published}");
}

#[test]
fn shutdown_then_exit_ends_with_code_zero() {
    let mut child = spawn();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    initialize(&mut child, &mut stdout);
    open_and_see_a_finding(&mut child, &mut stdout);

    send(&mut child, json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}));
    assert_eq!(receive_response(&mut stdout, 2)["result"], Value::Null);
    send(&mut child, json!({"jsonrpc": "2.0", "method": "exit"}));
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(0));
}

/// A container or VM with one CPU: the server once read stdin and wrote stdout on a blocking pool
/// sized to the cores, where the read held the only thread and `initialize` was never answered.
#[test]
fn a_server_on_one_cpu_answers_and_publishes() {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux's /proc");
    let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).expect("the allowed CPUs");
    let first_cpu: String = allowed.trim().chars().take_while(char::is_ascii_digit).collect();
    // taskset is in util-linux, which every Debian system has.
    let mut command = Command::new("taskset");
    command.args(["--cpu-list", &first_cpu, env!("CARGO_BIN_EXE_culint"), "server"]);
    let mut child = spawn_piped(command);
    // A server that hangs is killed after a while, so the reads below fail instead of waiting. It
    // is not reaped before the watchdog is done with it, so its process id stays its own.
    let pid = child.id().to_string();
    let answered = Arc::new(AtomicBool::new(false));
    let watchdog = std::thread::spawn({
        let answered = Arc::clone(&answered);
        move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !answered.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if !answered.load(Ordering::SeqCst) {
                let _ = Command::new("kill").arg(&pid).status();
            }
        }
    });
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    initialize(&mut child, &mut stdout);
    open_and_see_a_finding(&mut child, &mut stdout);
    send(&mut child, json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}));
    assert_eq!(receive_response(&mut stdout, 2)["result"], Value::Null);
    answered.store(true, Ordering::SeqCst);
    watchdog.join().expect("the watchdog ends");
    send(&mut child, json!({"jsonrpc": "2.0", "method": "exit"}));
    assert_eq!(child.wait().expect("exits").code(), Some(0));
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

/// The protocol asks for code 0 when `shutdown` was received before `exit`, answered or not: a
/// client may send both at once, and the transport may see `exit` before `shutdown` has run.
#[test]
fn exit_right_behind_shutdown_ends_with_code_zero() {
    for _ in 0..5 {
        let mut child = spawn();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        initialize(&mut child, &mut stdout);
        send(&mut child, json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}));
        send(&mut child, json!({"jsonrpc": "2.0", "method": "exit"}));
        assert_eq!(child.wait().expect("exits").code(), Some(0));
    }
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
