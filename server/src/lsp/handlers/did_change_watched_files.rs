//! `workspace/didChangeWatchedFiles`: a pyproject.toml or culint.toml changed, so every open
//! document may lint differently.

use tower_lsp_server::ls_types::{DidChangeWatchedFilesParams, MessageType};

use crate::lsp::context::ServerContext;

pub async fn did_change_watched_files(context: &ServerContext, params: DidChangeWatchedFilesParams) {
    let changed: Vec<&str> = params
        .changes
        .iter()
        .map(|change| change.uri.as_str())
        .filter(|uri| uri.ends_with("/pyproject.toml") || uri.ends_with("/culint.toml"))
        .collect();
    if changed.is_empty() {
        return;
    }
    context.log(MessageType::INFO, format!("culint: configuration changed ({}); re-linting", changed.join(", "))).await;
    context.refresh_diagnostics().await;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities, uri};

    #[tokio::test]
    async fn a_changed_config_file_relints_open_documents() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"showSyntaxErrors": true})).await;
        let file = uri("watched.py");
        client.open(&file, "x = (\n").await;
        assert_eq!(client.diagnostics(&file, 1).await.len(), 1);
        let changes = json!({"changes": [{"uri": uri("culint.toml"), "type": 2}]});
        client.notify("workspace/didChangeWatchedFiles", changes).await;
        assert_eq!(client.diagnostics(&file, 1).await.len(), 1, "published again after the change");
        let log = client.wait_for(|m| m["method"] == "window/logMessage").await;
        assert!(log["params"]["message"].as_str().unwrap().contains("culint.toml"), "{log}");
        client.shutdown().await;
    }
}
