//! `culint.debug.documentText`: the server's copy of a document's text.
//!
//! Not advertised in `executeCommandProvider`: it exists so that stress clients can check, byte
//! for byte, that thousands of incremental edits left the server with the client's text.
//! Arguments: the document's URI, as for `culint.applyAllFixes`. Returns the text as a string.

use serde_json::Value;
use tower_lsp_server::jsonrpc::Result;

use crate::lsp::commands::apply_all_fixes::document_argument;
use crate::lsp::context::{ServerContext, unknown_document};

pub const NAME: &str = "culint.debug.documentText";

pub async fn run(context: &ServerContext, arguments: &[Value]) -> Result<Option<Value>> {
    let uri = document_argument(arguments)?;
    let session = context.session.lock();
    let snapshot = session.snapshot(&uri).ok_or_else(|| unknown_document(&uri))?;
    Ok(Some(Value::String(snapshot.text.to_string())))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities, uri};

    #[tokio::test]
    async fn returns_the_text_after_incremental_edits() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let file = uri("echo.py");
        client.open(&file, "import torch  # 注释\n").await;
        let text = client
            .request("workspace/executeCommand", json!({"command": "culint.debug.documentText", "arguments": [file]}))
            .await
            .unwrap();
        assert_eq!(text, json!("import torch  # 注释\n"));
        let closed = client
            .request(
                "workspace/executeCommand",
                json!({"command": "culint.debug.documentText", "arguments": [uri("no.py")]}),
            )
            .await;
        assert!(closed.is_err());
        client.shutdown().await;
    }
}
