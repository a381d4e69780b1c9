//! An in-process LSP client for the handler tests: it runs the real server over an in-memory
//! pipe, speaks framed JSON-RPC to it, answers the server's own requests the way an editor
//! would, and records everything the server sends.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;

/// How long a test waits for a message the server must send.
const PATIENCE: Duration = Duration::from_secs(20);

pub struct TestClient {
    writer: WriteHalf<DuplexStream>,
    incoming: mpsc::UnboundedReceiver<Value>,
    /// Messages received while waiting for something else, in arrival order.
    backlog: Vec<Value>,
    next_id: i64,
    /// What the client answers to `workspace/applyEdit`.
    pub apply_edits: bool,
    /// What the client answers to `workspace/configuration`.
    pub configuration: Value,
    /// Every `workspace/applyEdit` the server asked for.
    pub applied_edits: Vec<Value>,
}

/// Capabilities of a client that pushes nothing special: push diagnostics, UTF-16.
pub fn basic_capabilities() -> Value {
    json!({
        "textDocument": {
            "publishDiagnostics": {"relatedInformation": true, "tagSupport": {"valueSet": [1, 2]}},
            "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}},
            "hover": {"contentFormat": ["markdown", "plaintext"]}
        },
        "workspace": {
            "applyEdit": true,
            "workspaceEdit": {"documentChanges": true},
            "didChangeWatchedFiles": {"dynamicRegistration": true},
            "configuration": true
        },
        "general": {"positionEncodings": ["utf-16"]}
    })
}

impl TestClient {
    /// Start a server and run `initialize`/`initialized` with these capabilities and options.
    pub async fn start(capabilities: Value, options: Value) -> (Self, Value) {
        let (client, result, _) = Self::start_with_context(capabilities, options).await;
        (client, result)
    }

    /// Like `start`, and also hand out the server's context, for tests that call into it.
    pub async fn start_with_context(
        capabilities: Value,
        options: Value,
    ) -> (Self, Value, crate::lsp::context::ServerContext) {
        let (client_side, server_side) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_side);
        let (outbox, server_write) = crate::lsp::outbox::Outbox::start(tokio_util::io::SyncIoBridge::new(server_write))
            .expect("the output thread starts");
        let (service, socket, context) = crate::lsp::Server::connect(outbox);
        tokio::spawn(tower_lsp_server::Server::new(server_read, server_write, socket).serve(service));
        let (reader, writer) = tokio::io::split(client_side);
        let (sender, incoming) = mpsc::unbounded_channel();
        tokio::spawn(read_messages(reader, sender));
        let mut client = Self {
            writer,
            incoming,
            backlog: Vec::new(),
            next_id: 1,
            apply_edits: true,
            configuration: Value::Null,
            applied_edits: Vec::new(),
        };
        let result = client
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": "file:///workspace",
                    "capabilities": capabilities,
                    "initializationOptions": options,
                }),
            )
            .await
            .expect("initialize succeeds");
        client.notify("initialized", json!({})).await;
        (client, result, context)
    }

    pub async fn send(&mut self, message: Value) {
        let body = serde_json::to_string(&message).expect("JSON");
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.writer.write_all(frame.as_bytes()).await.expect("server input is open");
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// Send a request and wait for its response: `Ok(result)` or `Err(error object)`.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let response = self.wait_for(|m| m.get("method").is_none() && m["id"] == json!(id)).await;
        match response.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(response["result"].clone()),
        }
    }

    pub async fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        )
        .await;
    }

    /// The next `publishDiagnostics` for `uri` whose version is `version`.
    pub async fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let message = self
            .wait_for(|m| {
                m["method"] == "textDocument/publishDiagnostics"
                    && m["params"]["uri"] == uri
                    && m["params"]["version"] == json!(version)
            })
            .await;
        message["params"]["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    /// Wait for the first message (received earlier or later) that satisfies `wanted`, and take
    /// it out of the backlog. Requests from the server are answered as they arrive.
    pub async fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.backlog.iter().position(&wanted) {
            return self.backlog.remove(at);
        }
        loop {
            let message = tokio::time::timeout(PATIENCE, self.incoming.recv())
                .await
                .unwrap_or_else(|_| panic!("no matching message in {PATIENCE:?}; received: {:#?}", self.backlog))
                .expect("server output is open");
            if message.get("method").is_some() && message.get("id").is_some() {
                self.answer(&message).await;
            }
            if wanted(&message) {
                return message;
            }
            self.backlog.push(message);
        }
    }

    /// Messages received so far with this method.
    pub fn received(&self, method: &str) -> Vec<&Value> {
        self.backlog.iter().filter(|m| m["method"] == method).collect()
    }

    async fn answer(&mut self, request: &Value) {
        let result = match request["method"].as_str().unwrap_or_default() {
            "workspace/applyEdit" => {
                self.applied_edits.push(request["params"]["edit"].clone());
                json!({"applied": self.apply_edits})
            }
            "workspace/configuration" => json!([self.configuration.clone()]),
            _ => Value::Null,
        };
        let id = request["id"].clone();
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
    }

    pub async fn shutdown(mut self) {
        self.request("shutdown", Value::Null).await.expect("shutdown succeeds");
        self.notify("exit", Value::Null).await;
    }
}

