//! `notebookDocument/didChange`: apply the change to the cells (added, removed, moved, edited)
//! and push the notebook's diagnostics again: a change to one cell can change the findings of
//! every cell after it.

use tower_lsp_server::ls_types::{DidChangeNotebookDocumentParams, MessageType};

use crate::lsp::context::ServerContext;
use crate::lsp::notebooks::lint_and_publish;

pub async fn notebook_did_change(context: &ServerContext, params: DidChangeNotebookDocumentParams) {
    let uri = params.notebook_document.uri.clone();
    let applied = {
        let mut session = context.session.lock();
        let encoding = session.features.encoding;
        session.notebooks.change(params, encoding)
    };
    match applied {
        Ok(()) => lint_and_publish(context, uri).await,
        Err(problem) => context.log(MessageType::ERROR, problem).await,
    }
}
