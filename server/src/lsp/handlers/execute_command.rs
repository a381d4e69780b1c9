//! `workspace/executeCommand`: dispatch to `commands/<name>.rs`.

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::ExecuteCommandParams;

use crate::lsp::commands::{self, apply_all_fixes, debug_document_text, explain, probe};
use crate::lsp::context::ServerContext;

pub async fn execute_command(context: &ServerContext, params: ExecuteCommandParams) -> Result<Option<Value>> {
    match params.command.as_str() {
        apply_all_fixes::NAME => apply_all_fixes::run(context, &params.arguments).await,
        explain::NAME => explain::run(context, &params.arguments).await,
        probe::NAME => probe::run(context, &params.arguments).await,
        debug_document_text::NAME => debug_document_text::run(context, &params.arguments).await,
        other => Err(Error::invalid_params(format!(
            "culint has no command `{other}`; its commands are {}",
            commands::ALL.join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::position::PositionEncoding;
    use crate::lsp::testing::{TRAINING_SCRIPT, TestClient, apply_text_edits, basic_capabilities, edits_of, uri};

    #[tokio::test]
    async fn apply_all_fixes_sends_the_edit_to_the_client() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"select": ["CUL2"]})).await;
        let file = uri("train.py");
        client.open(&file, TRAINING_SCRIPT).await;
        let result = client
            .request(
                "workspace/executeCommand",
                json!({"command": "culint.applyAllFixes", "arguments": [{"uri": file}]}),
            )
            .await;
        assert_eq!(result.unwrap(), json!({"applied": true, "fixes": 1}));
        let fixed = apply_text_edits(TRAINING_SCRIPT, &edits_of(&client.applied_edits[0]), PositionEncoding::Utf16);
        assert!(fixed.contains("    del model\n    torch.cuda.empty_cache()\n"), "{fixed}");

        client.apply_edits = false;
        let refused = client
            .request("workspace/executeCommand", json!({"command": "culint.applyAllFixes", "arguments": [file]}))
            .await;
        assert_eq!(refused.unwrap(), json!({"applied": false, "fixes": 0}));
        client.shutdown().await;
    }

    #[tokio::test]
    async fn unknown_commands_and_documents_are_errors() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let error = client.request("workspace/executeCommand", json!({"command": "culint.nope"})).await.unwrap_err();
        assert!(error["message"].as_str().unwrap().contains("culint.applyAllFixes"), "{error}");
        let unknown = json!({"command": "culint.applyAllFixes", "arguments": [uri("closed.py")]});
        assert_eq!(client.request("workspace/executeCommand", unknown).await.unwrap_err()["code"], -32602);
        client.shutdown().await;
    }

    #[tokio::test]
    async fn apply_all_fixes_on_a_clean_file_applies_nothing() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let file = uri("clean.py");
        client.open(&file, "import torch\n").await;
        let result = client
            .request("workspace/executeCommand", json!({"command": "culint.applyAllFixes", "arguments": [file]}))
            .await;
        assert_eq!(result.unwrap(), json!({"applied": false, "fixes": 0}));
        assert!(client.applied_edits.is_empty());
        client.shutdown().await;
    }
}