async fn read_messages(reader: ReadHalf<DuplexStream>, sender: mpsc::UnboundedSender<Value>) {
    let mut reader = BufReader::new(reader);
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length: ") {
                length = value.parse::<usize>().ok();
            }
        }
        let mut body = vec![0; length.expect("every frame has a Content-Length")];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let message: Value = serde_json::from_slice(&body).expect("the server sends JSON");
        if sender.send(message).is_err() {
            return;
        }
    }
}

/// A `file:` URI for a test document.
pub fn uri(name: &str) -> String {
    format!("file:///workspace/{name}")
}

/// Whether the server's open buffer `file` holds a syntax tree (kept for its next keystroke).
pub fn holds_tree(context: &crate::lsp::context::ServerContext, file: &str) -> bool {
    let uri = file.parse().expect("a URI");
    context.session.lock().document(&uri).expect("an open buffer").document().cached_tree().is_some()
}

/// An LSP position as JSON.
pub fn position(line: u32, character: u32) -> Value {
    json!({"line": line, "character": character})
}

/// A training script with one safe fix (CUL202, line 4) and one unsafe fix (CUL201, line 10),
/// behind a CJK comment and an emoji so UTF-16 and UTF-8 columns differ. Tests select `CUL2`,
/// so rules added later (CUL302 also fires here) do not change what they see.
pub const TRAINING_SCRIPT: &str = "import torch

# 显存 cleanup 😀
def release(model):
    torch.cuda.empty_cache()
    del model

for batch in loader:
    loss = model(batch)
    loss.backward()
    torch.cuda.empty_cache()
";

/// Apply LSP text edits (in `encoding`) to `text`, as a client would: all ranges refer to the
/// text before any edit.
pub fn apply_text_edits(text: &str, edits: &[Value], encoding: crate::lsp::position::PositionEncoding) -> String {
    let mapper = crate::lsp::position::PositionMapper::new(text, encoding);
    let mut byte_edits: Vec<(crate::text::TextRange, String)> = edits
        .iter()
        .map(|edit| {
            let range = serde_json::from_value(edit["range"].clone()).expect("an LSP range");
            (mapper.text_range(range).expect("edit inside the text"), edit["newText"].as_str().unwrap().to_owned())
        })
        .collect();
    byte_edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
    let mut out = text.to_owned();
    for (range, new_text) in byte_edits {
        out.replace_range(range.start..range.end, &new_text);
    }
    out
}

/// The text edits of a workspace edit for one document, whichever shape it has.
pub fn edits_of(workspace_edit: &Value) -> Vec<Value> {
    if let Some(changes) = workspace_edit["documentChanges"].as_array() {
        return changes[0]["edits"].as_array().cloned().unwrap_or_default();
    }
    let changes = workspace_edit["changes"].as_object().expect("changes or documentChanges");
    changes.values().next().and_then(Value::as_array).cloned().unwrap_or_default()
}
