//! `notebookDocument/didOpen`: keep the notebook's cells and push their diagnostics.

use tower_lsp_server::ls_types::DidOpenNotebookDocumentParams;

use crate::lsp::context::ServerContext;
use crate::lsp::notebooks::lint_and_publish;

pub async fn notebook_did_open(context: &ServerContext, params: DidOpenNotebookDocumentParams) {
    let uri = params.notebook_document.uri.clone();
    context.session.lock().notebooks.open(params);
    lint_and_publish(context, uri).await;
}
