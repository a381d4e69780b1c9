//! `textDocument/didOpen`: parse the buffer and, for clients that do not pull, push its
//! diagnostics.

use tower_lsp_server::ls_types::DidOpenTextDocumentParams;

use crate::document::Document;
use crate::lsp::context::ServerContext;
use crate::lsp::session::{OpenDocument, path_of};

pub async fn did_open(context: &ServerContext, params: DidOpenTextDocumentParams) {
    let item = params.text_document;
    let push = {
        let mut session = context.session.lock();
        // Parsed by the first lint, on the lint thread rather than under the session lock.
        let document = Document::unparsed(&item.text, item.version);
        let text = document.shared_text();
        session.documents.insert(item.uri.clone(), OpenDocument::new(document, path_of(&item.uri)));
        session.overlay(&item.uri, Some(text));
        !session.features.pull_diagnostics
    };
    if push {
        context.spawn_publish(item.uri);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities, uri};

    #[tokio::test]
    async fn opening_a_file_pushes_its_diagnostics_for_that_version() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"showSyntaxErrors": true})).await;
        let file = uri("broken.py");
        client.open(&file, "# 显存 😀\nx = (1,\n").await;
        let diagnostics = client.diagnostics(&file, 1).await;
        assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
        assert_eq!(diagnostics[0]["source"], "culint");
        assert_eq!(diagnostics[0]["code"], "syntax-error");
        assert_eq!(diagnostics[0]["severity"], 1);
        client.shutdown().await;
    }
}
