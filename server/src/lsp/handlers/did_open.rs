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
        // A buffer just opened is about to be edited, or looked at: its first lint keeps its tree.
        session.note_active(&item.uri);
        !session.features.pull_diagnostics
    };
    if push {
        context.spawn_publish(item.uri);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities, holds_tree, uri};

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

    /// A buffer just opened keeps the tree its first lint parsed (on the lint's thread), so the
    /// first keystroke reparses it incrementally under the session's lock instead of parsing it
    /// from scratch; once eight buffers were opened after it, it gives the tree up.
    #[tokio::test]
    async fn an_opened_buffer_keeps_its_tree_until_eight_others_are_opened() {
        let (mut client, _, context) = TestClient::start_with_context(basic_capabilities(), json!({})).await;
        let first = uri("first.py");
        client.open(&first, "import torch\nx = torch.ones(3)\n").await;
        client.diagnostics(&first, 1).await;
        assert!(holds_tree(&context, &first), "the first lint's tree was not kept");
        for n in 0..8 {
            let other = uri(&format!("other{n}.py"));
            client.open(&other, "x = 1\n").await;
            client.diagnostics(&other, 1).await;
            assert_eq!(holds_tree(&context, &first), n < 7, "after {} more buffers", n + 1);
            assert!(holds_tree(&context, &other));
        }
        client.shutdown().await;
    }

    /// A large buffer's tree is parsed on a thread of its own (see `Snapshot::tree_to_lint`):
    /// it is kept all the same, and the buffer's findings are those of the plain lint.
    #[tokio::test]
    async fn a_large_buffer_keeps_the_tree_parsed_on_its_own_thread() {
        let (mut client, _, context) = TestClient::start_with_context(basic_capabilities(), json!({})).await;
        let example = include_str!("../../../../examples/train_resnet.py");
        let text = example.repeat(64 * 1024 / example.len() + 1);
        let file = uri("large.py");
        client.open(&file, &text).await;
        let pushed = client.diagnostics(&file, 1).await;
        let settings = crate::lint::LintSettings::default();
        let expected = crate::lint::lint_text(&text, crate::lint::LintContext::default(), &settings);
        assert_eq!(pushed.len(), expected.len());
        assert!(!pushed.is_empty());
        assert!(holds_tree(&context, &file));
        client.shutdown().await;
    }
}
