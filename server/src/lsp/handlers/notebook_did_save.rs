//! `notebookDocument/didSave`: the cells are what the client last sent, so only a result made
//! under older settings can be stale; lint again and push.

use tower_lsp_server::ls_types::DidSaveNotebookDocumentParams;

use crate::lsp::context::ServerContext;
use crate::lsp::notebooks::lint_and_publish;

pub async fn notebook_did_save(context: &ServerContext, params: DidSaveNotebookDocumentParams) {
    lint_and_publish(context, params.notebook_document.uri).await;
}
