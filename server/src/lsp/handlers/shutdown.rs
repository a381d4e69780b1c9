//! `shutdown`: stop answering; `exit` (handled by tower-lsp-server) then ends the process.

use tower_lsp_server::jsonrpc::Result;

use crate::lsp::context::ServerContext;

pub async fn shutdown(context: &ServerContext) -> Result<()> {
    context.session.lock().shutdown_requested = true;
    Ok(())
}
