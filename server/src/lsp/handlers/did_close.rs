//! `textDocument/didClose`: forget the buffer, and clear pushed diagnostics (the file on disk is
//! the CLI's business).

use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

use crate::lsp::context::ServerContext;

pub async fn did_close(context: &ServerContext, params: DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    let push = {
        let mut session = context.session.lock();
        session.close(&uri);
        !session.features.pull_diagnostics
    };
    if push {
        context.clear_diagnostics(uri).await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities, holds_tree, uri};

    #[tokio::test]
    async fn closing_clears_pushed_diagnostics() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"showSyntaxErrors": true})).await;
        let file = uri("close.py");
        client.open(&file, "x = (\n").await;
        assert_eq!(client.diagnostics(&file, 1).await.len(), 1);
        client.notify("textDocument/didClose", json!({"textDocument": {"uri": file}})).await;
        let cleared = client
            .wait_for(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"].is_null())
            .await;
        assert_eq!(cleared["params"]["diagnostics"], json!([]));
        client.shutdown().await;
    }

    /// A closed buffer gives its place among the eight that keep their trees to the next one
    /// opened, rather than push out one still open.
    #[tokio::test]
    async fn a_closed_buffer_leaves_its_kept_tree_to_another() {
        let (mut client, _, context) = TestClient::start_with_context(basic_capabilities(), json!({})).await;
        let files: Vec<String> = (0..9).map(|n| uri(&format!("buffer{n}.py"))).collect();
        for file in &files[..8] {
            client.open(file, "x = 1\n").await;
            client.diagnostics(file, 1).await;
        }
        client.notify("textDocument/didClose", json!({"textDocument": {"uri": files[7]}})).await;
        client.open(&files[8], "y = 2\n").await;
        client.diagnostics(&files[8], 1).await;
        assert!(files[..7].iter().chain([&files[8]]).all(|file| holds_tree(&context, file)));
        client.shutdown().await;
    }
}
