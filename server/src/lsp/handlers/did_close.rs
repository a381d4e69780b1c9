//! `textDocument/didClose`: forget the buffer, and clear pushed diagnostics (the file on disk is
//! the CLI's business).

use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

use crate::lsp::context::ServerContext;

pub async fn did_close(context: &ServerContext, params: DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    let push = {
        let mut session = context.session.lock();
        session.documents.remove(&uri);
        !session.features.pull_diagnostics
    };
    if push {
        context.clear_diagnostics(uri).await;
    }
}
