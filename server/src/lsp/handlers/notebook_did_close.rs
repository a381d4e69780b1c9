//! `notebookDocument/didClose`: forget the notebook and withdraw its cells' diagnostics.

use tower_lsp_server::ls_types::DidCloseNotebookDocumentParams;

use crate::lsp::context::ServerContext;
use crate::lsp::notebooks::clear;

pub async fn notebook_did_close(context: &ServerContext, params: DidCloseNotebookDocumentParams) {
    let cells = context.session.lock().notebooks.close(&params.notebook_document.uri);
    clear(context, cells).await;
}
