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
        let open = OpenDocument::new(Document::new(&item.text, item.version), path_of(&item.uri));
        session.documents.insert(item.uri.clone(), open);
        !session.features.pull_diagnostics
    };
    if push {
        context.spawn_publish(item.uri);
    }
}
