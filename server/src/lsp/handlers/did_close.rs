//! `textDocument/didClose`: forget the buffer, and clear pushed diagnostics (the file on disk is
//! the CLI's business).

use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

use crate::lsp::context::ServerContext;

pub async fn did_close(context: &ServerContext, params: DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    let push = {
        let mut session = context.session.lock();
        session.documents.remove(&uri);
        session.overlay(&uri, None);
        !session.features.pull_diagnostics
    };
    if push {
        context.clear_diagnostics(uri).await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities, uri};

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
}
